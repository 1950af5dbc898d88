"""``ekstrain storage``: FSx for Lustre checkpoint save time and sizing (the model: ekstrain/layout/storage_sizing.py).

    ekstrain storage --checkpoint-gib 1043 --target-seconds 300 \\
        --deployment-type PERSISTENT_2 --capacity-gib 4800 --throughput 250

Exit 0 when the configured file system meets the target, 1 when not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys

from ekstrain.cli.argtypes import finite_number
from ekstrain.cli.kit import dumps, rounded
from ekstrain.layout.storage_sizing import (
    GIB,
    MAX_CHECKPOINT_GIB,
    MAX_RECOMMENDED_CAPACITY_GIB,
    MAX_TARGET_SECONDS,
    MIN_CAPACITY_GIB,
    MIN_TARGET_SECONDS,
    PERSISTENT_2_TIERS,
    SCRATCH_2_BASELINE,
    gib_to_bytes,
    report,
    to_json,
    valid_capacity,
)


def _capacity(text: str) -> int:
    high = MAX_RECOMMENDED_CAPACITY_GIB
    if len(text.strip().lstrip("+-")) > len(str(high)):
        raise argparse.ArgumentTypeError(
            f"a number of {len(text)} digits is past {high:,} GiB (storageCapacityGiB maximum)"
        )
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of GiB") from None
    if not valid_capacity(value) or value > high:
        # storage.fsx.storageCapacityGiB's range (ekstrain/stacks/models/storage.py): 1200, then n x 2400.
        raise argparse.ArgumentTypeError(f"{value}: use 1200 or a multiple of 2400 up to {high:,}")
    return value


def _checkpoint_gib(text: str) -> float:
    value = finite_number(text, "GiB")
    if not 0 < value <= MAX_CHECKPOINT_GIB:
        raise argparse.ArgumentTypeError(
            f"{value:g} GiB is outside 0 < GiB <= {MAX_CHECKPOINT_GIB:,} (no FSx file system this models holds more);"
            " give the size of one full checkpoint"
        )
    return value


def _checkpoint_bytes(text: str) -> int:
    high = MAX_CHECKPOINT_GIB * GIB
    if len(text.strip().lstrip("+-")) > len(str(high)):
        raise argparse.ArgumentTypeError(
            f"a number of {len(text)} digits is past {high:,} bytes ({MAX_CHECKPOINT_GIB:,} GiB)"
        )
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of bytes") from None
    if not 0 < value <= high:
        raise argparse.ArgumentTypeError(
            f"{value} is outside 1..{high:,} bytes ({MAX_CHECKPOINT_GIB:,} GiB); give the size of one full checkpoint"
        )
    return value


def _target_seconds(text: str) -> float:
    value = finite_number(text, "seconds")
    if not MIN_TARGET_SECONDS <= value <= MAX_TARGET_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{value:g} s is outside {MIN_TARGET_SECONDS:g}..{MAX_TARGET_SECONDS:g} s (a second to a day); "
            "give the longest a checkpoint save may take"
        )
    return value


def _throughput(text: str) -> int:
    if text.strip() not in {str(t) for t in PERSISTENT_2_TIERS}:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a PERSISTENT_2 throughput tier; use one of {', '.join(map(str, PERSISTENT_2_TIERS))}"
        )
    return int(text)


def build_parser(prog: str = "ekstrain storage") -> argparse.ArgumentParser:
    """The flags of ``ekstrain storage``."""
    parser = argparse.ArgumentParser(
        prog=prog, description="FSx for Lustre checkpoint save time and sizing recommendation"
    )
    checkpoint = parser.add_mutually_exclusive_group(required=True)
    checkpoint.add_argument("--checkpoint-bytes", type=_checkpoint_bytes, help="checkpoint size in bytes")
    checkpoint.add_argument("--checkpoint-gib", type=_checkpoint_gib, help="checkpoint size in GiB")
    parser.add_argument("--target-seconds", type=_target_seconds, default=300, help="save time to meet (1-86400)")
    parser.add_argument(
        "--deployment-type", choices=["PERSISTENT_2", "SCRATCH_2"], default="PERSISTENT_2", help="FSx deployment type"
    )
    parser.add_argument(
        "--capacity-gib",
        type=_capacity,
        default=MIN_CAPACITY_GIB,
        metavar="GIB",
        help="configured capacity: 1200 or n x 2400",
    )
    parser.add_argument(
        "--throughput", type=_throughput, default=None, help="MB/s/TiB (PERSISTENT_2 only; default 250)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of one line")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the report: exit 0 when the configured file system meets the target, 1 when not, 2 on bad input."""
    if args.deployment_type == "SCRATCH_2" and args.throughput is not None:
        # SCRATCH_2 has no PerUnitStorageThroughput (FSx CreateFileSystemLustreConfiguration: PERSISTENT only).
        print(
            f"error: --throughput {args.throughput} applies to PERSISTENT_2 only: SCRATCH_2's baseline is fixed at "
            f"{SCRATCH_2_BASELINE} MB/s/TiB; drop --throughput or use --deployment-type PERSISTENT_2",
            file=sys.stderr,
        )
        return 2
    per_unit = args.throughput if args.deployment_type == "PERSISTENT_2" else None
    if args.deployment_type == "PERSISTENT_2" and per_unit is None:
        per_unit = 250
    try:
        size = args.checkpoint_bytes if args.checkpoint_bytes is not None else gib_to_bytes(args.checkpoint_gib)
        result = report(size, args.target_seconds, args.deployment_type, args.capacity_gib, per_unit)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(dumps(rounded(to_json(result))))  # seconds, MB/s and dollars: 2 decimals
    else:
        print(result.summary())
    return 0 if result.meets_target else 1


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
