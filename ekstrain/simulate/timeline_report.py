"""The end of a timeline: each job's outcome, the problems that make it exit 1, and the waits summary.

Functions of a :class:`~ekstrain.simulate.timeline.Timeline` (its methods: the class binds them), split from
timeline.py by concern; the rules and their upstream sources are in timeline.py's docstring.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ekstrain.payloads import health_gate
from ekstrain.simulate import match, notebooks
from ekstrain.simulate.engine import nodeset_pod
from ekstrain.simulate.timeline_base import ACCELERATORS, _clock
from ekstrain.simulate.workloads import PodGroup

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, TimelineState


def conclude(t: TimelineState) -> None:
    """Problems (exit 1): a job that failed or did not finish with no injected fault to blame, a starved
    queue, a gang admitted but unbindable, idle paid nodes beyond launch and consolidation. A job an
    injected fault hit gets one FAULT line: resumed from its checkpoint, or why not."""
    for j in t.jobs:
        if j.kind == "standing":
            continue
        if j.hit_by_fault:
            outcome = (
                f"finished {_clock(j.ended_at)} after {j.restarts} restart(s)"
                if j.state == "finished"
                else f"{j.state}: {j.failure or 'did not finish in time'}"
            )
            if not j.restarts and j.state == "failed":
                how = "not restarted"
            elif not j.restarts and any("failed its health-gate pre-flight" in e for e in j.events):
                how = "not restarted: its node failed the pre-flight and never took it"
            elif not j.restarts and j.short_of_capacity:
                late = t.wait_after_admission(j)
                how = "launch failed for lack of EC2 capacity" + (
                    f", started {late[0]} min after admission" if late else ""
                )
            elif not j.restarts:
                how = "not restarted (the fault did not stop it)"
            elif j.resumes:
                how = "resumed from its checkpoint"
            else:
                how = f"not resumed: {j.resume_why}"
            t.fault_outcomes.append(f"FAULT {j.name}: {how}; {outcome}")
            if j.state == "failed":
                continue  # the FAULT line says why it did not resume
        if j.state == "failed" and not j.hit_by_fault:
            t.problems.append(f"{j.name} failed: {j.failure}")
        elif j.state not in ("finished", "failed"):
            top = j.waited.most_common(1)
            t.problems.append(
                f"{j.name} did not finish in {t.mix.minutes // 60} h"
                + (f": {top[0][1]} min {top[0][0]}" if top else "")
            )
        starved = sum(m for r, m in j.all_waits.items() if r.startswith("proportion"))
        if starved:
            t.problems.append(f"{j.name}: starved by proportion for {starved} min")
        if j.workload.volcano_queue is not None and any("limit" in r for r in j.all_waits):
            t.problems.append(f"{j.name}: admitted by its queue but unbindable at the NodePool limit")
        manual = sum(m for r, m in j.all_waits.items() if r.startswith("Slurm holds it"))
        if manual:  # only a hand-run `kubectl scale nodeset` would have started it
            t.problems.append(f"{j.name}: waited {manual} min for a NodeSet nobody scales (no autoscale)")
        bypass = t.outside_queue(j)
        if bypass:
            t.problems.append(bypass)
        late = t.wait_after_admission(j)
        if late is not None and late[0] > late[1] and not j.hit_by_fault:
            t.problems.append(
                f"{j.name}: started {late[0]} min after its queue admitted it, more than a node launch "
                f"({late[1]} min): admitted before its nodes could be had"
            )
    timed_out, gave_up = notebooks.timeouts(t)
    t.problems += timed_out
    t.fault_outcomes += gave_up
    t.loop_problems()
    for part, cats in t.idle.items():
        stranded = sum(v for k, v in cats.items() if k.startswith("stranded"))
        if stranded:
            t.problems.append(f"{part}: {stranded / 60:.1f} idle paid accelerator-hours on stranded nodes")
        standing = cats.get("standing slurmd nodes without a Slurm job", 0.0)
        if standing:  # never empty, so WhenEmpty never removes them: idle beyond the consolidation policy
            t.problems.append(
                f"{part}: {standing / 60:.1f} idle paid accelerator-hours on slurmd nodes without a Slurm job, "
                "kept beyond the partition's consolidateAfter (schedulers.slurm.nodesetReplicas floor)"
            )


def launch_minutes_of(t: TimelineState, j: Job) -> int:
    """A node launch for the job: the longest launch time of the families its pods land on, with the health
    gate's pre-flight on a gated NodePool (the node takes work only after it)."""
    minutes = [0]
    groups = list(j.workload.groups)
    ns = t.cluster.nodesets.get(str(j.workload.slurm.get("partition"))) if j.kind == "slurm" else None
    if not groups and ns is not None:  # an sbatch on standing slurmd pods: its partition's nodes
        groups = [PodGroup("slurmd", 1, nodeset_pod(ns))]
    for g in groups:
        candidate = t.place(g)[0]
        if candidate is not None and candidate.pool != "system":
            family = candidate.instance.family if candidate.instance.family in t.mix.launch_minutes else "cpu"
            gate = health_gate.gate_minutes(candidate.instance.family) if candidate.pool in t.mix.gated_pools else 0
            minutes.append(t.mix.launch_minutes.get(family, 5) + gate)
    return max(minutes)


