"""FSx for Lustre sizing for checkpoints: how long a save takes, and what would meet a target.

Pure functions, used by the config rules (a warning when the configured file system cannot save
``storage.checkpoint.sizeGiB`` within ``targetSaveSeconds``), by the offline render, and by ``ekstrain storage``
(its flags and printing: ekstrain/cli/storage.py):

    ekstrain storage --checkpoint-gib 1043 --target-seconds 300 \\
        --deployment-type PERSISTENT_2 --capacity-gib 4800 --throughput 250

Model and assumptions (state them wherever the numbers are shown):

- File-system throughput is the *baseline* disk throughput: capacity in TiB x per-unit throughput
  (PERSISTENT_2: the configured 125/250/500/1000 MB/s/TiB; SCRATCH_2: 200 MB/s/TiB). Burst credits
  (SCRATCH_2 bursts to 1300 MB/s/TiB) and the server cache are ignored, so real saves can be faster.
- Writers are not the bottleneck: enough ranks write shards in parallel to saturate the file system
  (a single client is limited by its network, roughly 1.2 GB/s per Lustre client connection).
- MB is 10^6 bytes (AWS throughput units); capacities are GiB/TiB (2^30 / 2^40 bytes).
- The whole checkpoint is written each save (no incremental saves) and compression (LZ4) gains
  nothing (optimizer state in bf16/fp32 compresses poorly).
- The asynchronous export to S3 (auto-export) starts after files are closed; it is not part of the
  save time, but it uses file-system throughput while it runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

DeploymentType = Literal["SCRATCH_2", "PERSISTENT_2"]

GIB = 2**30
TIB = 2**40
MB = 10**6

PERSISTENT_2_TIERS = (125, 250, 500, 1000)
"""Per-unit storage throughput offered for PERSISTENT_2 SSD, MB/s/TiB."""
SCRATCH_2_BASELINE = 200
"""SCRATCH_2 baseline throughput, MB/s/TiB (not configurable)."""
MIN_CAPACITY_GIB = 1200
CAPACITY_STEP_GIB = 2400
"""SSD capacities: 1200 GiB, then multiples of 2400 GiB (SCRATCH_2 and PERSISTENT_2)."""
MAX_RECOMMENDED_CAPACITY_GIB = 2400 * 1000
"""Search bound for recommendations (2.3 PiB); beyond it the target is called unreachable."""

# Approximate us-east-1 list prices (USD per GB-month) for ranking options by cost only.
# Checked against the FSx for Lustre pricing page in 2025; confirm for your region before buying.
PRICE_PER_GIB_MONTH: dict[tuple[str, int], float] = {
    ("SCRATCH_2", SCRATCH_2_BASELINE): 0.140,
    ("PERSISTENT_2", 125): 0.145,
    ("PERSISTENT_2", 250): 0.210,
    ("PERSISTENT_2", 500): 0.340,
    ("PERSISTENT_2", 1000): 0.600,
}


def valid_capacity(capacity_gib: int) -> bool:
    return capacity_gib == MIN_CAPACITY_GIB or (
        capacity_gib >= CAPACITY_STEP_GIB and capacity_gib % CAPACITY_STEP_GIB == 0
    )


def per_unit_throughput(deployment_type: DeploymentType, per_unit: int | None) -> int:
    """MB/s/TiB actually delivered: the tier for PERSISTENT_2, the fixed baseline for SCRATCH_2."""
    if deployment_type == "SCRATCH_2":
        return SCRATCH_2_BASELINE
    if per_unit not in PERSISTENT_2_TIERS:
        raise ValueError(f"PERSISTENT_2 throughput must be one of {PERSISTENT_2_TIERS}, got {per_unit}")
    return per_unit


def throughput_mb_s(deployment_type: DeploymentType, capacity_gib: int, per_unit: int | None) -> float:
    """Baseline aggregate throughput of a file system in MB/s."""
    return capacity_gib / 1024 * per_unit_throughput(deployment_type, per_unit)


def save_seconds(
    checkpoint_bytes: int, deployment_type: DeploymentType, capacity_gib: int, per_unit: int | None
) -> float:
    """Seconds to write one checkpoint at the file system's baseline throughput."""
    if checkpoint_bytes < 0:
        raise ValueError("checkpoint size must be >= 0 bytes")
    return checkpoint_bytes / (throughput_mb_s(deployment_type, capacity_gib, per_unit) * MB)


@dataclass(frozen=True, kw_only=True)
class Option:
    deployment_type: DeploymentType
    capacity_gib: int
    per_unit_throughput: int
    throughput_mb_s: float
    save_seconds: float
    usd_per_month: float


def _option(checkpoint_bytes: int, deployment_type: DeploymentType, capacity_gib: int, per_unit: int) -> Option:
    return Option(
        deployment_type=deployment_type,
        capacity_gib=capacity_gib,
        per_unit_throughput=per_unit,
        throughput_mb_s=throughput_mb_s(deployment_type, capacity_gib, per_unit),
        save_seconds=save_seconds(checkpoint_bytes, deployment_type, capacity_gib, per_unit),
        usd_per_month=capacity_gib * PRICE_PER_GIB_MONTH[(deployment_type, per_unit)],
    )


