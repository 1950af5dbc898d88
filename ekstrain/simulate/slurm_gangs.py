"""Slurm gangs in ``ekstrain simulate --timeline``: the slurmd pods KEDA adds for an sbatch job, admitted together.

A NodeSet whose pod template names a PodGroup (``scheduling.k8s.io/group-name``, assembly/schedulers/slurm.py) puts
its pods in that group, which ekstrain/agents/slurm_gang.py keeps at ``minMember`` = the NodeSet's replicas: Volcano's
gang
plugin binds the pods added for a job only when all of them can run, and the capacity plugin enqueues the group only
when the pending pods' ``minResources`` fit the queue (volcano pkg/scheduler/plugins/gang, capacity.go
``jobEnqueueable``). Without it each pod is admitted on its own (the timeline's default, one pod at a time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ekstrain.simulate.workloads import PodGroup, Workload

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, TimelineState

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def ganged(ns: dict[str, Any] | None) -> bool:
    """The NodeSet's slurmd pods name a PodGroup of their own (the render's gang for the partition)."""
    if ns is None:
        return False
    template = (ns.get("spec") or {}).get("template") or {}
    return bool(((template.get("metadata") or {}).get("annotations") or {}).get(GROUP_ANNOTATION))


def admit_all(tl: TimelineState, job: Job, group: PodGroup, queue: str) -> str | None:
    """Admit every slurmd pod still missing for ``job`` at once, or none; why not (None once admitted)."""
    missing = job.slurm_pods - group.count
    if missing <= 0:
        return None
    blocked = tl.admit(job, Workload(job.name, [PodGroup("slurmd", missing, group.spec)], volcano_queue=queue))
    if blocked is None:
        group.count = job.slurm_pods
        job.admitted_at = job.admitted_at if job.admitted_at is not None else tl.now
        return None
    return f"gang of {missing} slurmd pods (PodGroup minMember = the NodeSet's replicas): {blocked}"
