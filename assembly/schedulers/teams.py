"""Per-team Volcano queues inside a partition (``ekstrain:schedulers.volcano.teams``): which queue a pod names.

Without teams a partition has one queue, named like the partition, and every pod that holds its nodes names it.
With teams (Volcano v1.15 hierarchical queues on the ``capacity`` plugin, ``enableHierarchy``:
docs/design/hierarchical-queue-on-capacity-plugin.md at volcano v1.15.1) the partition's queue is the parent and
only leaf queues hold jobs (the plugin refuses a job in a queue with children: capacity.go
``buildHierarchicalQueueAttrs`` "is not leaf queue"), so every pod names a leaf:

- ``<partition>-<team>`` for a team's jobs (``ekstrain job render --team``);
- ``<partition>-shared`` for Slurm's slurmd pods, JupyterHub notebooks and jobs rendered without a team.

One source of truth for those names: the Queue objects (assembly/schedulers/volcano.py), the NodeSet and notebook
annotations, the job templates and the admission policies (assembly/schedulers/ledger.py) all read them here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

SHARED = "shared"
"""The leaf of a partition with teams for pods that belong to no team (Slurm, notebooks, jobs without ``--team``)."""


def team_queue(partition: str, team: str) -> str:
    return f"{partition}-{team}"


def teams_of(cfg: StackConfig, partition: str) -> list[str]:
    """The teams with a queue in ``partition`` (those that name it in ``guarantees``), in config order."""
    return [t.name for t in cfg.schedulers.volcano.teams if partition in t.guarantees]


def has_teams(cfg: StackConfig, partition: str) -> bool:
    return bool(teams_of(cfg, partition))


def shared_queue(cfg: StackConfig, partition: str) -> str:
    """The queue of pods that belong to no team: the partition's own queue, or its ``-shared`` leaf with teams."""
    return team_queue(partition, SHARED) if has_teams(cfg, partition) else partition


def leaf_queues(cfg: StackConfig) -> dict[str, list[str]]:
    """Partition -> the queues its pods may name (the leaves under it, or the partition's own queue)."""
    out = {}
    for p in cfg.partitions:
        teams = teams_of(cfg, p.name)
        out[p.name] = [team_queue(p.name, t) for t in teams] + [shared_queue(cfg, p.name)] if teams else [p.name]
    return out


def queue_for(cfg: StackConfig, partition: str, team: str | None) -> str:
    """The queue a job of ``team`` (None: no team) names in ``partition``; ValueError with the fix otherwise."""
    if team is None:
        return shared_queue(cfg, partition)
    teams = teams_of(cfg, partition)
    if team not in teams:
        have = ", ".join(teams) if teams else "none"
        raise ValueError(
            f"team {team!r} has no queue in partition {partition} (its teams: {have}); add the partition to the "
            "team's guarantees in ekstrain:schedulers.volcano.teams, or leave --team out (queue "
            f"{shared_queue(cfg, partition)})"
        )
    return team_queue(partition, team)


def hierarchy(cfg: StackConfig) -> bool:
    """The capacity plugin runs with ``enableHierarchy`` when any partition has team queues."""
    return any(has_teams(cfg, p.name) for p in cfg.partitions)