def smallest_capacity(
    checkpoint_bytes: int,
    target_seconds: float,
    deployment_type: DeploymentType,
    per_unit: int,
    min_capacity_gib: int = MIN_CAPACITY_GIB,
) -> int | None:
    """Smallest valid capacity >= ``min_capacity_gib`` that saves within the target; None if unreachable."""
    if target_seconds <= 0:
        raise ValueError("target must be > 0 seconds")
    rate = per_unit_throughput(deployment_type, per_unit)
    # bytes / (GiB/1024 * rate * MB) <= target  <=>  GiB >= bytes * 1024 / (rate * MB * target)
    needed = max(checkpoint_bytes * 1024 / (rate * MB * target_seconds), min_capacity_gib)
    if needed <= MIN_CAPACITY_GIB:
        capacity = MIN_CAPACITY_GIB
    else:
        capacity = math.ceil(needed / CAPACITY_STEP_GIB) * CAPACITY_STEP_GIB
    # Guard against float rounding at the boundary.
    while (
        capacity <= MAX_RECOMMENDED_CAPACITY_GIB
        and save_seconds(checkpoint_bytes, deployment_type, capacity, per_unit) > target_seconds
    ):
        capacity = CAPACITY_STEP_GIB if capacity < CAPACITY_STEP_GIB else capacity + CAPACITY_STEP_GIB
    return capacity if capacity <= MAX_RECOMMENDED_CAPACITY_GIB else None


def recommend(
    checkpoint_bytes: int,
    target_seconds: float,
    deployment_type: DeploymentType = "PERSISTENT_2",
    min_capacity_gib: int = MIN_CAPACITY_GIB,
) -> Option | None:
    """Cheapest (capacity, tier) of ``deployment_type`` that saves the checkpoint within the target.

    ``min_capacity_gib`` keeps room for data (e.g. the configured capacity). Ties go to the higher
    tier (same cost, more headroom). None when even the search bound cannot meet the target.
    """
    tiers = (SCRATCH_2_BASELINE,) if deployment_type == "SCRATCH_2" else PERSISTENT_2_TIERS
    options = []
    for tier in tiers:
        capacity = smallest_capacity(checkpoint_bytes, target_seconds, deployment_type, tier, min_capacity_gib)
        if capacity is not None:
            options.append(_option(checkpoint_bytes, deployment_type, capacity, tier))
    if not options:
        return None
    return min(options, key=lambda o: (o.usd_per_month, -o.per_unit_throughput))


@dataclass(frozen=True, kw_only=True)
class SaveReport:
    checkpoint_bytes: int
    target_seconds: float
    configured: Option
    recommended: Option | None
    """Cheapest option meeting the target with at least the configured capacity (same deployment type)."""

    @property
    def meets_target(self) -> bool:
        return self.configured.save_seconds <= self.target_seconds

    def summary(self) -> str:
        c = self.configured
        head = (
            f"checkpoint {self.checkpoint_bytes / GIB:,.1f} GiB on {c.deployment_type} {c.capacity_gib} GiB @ "
            f"{c.per_unit_throughput} MB/s/TiB ({c.throughput_mb_s:,.0f} MB/s baseline): "
            f"save {c.save_seconds:,.0f} s, target {self.target_seconds:,.0f} s -> "
            f"{'OK' if self.meets_target else 'TOO SLOW'}"
        )
        r = self.recommended
        if r is None:
            return head + "; no capacity/tier of this deployment type meets the target"
        return (
            head + f"; cheapest meeting the target: {r.capacity_gib} GiB @ {r.per_unit_throughput} MB/s/TiB "
            f"({r.save_seconds:,.0f} s, ~${r.usd_per_month:,.0f}/month)"
        )


def report(
    checkpoint_bytes: int,
    target_seconds: float,
    deployment_type: DeploymentType,
    capacity_gib: int,
    per_unit: int | None,
) -> SaveReport:
    """Save time of the configured file system and the cheapest configuration that meets the target."""
    tier = per_unit_throughput(deployment_type, per_unit)
    return SaveReport(
        checkpoint_bytes=checkpoint_bytes,
        target_seconds=target_seconds,
        configured=_option(checkpoint_bytes, deployment_type, capacity_gib, tier),
        recommended=recommend(checkpoint_bytes, target_seconds, deployment_type, capacity_gib),
    )


def gib_to_bytes(gib: float) -> int:
    return round(gib * GIB)


MAX_CHECKPOINT_GIB = 1_000_000
"""Largest checkpoint the sizing takes (as ``storage.checkpoint.sizeGiB``): 1,000,000 GiB is under the largest file
system the recommendation searches (MAX_RECOMMENDED_CAPACITY_GIB); a bigger checkpoint fits on no FSx it models."""
MIN_TARGET_SECONDS = 1.0
MAX_TARGET_SECONDS = 86400.0
"""A save target between a second and a day (``storage.checkpoint.targetSaveSeconds`` allows 10-86400): below a
second the required capacity overflows any file system; checkpoints are saved more often than daily."""


def to_json(result: SaveReport) -> dict[str, object]:
    return {
        "checkpoint_bytes": result.checkpoint_bytes,
        "target_seconds": result.target_seconds,
        "meets_target": result.meets_target,
        "configured": asdict(result.configured),
        "recommended": asdict(result.recommended) if result.recommended else None,
    }
