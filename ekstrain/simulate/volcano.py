"""Volcano admission of a gang on an empty cluster, under the rendered scheduler config.

volcano v1.15 pkg/scheduler/actions/enqueue/enqueue.go moves a PodGroup Pending -> Inqueue only when
every plugin's JobEnqueueable votes yes; the controller creates pods only for Inqueue PodGroups.
- overcommit (plugins/overcommit/overcommit.go): idle x overcommit-factor (1.2) - inqueue >= minResources;
  idle of a resource no node has yet (nvidia.com/gpu, EFA, Neuron with every NodePool at zero) is 0.
- proportion (plugins/proportion/proportion.go): minResources within the queue's realCapability,
  min(capability, cluster total - total guarantee + the queue's guarantee) - again 0 for resources no
  node has yet unless the queue guarantees them.
- capacity (plugins/capacity/capacity.go JobEnqueueableFn): allocated + inqueue + minResources within
  realCapability = min(capability, ExceededPart(total, totalGuarantee) + guarantee); a dimension the
  capability leaves out is bounded by the total alone.
Without ``enqueue`` in ``actions``, allocate moves Pending jobs to Inqueue itself
(actions/allocate/allocate.go, "no enqueue action is configured"), so pods are created and Karpenter sees them.
"""

from __future__ import annotations

import math
from typing import Any

import yaml

ENQUEUE_VOTERS = ("overcommit", "proportion", "capacity")
CHART_DEFAULT_CONFIG = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""
"""volcano chart 1.15.1 config/volcano-scheduler.conf (used when neither an override nor a rendered
ConfigMap is found)."""


def parse_config(text: str | None) -> dict[str, Any]:
    return yaml.safe_load(text or CHART_DEFAULT_CONFIG) or {}


def actions(config: dict[str, Any]) -> list[str]:
    return [a.strip() for a in str(config.get("actions", "")).split(",") if a.strip()]


def plugins(config: dict[str, Any]) -> list[str]:
    return [
        p["name"]
        for tier in config.get("tiers") or []
        for p in tier.get("plugins") or []
        if p.get("enabledJobEnqueued", True) is not False
    ]


def real_capability(
    queue: str,
    queues: dict[str, dict[str, float]],
    guarantees: dict[str, dict[str, float]],
    total: dict[str, float],
    resource: str,
) -> float:
    """realCapability of one resource (capacity.go buildQueueAttrs; proportion.go computes it alike)."""
    guaranteed = sum(g.get(resource, 0.0) for g in guarantees.values())
    real = max(0.0, total.get(resource, 0.0) - guaranteed) + guarantees.get(queue, {}).get(resource, 0.0)
    cap = queues.get(queue, {}).get(resource)
    return real if cap is None else min(real, cap)


def hierarchy_enabled(config: dict[str, Any]) -> bool:
    """The capacity plugin runs with ``enableHierarchy`` (volcano v1.15.1 pkg/scheduler/conf)."""
    return any(
        p.get("name") == "capacity" and p.get("enableHierarchy") is True
        for tier in config.get("tiers") or []
        for p in tier.get("plugins") or []
    )


def ancestry(queue: str, parents: dict[str, str]) -> list[str]:
    """The queue, then its parent, ... up to a queue under root (``spec.parent`` empty or ``root``)."""
    chain = [queue]
    while parents.get(chain[-1]) not in (None, "", "root") and len(chain) < 32:
        chain.append(parents[chain[-1]])
    return chain


def hierarchical_real_capability(
    queue: str,
    queues: dict[str, dict[str, float]],
    guarantees: dict[str, dict[str, float]],
    parents: dict[str, str],
    resource: str,
) -> float:
    """realCapability with ``enableHierarchy`` (capacity.go ``checkHierarchicalQueue``): root's is infinite (its
    capability is empty), a child's is min(capability, ExceededPart(parent's realCapability, the sum of the parent's
    children's guarantees) + its own guarantee); a capability the child does not set is the parent's."""
    parent = parents.get(queue) or "root"
    cap = queues.get(queue, {}).get(resource)
    if parent == "root":
        return math.inf if cap is None else cap
    parent_real = hierarchical_real_capability(parent, queues, guarantees, parents, resource)
    siblings = sum(guarantees.get(q, {}).get(resource, 0.0) for q, p in parents.items() if p == parent)
    real = max(0.0, parent_real - siblings) + guarantees.get(queue, {}).get(resource, 0.0)
    return real if cap is None else min(real, cap)


