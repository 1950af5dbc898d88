"""``ekstrain`` command line: subcommands are registered by the modules that own them."""

from __future__ import annotations

import argparse
import sys

from ekstrain.jobs.cli import add_job_commands


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ekstrain", description="ekstrain: EKS distributed-training platform tools")
    sub = p.add_subparsers(dest="command", required=True)
    add_job_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
