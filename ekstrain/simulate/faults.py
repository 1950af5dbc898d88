"""Injected faults and what they do to jobs: a lost, interrupted or sick node, an AWS Health notice, an EC2
shortage, and the restart (or failure) of every job on the node by its controller's rule.

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ekstrain.payloads import health_gate
from ekstrain.simulate import match
from ekstrain.simulate.engine import nodeset_pod
from ekstrain.simulate.timeline_base import ACCELERATORS, LOOP_FAULTS, _clock
from ekstrain.simulate.workloads import PodGroup

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Fault, Job, SimNode, TimelineState


def fault(t: TimelineState, f: Fault) -> None:
    job = next((j for j in t.jobs if j.name == f.job), None)
    if f.kind in LOOP_FAULTS:
        t.loop_fault(f, job)
        return
    if f.kind == "preflight-fails" and job is not None:
        job.hit_by_fault = True
        t.doomed.add(job.name)  # the next node launched for it
        return
    if f.kind == "insufficient-capacity" and job is not None:
        groups = list(job.workload.groups)
        ns = t.cluster.nodesets.get(str(job.workload.slurm.get("partition"))) if job.kind == "slurm" else None
        if not groups and ns is not None:  # an sbatch not scaled yet: the slurmd pods KEDA will add
            groups = [PodGroup("slurmd", 1, nodeset_pod(ns))]
        found = [c for c in (t.place(g)[0] for g in groups) if c is not None]
        accel = [c for c in found if any(c.capacity.get(r) for r in ACCELERATORS)] or found
        if accel:
            job.hit_by_fault = job.short_of_capacity = True
            kind = accel[0].instance.name
            t.shortages[kind] = (t.now + f.window, f.nodes)
            job.events.append(f"{_clock(t.now)} EC2 has {f.nodes} more {kind} until {_clock(t.now + f.window)}")
            return
    holder = job
    if job is not None and job.kind == "slurm" and not job.bound:
        # an sbatch job runs on its partition's standing slurmd pods, or on those its NodeSet was scaled by
        holder = t.standing_of(job)
    bound = [n for _, n in holder.bound if n.state != "gone"] if holder else []
    accelerated = [n for n in bound if any(n.candidate.capacity.get(r) for r in ACCELERATORS)]
    node = (accelerated or bound)[0] if bound else None
    if job is None or node is None:
        t.problems.append(f"fault {f.kind} at {_clock(f.at)}: {f.job} has no node then (not injected)")
        return
    job.hit_by_fault = True
    if f.kind == "node-lost":
        t.kill_node(node, f"node {node.candidate.instance.name} #{node.ident} lost")
    elif f.kind == "spot-interruption":
        t.kill_node(node, "spot interruption: Karpenter drained the node (2-minute warning)", drained=True)
    elif f.kind == "node-unhealthy":
        node.state = "unhealthy"
        left = (
            f" (the health gate's guard tainted it {health_gate.UNHEALTHY_TAINT_KEY}:NoExecute and cordoned it: "
            "its pods left at once, Slinky drains a Slurm node there)"
            if node.pool in t.mix.gated_pools
            else ""
        )
        for victim in t.on_node(node):
            t.fail(victim, f"GPU fault on {node.candidate.instance.name} #{node.ident}{left}")
        if t.mix.repair:
            node.repair_at, node.repair_by = t.now + t.mix.repair_minutes, "NodeRepair"
    elif f.kind == "health-notice":
        if t.mix.health_rule:
            t.kill_node(node, "AWS Health notice: Karpenter drained the node on arrival", drained=True)
        else:
            job.events.append(
                f"AWS Health notice at {_clock(t.now)} for {node.candidate.instance.name} #{node.ident}: "
                f"no drain (no aws.health rule), maintenance window at {_clock(t.now + f.window)}"
            )
            node.repair_at = t.now + f.window  # the instance is stopped at the window


def standing_of(t: TimelineState, job: Job) -> Job | None:
    part = str(job.workload.slurm.get("partition"))
    return next((j for j in t.jobs if j.kind == "standing" and j.name.endswith(f"-{part}")), None)


def on_node(t: TimelineState, node: SimNode) -> list[Job]:
    victims = [j for j in t.jobs if j.name in node.holders]
    for standing in [j for j in victims if j.kind == "standing"]:
        victims += [j for j in t.jobs if j.kind == "slurm" and j.state == "running" and t.standing_of(j) is standing]
    return victims


def kill_node(t: TimelineState, node: SimNode, why: str, drained: bool = False) -> None:
    victims = t.on_node(node)
    node.state = "gone"
    grace = f"; pods got {t.mix.grace_seconds} s, a checkpoint takes {t.mix.checkpoint_save_seconds} s"
    for victim in victims:
        short = drained and victim.resumes and t.mix.checkpoint_save_seconds > t.mix.grace_seconds
        t.fail(victim, why + (grace if short else ""))


def fail(t: TimelineState, job: Job, why: str) -> None:
    lost = job.progress - (job.last_checkpoint if job.resumes else 0.0)
    held = sum(match.pod_requests(g.spec).get(r, 0.0) for g, _ in job.bound for r in ACCELERATORS)
    gone = job.progress if job.restarts_left <= 0 and job.kind not in ("standing", "notebook") else lost
    job.lost_accelerator_hours += gone * held / 60
    t.release(job)
    if job.kind == "standing":
        job.state = "waiting"
        return
    if job.kind == "notebook":
        job.state, job.ended_at, job.failure = "failed", t.now, f"{why} (a notebook is not restarted)"
        return
    if job.restarts_left <= 0:
        job.state, job.ended_at = "failed", t.now
        job.failure = f"{why}; no restart left ({job.restart_rule})"
        return
    job.restarts_left -= 1
    job.restarts += 1
    job.progress = job.last_checkpoint if job.resumes else 0.0
    resumed = (
        f"resumes from its checkpoint at {job.last_checkpoint:.0f} min, {lost:.0f} min lost"
        if job.resumes
        else f"starts over, {lost:.0f} min lost ({job.resume_why})"
    )
    job.events.append(f"{_clock(t.now)} {why}: restarted ({job.restart_rule}), {resumed}")
    job.state, job.started_at, job.not_before = "waiting", None, t.now + t.mix.restart_minutes
