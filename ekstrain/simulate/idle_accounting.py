"""Idle paid accelerators, minute by minute, in the categories the spend dashboard draws, and WhenEmpty
consolidation of empty nodes nothing is nominated to.

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ekstrain.simulate.timeline_base import ACCELERATORS, NEVER

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, SimNode, TimelineState


def transient(t: TimelineState, jobs: list[Job]) -> bool:
    """Every job is only restarting or waiting for nodes that are launching (not blocked for good)."""
    return bool(jobs) and all(
        j.not_before > t.now
        or "Karpenter launching" in j.last_wait
        or "until NodeRepair" in j.last_wait
        or "to service at" in j.last_wait
        for j in jobs
    )


def consolidate(t: TimelineState) -> None:
    nominated = t.pending_pools()
    for n in t.nodes:
        empty = n.state == "ready" and not n.holders and n.empty_since is not None and n.pool not in nominated
        empty = empty and n.pool != "system"  # the managed node group is not Karpenter's
        if empty and t.now - (n.empty_since or 0) >= t.mix.consolidate_minutes.get(n.pool, 30):
            n.state = "gone"


def account(t: TimelineState) -> None:
    nominated = t.pending_pools()
    running = {j.name for j in t.jobs if j.state == "running"}
    standing_jobs = [j for j in t.jobs if j.kind == "standing"]  # once per step, not once per node
    for n in t.nodes:
        if n.state == "gone":
            continue
        accel = sum(n.candidate.capacity.get(r, 0.0) for r in ACCELERATORS)
        if not accel:
            continue
        used = accel - sum(max(0.0, n.free.get(r, 0.0)) for r in ACCELERATORS)
        standing = [j for j in standing_jobs if j.name in n.holders]
        if standing:  # slurmd pods hold the node; it computes only while a Slurm job runs there
            slurm_busy = any(
                j.kind == "slurm" and j.state == "running" and t.standing_of(j) in standing for j in t.jobs
            )
            running = running if slurm_busy else running - {j.name for j in standing}
        busy = used if any(h in running for h in n.holders) else 0.0
        idle = accel - busy
        if idle <= 0:
            continue
        if n.state == "launching" and t.now >= n.gate_from and n.gate_from < n.ready_at:
            cat = "health gate pre-flight"
        elif n.state == "launching":
            cat = "launching"
        elif n.state == "unhealthy":
            cat = "unhealthy"
        elif standing and not busy:
            cat = "standing slurmd nodes without a Slurm job"
        elif (n.holders or n.pool in nominated) and not busy and t.short_of_capacity(n, nominated):
            cat = "held while EC2 has no capacity for the rest (insufficient-capacity)"
        elif n.holders and not busy and t.transient([j for j in t.jobs if j.name in n.holders]):
            cat = "held while the job restarts or its other nodes launch"
        elif n.holders and not busy:
            cat = "stranded (held by a job that cannot start)"
        elif n.holders:
            cat = "fragments (part of a node in use)"
        elif n.pool in nominated and t.transient(nominated[n.pool]):
            cat = "held while the job restarts or its other nodes launch"
        elif n.pool in nominated:
            cat = "stranded (launched for a job that cannot start)"
        elif t.mix.consolidate_minutes.get(n.pool, 30) >= NEVER:
            cat = "kept empty (consolidateAfter: Never, a reservation paid anyway)"
        else:
            cat = "consolidateAfter window"
        part = next(iter(n.candidate.labels.get("ekstrain.io/partition", {n.pool})))
        minutes, usd = t.idle.setdefault(part, {}), t.idle_usd.setdefault(part, {})
        price = n.candidate.instance.price_per_hour_usd or 0.0
        minutes[cat] = minutes.get(cat, 0.0) + idle
        usd[cat] = usd.get(cat, 0.0) + price / 60 * idle / accel


def short_of_capacity(t: TimelineState, n: SimNode, nominated: dict[str, list[Job]]) -> bool:
    jobs = [j for j in t.jobs if j.name in n.holders] or nominated.get(n.pool, [])
    return bool(jobs) and any("InsufficientInstanceCapacity" in j.last_wait for j in jobs if j.state == "waiting")
