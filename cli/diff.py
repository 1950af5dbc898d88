"""``ekstrain diff``: what an edit would change, offline, resource by resource.

    ekstrain diff --stack prod --base origin/main            # this tree against a git revision
    ekstrain diff --stack prod --old-stack-file old.yaml     # two stack files, this tree's program
    ekstrain diff ... --json --allow training-nodes          # CI: JSON; exit 1 only on other flags

Each side is recorded in its own process (ekstrain/diff/sides.py: the program under the offline engine, no helm):
for ``--base`` on the tree ``git archive`` exports at that revision, so the old program runs with its own code.
This module reads the flags and prints the progress lines and the report. Exit 0: nothing flagged or all allowed;
1: a flagged change; 2: bad input.
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import sys
import time
from typing import Any

from ekstrain.cli import kit as cli_kit
from ekstrain.diff import compare, report
from ekstrain.diff.sides import (
    REPO,
    DiffInputError,
    base_commit,
    both,
    check_stack_file,
    record,
    record_revision,
)
from ekstrain.facts.names import stack_name_problem
from ekstrain.files import outputs


def progress(line: str) -> None:
    """A progress line on stderr (stdout carries only the report, for --json and pipes)."""
    # One write per line: the two sides report from two threads, and print() writes the text and its newline apart.
    sys.stderr.write(f"ekstrain diff: {line}\n")
    sys.stderr.flush()


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
        check_stack_file(new_file, "--stack-file")
        if args.base:
            base_commit(args.base, new_file)
            record_old = functools.partial(record_revision, args.base, args.stack, new_file, progress)
            old_label = f"{args.base}:{new_file.name}"
        else:
            old_file = pathlib.Path(args.old_stack_file).resolve()
            check_stack_file(old_file, "--old-stack-file")
            record_old = functools.partial(record, REPO, args.stack, old_file, "--old-stack-file", progress)
            old_label = str(args.old_stack_file)
        new, old = both(
            functools.partial(record, REPO, args.stack, new_file.resolve(), "--stack-file", progress), record_old
        )
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
