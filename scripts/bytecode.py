"""The checkout's own bytecode: the ``__pycache__/`` directories beside its sources (git ignores them).

`make clean` drops them, and `make bench --tests` drops them before it times `make test` and `make unit`, as from a
clean clone. What a clean clone has after `make` stays: each virtualenv's bytecode (pip compiles the modules it
installs), and nothing under ``.git``, ``.tools``, ``build`` or ``node_modules`` is looked at. Standard library only:
`make clean` runs it without the virtualenv.

    python3 -m scripts.bytecode           list them
    python3 -m scripts.bytecode --drop    remove them
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil

REPO = pathlib.Path(__file__).resolve().parent.parent
NOT_SOURCES = {".git", ".tools", "build", "node_modules"}


def bytecode_dirs(root: pathlib.Path = REPO) -> list[pathlib.Path]:
    """Every ``__pycache__`` directory under ``root`` outside virtualenvs (a directory holding ``pyvenv.cfg``) and
    outside :data:`NOT_SOURCES`; symlinked directories are not followed (ekstrain/<room> links to the top-level
    folders, which are walked themselves)."""
    found: list[pathlib.Path] = []
    for here, dirs, _ in os.walk(root):
        keep = []
        for name in sorted(dirs):
            path = pathlib.Path(here) / name
            if name == "__pycache__":
                found.append(path)
            elif name not in NOT_SOURCES and not (path / "pyvenv.cfg").exists():
                keep.append(name)
        dirs[:] = keep
    return found


def drop(root: pathlib.Path = REPO) -> int:
    """Remove :func:`bytecode_dirs`; how many there were."""
    dirs = bytecode_dirs(root)
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)
    return len(dirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m scripts.bytecode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--drop", action="store_true", help="remove them (default: list them)")
    args = parser.parse_args(argv)
    if args.drop:
        count = drop()
        print(f"removed the checkout's bytecode: {count} __pycache__ director{'y' if count == 1 else 'ies'}")
    else:
        for path in bytecode_dirs():
            print(path.relative_to(REPO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
