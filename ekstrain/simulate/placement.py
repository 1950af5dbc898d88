"""Where a job's pods go: the nodes Karpenter launches and their free room, binding pods (gang: all or none,
otherwise pod by pod), and what keeps a launch from happening (NodePool limits, the breaker, an EC2 shortage).

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from ekstrain.payloads import health_gate
from ekstrain.simulate import capacity_windows, match
from ekstrain.simulate import topology as net_topology
from ekstrain.simulate.engine import free, per_node
from ekstrain.simulate.nodes import Node
from ekstrain.simulate.timeline_base import _clock
from ekstrain.simulate.workloads import PodGroup

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, SimNode, TimelineState


def node_free(t: TimelineState, candidate: Node) -> dict[str, float]:
    key = id(candidate)
    if key not in t._free_cache:
        t._free_cache[key] = free(t.cluster, candidate)
    return dict(t._free_cache[key])


def pool_use(t: TimelineState, pool: str) -> dict[str, float]:
    use: dict[str, float] = {}
    for n in t.nodes:
        if n.pool == pool and n.state != "gone":
            use["nodes"] = use.get("nodes", 0.0) + 1
            for r, v in n.candidate.capacity.items():
                use[r] = use.get(r, 0.0) + v
    return use


def can_launch(t: TimelineState, candidate: Node) -> str | None:
    if candidate.pool in t.held:
        return (
            f"NodePool {candidate.pool} held by the health gate's breaker since {_clock(t.held[candidate.pool])}"
            " (no launch until the operator resumes it)"
        )
    closed = capacity_windows.closed(t, candidate)
    if closed:
        return closed
    use = t.pool_use(candidate.pool)
    for r, lim in sorted(candidate.pool_limits.items()):
        add = 1.0 if r == "nodes" else candidate.capacity.get(r, 0.0)
        if add and use.get(r, 0.0) + add > lim + 1e-9:
            back = t.loop_recovering(candidate.pool)
            if back:
                return back
            sick = [n for n in t.nodes if n.pool == candidate.pool and n.state == "unhealthy" and n.repair_at]
            if sick:  # full until NodeRepair deletes the sick node (its NodeClaim counts against the pool)
                n = min(sick, key=lambda s: s.repair_at or 0)
                return (
                    f"NodePool {candidate.pool} full until NodeRepair replaces unhealthy node #{n.ident} at "
                    f"{_clock(n.repair_at)}"
                )
            return f"NodePool {candidate.pool} limit {r}={lim:g} reached ({t.holders_of(candidate.pool)})"
    return None


def holders_of(t: TimelineState, pool: str) -> str:
    held: Counter[str] = Counter()
    for n in t.nodes:
        if n.pool == pool and n.state != "gone":
            owners = sorted(n.holders) or ["nobody (launching or empty)"]
            held[owners[0]] += 1
    return "nodes held by " + ", ".join(f"{k} {v}" for k, v in held.most_common())


def _group_fit(t: TimelineState, g: PodGroup) -> tuple[Node | None, str, dict[str, float]]:
    candidate, why = t.place(g)
    return candidate, why, {**match.pod_requests(g.spec), "pods": 1.0}


def _fits(t: TimelineState, node: SimNode, req: dict[str, float]) -> bool:
    return all(node.free.get(r, 0.0) + 1e-9 >= v for r, v in req.items() if v > 0)


def _take(t: TimelineState, node: SimNode, req: dict[str, float], job: Job, g: PodGroup) -> None:
    for r, v in req.items():
        node.free[r] = node.free.get(r, 0.0) - v
    node.holders[job.name] += 1
    node.empty_since = None
    job.bound.append((g, node))


def release(t: TimelineState, job: Job) -> None:
    for g, node in job.bound:
        req = {**match.pod_requests(g.spec), "pods": 1.0}
        for r, v in req.items():
            node.free[r] = node.free.get(r, 0.0) + v
        node.holders[job.name] -= 1
        if node.holders[job.name] <= 0:
            del node.holders[job.name]
        if not node.holders:
            node.empty_since = t.now
    job.bound = []


def try_start(t: TimelineState, job: Job, bind: bool = True) -> str | None:
    """Bind the job's pods (gang: all or none; otherwise pod by pod) and launch nodes for the rest.
    Returns why it is not running, or None once every pod runs."""
    gang = job.kind in ("standing", "slurm", "notebook") or (job.kind == "volcano" and job.workload.gang)
    needs: list[tuple[PodGroup, Node | None, dict[str, float], int]] = []
    for g in job.workload.groups:
        bound_here = sum(1 for bg, _ in job.bound if bg is g)
        if g.count - bound_here <= 0:
            continue
        candidate, why, req = t._group_fit(g)
        if candidate is None and not any(t._lands(g, n) for n in t.nodes):
            return f"{g.role}: {why}"
        needs.append((g, candidate, req, g.count - bound_here))
    if not needs:
        return None
    # What ready nodes can hold now (a trial for gangs), and what still needs a node.
    plan, shortfall = net_topology.fill(t, job, needs)
    if gang and not shortfall:  # the gang within its network tier, or it waits (simulate/topology.py)
        plan, held = net_topology.place(t, job, needs, plan)
        if held:
            return held
    if bind and (not gang or not shortfall):
        for n, req, g in plan:
            t._take(n, req, job, g)
    if not shortfall:
        return None
    # Karpenter: nodes for the pods nothing fits, counting nodes already launching for this pool.
    reason = ""
    for g, candidate, req, missing in shortfall:
        if candidate is None:
            reason = f"{g.role}: waits for room on the system nodes (a fixed node group, no autoscaler)"
            continue
        per = max(1, per_node(req, t.node_free(candidate)))
        launching = sum(
            per_node(req, n.free)
            for n in t.nodes
            if n.state == "launching" and n.pool == candidate.pool and n.nominated in ("", job.name)
        )
        for _ in range(max(0, math.ceil((missing - launching) / per))):
            blocked = t.can_launch(candidate) or t.insufficient_capacity(candidate)
            if blocked:
                reason = blocked
                break
            t.launch(candidate, job.name)
        if not reason:
            reason = f"Karpenter launching {candidate.instance.name} ({candidate.pool})"
    return reason


def pool_repairable(t: TimelineState, pool: str) -> bool:
    """Karpenter repairs a NodePool's node only while at most ``health_gate.REPAIR_UNHEALTHY_PERCENT`` of its
    nodes (rounded up) are unhealthy (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/node/health/controller.go
    ``isNodePoolHealthy``, ``allowedUnhealthyPercent``); nodes still booting are no Node objects yet."""
    nodes = [n for n in t.nodes if n.pool == pool and n.state in ("ready", "unhealthy")]
    sick = sum(1 for n in nodes if n.state == "unhealthy" and n.repair_by == "NodeRepair")
    return sick <= math.ceil(len(nodes) * health_gate.REPAIR_UNHEALTHY_PERCENT / 100)


def usable(t: TimelineState, n: SimNode) -> bool:
    """Ready, or sick without the gate's NoExecute taint (then kube-scheduler still places pods there)."""
    return n.state == "ready" or (n.state == "unhealthy" and n.pool not in t.mix.gated_pools)


