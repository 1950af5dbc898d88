"""``ekstrain simulate --timeline``: a workload mix played minute by minute on a rendered stack.

Pure logic over the :class:`~ekstrain.simulate.engine.Cluster` the build gives and a :class:`Mix` (arrivals,
run times, checkpoints, injected faults). Every consumer of a NodePool's ``limits`` takes nodes from the same
pools: Volcano gangs, pods outside Volcano (MPIJob, TrainJob, Indexed Job, RayJob without Volcano),
JupyterHub notebooks and Slinky slurmd pods (NodeSet replicas standing from the start, scaled up for an
sbatch job when asked). Rules, each with the upstream code it follows:

- Volcano v1.15.1, actions and plugins as the stack renders them (``Cluster.scheduler_config``):
  ``enqueue`` (actions/enqueue/enqueue.go) asks every voter; ``capacity`` (plugins/capacity/capacity.go)
  admits when allocated + inqueue + minResources <= realCapability = min(capability,
  ExceededPart(total, totalGuarantee) + guarantee); ``proportion`` (plugins/proportion/proportion.go)
  shares the ready nodes' cpu and memory between queues with demand by ``weight`` (water-filling, each
  capped by its request) and a queue at its deserved share gets no more tasks; ``overcommit`` votes on
  idle x 1.2; ``gang`` binds a job's pods all or none. Without ``enqueue`` allocate enqueues itself.
- Pods outside Volcano: kube-scheduler binds each pod on its own as soon as a ready node fits it, so a
  job that cannot get all its nodes holds the ones it got (pkg/scheduler, no gang).
- Karpenter v1.14.1: a pending pod no existing or launching node fits makes Karpenter launch a node of
  a NodePool the pod tolerates and selects, unless the pool's ``spec.limits`` (summed over every node of
  the pool, launching ones included) would be exceeded (pkg/controllers/provisioning/scheduling); the
  node is usable after the launch delay (EC2 boot + join + device plugins; ``Mix.launch_minutes``);
  ``WhenEmpty`` removes a node ``consolidateAfter`` after its last pod left unless a pending pod is
  nominated to it (pkg/controllers/disruption/emptiness.go); NodeRepair (feature gate ``nodeRepair``)
  deletes a node whose condition the node monitoring agent set False after the provider's toleration,
  10 min for ``AcceleratedHardwareReady`` (karpenter-provider-aws pkg/cloudprovider/cloudprovider.go
  RepairPolicies); interruption (pkg/controllers/interruption/controller.go) drains at once on a spot
  interruption warning, and on an AWS Health scheduled change only when the stack routes AWS Health
  events to the interruption queue.
- The health gate (ekstrain/payloads/health_gate.py, read from the build: NodePools with its startup taint): a node of
  such a pool takes work only after its pre-flight, ``health_gate.gate_minutes`` after the launch; on a GPU/Neuron
  fault the guard taints the node NoExecute at once, so its pods leave now and no restart lands there (a restart
  that does is a PROBLEM); NodeRepair replaces it ``REPAIR_MINUTES['AcceleratedHardwareReady']`` later.
- Restarts, per controller, from the object: Volcano Job ``maxRetry`` (default 3,
  pkg/controllers/job); MPIJob/PyTorchJob ``runPolicy.backoffLimit``; batch Job ``backoffLimit``
  (default 6, counted in pods for Indexed Jobs); RayJob ``backoffLimit`` (default 0); TrainJob the
  runtime's JobSet ``failurePolicy.maxRestarts`` (default 0, jobset api); Slurm requeues a batch job on
  node failure (slurm.conf ``JobRequeue=1`` default) unless ``--no-requeue``. A restarted job resumes from
  its last checkpoint when its pods carry ``CHECKPOINT_DIR`` and ``RESUME_FROM_CHECKPOINT`` (or an
  sbatch script names them); a drain gives pods ``terminationGracePeriodSeconds``, so a checkpoint that
  takes longer to write than that is lost and the job resumes from the one before.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ekstrain.payloads import health_gate
from ekstrain.simulate import (
    capacity_windows,
    faults,
    health_loops,
    idle_accounting,
    placement,
    slurm_gangs,
    timeline_report,
    volcano_admission,
)
from ekstrain.simulate import topology as net_topology
from ekstrain.simulate.engine import (
    Cluster,
    nodeset_pod,
    nodeset_queue,
    place,
    unserved,
)
from ekstrain.simulate.nodes import Node
from ekstrain.simulate.timeline_base import ACCELERATORS as ACCELERATORS
from ekstrain.simulate.timeline_base import FAULT_KINDS as FAULT_KINDS
from ekstrain.simulate.timeline_base import LOOP_FAULTS as LOOP_FAULTS
from ekstrain.simulate.timeline_base import NEVER as NEVER
from ekstrain.simulate.timeline_base import _clock
from ekstrain.simulate.timeline_state import Arrival as Arrival
from ekstrain.simulate.timeline_state import Fault as Fault
from ekstrain.simulate.timeline_state import Job as Job
from ekstrain.simulate.timeline_state import Mix as Mix
from ekstrain.simulate.timeline_state import Report as Report
from ekstrain.simulate.timeline_state import SimNode as SimNode
from ekstrain.simulate.timeline_state import job_line as job_line
from ekstrain.simulate.workloads import PodGroup, Workload, context, expand
from ekstrain.workloads import registry
from ekstrain.workloads.base import WorkloadKind

# ---- restart and resume rules, read from the objects ---------------------------------------------------


def restart_budget(obj: dict[str, Any], runtimes: dict[str, dict[str, Any]], nodes: int) -> tuple[int, str]:
    """(whole-workload restarts, the rule): the kind's own (ekstrain/workloads)."""
    kind = registry.lookup(obj)
    if kind is None:
        return 0, f"{obj.get('kind')} is not restarted"
    return kind.restart_budget(obj, context(runtimes), nodes)


