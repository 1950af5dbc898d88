"""``ekstrain`` command line: one argparse parser; each area registers its own subcommands.

``ekstrain job ...`` (ekstrain/jobs/cli.py) dispatches through ``args.func``; ``ekstrain plan ...``
(ekstrain/planner/cli.py) through the planner's ``run(args)``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ekstrain.jobs.cli import add_job_commands


def _planner_cli() -> object | None:
    try:  # the planner's CLI module lands on its own branch; jobs must work without it
        from ekstrain.planner import cli as planner_cli
    except ImportError:
        return None
    return planner_cli


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ekstrain", description="ekstrain: EKS distributed-training platform tools")
    subparsers = parser.add_subparsers(dest="command", required=True)
    planner_cli = _planner_cli()
    if planner_cli is not None:
        planner_cli.add_plan_commands(subparsers)  # type: ignore[attr-defined]
    add_job_commands(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    if hasattr(args, "func"):
        return int(args.func(args))
    planner_cli = _planner_cli()
    assert planner_cli is not None, "only the planner registers commands without func"
    return int(planner_cli.run(args))  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
