"""Record one side of ``ekstrain diff``: the real program for a stack file under the offline engine, as JSON.

    python cli/record.py --record TREE --stack prod --stack-file TREE/Pulumi.prod.yaml > side.json

(cli/record.py reads the command line, loads this file by its path and calls :func:`record_stack_file`.)

``TREE`` goes first on ``sys.path``, so the program, its components and the offline engine are
those of that tree (this checkout, or a git revision exported by ``ekstrain diff --base``). Only
modules every revision has are imported (``infra.render``, ``infra.offline``, ``stacks``), under the
``ekstrain.`` namespace when the tree has it (revisions before it imported them as top-level packages).
Rows follow ``ekstrain.diff.model.Resource.to_dict``. A bad stack file: the error, exit 2.
"""

from __future__ import annotations

import pathlib
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