def resume_rule(obj: dict[str, Any]) -> tuple[bool, str]:
    kind = registry.lookup(obj)
    return (kind or WorkloadKind()).resumes(obj)


# ---- the simulation --------------------------------------------------------------------------------------


class Timeline:
    def __init__(self, cluster: Cluster, mix: Mix) -> None:
        self.cluster, self.mix = capacity_windows.with_spare(cluster, mix.spare_nodes), mix
        self.nodes: list[SimNode] = []
        self.jobs: list[Job] = []
        self.now = 0
        self.idle: dict[str, dict[str, float]] = {}
        self.idle_usd: dict[str, dict[str, float]] = {}
        self.problems: list[str] = []
        self._ident = 0
        self._free_cache: dict[int, dict[str, float]] = {}
        self.karpenter = dataclasses.replace(self.cluster, nodes=[n for n in self.cluster.nodes if n.pool != "system"])
        self.fault_outcomes: list[str] = []
        self._placed: dict[int, tuple[Node | None, str]] = {}
        self.doomed: set[str] = set()
        """Jobs whose next launched node fails its pre-flight (``preflight-fails`` faults)."""
        self.shortages: dict[str, tuple[int, int]] = {}
        """instance type -> (minute EC2 has capacity again, instances it can still launch before then)."""
        self.hanging: set[str] = set()
        """Jobs whose next launched node's pre-flight hangs (``preflight-hangs``)."""
        self.failing_pools: dict[str, int] = {}
        """NodePool -> the minute its nodes stop failing their pre-flight (``preflight-fails-pool``)."""
        self.gate_failures: dict[str, list[int]] = {}
        self.held: dict[str, int] = {}
        """NodePool -> since when the health gate's breaker holds it."""
        self.recycles: dict[str, list[int]] = {}
        """NodePool -> when the guard deleted a node that failed its pre-flight (Karpenter then launches another)."""
        self.flaps: list[tuple[int, int, int, SimNode]] = []
        """(taint minute, start, minutes False, node) of ``condition-flap`` faults the guard acts on."""
        self.block_events: list[str] = []
        self.topology_lines: list[str] = []
        self.topology_notes: dict[str, str] = {}
        """Job -> how its placement missed its network tier (simulate/topology.py ``place``)."""
        self.signalled: dict[str, tuple[int, float]] = {}
        """Jobs writing their checkpoint after a Capacity Block's signal: name -> (minute done, progress saved)."""

    def place(self, g: PodGroup) -> tuple[Node | None, str]:
        """engine.place on the Karpenter pools, once per pod group (the pools do not change)."""
        key = id(g.spec)
        if key not in self._placed:
            self._placed[key] = place(self.karpenter, g)
        return self._placed[key]

    # The methods by concern live beside this module; the class binds them, so a subclass (the page's Recorder)
    # overrides any of them as before.
    # -- placement.py --
    node_free = placement.node_free
    pool_use = placement.pool_use
    can_launch = placement.can_launch
    holders_of = placement.holders_of
    _group_fit = placement._group_fit
    _fits = placement._fits
    _take = placement._take
    release = placement.release
    try_start = placement.try_start
    pool_repairable = placement.pool_repairable
    usable = placement.usable
    insufficient_capacity = placement.insufficient_capacity
    reserved = placement.reserved
    _lands = placement._lands
    pending_pools = placement.pending_pools

    # -- volcano_admission.py --
    queue_used = volcano_admission.queue_used
    cluster_total = volcano_admission.cluster_total
    admit = volcano_admission.admit
    proportion_block = volcano_admission.proportion_block

    # -- faults.py --
    fault = faults.fault
    standing_of = faults.standing_of
    on_node = faults.on_node
    kill_node = faults.kill_node
    fail = faults.fail

    # -- health_loops.py --
    loop_fault = health_loops.loop_fault
    loop_step = health_loops.loop_step
    loop_node = health_loops.loop_node
    gate_failure = health_loops.gate_failure
    loop_recovering = health_loops.loop_recovering
    loop_keeps = health_loops.loop_keeps
    loop_problems = health_loops.loop_problems

    # -- idle_accounting.py --
    transient = idle_accounting.transient
    consolidate = idle_accounting.consolidate
    account = idle_accounting.account
    short_of_capacity = idle_accounting.short_of_capacity

    # -- timeline_report.py --
    conclude = timeline_report.conclude
    launch_minutes_of = timeline_report.launch_minutes_of
    wait_after_admission = timeline_report.wait_after_admission
    waits = timeline_report.waits
    outside_queue = timeline_report.outside_queue

    # -- set-up --
    def system_group(self) -> None:
        """The managed node group's nodes: ready from the start, never more of them."""
        system = next((n for n in self.cluster.nodes if n.pool == "system"), None)
        for _ in range(self.mix.system_nodes if system else 0):
            node = self.launch(system)  # type: ignore[arg-type]
            node.state, node.ready_at, node.empty_since = "ready", 0, None

    def platform_pods(self) -> None:
        """The platform's controllers on the nodes they select (system nodes, mostly): they run from the
        start and hold room that launchers and Ray heads without their own pool would need."""
        for name, replicas, spec in self.cluster.controllers:
            if not replicas:
                continue
            w = Workload(name, [PodGroup("pod", replicas, spec)])
            obj = {"kind": "Deployment", "metadata": {"name": name}}
            self.jobs.append(Job(Arrival(name, obj, 0, 10**9), w, "standing", 0, "", False, ""))

    def standing_jobs(self) -> None:
        for part, ns in sorted(self.cluster.nodesets.items()):
            replicas = int(ns["spec"].get("replicas", 0) or 0)
            if replicas:
                obj = {"kind": "Pod", "metadata": {"name": f"slurmd-{part}"}, "spec": nodeset_pod(ns)}
                w = Workload(f"NodeSet/{ns['metadata']['name']}", [PodGroup("slurmd", replicas, nodeset_pod(ns))])
                w.volcano_queue = nodeset_queue(ns)
                job = Job(Arrival(w.name, obj, 0, 10**9), w, "standing", 0, "", False, "")
                self.jobs.append(job)

    def add(self, a: Arrival) -> None:
        runtimes = {**self.cluster.runtimes, **self.mix.runtimes}
        w = expand(a.obj, runtimes, self.cluster.gang_kinds)
        if w is None:
            return
        described = registry.lookup(a.obj)
        assert described is not None  # expand found it
        kind = described.placement_of(w)
        if kind == "slurm":
            ns = self.cluster.nodesets.get(str(w.slurm.get("partition")))
            w.volcano_queue = nodeset_queue(ns) if ns else None
        nodes = max((g.count for g in w.groups), default=int(w.slurm.get("nodes", 1)) if w.slurm else 1)
        budget, rule = described.restart_budget(a.obj, context(runtimes), nodes)
        resumes, why = described.resumes(a.obj)
        job = Job(a, w, kind, budget, rule, resumes, why)
        missing = unserved(self.cluster, a.obj)
        job.failure = "; ".join([*w.problems, *([missing] if missing else [])])
        if missing:
            w.groups = []
        self.jobs.append(job)

    def launch(self, candidate: Node, for_job: str = "") -> SimNode:
        self._ident += 1
        family = candidate.instance.family if candidate.instance.family in self.mix.launch_minutes else "cpu"
        gate = health_gate.gate_minutes(candidate.instance.family) if candidate.pool in self.mix.gated_pools else 0
        node = SimNode(
            self._ident, candidate, self.now + self.mix.launch_minutes.get(family, 5) + gate, self.node_free(candidate)
        )
        node.gate_from = node.ready_at - gate
        node.nominated = for_job
        if for_job in self.doomed:
            self.doomed.discard(for_job)
            node.sick_from_start = True
        if for_job in self.hanging and node.ready_at > node.gate_from:
            self.hanging.discard(for_job)
            node.hangs = True
        self.nodes.append(node)
        return node

    # -- the clock --
    def step(self) -> None:
        capacity_windows.tick(self)
        for f in self.mix.faults:
            if f.at == self.now:
                self.fault(f)
        self.loop_step()
        if self.mix.upgrade is not None:
            self.mix.upgrade.tick(self)
        for n in self.nodes:
            if self.loop_node(n):
                continue
            if n.state == "launching" and n.ready_at <= self.now:
                n.state, n.empty_since = "ready", self.now
                if n.sick_from_start:  # its pre-flight failed (gated pool): tainted, deleted by its guard later
                    n.state = "unhealthy"
                    if n.pool in self.mix.gated_pools:
                        n.repair_at, n.repair_by = self.now + math.ceil(health_gate.HOLD_SECONDS / 60), "guard"
                        owner = next((j for j in self.jobs if j.name == n.nominated), None)
                        if owner is not None:
                            owner.events.append(
                                f"{_clock(self.now)} node {n.candidate.instance.name} #{n.ident} failed its "
                                "health-gate pre-flight: tainted NoExecute, never took the job, deleted by its guard "
                                f"at {_clock(n.repair_at)}"
                            )
                        self.gate_failure(n)
                    elif self.mix.repair:
                        n.repair_at, n.repair_by = self.now + self.mix.repair_minutes, "NodeRepair"
            due = n.repair_at is not None and n.repair_at <= self.now and n.state != "gone"
            if due and n.repair_by == "NodeRepair" and not self.pool_repairable(n.pool):
                n.repair_at = self.now + 1  # NodeRepair blocked: more than 20% of the pool is unhealthy
                continue
            if due and n.repair_by == "guard" and self.loop_keeps(n):
                continue
            if n.repair_at is not None and n.repair_at <= self.now and n.state != "gone":
                if n.repair_by == "guard" and n.gate_failed_at is not None and not n.retired:
                    self.recycles.setdefault(n.pool, []).append(self.now)
                self.kill_node(n, f"node #{n.ident} replaced (NodeRepair / maintenance window)", drained=True)
        for job in self.jobs:
            if job.state != "waiting" or job.arrival.at > self.now or job.not_before > self.now:
                continue
            if job.failure and not job.workload.groups and not job.workload.slurm:
                job.state, job.ended_at = "failed", self.now
                continue
            self.schedule(job)
        for job in self.jobs:
            if job.state == "running":
                sick = next((n for _, n in job.bound if n.state == "unhealthy"), None)
                if sick is not None and job.started_at == self.now:
                    self.problems.append(
                        f"{job.name} restarted at {_clock(self.now)} onto node #{sick.ident}, marked unhealthy "
                        "(no taint keeps pods off a sick node before NodeRepair replaces it)"
                    )
                    self.fail(job, "started on a node with a GPU fault (same sick node: no NodeRepair yet)")
                    continue
                if job.name in self.signalled:
                    continue  # writing the checkpoint the Capacity Block's signal asked for
                job.progress += 1
                if job.resumes and job.progress - job.last_checkpoint >= self.mix.checkpoint_every:
                    job.last_checkpoint = job.progress
                if job.progress >= job.arrival.runs:
                    job.state, job.ended_at = "finished", self.now
                    self.release(job)
        self.consolidate()
        self.account()
        self.now += 1

    def schedule(self, job: Job) -> None:
        if job.kind == "slurm":
            self.schedule_slurm(job)
            return
        in_queue = job.workload.volcano_queue is not None
        if in_queue and job.admitted_at is None:
            blocked = self.admit(job)
            if blocked:
                self.wait(job, blocked)
                return
            job.admitted_at = self.now
        elif job.admitted_at is None:
            job.admitted_at = self.now
        if in_queue:
            blocked = self.proportion_block(job)
            if blocked:
                self.try_start(job, bind=False)  # the pods exist: Karpenter still launches nodes for them
                self.wait(job, blocked)
                return
        why = self.try_start(job)
        if why is None:
            self.started(job)
        else:
            self.wait(job, why)

    def wait(self, job: Job, why: str) -> None:
        if job.first_started_at is None:
            job.waited[why] += 1
        job.all_waits[why] += 1
        job.last_wait = why

    def started(self, job: Job) -> None:
        job.state, job.started_at = "running", self.now
        net_topology.on_start(self, job)
        if job.first_started_at is None:
            job.first_started_at = self.now

    def schedule_slurm(self, job: Job) -> None:
        part, nodes = str(job.workload.slurm.get("partition")), int(job.workload.slurm.get("nodes", 1))
        ns = self.cluster.nodesets.get(part)
        if ns is None:
            job.state, job.ended_at = "failed", self.now
            job.failure = f"no Slinky NodeSet serves Slurm partition {part!r}"
            return
        standing = next((j for j in self.jobs if j.kind == "standing" and j.name.endswith(f"-{part}")), None)
        have = len(standing.bound) if standing and standing.state == "running" else 0
        busy = sum(
            int(j.workload.slurm.get("nodes", 1)) for j in self.jobs if j.kind == "slurm" and j.state == "running"
        )
        if have - busy >= nodes:
            job.admitted_at = job.admitted_at if job.admitted_at is not None else self.now
            self.started(job)
            return
        if not (self.mix.scale_nodesets or part in self.cluster.autoscaled):
            self.wait(job, f"Slurm holds it: NodeSet {ns['metadata']['name']} has {have - busy} idle slurmd pods")
            return
        # KEDA (or kubectl scale nodeset): the extra slurmd pods are this job's own consumers of the NodePool.
        queue = job.workload.volcano_queue
        if not job.workload.groups:
            job.slurm_pods = nodes - max(0, have - busy)
            # Without a queue every scaled pod is scheduled at once; in one, none is until its queue admits it.
            job.workload.groups = [PodGroup("slurmd", job.slurm_pods if queue is None else 0, nodeset_pod(ns))]
        group = job.workload.groups[0]
        blocked = None
        gang = slurm_gangs.ganged(ns)
        if gang and queue is not None:
            blocked = slurm_gangs.admit_all(self, job, group, queue)
        while not gang and queue is not None and group.count < job.slurm_pods:
            # Each slurmd pod is its own PodGroup (minMember 1) in the partition's queue (volcano
            # pkg/controllers/podgroup/pg_controller_handler.go): enqueue admits them one at a time while the queue
            # has room, so part of a job's pods can be admitted (and hold nodes) while the rest wait.
            blocked = self.admit(job, Workload(job.name, [PodGroup("slurmd", 1, group.spec)], volcano_queue=queue))
            if blocked:
                break
            group.count += 1
            job.admitted_at = job.admitted_at if job.admitted_at is not None else self.now
        if group.count == 0:
            self.wait(job, f"NodeSet scaled by {job.slurm_pods}: {blocked}")
            return
        job.admitted_at = job.admitted_at if job.admitted_at is not None else self.now
        why = self.try_start(job)
        if why is None and group.count == job.slurm_pods:
            self.started(job)
        elif why is None:
            self.wait(
                job,
                f"NodeSet scaled by {job.slurm_pods}: {group.count} slurmd pods run, Slurm waits for the "
                f"{job.slurm_pods - group.count} its queue has not admitted ({blocked})",
            )
        else:
            self.wait(job, f"NodeSet scaled by {job.slurm_pods}: {why}")

    def run(self) -> Report:
        self.system_group()
        self.platform_pods()
        self.standing_jobs()
        for a in sorted(self.mix.arrivals, key=lambda a: a.at):
            self.add(a)
        while self.now < self.mix.minutes:
            self.step()
        self.conclude()
        if self.mix.upgrade is not None:
            lines, problems = self.mix.upgrade.conclude(self)
            self.fault_outcomes += lines
            self.problems += problems
        waits = self.waits() + capacity_windows.lines(self) + self.topology_lines
        return Report(self.jobs, self.idle, self.idle_usd, self.problems, self.fault_outcomes, waits)


def simulate_timeline(cluster: Cluster, mix: Mix) -> Report:
    return Timeline(cluster, mix).run()
