"""The platform's own loops under fault (ekstrain/payloads/health_gate.py): the pre-flight's deadline, the breaker that
holds a NodePool, the guard's hysteresis on a flapping condition, and the problems they leave.

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ekstrain.payloads import health_gate
from ekstrain.simulate.timeline_base import ACCELERATORS, _clock

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Fault, Job, SimNode, TimelineState


def loop_fault(t: TimelineState, f: Fault, job: Job | None) -> None:
    """``preflight-hangs``, ``preflight-fails-pool`` and ``condition-flap`` (module docstring)."""
    if job is None:
        return
    job.hit_by_fault = True
    if f.kind == "preflight-hangs":
        t.hanging.add(job.name)
        return
    if f.kind == "preflight-fails-pool":
        pools = {c.pool for c in (t.place(g)[0] for g in job.workload.groups) if c is not None}
        accel = [p for p in pools if p in t.mix.gated_pools] or sorted(pools)
        for pool in accel:
            t.failing_pools[pool] = t.now + f.window
            job.events.append(
                f"{_clock(t.now)} every node of NodePool {pool} fails its pre-flight until {_clock(t.now + f.window)}"
            )
        return
    bound = [n for _, n in job.bound if n.state == "ready"]
    node = next((n for n in bound if any(n.candidate.capacity.get(r) for r in ACCELERATORS)), None)
    if node is None:
        t.problems.append(f"fault {f.kind} at {_clock(f.at)}: {f.job} has no node then (not injected)")
        return
    leave = t.mix.leave_after.get("NetworkingReady", 0)
    if f.minutes <= leave:
        job.events.append(
            f"{_clock(t.now)} NetworkingReady=False on #{node.ident} for {f.minutes} min: shorter than the "
            f"guard's {leave}-min threshold, the gang stays"
        )
        return
    t.flaps.append((t.now + leave, t.now, f.minutes, node))


def loop_step(t: TimelineState) -> None:
    """Flaps the guard acts on; pools whose failing window ended: the operator resumes a held one."""
    stated = health_gate.LEAVE_AFTER_SECONDS["NetworkingReady"] // 60
    for at, start, minutes, node in t.flaps:
        if at != t.now or node.state in ("gone", "launching"):
            continue
        node.state = "unhealthy"
        window = health_gate.REPAIR_MINUTES["NetworkingReady"]
        if t.mix.repair and minutes >= window:  # False for NodeRepair's whole window: it replaces the node
            node.repair_at, node.repair_by = start + window, "NodeRepair"
        elif t.mix.recover_minutes is not None:
            node.recover_at = start + minutes + t.mix.recover_minutes
        for victim in t.on_node(node):
            if victim.kind != "standing" and minutes < stated:
                t.problems.append(
                    f"{victim.name}: gang restarted at {_clock(t.now)} by a transient NetworkingReady=False "
                    f"on #{node.ident} ({minutes} min, shorter than the {stated}-min leave threshold)"
                )
            t.fail(victim, f"NetworkingReady=False on #{node.ident}: the guard tainted it NoExecute")
    for pool, until in list(t.failing_pools.items()):
        if t.now < until:
            continue
        del t.failing_pools[pool]
        if pool in t.held:  # fixed: `kubectl patch nodepool <pool> ...breaker-resume` (docs/health.md)
            del t.held[pool]
            t.gate_failures.pop(pool, None)
            for n in t.nodes:
                if n.pool == pool and n.state == "unhealthy" and n.gate_failed_at is not None:
                    n.repair_at, n.repair_by, n.retired = t.now, "guard", True


def loop_node(t: TimelineState, n: SimNode) -> bool:
    """A node's part of the loops this minute; True when the ordinary rules must skip it."""
    if n.recover_at is not None and t.now >= n.recover_at and n.state == "unhealthy":
        n.state, n.recover_at, n.empty_since = "ready", None, t.now  # the guard returned it to service
        return True
    if n.state != "launching" or n.ready_at > t.now:
        return False
    if n.pool in t.failing_pools and t.now < t.failing_pools[n.pool]:
        n.sick_from_start = True
    if not n.hangs:
        return False
    deadline = t.mix.gate_deadline.get(n.pool)
    if deadline is None or t.now < n.gate_from + deadline:
        return True  # its check hangs: the startup taint stays
    n.state, n.empty_since = "unhealthy", t.now
    n.repair_at, n.repair_by = t.now + math.ceil(health_gate.HOLD_SECONDS / 60), "guard"
    owner = next((j for j in t.jobs if j.name == n.nominated), None)
    if owner is not None:
        owner.events.append(
            f"{_clock(t.now)} node #{n.ident}'s pre-flight hung: its guard failed it at the {deadline}-min "
            f"deadline (tainted NoExecute, deleted at {_clock(n.repair_at)})"
        )
    t.gate_failure(n)
    return True


def gate_failure(t: TimelineState, n: SimNode) -> None:
    """One gate failure on the node's pool; the breaker holds the pool at its threshold."""
    n.gate_failed_at = t.now
    failures = t.gate_failures.setdefault(n.pool, [])
    failures.append(t.now)
    rule = t.mix.breaker.get(n.pool)
    if rule is None or n.pool in t.held:
        return
    if sum(1 for when in failures if t.now - when < rule[1]) >= rule[0]:
        t.held[n.pool] = t.now
        for j in t.jobs:
            if j.name == n.nominated:
                j.events.append(
                    f"{_clock(t.now)} NodePool {n.pool}'s breaker held it: {rule[0]} gate failures in "
                    f"{rule[1]} min (limits.nodes 0, failed nodes kept; NodePoolBreakerOpen)"
                )


def loop_recovering(t: TimelineState, pool: str) -> str | None:
    """A full pool whose node the guard took out for a flap: its restart waits for the node's recovery."""
    back = [n for n in t.nodes if n.pool == pool and n.state == "unhealthy" and n.recover_at is not None]
    if not back:
        return None
    n = min(back, key=lambda s: s.recover_at or 0)
    when = _clock(n.recover_at)
    return f"NodePool {pool} full until the guard returns unhealthy node #{n.ident} to service at {when}"


def loop_keeps(t: TimelineState, n: SimNode) -> bool:
    """The guard keeps a failed node while its pool is held."""
    if n.pool in t.held and not n.retired:
        n.repair_at = None
        return True
    return False


def loop_problems(t: TimelineState) -> None:
    """A node held in pre-flight past the gate's stated deadline; recycles past the breaker's threshold."""
    for n in t.nodes:
        if not n.hangs:
            continue
        end = n.gate_failed_at if n.gate_failed_at is not None else t.now
        stated = health_gate.deadline_minutes(n.candidate.instance.family)
        if end - n.gate_from > stated:
            t.problems.append(
                f"node #{n.ident} ({n.pool}) held in its pre-flight {end - n.gate_from} min, past the gate's "
                f"{stated}-min deadline (Karpenter has no initialisation timeout)"
            )
    limit, window = health_gate.BREAKER_FAILURES, health_gate.BREAKER_WINDOW_SECONDS // 60
    for pool, times in sorted(t.recycles.items()):
        past = sum(1 for i, at in enumerate(times) if sum(1 for u in times[: i + 1] if at - u < window) > limit)
        if past:
            t.problems.append(
                f"NodePool {pool}: {len(times)} failed nodes recycled, {past} past the breaker's {limit} in "
                f"{window} min"
            )
