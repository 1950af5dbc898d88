"""``ekstrain`` command line: one argparse parser; each area registers its own subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ekstrain.planner.cli import add_plan_commands, run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ekstrain")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_plan_commands(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args)
