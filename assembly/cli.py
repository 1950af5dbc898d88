"""``ekstrain`` command line: one argparse parser; each area registers its own subcommands.

``ekstrain plan ...`` comes from ekstrain/planner/cli.py (dispatched by its ``run(args)``),
``ekstrain job ...`` from assembly/jobs/cli.py (dispatched through ``args.func``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ekstrain.assembly.jobs.cli import add_job_commands
from ekstrain.assembly.simulate_cli import add_simulate_command
from ekstrain.cli_types import OneLineParser
from ekstrain.diff.cli import add_diff_command
from ekstrain.planner.cli import add_plan_commands
from ekstrain.planner.cli import run as run_plan


def build_parser() -> argparse.ArgumentParser:
    # Subcommand parsers inherit the class: a bad argument is one line and exit 2.
    parser = OneLineParser(prog="ekstrain", description="ekstrain: EKS distributed-training platform tools")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_plan_commands(subparsers)
    add_job_commands(subparsers)
    add_simulate_command(subparsers)
    add_diff_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(argv) if argv is not None else sys.argv[1:]
    # `ekstrain job render ... -- --lr 1e-4 --foo`: everything after `--` goes to the training script as is.
    script_args: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, script_args = words[:cut], words[cut + 1 :]
    args = build_parser().parse_args(words)
    args.script_args = script_args
    if hasattr(args, "func"):
        return int(args.func(args))
    return run_plan(args)


if __name__ == "__main__":
    sys.exit(main())