def insufficient_capacity(t: TimelineState, candidate: Node) -> str | None:
    """An injected EC2 shortage of the candidate's type: CreateFleet fails with InsufficientInstanceCapacity once
    the window's spare instances are used; Karpenter deletes the NodeClaim, caches the offering as unavailable
    for 3 minutes and the provisioner tries again (karpenter-provider-aws v1.14.1 pkg/cache/cache.go
    UnavailableOfferingsTTL, pkg/providers/instance/instance.go). The pods stay pending and keep what they hold."""
    short = t.shortages.get(candidate.instance.name)
    if short is None or t.now >= short[0]:
        return None
    if short[1] > 0:
        t.shortages[candidate.instance.name] = (short[0], short[1] - 1)
        return None
    return (
        f"Karpenter launching {candidate.instance.name} ({candidate.pool}): InsufficientInstanceCapacity, "
        f"offering unavailable for 3 min, retried until EC2 has capacity ({_clock(short[0])})"
    )


def reserved(t: TimelineState, n: SimNode, job: Job) -> bool:
    """Launched for another job that still waits for it (Karpenter nominated its pods to the node)."""
    if not n.nominated or n.nominated == job.name:
        return False
    owner = next((j for j in t.jobs if j.name == n.nominated), None)
    return owner is not None and owner.state == "waiting"


def _lands(t: TimelineState, g: PodGroup, n: SimNode) -> bool:
    return n.state != "gone" and match.lands(g.spec, n.candidate.labels, n.candidate.taints)


def pending_pools(t: TimelineState) -> dict[str, list[Job]]:
    """NodePool -> the admitted, waiting jobs whose pending pods Karpenter nominates to its nodes."""
    pools: dict[str, list[Job]] = {}
    for j in t.jobs:
        if j.state == "waiting" and j.arrival.at <= t.now and j.admitted_at is not None:
            for g in j.workload.groups:
                candidate, _ = t.place(g)
                if candidate is not None:
                    pools.setdefault(candidate.pool, []).append(j)
    return pools
