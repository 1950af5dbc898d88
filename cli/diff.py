"""``ekstrain diff``: what an edit would change, offline, resource by resource.

    ekstrain diff --stack prod --base origin/main            # this tree against a git revision
    ekstrain diff --stack prod --old-stack-file old.yaml     # two stack files, this tree's program
    ekstrain diff ... --json --allow training-nodes          # CI: JSON; exit 1 only on other flags

Each side is recorded by ``cli/record.py`` (infra/diff.py) in its own process (the program under the offline
engine, no helm): for ``--base`` on the tree ``git archive`` exports at that revision, so the old
program runs with its own code. Exit 0: nothing flagged or all allowed; 1: a flagged change; 2: bad input.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ekstrain import outputs, validation
from ekstrain.cli import kit as cli_kit
from ekstrain.diff import compare, report
from ekstrain.diff.model import Resource
from ekstrain.names import stack_name_problem
from ekstrain.paths import PACKAGE

REPO = PACKAGE.parent
"""The tree the ``ekstrain`` package is imported from (the checkout, or site-packages when installed)."""
RECORDER = PACKAGE / "cli" / "record.py"


class DiffInputError(ValueError):
    """Bad input: the message names the flag or file and the fix."""


def record(tree: pathlib.Path, stack: str, stack_file: pathlib.Path, what: str) -> list[Resource]:
    """Resources the program in ``tree`` registers for ``stack_file``."""
    if not stack_file.is_file():
        raise DiffInputError(f"{what} {stack_file}: no such stack file (give the path of a Pulumi.<stack>.yaml)")
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


def progress(line: str) -> None:
    """A progress line on stderr (stdout carries only the report, for --json and pipes)."""
    # One write per line: the two sides report from two threads, and print() writes the text and its newline apart.
    sys.stderr.write(f"ekstrain diff: {line}\n")
    sys.stderr.flush()


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


def record_revision(revision: str, stack: str, stack_file: pathlib.Path) -> list[Resource]:
    """``stack`` as committed at git ``revision``: in this checkout, the program and the stack file of that
    revision; with ``ekstrain`` installed, the stack file of that revision of the project's own repository (the
    one holding ``stack_file``) under the installed program."""
    if not in_checkout(stack_file):
        return _record_project_revision(revision, stack, stack_file)
    rel = os.path.relpath(stack_file.resolve(), REPO)
    commit = resolve_revision(REPO, revision)
    with tempfile.TemporaryDirectory(prefix="ekstrain-diff-") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=False)
        if archive.returncode != 0:
            raise DiffInputError(
                f"--base {revision}: git archive failed ({archive.stderr.decode().strip()}); give a commit, "
                "branch or tag of this repository (fetch it first in a shallow CI checkout)"
            )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        return record(pathlib.Path(tmp), stack, pathlib.Path(tmp) / rel, f"--base {revision}:")


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


def _record_project_revision(revision: str, stack: str, stack_file: pathlib.Path) -> list[Resource]:
    where = stack_file.resolve().parent
    top = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise DiffInputError(
            f"--base {revision}: {stack_file} is not in a git repository; commit it, or compare two files with "
            "--old-stack-file"
        )
    rel = pathlib.Path(os.path.relpath(stack_file.resolve(), pathlib.Path(top.stdout.strip()).resolve())).as_posix()
    commit = resolve_revision(pathlib.Path(top.stdout.strip()), revision)
    shown = subprocess.run(["git", "-C", top.stdout.strip(), "show", f"{commit}:{rel}"], capture_output=True)
    if shown.returncode != 0:
        raise DiffInputError(
            f"--base {revision}: git show {revision}:{rel} failed ({shown.stderr.decode().strip()}); give a "
            "commit, branch or tag that has this stack file"
        )
    with tempfile.TemporaryDirectory(prefix="ekstrain-diff-") as tmp:
        old_file = pathlib.Path(tmp) / stack_file.name
        old_file.write_bytes(shown.stdout)
        return record(REPO, stack, old_file, f"--base {revision}:")


def add_diff_command(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "diff",
        help="offline preview of what an edit changes (create/update/replace/delete, flagged risks)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--stack", required=True, help="stack name (reads Pulumi.<stack>.yaml)")
    p.add_argument("--stack-file", help="the new side's stack file (default ./Pulumi.<stack>.yaml)")
    old = p.add_mutually_exclusive_group(required=True)
    old.add_argument("--base", help="git revision of the old side (program and stack file as committed there)")
    old.add_argument("--old-stack-file", help="the old side's stack file (this tree's program)")
    p.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    p.add_argument("--out", help="also write the output to this file")
    p.add_argument(
        "--allow",
        action="append",
        default=[],
        choices=sorted(compare.FLAG_CATEGORIES),
        metavar="CATEGORY",
        help=f"a flagged category that does not fail the run: {', '.join(compare.FLAG_CATEGORIES)}",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    new_file = pathlib.Path(args.stack_file) if args.stack_file else pathlib.Path.cwd() / f"Pulumi.{args.stack}.yaml"
    try:
        stack_problem = stack_name_problem(args.stack)
        if stack_problem:
            raise DiffInputError(stack_problem)
        # Checked before either side records: a bad --out found after both recordings costs a minute.
        out = outputs.check_file("--out", pathlib.Path(args.out)) if args.out else None
        if args.base:
            record_old = functools.partial(record_revision, args.base, args.stack, new_file)
            old_label = f"{args.base}:{new_file.name}"
        else:
            old_file = pathlib.Path(args.old_stack_file).resolve()
            record_old = functools.partial(record, REPO, args.stack, old_file, "--old-stack-file")
            old_label = str(args.old_stack_file)
        new, old = both(functools.partial(record, REPO, args.stack, new_file.resolve(), "--stack-file"), record_old)
    except (DiffInputError, outputs.OutputRefused) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    result = compare.compare(old, new)
    progress(f"compared {len(old)} -> {len(new)} resources in {time.perf_counter() - started:.1f}s")
    new_label = str(args.stack_file or new_file.name)
    if args.json:
        text = cli_kit.dumps(report.to_json(result, old_label, new_label, args.allow), indent=1)
    else:
        text = report.markdown(result, old_label, new_label, args.allow)
    print(text)
    if out is not None:
        try:
            outputs.write_file("--out", out, text if text.endswith("\n") else text + "\n")
        except outputs.OutputRefused as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return report.exit_code(result, args.allow)
