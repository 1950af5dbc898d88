"""Capacity Block windows in the stack (``capacityReservation.start``/``end``/``checkpointSignalMinutes``): the
signal must leave room for one checkpoint before Karpenter's drain; a block without a window or without a signal
is a warning (ekstrain/layout/capacity_windows.py has the sources)."""

from __future__ import annotations

import datetime as dt
import math

from ekstrain.layout import capacity_windows, storage_sizing
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig


def _key(i: int, name: str, field: str) -> str:
    return f"ekstrain:partitions[{i}] ({name}).capacityReservation.{field}"


def save_seconds(cfg: StackConfig) -> int:
    """One checkpoint's write time at the stack's FSx baseline (0 when no checkpoint size is given)."""
    size = cfg.storage.checkpoint.size_gib
    if not size:
        return 0
    fsx = cfg.storage.fsx
    if (
        fsx.deployment_type == "PERSISTENT_2"
        and fsx.per_unit_storage_throughput not in storage_sizing.PERSISTENT_2_TIERS
    ):
        # A tier FSx does not offer has no write time: the storage rule (stacks/rules/storage.py) refuses it with its
        # fix, in the same report, instead of this rule stopping the check with a traceback.
        return 0
    seconds = storage_sizing.save_seconds(
        int(size * storage_sizing.GIB), fsx.deployment_type, fsx.storage_capacity_gib, fsx.per_unit_storage_throughput
    )
    return math.ceil(seconds)


def windows(cfg: StackConfig) -> list[capacity_windows.Window]:
    out = []
    for part in cfg.partitions:
        cr = part.capacity_reservation
        if part.capacity_block and cr is not None and cr.start is not None and cr.end is not None:
            out.append(capacity_windows.Window(part.name, cr.start, cr.end, cr.checkpoint_signal_minutes))
    return out


_DIRECTIONS = {"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw", "central": "c"}


def zone_id_prefix(region: str) -> str:
    """The AZ ID prefix of a region: us-west-2 -> usw2, ap-northeast-1 -> apne1, eu-central-1 -> euc1,
    us-gov-west-1 -> usgw1 (the AZ IDs ``aws ec2 describe-availability-zones`` lists)."""
    parts = region.split("-")
    words = [_DIRECTIONS.get(w, w[0]) for w in parts[1:-1]]
    return parts[0] + "".join(words) + parts[-1]


def zones(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    """The training AZ by ID: its region, and every partition's types offered there (when the stack lists the
    offerings; offline nothing else can know them, ekstrain/facts/offerings.py is by region). Every partition, not only
    the EFA ones: each NodePool requires the training AZ (ekstrain/payloads/karpenter_specs.py ``node_pool``, the
    ``topology.kubernetes.io/zone`` requirement), so a type the zone does not offer never launches anywhere."""
    net = cfg.network
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    zone_id = net.training_availability_zone_id
    if zone_id is None:
        if net.training_zone_instance_types:
            errors.append(
                ConfigIssue(
                    "ekstrain:network.trainingZoneInstanceTypes",
                    "lists offerings of an AZ ID the stack does not name",
                    "add network.trainingAvailabilityZoneId (the ID of trainingAvailabilityZone in your account)",
                )
            )
        return errors, warnings
    prefix = zone_id_prefix(cfg.region)
    if not zone_id.startswith(prefix + "-"):
        errors.append(
            ConfigIssue(
                "ekstrain:network.trainingAvailabilityZoneId",
                f"{zone_id} is not an AZ ID of {cfg.region} (those start with {prefix}-)",
                f"give the ID of {net.training_availability_zone} from `aws ec2 describe-availability-zones "
                f"--region {cfg.region} --query 'AvailabilityZones[].[ZoneName,ZoneId]'`",
            )
        )
        return errors, warnings
    offered = set(net.training_zone_instance_types)
    parts = list(enumerate(cfg.partitions))
    if not offered:
        names = sorted({t for _, p in parts for t in p.instance_types})
        warnings.append(
            f"ekstrain:network.trainingZoneInstanceTypes: the render cannot know whether {', '.join(names)} are "
            f"offered in {zone_id} (the offerings table is by region); list them from `aws ec2 "
            "describe-instance-type-offerings --location-type availability-zone-id --filters "
            f"Name=location,Values={zone_id}`"
        )
        return errors, warnings
    for i, part in parts:
        missing = [t for t in part.instance_types if t not in offered]
        if missing:
            errors.append(
                ConfigIssue(
                    f"ekstrain:partitions[{i}] ({part.name}).instanceTypes",
                    f"{', '.join(missing)} not offered in the training AZ {zone_id} "
                    "(network.trainingZoneInstanceTypes): Karpenter would never launch them there",
                    f"pick a training AZ whose ID offers them, or use {', '.join(sorted(offered)[:5])}"
                    + ("..." if len(offered) > 5 else ""),
                )
            )
    return errors, warnings


def check(cfg: StackConfig, today: dt.date) -> tuple[list[ConfigIssue], list[str]]:
    errors, warnings = zones(cfg)
    save = save_seconds(cfg)
    least = capacity_windows.KARPENTER_DRAIN_MINUTES + math.ceil(save / 60)
    for i, part in enumerate(cfg.partitions):
        cr = part.capacity_reservation
        if not part.capacity_block or cr is None:
            continue
        if cr.end is None:
            warnings.append(
                f"{_key(i, part.name, 'end')}: the Capacity Block's window is not given, so nothing tells running "
                "jobs to checkpoint before EC2 reclaims the instances and SUMMARY cannot list it; add start and end "
                "(StartDate/EndDate of `aws ec2 describe-capacity-reservations`) and checkpointSignalMinutes"
            )
            continue
        if cr.checkpoint_signal_minutes is None:
            warnings.append(
                f"{_key(i, part.name, 'checkpointSignalMinutes')}: no checkpoint signal before the block ends at "
                f"{capacity_windows.stamp(cr.end)}: a job still running at Karpenter's drain "
                f"({capacity_windows.KARPENTER_DRAIN_MINUTES} min before) loses the work since its last checkpoint; "
                f"set checkpointSignalMinutes (at least {least})"
            )
        else:
            late = capacity_windows.signal_too_late(cr.checkpoint_signal_minutes, save)
            if late:
                errors.append(
                    ConfigIssue(
                        _key(i, part.name, "checkpointSignalMinutes"),
                        late + " (storage.checkpoint.sizeGiB at the FSx baseline)",
                        f"set checkpointSignalMinutes to at least {least}",
                    )
                )
        if cr.end.date() < today:
            warnings.append(
                f"{_key(i, part.name, 'end')}: the block ended on {cr.end.date()}: the partition gets no node from it; "
                "put the next block's window (and its id or tags)"
            )
    return errors, warnings


def summary_lines(cfg: StackConfig) -> list[str]:
    """SUMMARY.md's "Capacity Block windows": each block's window, drain and signal, and what runs in it."""
    runs: dict[str, list[str]] = {}
    for w in windows(cfg):
        what = []
        if cfg.schedulers.volcano.enabled:
            teams = [t.name for t in cfg.schedulers.volcano.teams if w.partition in t.guarantees]
            queues = [f"{w.partition}-{t}" for t in teams] + ([f"{w.partition}-shared"] if teams else [w.partition])
            what.append("Volcano queue(s) " + ", ".join(queues))
        if cfg.schedulers.slurm.enabled:
            what.append(f"Slurm partition {w.partition}")
        what.append(
            f"`ekstrain job render --partition {w.partition}` jobs (refused beyond the window without a signal)"
        )
        runs[w.partition] = what
    return capacity_windows.summary_lines(windows(cfg), runs)
