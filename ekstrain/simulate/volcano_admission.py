"""Volcano's admission of a job's PodGroup: the queue's capability and guarantee (capacity plugin), enqueue's
voters, and proportion's deserved share of the ready nodes.

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ekstrain.simulate import match, volcano
from ekstrain.simulate.engine import _min_resources
from ekstrain.simulate.workloads import Workload

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, TimelineState


def queue_used(t: TimelineState, queue: str) -> dict[str, float]:
    """Allocated + inqueue of a queue: its admitted jobs, or with team queues every leaf's under it."""
    used: dict[str, float] = {}
    for j in t.jobs:
        q = j.workload.volcano_queue
        under = q is not None and queue in volcano.ancestry(q, t.cluster.parents)
        mine = under and j.admitted_at is not None
        if mine and j.state in ("waiting", "running"):
            for g in j.workload.groups:
                for r, v in match.pod_requests(g.spec).items():
                    used[r] = used.get(r, 0.0) + v * g.count
    return used


def cluster_total(t: TimelineState) -> dict[str, float]:
    total: dict[str, float] = {}
    for n in t.nodes:
        if n.state in ("ready", "unhealthy"):
            for r, v in t.node_free(n.candidate).items():
                total[r] = total.get(r, 0.0) + v
    return total


def admit(t: TimelineState, job: Job, workload: Workload | None = None) -> str | None:
    """Why Volcano keeps the job's PodGroup (or ``workload``'s: one slurmd pod of an sbatch) Pending, or None."""
    w = workload or job.workload
    queue = str(w.volcano_queue)
    req = _min_resources(w)
    blocked = volcano.queue_block(queue, t.cluster.queues, req)
    if blocked:
        return blocked
    total = t.cluster_total()
    idle = {r: v for r, v in total.items()}
    for j in t.jobs:
        for g, _ in j.bound:
            for r, v in match.pod_requests(g.spec).items():
                idle[r] = idle.get(r, 0.0) - v
    return volcano.enqueue_block(
        t.cluster.scheduler_config,
        req,
        idle,
        queue,
        t.cluster.queues,
        t.cluster.guarantees,
        t.queue_used(queue),
        parents=t.cluster.parents,
        used_by={q: t.queue_used(q) for q in volcano.ancestry(queue, t.cluster.parents)},
    )


def proportion_block(t: TimelineState, job: Job) -> str | None:
    """proportion's overused check: the queue's cpu/memory deserved share of the ready nodes (by weight
    among queues with demand, capped at their request) must cover allocated + this gang."""
    if "proportion" not in volcano.plugins(t.cluster.scheduler_config):
        return None
    total = t.cluster_total()
    demand: dict[str, dict[str, float]] = {}
    for j in t.jobs:
        if j.workload.volcano_queue is not None and j.state in ("waiting", "running"):
            d = demand.setdefault(str(j.workload.volcano_queue), {})
            for g in j.workload.groups:
                for r, v in match.pod_requests(g.spec).items():
                    d[r] = d.get(r, 0.0) + v * g.count
    queue = str(job.workload.volcano_queue)
    for r in ("cpu", "memory"):
        deserved = _water_fill(total.get(r, 0.0), {q: d.get(r, 0.0) for q, d in demand.items()}, t.mix.weights)
        if demand.get(queue, {}).get(r, 0.0) > deserved.get(queue, 0.0) + 1e-6:
            return (
                f"proportion: queue {queue} deserves {deserved.get(queue, 0.0):g} of the ready nodes' {r} "
                f"(weight share, shared with {', '.join(sorted(q for q in demand if q != queue)) or 'nobody'}) "
                f"< {demand[queue][r]:g} its gangs ask"
            )
    return None


def _water_fill(total: float, requests: dict[str, float], weights: dict[str, float]) -> dict[str, float]:
    """proportion.go: deserved shares of ``total`` by weight, each capped at its request, repeated until
    every queue is satisfied or nothing is left."""
    deserved = {q: 0.0 for q in requests}
    remaining, open_ = total, {q for q, r in requests.items() if r > 0}
    for _ in range(len(requests) + 1):
        if remaining <= 1e-9 or not open_:
            break
        weight_sum = sum(weights.get(q, 1.0) for q in open_)
        given = 0.0
        for q in sorted(open_):
            share = remaining * weights.get(q, 1.0) / weight_sum
            grant = min(share, requests[q] - deserved[q])
            deserved[q] += grant
            given += grant
        remaining -= given
        open_ = {q for q in open_ if requests[q] - deserved[q] > 1e-9}
    return deserved
