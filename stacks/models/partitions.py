"""``ekstrain:partitions``: the compute of the platform, one Karpenter NodePool each."""

from __future__ import annotations

import datetime as dt
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ekstrain.stacks.models.base import DNS_LABEL, Model
from ekstrain.stacks.models.tags import SelectorTags

RESERVED_PARTITION_NAMES = ("default", "root")
"""Volcano's built-in queues (default, root) and Slurm's DEFAULT partition line (case-insensitive)."""
MAX_NODES_PER_PARTITION = 2000


class CapacityReservation(Model):
    """On-Demand Capacity Reservations or Capacity Blocks the partition consumes (never buys)."""

    ids: list[str] = Field(default_factory=list)
    """Reservation ids (``cr-...``)."""
    tags: SelectorTags = Field(default_factory=dict)
    """Or select reservations by tags."""
    instance_count: int | None = Field(default=None, ge=1)
    """Instances the reservations hold; maxNodes may not exceed it."""
    type: Literal["default", "capacity-block"] = "default"
    """@default default: On-Demand Capacity Reservations. ``capacity-block``: EC2 Capacity Blocks for ML; the
    NodePool then also requires ``karpenter.k8s.aws/capacity-reservation-type In [capacity-block]`` (Karpenter
    v1.6+, karpenter.sh/docs/tasks/odcrs), so only nodes in a block launch, and the placement group defaults to
    off (a block's instances are co-located by EC2; ``placementGroup: true`` is refused)."""
    start: dt.datetime | None = None
    """Capacity Block only: when the block becomes active, UTC (``2026-12-07T11:30:00Z``, the StartDate
    ``aws ec2 describe-capacity-reservations`` shows). Karpenter launches into it only from then."""
    end: dt.datetime | None = None
    """Capacity Block only: its EndDate, UTC. EC2 reclaims its instances from 30 min before; Karpenter drains
    them 40 min before (ekstrain/layout/capacity_windows.py). SUMMARY lists the window and what runs in it."""
    checkpoint_signal_minutes: int | None = Field(default=None, ge=41, le=24 * 60)
    """Capacity Block only: minutes before ``end`` the jobs on the partition are told to save and exit (their
    ``EKSTRAIN_CHECKPOINT_AT``); more than Karpenter's 40-min drain plus one checkpoint's save. @default none:
    a running job loses the work since its last checkpoint at the drain, so ``ekstrain job render --hours``
    refuses a job that cannot finish inside the window."""

    @field_validator("ids")
    @classmethod
    def _ids(cls, value: list[str]) -> list[str]:
        # EC2 reservation ids (On-Demand Capacity Reservations and Capacity Blocks): cr- and 17 hex digits.
        bad = [v for v in value if not re.fullmatch(r"cr-[0-9a-f]{17}", v)]
        if bad:
            raise ValueError(f"capacity reservation ids look like cr-0123456789abcdef0, got {bad}")
        return value

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"give the time in UTC with a Z, e.g. {value.isoformat()}Z (as EC2 shows it)")
        return value

    @model_validator(mode="after")
    def _one_selector(self) -> CapacityReservation:
        if not self.ids and not self.tags:
            raise ValueError("give the reservation ids or tags")
        window = (self.start, self.end, self.checkpoint_signal_minutes)
        if self.type != "capacity-block" and any(v is not None for v in window):
            raise ValueError(
                "start, end and checkpointSignalMinutes describe a Capacity Block's window (an On-Demand Capacity "
                "Reservation's instances are not reclaimed at its end); set type: capacity-block or remove them"
            )
        if (self.start is None) != (self.end is None):
            raise ValueError("give both start and end of the Capacity Block (its StartDate and EndDate)")
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"end {self.end.isoformat()} is not after start {self.start.isoformat()}")
        if self.checkpoint_signal_minutes is not None and self.end is None:
            raise ValueError("checkpointSignalMinutes counts back from the block's end: give start and end")
        return self


class PartitionConfig(Model):
    name: str = Field(pattern=DNS_LABEL, max_length=40)
    """NodePool, EC2NodeClass, Slurm partition and Volcano queue name."""
    accelerator: Literal["gpu", "trainium"]
    instance_types: list[str] = Field(min_length=1)
    capacity_type: Literal["on-demand", "spot", "reserved"] = "on-demand"
    """@default on-demand. ``reserved`` needs ``capacityReservation``."""
    min_nodes: int = Field(default=0, ge=0)
    """@default 0. Must stay 0 for now: warm nodes need Karpenter's alpha ``StaticCapacity`` gate
    (``NodePool.spec.replicas``), which this platform leaves off (see docs/partitions.md)."""
    max_nodes: int = Field(ge=1, le=MAX_NODES_PER_PARTITION)
    """At most 2000; the EFA subnet must also hold every node's IPs (see docs/validation.md)."""
    efa: bool = True
    """@default true: nodes launch in the EFA subnet with every EFA interface the type supports."""
    placement_group: bool | None = None
    """@default the value of ``efa``: one cluster placement group per NodePool of an EFA partition (per EFA layout
    when its instance types have several, e.g. trainium-trn1 and trainium-trn1n)."""
    capacity_reservation: CapacityReservation | None = None
    root_volume_gib: int = Field(default=500, ge=100, le=16384, alias="rootVolumeGiB")
    """@default 500 GiB gp3, encrypted (images of training containers are large)."""
    consolidate_after: str | None = Field(default=None, pattern=r"^(([0-9]+(s|m|h))+|Never)$")
    """How long a node must be empty before Karpenter removes it. @default 10m for on-demand and
    spot: about a GPU/Trainium node's launch time (EC2 boot, join, device plugins), so a job's restart or
    the next queued job within that window finds the node still there, and no empty node is paid for
    longer than a new one would take to launch (docs/simulate.md). Never for reserved (the reservation is
    paid for whether or not a node runs in it)."""
    weight: int | None = Field(default=None, ge=1, le=100)
    """Karpenter NodePool weight when partitions overlap; @default none."""
    team: str | None = Field(default=None, pattern=DNS_LABEL, max_length=63)
    """The team this partition's nodes are charged to (the ``ekstrain.io/team`` tag on its instances and
    volumes); @default ``ekstrain:cost.team``."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels; @default none. Keys in the karpenter.sh, karpenter.k8s.aws and ekstrain.io
    domains are reserved."""

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value.lower() in RESERVED_PARTITION_NAMES:
            raise ValueError(
                f"{value!r} collides with Volcano's built-in {value.lower()} queue or Slurm's DEFAULT "
                "partition line; choose another name such as gpu-h100"
            )
        return value

    @field_validator("instance_types")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("instance types must be unique")
        return value

    @property
    def wants_placement_group(self) -> bool:
        if self.placement_group is None and self.capacity_block:
            return False  # a Capacity Block's instances are co-located by EC2 already
        return self.efa if self.placement_group is None else self.placement_group

    @property
    def capacity_block(self) -> bool:
        return self.capacity_reservation is not None and self.capacity_reservation.type == "capacity-block"

    @property
    def effective_consolidate_after(self) -> str:
        if self.consolidate_after is not None:
            return self.consolidate_after
        return "Never" if self.capacity_type == "reserved" else "10m"
