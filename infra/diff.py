"""Record one side of ``ekstrain diff``: the real program for a stack file under the offline engine, as JSON.

    python infra/diff.py --record TREE --stack prod --stack-file TREE/Pulumi.prod.yaml > side.json

``TREE`` goes first on ``sys.path``, so the program, its components and the offline engine are
those of that tree (this checkout, or a git revision exported by ``ekstrain diff --base``). Only
modules every revision has are imported (``infra.render``, ``infra.offline``, ``stacks``), under the
``ekstrain.`` namespace when the tree has it (revisions before it imported them as top-level packages).
Rows follow ``ekstrain.diff.model.Resource.to_dict``. A bad stack file: the error, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent


def layer(name: str) -> Any:
    """``ekstrain.<name>`` of the tree being recorded; a revision from before the namespace has ``<name>``."""
    import importlib

    try:
        return importlib.import_module(f"ekstrain.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"ekstrain.{name}", "ekstrain"):
            raise
        return importlib.import_module(name)


def snapshot_dicts(recording: Any) -> list[dict[str, Any]]:
    """The recording as ``Resource.to_dict`` rows (plain data, JSON-safe)."""
    offline = layer("infra.offline")
    return [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            "custom": r.custom,
            "protect": r.protect,
            "retainOnDelete": r.retain_on_delete,
            "deleteBeforeReplace": getattr(r, "delete_before_replace", False),
            "aliases": list(getattr(r, "aliases", [])),
            "dependencies": list(r.dependencies),
            "ignoreChanges": list(r.ignore_changes),
            "outputs": {k: str(r.outputs[k]) for k in ("id", "arn") if r.outputs.get(k) is not None},
            "inputs": offline.plain(r.inputs),
        }
        for r in recording.records
    ]


def record_stack_file(stack_file: pathlib.Path, stack: str) -> list[dict[str, Any]]:
    """Run the program offline for ``stack_file``; bad config raises ``ekstrain.stacks.errors.ConfigError`` first."""
    loader = layer("stacks.loader")
    flat, secrets = loader.read_stack_file(stack_file)
    loader.load_flat(flat, stack_file.name)
    return snapshot_dicts(layer("infra.render").run_program(flat, secrets, stack))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python infra/diff.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", required=True, help="root of the tree whose program runs")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--stack-file", required=True)
    args = parser.parse_args(argv)
    tree = pathlib.Path(args.record).resolve()
    # Run as a script, sys.path[0] is this directory: drop it so `offline` etc. are not top-level modules.
    sys.path[:] = [str(tree)] + [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]
    os.chdir(tree)
    ConfigError = layer("stacks.errors").ConfigError  # noqa: N806 (a class, looked up in the tree)

    try:
        rows = record_stack_file(pathlib.Path(args.stack_file).resolve(), args.stack)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(rows, sys.stdout)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the SDKs' slow interpreter teardown, as infra/render.py does
