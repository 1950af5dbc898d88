"""The process that records one side of ``ekstrain diff`` (cli/diff.py starts it; not a user command).

    python cli/record.py --record TREE --stack prod --stack-file TREE/Pulumi.prod.yaml > side.json

Run as a script, by path: ``TREE`` goes first on ``sys.path`` so the program, its components and the offline
engine are those of that tree (this checkout, or a git revision ``ekstrain diff --base`` exported). The recording
is ekstrain/infra/diff.py of *this* package, loaded by its path before ``TREE`` is on ``sys.path`` (a revision's
own may differ or be absent). Prints the rows as JSON; a bad stack file: the error, exit 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import sys
from types import ModuleType

HERE = pathlib.Path(__file__).resolve().parent
RECORDING = HERE.parent / "infra" / "diff.py"


def recording() -> ModuleType:
    """ekstrain/infra/diff.py of this package, by path: importing ``ekstrain`` here would pin it to this tree."""
    spec = importlib.util.spec_from_file_location("ekstrain_diff_recording", RECORDING)
    assert spec is not None and spec.loader is not None, RECORDING
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python cli/record.py", description="Record one side of ekstrain diff.")
    parser.add_argument("--record", required=True, help="root of the tree whose program runs")
    parser.add_argument("--stack", required=True)
    parser.add_argument("--stack-file", required=True)
    args = parser.parse_args(argv)
    tree = pathlib.Path(args.record).resolve()
    diff = recording()
    # Run as a script, sys.path[0] is this directory: drop it so `render`, `diff` etc. are not top-level modules.
    sys.path[:] = [str(tree)] + [p for p in sys.path if pathlib.Path(p or ".").resolve() != HERE]
    os.chdir(tree)
    ConfigError = diff.layer("stacks.errors").ConfigError  # noqa: N806 (a class, looked up in the tree)

    try:
        rows = diff.record_stack_file(pathlib.Path(args.stack_file).resolve(), args.stack)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    json.dump(rows, sys.stdout)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the SDKs' slow interpreter teardown, as cli/render.py does
