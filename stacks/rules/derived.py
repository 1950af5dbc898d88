"""Names the program derives, and what a partition's standing pods need.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.facts import names
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.rules.common import _p

# ---- names the program derives, and what a partition's standing pods need ---------------------------------------

VOLCANO_BUILTIN_QUEUES = ("root", "default")
"""Queues Volcano creates itself (volcano v1.15.1 installer: the ``default`` queue, and ``root`` of the hierarchy)."""
QUEUE_NAME_MAX = 63
"""A queue's name is also the value of the ``volcano.sh/queue-name`` annotation's selectors and of the
``ekstrain.io/queue`` label on every pod (Kubernetes label values: at most 63 characters, a DNS-1123 label)."""


def derived_queue_names(cfg: StackConfig) -> list[tuple[str, str]]:
    """Every Volcano queue the program registers, as (name, what it is): one per partition and, in a partition a
    team names, ``<partition>-<team>`` per team and ``<partition>-shared`` (assembly/schedulers/teams.py)."""
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        out.append((part.name, f"partition {part.name}'s queue"))
        named = [t.name for t in teams if part.name in t.guarantees]
        for team in named:
            out.append((f"{part.name}-{team}", f"team {team}'s queue in {part.name}"))
        if named:
            out.append((f"{part.name}-shared", f"the shared queue of {part.name}"))
    return out


def _derived_queue_names(cfg: StackConfig) -> list[ConfigIssue]:
    """Two queues of one name would be two resources of one URN (a traceback at registration) and one Queue
    object in the cluster; a name that is no DNS-1123 label fails the label that carries it."""
    if not cfg.schedulers.volcano.enabled:
        return []
    key = "ekstrain:schedulers.volcano.teams" if cfg.schedulers.volcano.teams else "ekstrain:partitions"
    out: list[ConfigIssue] = []
    seen: dict[str, str] = {}
    for name, what in derived_queue_names(cfg):
        if name in VOLCANO_BUILTIN_QUEUES:
            out.append(ConfigIssue(key, f"{what} would be {name!r}, Volcano's built-in queue", "rename it"))
        elif name in seen and seen[name] != what:
            out.append(
                ConfigIssue(
                    key,
                    f"{what} and {seen[name]} would both be the Volcano queue {name!r}",
                    "rename the team or the partition so that every <partition>, <partition>-<team> and "
                    "<partition>-shared differs",
                )
            )
        elif not names.is_dns_label(name, QUEUE_NAME_MAX):
            out.append(
                ConfigIssue(
                    key,
                    f"{what} would be {name[:80]!r} ({len(name)} characters), not a DNS-1123 label of at most "
                    f"{QUEUE_NAME_MAX}",
                    "shorten the partition or team name",
                )
            )
        seen.setdefault(name, what)
    return out


def _slurmd_room(cfg: StackConfig) -> list[ConfigIssue]:
    """Slurm's standing slurmd pods (nodesetReplicas, one whole node each) run in the partition's shared queue,
    which gets only the nodes no team is guaranteed: guarantees plus standing pods must fit in maxNodes, or the
    NodeSet's pods stay pending forever (Volcano capacity plugin: a guarantee is never lent, capacity.go)."""
    if not (cfg.schedulers.slurm.enabled and cfg.schedulers.volcano.enabled):
        return []
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        guaranteed = sum(t.guarantees.get(part.name, 0) for t in teams)
        standing = cfg.schedulers.slurm.nodeset_replicas.get(part.name, part.min_nodes)
        if guaranteed and standing and guaranteed + standing > part.max_nodes:
            out.append(
                ConfigIssue(
                    f"ekstrain:schedulers.slurm.nodesetReplicas.{part.name}",
                    f"{standing} standing slurmd pods (one node each) and the teams' {guaranteed} guaranteed nodes "
                    f"need {guaranteed + standing} nodes, more than {part.name}'s maxNodes {part.max_nodes}: the "
                    f"pods wait in {part.name}-shared for nodes the guarantees never lend",
                    f"lower nodesetReplicas.{part.name} to {max(part.max_nodes - guaranteed, 0)} or less, lower the "
                    "guarantees, or raise maxNodes",
                )
            )
    return out


CAPACITY_BLOCK_INSTANCE_TYPES = frozenset(
    {
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.4xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
        "p6e-gb200.36xlarge",
        "trn1.32xlarge",
        "trn2.48xlarge",
    }
)
"""Instance types EC2 sells as Capacity Blocks for ML: EC2 User Guide "Capacity Blocks for ML", Supported instance
types and Regions (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html: p4d, p5, p5e,
p5en, trn1, trn2), with the later p4de, p5.4xlarge, p6-b200 and p6e-gb200 of the same offering (SageMaker API
ReservedCapacityInstanceType, botocore 2025-06) and p6-b300 (AWS PCS User Guide, "Using Amazon EC2 Capacity Blocks
for ML": P6-B300, P6-B200, P5en, P5e, P5, P4d)."""


def _capacity_block_types(cfg: StackConfig) -> list[ConfigIssue]:
    out = []
    for i, part in enumerate(cfg.partitions):
        if not part.capacity_block:
            continue
        for j, name in enumerate(part.instance_types):
            if name not in CAPACITY_BLOCK_INSTANCE_TYPES:
                out.append(
                    ConfigIssue(
                        _p(i, part, f"instanceTypes[{j}]"),
                        f"{name} is not sold as an EC2 Capacity Block, so no block can hold this partition's nodes",
                        f"use a Capacity Block type ({', '.join(sorted(CAPACITY_BLOCK_INSTANCE_TYPES))}), or "
                        "capacityReservation.type: default for an On-Demand Capacity Reservation",
                    )
                )
    return out


def names_and_room(cfg: StackConfig) -> list[ConfigIssue]:
    """The derived queue names, the Capacity Block types and the standing slurmd pods' room (one entry for check)."""
    return _derived_queue_names(cfg) + _capacity_block_types(cfg) + _slurmd_room(cfg)