def wait_after_admission(t: TimelineState, j: Job) -> tuple[int, int] | None:
    """(minutes from its queue's admission to its first start, a node launch) for a job in a Volcano queue."""
    if j.workload.volcano_queue is None or j.kind == "standing":
        return None
    if j.admitted_at is None or j.first_started_at is None:
        return None
    return j.first_started_at - j.admitted_at, t.launch_minutes_of(j)


def waits(t: TimelineState) -> list[str]:
    """The summary of waits: the longest after admission (Volcano and sbatch) and from an sbatch's arrival."""
    after = [(w[0], w[1], j.name) for j in t.jobs if (w := t.wait_after_admission(j)) is not None]
    hit = sum(1 for j in t.jobs if j.hit_by_fault and (w := t.wait_after_admission(j)) is not None and w[0] > w[1])
    sbatch = [
        (j.first_started_at - j.arrival.at, t.launch_minutes_of(j), j.name)
        for j in t.jobs
        if j.kind == "slurm" and j.first_started_at is not None
    ]
    out = []
    if after:
        worst = max(after)
        out.append(
            f"WAITS after admission (queue to running): longest {worst[0]} min ({worst[2]}; a node launch is "
            f"{worst[1]} min), {sum(1 for a in after if a[0] > a[1])} of {len(after)} longer than a node launch"
            + (f" ({hit} hit by an injected fault)" if hit else "")
        )
    if sbatch:
        worst = max(sbatch)
        out.append(
            f"WAITS sbatch arrival to start: longest {worst[0]} min ({worst[2]}; a node launch is {worst[1]} min), "
            f"{sum(1 for a in sbatch if a[0] > a[1])} of {len(sbatch)} longer than a node launch"
        )
    return out


def outside_queue(t: TimelineState, j: Job) -> str | None:
    """A job whose accelerator pods bypass the Volcano queue of their partition: they take the NodePool's
    nodes while the queue's capability still counts them free, so the queue admits gangs that then stop
    at the NodePool limit. The timeline gives them nodes like any pod; this says so."""
    if j.kind != "pods" or not t.cluster.scheduler_config:
        return None
    for g in j.workload.groups:
        accel = sum(match.pod_requests(g.spec).get(r, 0.0) for r in ACCELERATORS)
        part = (g.spec.get("nodeSelector") or {}).get("ekstrain.io/partition")
        if accel and part in t.cluster.queues:
            return (
                f"{j.name}: {g.count} {g.role} pod(s) with accelerators bypass Volcano queue {part} (no "
                f"schedulerName volcano / PodGroup): they take NodePool nodes the queue counts as free"
            )
    return None
