"""The two sides of ``ekstrain diff``: each side's resources, recorded by running the program offline.

Each side is recorded in its own process (cli/record.py, which runs infra/diff.py: the program under the offline
engine, no helm), both at once; for a git revision the tree ``git archive`` exports at that revision, so the old
program runs with its own code. The command line (flags, progress lines, the report) is ekstrain/cli/diff.py.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

from ekstrain.diff.model import Resource
from ekstrain.files.paths import PACKAGE
from ekstrain.tooling import validation

Progress = Callable[[str], None]


def quiet(line: str) -> None:
    """No progress lines."""


REPO = PACKAGE.parent
"""The tree the ``ekstrain`` package is imported from (the checkout, or site-packages when installed)."""
RECORDER = PACKAGE / "cli" / "record.py"
"""The recording process's script (run by path: it puts the recorded tree first on ``sys.path``)."""


class DiffInputError(ValueError):
    """Bad input: the message names the flag or file and the fix."""


def check_stack_file(stack_file: pathlib.Path, what: str) -> None:
    """Refuse a stack file that is not there, naming the flag (before anything records)."""
    if not stack_file.is_file():
        raise DiffInputError(f"{what} {stack_file}: no such stack file (give the path of a Pulumi.<stack>.yaml)")


def record(
    tree: pathlib.Path, stack: str, stack_file: pathlib.Path, what: str, progress: Progress = quiet
) -> list[Resource]:
    """Resources the program in ``tree`` registers for ``stack_file``; ``progress`` gets a line as each step starts
    and ends."""
    check_stack_file(stack_file, what)
    env = dict(os.environ)
    upstream = validation.upstream_dir()
    if upstream is not None:  # an exported tree has no ../shared beside it
        env["EKSTRAIN_UPSTREAM_DIR"] = str(upstream)
    started = time.perf_counter()
    progress(f"recording {what} {stack_file.name} (the program under the offline engine)")
    done = subprocess.run(
        [sys.executable, str(RECORDER), f"--record={tree}", f"--stack={stack}", f"--stack-file={stack_file}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-6:])
        raise DiffInputError(f"{what} {stack_file}: the program did not record ({tail}); fix that side first")
    rows = [Resource.from_dict(d) for d in json.loads(done.stdout)]
    progress(f"recorded {what} {stack_file.name}: {len(rows)} resources in {time.perf_counter() - started:.1f}s")
    return rows


_T = TypeVar("_T")


def both(new: Callable[[], _T], old: Callable[[], _T]) -> tuple[_T, _T]:
    """``new()`` and ``old()`` at once: each side records in a process of its own (one core each, where a serial
    run took both sides' time); the first error of either is raised."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        new_side, old_side = pool.submit(new), pool.submit(old)
        return new_side.result(), old_side.result()


def in_checkout(stack_file: pathlib.Path) -> bool:
    """Whether ``stack_file`` is inside the git checkout this ``ekstrain`` is imported from (not an install)."""
    return (REPO / ".git").exists() and stack_file.resolve().is_relative_to(REPO.resolve())


def record_revision(revision: str, stack: str, stack_file: pathlib.Path, progress: Progress = quiet) -> list[Resource]:
    """``stack`` as committed at git ``revision``: in this checkout, the program and the stack file of that
    revision; with ``ekstrain`` installed, the stack file of that revision of the project's own repository (the
    one holding ``stack_file``) under the installed program."""
    repo, commit = base_commit(revision, stack_file)
    if not in_checkout(stack_file):
        return _record_project_revision(revision, repo, commit, stack, stack_file, progress)
    rel = os.path.relpath(stack_file.resolve(), REPO)
    with tempfile.TemporaryDirectory(prefix="ekstrain-diff-") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=False)
        if archive.returncode != 0:
            raise DiffInputError(
                f"--base {revision}: git archive failed ({archive.stderr.decode().strip()}); give a commit, "
                "branch or tag of this repository (fetch it first in a shallow CI checkout)"
            )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        return record(pathlib.Path(tmp), stack, pathlib.Path(tmp) / rel, f"--base {revision}:", progress)


def base_commit(revision: str, stack_file: pathlib.Path) -> tuple[pathlib.Path, str]:
    """The repository ``--base`` reads (this checkout, or the project's own repository holding ``stack_file``) and
    the commit ``revision`` names there; the diff calls it before either side records (a side that fails at once
    still waits for the other's recording)."""
    repo = REPO if in_checkout(stack_file) else _repository_of(revision, stack_file)
    return repo, resolve_revision(repo, revision)


def resolve_revision(repo: pathlib.Path, revision: str) -> str:
    """The commit id ``revision`` names in ``repo``: git reads it after ``--end-of-options``, so a value such as
    ``--output=FILE`` is a revision that does not exist, never an option; only the 40-hex id reaches later calls."""
    if not revision or "\x00" in revision or revision.startswith("-"):
        raise DiffInputError(
            f"--base {revision[:80]!r}: not a git revision (it begins with '-' or is empty); give a commit, branch "
            "or tag of this repository"
        )
    found = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    commit = found.stdout.strip()
    if found.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
        raise DiffInputError(
            f"--base {revision[:80]!r}: no such commit in {repo} (git rev-parse --verify); give a commit, branch or "
            "tag of this repository (fetch it first in a shallow CI checkout)"
        )
    return commit


def _record_project_revision(
    revision: str, top: pathlib.Path, commit: str, stack: str, stack_file: pathlib.Path, progress: Progress
) -> list[Resource]:
    rel = pathlib.Path(os.path.relpath(stack_file.resolve(), top.resolve())).as_posix()
    shown = subprocess.run(["git", "-C", str(top), "show", f"{commit}:{rel}"], capture_output=True)
    if shown.returncode != 0:
        raise DiffInputError(
            f"--base {revision}: git show {revision}:{rel} failed ({shown.stderr.decode().strip()}); give a "
            "commit, branch or tag that has this stack file"
        )
    with tempfile.TemporaryDirectory(prefix="ekstrain-diff-") as tmp:
        old_file = pathlib.Path(tmp) / stack_file.name
        old_file.write_bytes(shown.stdout)
        return record(REPO, stack, old_file, f"--base {revision}:", progress)


def _repository_of(revision: str, stack_file: pathlib.Path) -> pathlib.Path:
    """The top of the git repository holding ``stack_file`` (a project's own repository, for ``--base``)."""
    where = stack_file.resolve().parent
    top = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise DiffInputError(
            f"--base {revision}: {stack_file} is not in a git repository; commit it, or compare two files with "
            "--old-stack-file"
        )
    return pathlib.Path(top.stdout.strip())