def enqueue_block(
    config: dict[str, Any],
    requests: dict[str, float],
    idle: dict[str, float],
    queue: str = "default",
    queues: dict[str, dict[str, float]] | None = None,
    guarantees: dict[str, dict[str, float]] | None = None,
    used: dict[str, float] | None = None,
    parents: dict[str, str] | None = None,
    used_by: dict[str, dict[str, float]] | None = None,
) -> str | None:
    """Why the gang's PodGroup stays Pending, or None when it is enqueued. ``idle``: free resources of the
    nodes that exist (the cluster total on an empty one); ``used``: the queue's allocated + inqueue. With a
    hierarchy (``parents``: queue -> spec.parent, and the capacity plugin's ``enableHierarchy``) the job must fit
    its leaf and every ancestor (capacity.go ``checkJobEnqueueableHierarchically``); ``used_by``: allocated +
    inqueue of each queue, a parent's summing its children's."""
    if parents and hierarchy_enabled(config):
        return _hierarchical_block(config, requests, queue, queues or {}, guarantees or {}, parents, used_by or {})
    if "enqueue" not in actions(config):
        return None
    voters = [p for p in plugins(config) if p in ENQUEUE_VOTERS]
    order = sorted((r for r, v in requests.items() if v > 0), key=lambda r: (r in ("cpu", "memory", "pods"), r))
    for voter in voters:
        if voter == "overcommit":
            short = [r for r in order if idle.get(r, 0.0) * 1.2 < requests[r]]
            if short:
                return (
                    f"Volcano enqueue (overcommit) keeps the PodGroup Pending: idle {short[0]} is "
                    f"{idle.get(short[0], 0.0):g} with every NodePool at zero, so no pod is created and Karpenter "
                    "never scales (drop `overcommit` or `enqueue` from the scheduler config)"
                )
            continue
        for r in order:
            real = real_capability(queue, queues or {}, guarantees or {}, idle, r)
            have = (used or {}).get(r, 0.0)
            if have + requests[r] > real + 1e-9:
                return (
                    f"Volcano enqueue ({voter}) keeps the PodGroup Pending: queue {queue} realCapability {r} "
                    f"{real:g} < {have:g} in use + {requests[r]:g} asked"
                    + ("" if have else " (a queue guarantee makes it independent of the nodes that exist)")
                )
    return None


def _hierarchical_block(
    config: dict[str, Any],
    requests: dict[str, float],
    queue: str,
    queues: dict[str, dict[str, float]],
    guarantees: dict[str, dict[str, float]],
    parents: dict[str, str],
    used_by: dict[str, dict[str, float]],
) -> str | None:
    if "enqueue" not in actions(config) or "capacity" not in plugins(config):
        return None
    if any(p == queue for p in parents.values()):
        return (
            f"Volcano capacity (enableHierarchy) refuses a job in {queue}: it has child queues and only leaf "
            "queues hold jobs (capacity.go buildHierarchicalQueueAttrs)"
        )
    order = sorted((r for r, v in requests.items() if v > 0), key=lambda r: (r in ("cpu", "memory", "pods"), r))
    for q in ancestry(queue, parents):
        for r in order:
            real = hierarchical_real_capability(q, queues, guarantees, parents, r)
            have = used_by.get(q, {}).get(r, 0.0)
            if have + requests[r] > real + 1e-9:
                where = f"queue {q}" if q == queue else f"queue {queue}'s parent {q}"
                return (
                    f"Volcano enqueue (capacity, hierarchy) keeps the PodGroup Pending: {where} realCapability {r} "
                    f"{real:g} < {have:g} in use + {requests[r]:g} asked"
                )
    return None


def queue_block(queue: str, queues: dict[str, dict[str, float]], requests: dict[str, float]) -> str | None:
    if queue not in queues:
        return f"Volcano queue {queue!r} does not exist (known: {', '.join(sorted(queues)) or 'none'})"
    cap = queues[queue]
    over = sorted(r for r, v in requests.items() if r in cap and v > cap[r])
    if over:
        return f"queue {queue} capability {over[0]}={cap[over[0]]:g} < gang request {requests[over[0]]:g}"
    return None
