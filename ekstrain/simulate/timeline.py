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
- The health gate (ekstrain/health_gate.py, read from the build: NodePools with its startup taint): a node of
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
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ekstrain import cold_start, health_gate
from ekstrain.simulate import capacity_windows, match, notebooks, slurm_gangs, volcano
from ekstrain.simulate import topology as net_topology
from ekstrain.simulate.engine import (
    Cluster,
    _min_resources,
    free,
    nodeset_pod,
    nodeset_queue,
    per_node,
    place,
    unserved,
)
from ekstrain.simulate.nodes import Node
from ekstrain.simulate.workloads import PodGroup, Workload, expand

FAULT_KINDS = (
    "node-lost",
    "node-unhealthy",
    "health-notice",
    "spot-interruption",
    "insufficient-capacity",
    "preflight-fails",
    "preflight-hangs",
    "preflight-fails-pool",
    "condition-flap",
)
"""``preflight-fails``: the next node Karpenter launches for the job is sick from the start (ekstrain/health_gate.py:
its pre-flight fails, the guard taints it NoExecute and deletes it ``HOLD_SECONDS`` later). The platform's own loops
(:meth:`Timeline.loop_fault`): ``preflight-hangs``: a check of the next node launched for the job never returns;
``preflight-fails-pool``: every node of the job's NodePool fails its pre-flight for ``windowHours`` (then the cause is
fixed and, if the breaker held the pool, the operator resumes it); ``condition-flap``: the job's node reports
NetworkingReady=False for ``minutes``, then True again."""
LOOP_FAULTS = ("preflight-hangs", "preflight-fails-pool", "condition-flap")
ACCELERATORS = ("nvidia.com/gpu", "aws.amazon.com/neuron")
NEVER = 10**9
"""``consolidateAfter: Never`` in minutes (ekstrain/simulate/mix.py: reserved partitions keep empty nodes)."""


@dataclass(frozen=True)
class Arrival:
    name: str
    obj: dict[str, Any]
    at: int
    """Minute of submission."""
    runs: int
    """Minutes of training the job needs (without restarts)."""


@dataclass(frozen=True)
class Fault:
    at: int
    kind: str
    job: str
    """The job whose (first) node is hit."""
    window: int = 0
    """health-notice: minutes from the notice to the maintenance window; insufficient-capacity: how long EC2 has
    no more instances of the job's type."""
    nodes: int = 0
    """insufficient-capacity: instances of the type EC2 can still launch in the window (the first launches succeed,
    the rest fail with InsufficientInstanceCapacity)."""
    minutes: int = 0
    """condition-flap: how long the condition stays False."""


@dataclass
class Mix:
    arrivals: list[Arrival]
    faults: list[Fault] = field(default_factory=list)
    minutes: int = 48 * 60
    checkpoint_every: int = 30
    checkpoint_save_seconds: int = 843
    """One checkpoint's write time; ``ekstrain simulate --timeline`` sets it from the stack's FSx
    (``mix.stack_checkpoint_seconds``) unless the mix file gives ``checkpointSaveSeconds``."""
    checkpoint_save_given: bool = False
    grace_seconds: int = 120
    launch_minutes: dict[str, int] = field(default_factory=lambda: dict(cold_start.LAUNCH_MINUTES))
    repair: bool = False
    """Karpenter nodeRepair on and the node monitoring agent installed (both read from the build)."""
    health_rule: bool = False
    """AWS Health events routed to Karpenter's interruption queue (read from the build)."""
    repair_minutes: int = health_gate.REPAIR_MINUTES["AcceleratedHardwareReady"]
    gated_pools: set[str] = field(default_factory=set)
    """NodePools whose nodes carry the health gate's startup taint (from the build): a launch takes the pre-flight
    too, and the gate's guard taints a sick node NoExecute at once (ekstrain/health_gate.py)."""
    consolidate_minutes: dict[str, int] = field(default_factory=dict)
    """NodePool -> consolidateAfter in minutes (from the build; 30 when unknown)."""
    weights: dict[str, float] = field(default_factory=dict)
    """Volcano queue -> spec.weight (proportion)."""
    scale_nodesets: bool = False
    """Assume someone scales a NodeSet by hand before each sbatch (``kubectl scale nodeset``); @default false: only
    a KEDA-scaled NodeSet (cluster.autoscaled) grows by itself, any other sbatch waits and counts as a problem."""
    system_nodes: int = 3
    """The system node group's desired size: fixed nodes, no autoscaler."""
    restart_minutes: int = 5
    """From a failure to the restarted pods running again (controller backoff, pod creation, start-up)."""
    runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-job TrainingRuntimes the workload files bring with their TrainJobs (assembly/jobs/trainjob.py)."""
    # The gate's own loops, read from the build's gate DaemonSets (ekstrain/simulate/mix.py ``gate_loop_facts``);
    # empty: a guard without them (a hung gate holds its node for ever, failed nodes recycle, a condition leaves at
    # once and the taint stays).
    gate_deadline: dict[str, int] = field(default_factory=dict)
    """NodePool -> minutes after registration the guard fails a node whose pre-flight has not finished."""
    breaker: dict[str, tuple[int, int]] = field(default_factory=dict)
    """NodePool -> (gate failures, window minutes) that hold the pool."""
    leave_after: dict[str, int] = field(default_factory=dict)
    """Condition -> minutes False before the guard taints the node (missing: at once)."""
    recover_minutes: int | None = None
    """Minutes a tainted node's conditions stay True before the guard returns it to service (None: never)."""
    upgrade: Any = None
    """A Kubernetes minor upgrade played while jobs run (ekstrain/simulate/upgrade.py ``Upgrade``); None: none."""
    capacity_blocks: list[capacity_windows.CapacityBlock] = field(default_factory=list)
    network_layout: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Instance type -> (instances per layer-3 network node, layer-3 nodes per layer-2 node), over
    ekstrain/topology.py ``LAYOUTS`` (``networkLayout`` in a mix file; simulate/topology.py)."""
    """Capacity Block windows: their partitions have capacity only inside them (capacity_windows.py)."""


@dataclass
class SimNode:
    ident: int
    candidate: Node
    ready_at: int
    free: dict[str, float]
    state: str = "launching"  # launching | ready | unhealthy | gone
    holders: Counter[str] = field(default_factory=Counter)
    empty_since: int | None = None
    repair_at: int | None = None
    nominated: str = ""
    """The job whose pending pods made Karpenter launch it (others do not count on it while it waits)."""
    gate_from: int = 0
    """When its health-gate pre-flight starts (the launch before it, ``ready_at`` after it)."""
    sick_from_start: bool = False
    """A ``preflight-fails`` fault: the node is sick when it comes up."""
    repair_by: str = ""
    """Who removes it at ``repair_at``: ``NodeRepair`` (held while too much of its pool is unhealthy), ``guard``
    (the health gate deletes its node) or the maintenance ``window``."""
    hangs: bool = False
    """A ``preflight-hangs`` fault: a check of its pre-flight never returns."""
    gate_failed_at: int | None = None
    """When its pre-flight failed (or its deadline passed)."""
    retired: bool = False
    """Deleted after its pool was resumed (not a recycle)."""
    recover_at: int | None = None
    """A flap: when the guard returns it to service."""

    @property
    def pool(self) -> str:
        return self.candidate.pool


@dataclass
class Job:
    arrival: Arrival
    workload: Workload
    kind: str  # volcano | pods | slurm | notebook | standing
    restarts_left: int
    restart_rule: str
    resumes: bool
    resume_why: str
    state: str = "waiting"  # waiting | running | finished | failed
    admitted_at: int | None = None
    started_at: int | None = None
    first_started_at: int | None = None
    not_before: int = 0
    hit_by_fault: bool = False
    last_wait: str = ""
    all_waits: Counter[str] = field(default_factory=Counter)
    """Before the first start and after restarts."""
    restarts: int = 0
    ended_at: int | None = None
    progress: float = 0.0
    last_checkpoint: float = 0.0
    waited: Counter[str] = field(default_factory=Counter)
    events: list[str] = field(default_factory=list)
    short_of_capacity: bool = False
    """An injected insufficient-capacity fault hit the job's instance type."""
    slurm_pods: int = 0
    """sbatch: the slurmd pods KEDA added to its NodeSet for it (its group's count: those the queue admitted)."""
    bound: list[tuple[PodGroup, SimNode]] = field(default_factory=list)
    failure: str = ""
    lost_accelerator_hours: float = 0.0
    """Training lost to failures x the accelerators the job held (all of it when the job failed for good)."""

    @property
    def name(self) -> str:
        return self.arrival.name


@dataclass
class Report:
    jobs: list[Job]
    idle: dict[str, dict[str, float]]
    """partition -> category -> idle accelerator-minutes."""
    idle_usd: dict[str, dict[str, float]]
    problems: list[str]
    faults: list[str] = field(default_factory=list)
    waits: list[str] = field(default_factory=list)
    """The longest waits after admission and from an sbatch's arrival (Timeline.waits)."""

    def lines(self) -> list[str]:
        out = [job_line(j) for j in self.jobs if j.kind != "standing"]
        for part in sorted(self.idle):
            cats, usd = self.idle[part], self.idle_usd[part]
            total, dollars = sum(cats.values()) / 60, sum(usd.values())
            detail = ", ".join(f"{k} {cats[k] / 60:.1f} h (${usd.get(k, 0.0):,.0f})" for k in sorted(cats) if cats[k])
            out.append(
                f"PARTITION {part}: idle {total:.1f} accelerator-hours, ${dollars:,.0f}"
                + (f": {detail}" if detail else "")
            )
        out += self.waits + self.faults + [f"PROBLEM {p}" for p in self.problems]
        return out


def _clock(minute: int | None) -> str:
    return "-" if minute is None else f"{minute // 60}:{minute % 60:02d}"


def job_line(j: Job) -> str:
    first = j.first_started_at if j.first_started_at is not None else j.ended_at
    waited = (first if first is not None else j.arrival.at) - j.arrival.at
    why = "; ".join(f"{m} min {r}" for r, m in j.waited.most_common(3))
    parts = [
        f"JOB {j.name} [{j.kind}]: arrived {_clock(j.arrival.at)}",
        f"admitted {_clock(j.admitted_at)}",
        f"started {_clock(j.first_started_at)}" + (f" (waited {waited} min: {why})" if waited and why else ""),
    ]
    if j.events:
        parts.append("restarts: " + "; ".join(j.events))
    if j.state == "finished":
        parts.append(f"finished {_clock(j.ended_at)}")
    elif j.state == "failed":
        parts.append(f"FAILED {_clock(j.ended_at)}: {j.failure}")
    else:
        parts.append(f"still {j.state} at the end ({j.progress:.0f}/{j.arrival.runs} min done)")
    return ", ".join(parts)


# ---- restart and resume rules, read from the objects ---------------------------------------------------


def _env_names(obj: Any) -> set[str]:
    """Every env var name in the object (any depth, iterative)."""
    names, stack = set(), [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("env"), list):
                names |= {str(e.get("name")) for e in node["env"] if isinstance(e, dict)}
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    return names


def restart_budget(obj: dict[str, Any], runtimes: dict[str, dict[str, Any]], nodes: int) -> tuple[int, str]:
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    group = str(obj.get("apiVersion", "")).split("/")[0]
    if kind == "ConfigMap":
        text = "\n".join(str(v) for v in (obj.get("data") or {}).values())
        if "--no-requeue" in text:
            return 0, "sbatch --no-requeue"
        return 1_000, "Slurm requeues batch jobs on node failure (JobRequeue=1)"
    if kind == "Job" and group == "batch.volcano.sh":
        return int(spec.get("maxRetry", 3)), f"Volcano Job maxRetry {spec.get('maxRetry', 3)}"
    if kind in ("MPIJob", "PyTorchJob"):
        limit = (spec.get("runPolicy") or {}).get("backoffLimit")
        return (
            (int(limit), f"runPolicy.backoffLimit {limit}") if limit is not None else (0, "no runPolicy.backoffLimit")
        )
    if kind == "Job":
        limit = int(spec.get("backoffLimit", 6))
        per_pod = spec.get("completionMode") == "Indexed"
        return (limit // max(1, nodes) if per_pod else limit), f"Job backoffLimit {limit}" + (
            f" (pods: {limit // max(1, nodes)} whole-job restarts of {nodes} pods)" if per_pod else ""
        )
    if kind == "RayJob":
        limit = int(spec.get("backoffLimit", 0))
        return limit, f"RayJob backoffLimit {limit}"
    if kind == "TrainJob":
        runtime = runtimes.get(str((spec.get("runtimeRef") or {}).get("name")), {})
        policy = ((runtime.get("spec") or {}).get("template") or {}).get("spec", {}).get("failurePolicy") or {}
        limit = int(policy.get("maxRestarts", 0))
        kind_of = runtime.get("kind", "ClusterTrainingRuntime")
        return limit, f"JobSet failurePolicy.maxRestarts {limit} ({kind_of})"
    return 0, f"{kind} is not restarted"


def resume_rule(obj: dict[str, Any]) -> tuple[bool, str]:
    if obj.get("kind") == "ConfigMap":
        text = "\n".join(str(v) for v in (obj.get("data") or {}).values())
        ok = "CHECKPOINT_DIR" in text and ("RESUME_FROM_CHECKPOINT" in text or "--resume" in text)
        return ok, "" if ok else "the sbatch script names no checkpoint to resume from"
    env = _env_names(obj)
    if {"CHECKPOINT_DIR", "RESUME_FROM_CHECKPOINT"} <= env:
        return True, ""
    return False, "its pods carry no CHECKPOINT_DIR/RESUME_FROM_CHECKPOINT: it starts over"


# ---- the simulation --------------------------------------------------------------------------------------


class Timeline:
    def __init__(self, cluster: Cluster, mix: Mix) -> None:
        self.cluster, self.mix = cluster, mix
        self.nodes: list[SimNode] = []
        self.jobs: list[Job] = []
        self.now = 0
        self.idle: dict[str, dict[str, float]] = {}
        self.idle_usd: dict[str, dict[str, float]] = {}
        self.problems: list[str] = []
        self._ident = 0
        self._free_cache: dict[int, dict[str, float]] = {}
        self.karpenter = dataclasses.replace(cluster, nodes=[n for n in cluster.nodes if n.pool != "system"])
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
        if w.slurm:
            kind = "slurm"
            ns = self.cluster.nodesets.get(str(w.slurm.get("partition")))
            w.volcano_queue = nodeset_queue(ns) if ns else None
        elif a.obj.get("metadata", {}).get("labels", {}).get("component") == "singleuser-server":
            kind = "notebook"
        else:
            kind = "volcano" if w.volcano_queue is not None else "pods"
        nodes = max((g.count for g in w.groups), default=int(w.slurm.get("nodes", 1)) if w.slurm else 1)
        budget, rule = restart_budget(a.obj, runtimes, nodes)
        resumes, why = resume_rule(a.obj) if kind != "notebook" else (False, "a notebook")
        job = Job(a, w, kind, budget, rule, resumes, why)
        missing = unserved(self.cluster, a.obj)
        job.failure = "; ".join([*w.problems, *([missing] if missing else [])])
        if missing:
            w.groups = []
        self.jobs.append(job)

    # -- nodes --
    def node_free(self, candidate: Node) -> dict[str, float]:
        key = id(candidate)
        if key not in self._free_cache:
            self._free_cache[key] = free(self.cluster, candidate)
        return dict(self._free_cache[key])

    def pool_use(self, pool: str) -> dict[str, float]:
        use: dict[str, float] = {}
        for n in self.nodes:
            if n.pool == pool and n.state != "gone":
                use["nodes"] = use.get("nodes", 0.0) + 1
                for r, v in n.candidate.capacity.items():
                    use[r] = use.get(r, 0.0) + v
        return use

    def can_launch(self, candidate: Node) -> str | None:
        if candidate.pool in self.held:
            return (
                f"NodePool {candidate.pool} held by the health gate's breaker since {_clock(self.held[candidate.pool])}"
                " (no launch until the operator resumes it)"
            )
        closed = capacity_windows.closed(self, candidate)
        if closed:
            return closed
        use = self.pool_use(candidate.pool)
        for r, lim in sorted(candidate.pool_limits.items()):
            add = 1.0 if r == "nodes" else candidate.capacity.get(r, 0.0)
            if add and use.get(r, 0.0) + add > lim + 1e-9:
                back = self.loop_recovering(candidate.pool)
                if back:
                    return back
                sick = [n for n in self.nodes if n.pool == candidate.pool and n.state == "unhealthy" and n.repair_at]
                if sick:  # full until NodeRepair deletes the sick node (its NodeClaim counts against the pool)
                    n = min(sick, key=lambda s: s.repair_at or 0)
                    return (
                        f"NodePool {candidate.pool} full until NodeRepair replaces unhealthy node #{n.ident} at "
                        f"{_clock(n.repair_at)}"
                    )
                return f"NodePool {candidate.pool} limit {r}={lim:g} reached ({self.holders_of(candidate.pool)})"
        return None

    def holders_of(self, pool: str) -> str:
        held: Counter[str] = Counter()
        for n in self.nodes:
            if n.pool == pool and n.state != "gone":
                owners = sorted(n.holders) or ["nobody (launching or empty)"]
                held[owners[0]] += 1
        return "nodes held by " + ", ".join(f"{k} {v}" for k, v in held.most_common())

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

    # -- binding --
    def _group_fit(self, g: PodGroup) -> tuple[Node | None, str, dict[str, float]]:
        candidate, why = self.place(g)
        return candidate, why, {**match.pod_requests(g.spec), "pods": 1.0}

    def _fits(self, node: SimNode, req: dict[str, float]) -> bool:
        return all(node.free.get(r, 0.0) + 1e-9 >= v for r, v in req.items() if v > 0)

    def _take(self, node: SimNode, req: dict[str, float], job: Job, g: PodGroup) -> None:
        for r, v in req.items():
            node.free[r] = node.free.get(r, 0.0) - v
        node.holders[job.name] += 1
        node.empty_since = None
        job.bound.append((g, node))

    def release(self, job: Job) -> None:
        for g, node in job.bound:
            req = {**match.pod_requests(g.spec), "pods": 1.0}
            for r, v in req.items():
                node.free[r] = node.free.get(r, 0.0) + v
            node.holders[job.name] -= 1
            if node.holders[job.name] <= 0:
                del node.holders[job.name]
            if not node.holders:
                node.empty_since = self.now
        job.bound = []

    def try_start(self, job: Job, bind: bool = True) -> str | None:
        """Bind the job's pods (gang: all or none; otherwise pod by pod) and launch nodes for the rest.
        Returns why it is not running, or None once every pod runs."""
        gang = job.kind in ("standing", "slurm", "notebook") or (job.kind == "volcano" and job.workload.gang)
        needs: list[tuple[PodGroup, Node | None, dict[str, float], int]] = []
        for g in job.workload.groups:
            bound_here = sum(1 for bg, _ in job.bound if bg is g)
            if g.count - bound_here <= 0:
                continue
            candidate, why, req = self._group_fit(g)
            if candidate is None and not any(self._lands(g, n) for n in self.nodes):
                return f"{g.role}: {why}"
            needs.append((g, candidate, req, g.count - bound_here))
        if not needs:
            return None
        # What ready nodes can hold now (a trial for gangs), and what still needs a node.
        plan: list[tuple[SimNode, dict[str, float], PodGroup]] = []
        shortfall: list[tuple[Node | None, PodGroup, dict[str, float], int]] = []
        trial = {n.ident: dict(n.free) for n in self.nodes}
        for g, candidate, req, count in needs:
            placed = 0
            for n in self.nodes:
                if not self.usable(n) or not self._lands(g, n) or self.reserved(n, job):
                    continue
                while placed < count and all(trial[n.ident].get(r, 0.0) + 1e-9 >= v for r, v in req.items() if v > 0):
                    for r, v in req.items():
                        trial[n.ident][r] = trial[n.ident].get(r, 0.0) - v
                    plan.append((n, req, g))
                    placed += 1
            if placed < count:
                shortfall.append((candidate, g, req, count - placed))
        if gang and not shortfall:  # the gang within its network tier, or it waits (simulate/topology.py)
            plan, held = net_topology.place(self, job, needs, plan)
            if held:
                return held
        if bind and (not gang or not shortfall):
            for n, req, g in plan:
                self._take(n, req, job, g)
        if not shortfall:
            return None
        # Karpenter: nodes for the pods nothing fits, counting nodes already launching for this pool.
        reason = ""
        for candidate, g, req, missing in shortfall:
            if candidate is None:
                reason = f"{g.role}: waits for room on the system nodes (a fixed node group, no autoscaler)"
                continue
            per = max(1, per_node(req, self.node_free(candidate)))
            launching = sum(
                per_node(req, n.free)
                for n in self.nodes
                if n.state == "launching" and n.pool == candidate.pool and n.nominated in ("", job.name)
            )
            for _ in range(max(0, math.ceil((missing - launching) / per))):
                blocked = self.can_launch(candidate) or self.insufficient_capacity(candidate)
                if blocked:
                    reason = blocked
                    break
                self.launch(candidate, job.name)
            if not reason:
                reason = f"Karpenter launching {candidate.instance.name} ({candidate.pool})"
        return reason

    def pool_repairable(self, pool: str) -> bool:
        """Karpenter repairs a NodePool's node only while at most ``health_gate.REPAIR_UNHEALTHY_PERCENT`` of its
        nodes (rounded up) are unhealthy (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/node/health/controller.go
        ``isNodePoolHealthy``, ``allowedUnhealthyPercent``); nodes still booting are no Node objects yet."""
        nodes = [n for n in self.nodes if n.pool == pool and n.state in ("ready", "unhealthy")]
        sick = sum(1 for n in nodes if n.state == "unhealthy" and n.repair_by == "NodeRepair")
        return sick <= math.ceil(len(nodes) * health_gate.REPAIR_UNHEALTHY_PERCENT / 100)

    def usable(self, n: SimNode) -> bool:
        """Ready, or sick without the gate's NoExecute taint (then kube-scheduler still places pods there)."""
        return n.state == "ready" or (n.state == "unhealthy" and n.pool not in self.mix.gated_pools)

    def insufficient_capacity(self, candidate: Node) -> str | None:
        """An injected EC2 shortage of the candidate's type: CreateFleet fails with InsufficientInstanceCapacity once
        the window's spare instances are used; Karpenter deletes the NodeClaim, caches the offering as unavailable
        for 3 minutes and the provisioner tries again (karpenter-provider-aws v1.14.1 pkg/cache/cache.go
        UnavailableOfferingsTTL, pkg/providers/instance/instance.go). The pods stay pending and keep what they hold."""
        short = self.shortages.get(candidate.instance.name)
        if short is None or self.now >= short[0]:
            return None
        if short[1] > 0:
            self.shortages[candidate.instance.name] = (short[0], short[1] - 1)
            return None
        return (
            f"Karpenter launching {candidate.instance.name} ({candidate.pool}): InsufficientInstanceCapacity, "
            f"offering unavailable for 3 min, retried until EC2 has capacity ({_clock(short[0])})"
        )

    def reserved(self, n: SimNode, job: Job) -> bool:
        """Launched for another job that still waits for it (Karpenter nominated its pods to the node)."""
        if not n.nominated or n.nominated == job.name:
            return False
        owner = next((j for j in self.jobs if j.name == n.nominated), None)
        return owner is not None and owner.state == "waiting"

    def _lands(self, g: PodGroup, n: SimNode) -> bool:
        return n.state != "gone" and match.lands(g.spec, n.candidate.labels, n.candidate.taints)

    # -- Volcano admission --
    def queue_used(self, queue: str) -> dict[str, float]:
        """Allocated + inqueue of a queue: its admitted jobs, or with team queues every leaf's under it."""
        used: dict[str, float] = {}
        for j in self.jobs:
            q = j.workload.volcano_queue
            under = q is not None and queue in volcano.ancestry(q, self.cluster.parents)
            mine = under and j.admitted_at is not None
            if mine and j.state in ("waiting", "running"):
                for g in j.workload.groups:
                    for r, v in match.pod_requests(g.spec).items():
                        used[r] = used.get(r, 0.0) + v * g.count
        return used

    def cluster_total(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for n in self.nodes:
            if n.state in ("ready", "unhealthy"):
                for r, v in self.node_free(n.candidate).items():
                    total[r] = total.get(r, 0.0) + v
        return total

    def admit(self, job: Job, workload: Workload | None = None) -> str | None:
        """Why Volcano keeps the job's PodGroup (or ``workload``'s: one slurmd pod of an sbatch) Pending, or None."""
        w = workload or job.workload
        queue = str(w.volcano_queue)
        req = _min_resources(w)
        blocked = volcano.queue_block(queue, self.cluster.queues, req)
        if blocked:
            return blocked
        total = self.cluster_total()
        idle = {r: v for r, v in total.items()}
        for j in self.jobs:
            for g, _ in j.bound:
                for r, v in match.pod_requests(g.spec).items():
                    idle[r] = idle.get(r, 0.0) - v
        return volcano.enqueue_block(
            self.cluster.scheduler_config,
            req,
            idle,
            queue,
            self.cluster.queues,
            self.cluster.guarantees,
            self.queue_used(queue),
            parents=self.cluster.parents,
            used_by={q: self.queue_used(q) for q in volcano.ancestry(queue, self.cluster.parents)},
        )

    def proportion_block(self, job: Job) -> str | None:
        """proportion's overused check: the queue's cpu/memory deserved share of the ready nodes (by weight
        among queues with demand, capped at their request) must cover allocated + this gang."""
        if "proportion" not in volcano.plugins(self.cluster.scheduler_config):
            return None
        total = self.cluster_total()
        demand: dict[str, dict[str, float]] = {}
        for j in self.jobs:
            if j.workload.volcano_queue is not None and j.state in ("waiting", "running"):
                d = demand.setdefault(str(j.workload.volcano_queue), {})
                for g in j.workload.groups:
                    for r, v in match.pod_requests(g.spec).items():
                        d[r] = d.get(r, 0.0) + v * g.count
        queue = str(job.workload.volcano_queue)
        for r in ("cpu", "memory"):
            deserved = _water_fill(total.get(r, 0.0), {q: d.get(r, 0.0) for q, d in demand.items()}, self.mix.weights)
            if demand.get(queue, {}).get(r, 0.0) > deserved.get(queue, 0.0) + 1e-6:
                return (
                    f"proportion: queue {queue} deserves {deserved.get(queue, 0.0):g} of the ready nodes' {r} "
                    f"(weight share, shared with {', '.join(sorted(q for q in demand if q != queue)) or 'nobody'}) "
                    f"< {demand[queue][r]:g} its gangs ask"
                )
        return None

    # -- faults --
    def fault(self, f: Fault) -> None:
        job = next((j for j in self.jobs if j.name == f.job), None)
        if f.kind in LOOP_FAULTS:
            self.loop_fault(f, job)
            return
        if f.kind == "preflight-fails" and job is not None:
            job.hit_by_fault = True
            self.doomed.add(job.name)  # the next node launched for it
            return
        if f.kind == "insufficient-capacity" and job is not None:
            groups = list(job.workload.groups)
            ns = self.cluster.nodesets.get(str(job.workload.slurm.get("partition"))) if job.kind == "slurm" else None
            if not groups and ns is not None:  # an sbatch not scaled yet: the slurmd pods KEDA will add
                groups = [PodGroup("slurmd", 1, nodeset_pod(ns))]
            found = [c for c in (self.place(g)[0] for g in groups) if c is not None]
            accel = [c for c in found if any(c.capacity.get(r) for r in ACCELERATORS)] or found
            if accel:
                job.hit_by_fault = job.short_of_capacity = True
                kind = accel[0].instance.name
                self.shortages[kind] = (self.now + f.window, f.nodes)
                job.events.append(
                    f"{_clock(self.now)} EC2 has {f.nodes} more {kind} until {_clock(self.now + f.window)}"
                )
                return
        holder = job
        if job is not None and job.kind == "slurm" and not job.bound:
            # an sbatch job runs on its partition's standing slurmd pods, or on those its NodeSet was scaled by
            holder = self.standing_of(job)
        bound = [n for _, n in holder.bound if n.state != "gone"] if holder else []
        accelerated = [n for n in bound if any(n.candidate.capacity.get(r) for r in ACCELERATORS)]
        node = (accelerated or bound)[0] if bound else None
        if job is None or node is None:
            self.problems.append(f"fault {f.kind} at {_clock(f.at)}: {f.job} has no node then (not injected)")
            return
        job.hit_by_fault = True
        if f.kind == "node-lost":
            self.kill_node(node, f"node {node.candidate.instance.name} #{node.ident} lost")
        elif f.kind == "spot-interruption":
            self.kill_node(node, "spot interruption: Karpenter drained the node (2-minute warning)", drained=True)
        elif f.kind == "node-unhealthy":
            node.state = "unhealthy"
            left = (
                f" (the health gate's guard tainted it {health_gate.UNHEALTHY_TAINT_KEY}:NoExecute and cordoned it: "
                "its pods left at once, Slinky drains a Slurm node there)"
                if node.pool in self.mix.gated_pools
                else ""
            )
            for victim in self.on_node(node):
                self.fail(victim, f"GPU fault on {node.candidate.instance.name} #{node.ident}{left}")
            if self.mix.repair:
                node.repair_at, node.repair_by = self.now + self.mix.repair_minutes, "NodeRepair"
        elif f.kind == "health-notice":
            if self.mix.health_rule:
                self.kill_node(node, "AWS Health notice: Karpenter drained the node on arrival", drained=True)
            else:
                job.events.append(
                    f"AWS Health notice at {_clock(self.now)} for {node.candidate.instance.name} #{node.ident}: "
                    f"no drain (no aws.health rule), maintenance window at {_clock(self.now + f.window)}"
                )
                node.repair_at = self.now + f.window  # the instance is stopped at the window

    def standing_of(self, job: Job) -> Job | None:
        part = str(job.workload.slurm.get("partition"))
        return next((j for j in self.jobs if j.kind == "standing" and j.name.endswith(f"-{part}")), None)

    def on_node(self, node: SimNode) -> list[Job]:
        victims = [j for j in self.jobs if j.name in node.holders]
        for standing in [j for j in victims if j.kind == "standing"]:
            victims += [
                j for j in self.jobs if j.kind == "slurm" and j.state == "running" and self.standing_of(j) is standing
            ]
        return victims

    def kill_node(self, node: SimNode, why: str, drained: bool = False) -> None:
        victims = self.on_node(node)
        node.state = "gone"
        grace = f"; pods got {self.mix.grace_seconds} s, a checkpoint takes {self.mix.checkpoint_save_seconds} s"
        for victim in victims:
            short = drained and victim.resumes and self.mix.checkpoint_save_seconds > self.mix.grace_seconds
            self.fail(victim, why + (grace if short else ""))

    def fail(self, job: Job, why: str) -> None:
        lost = job.progress - (job.last_checkpoint if job.resumes else 0.0)
        held = sum(match.pod_requests(g.spec).get(r, 0.0) for g, _ in job.bound for r in ACCELERATORS)
        gone = job.progress if job.restarts_left <= 0 and job.kind not in ("standing", "notebook") else lost
        job.lost_accelerator_hours += gone * held / 60
        self.release(job)
        if job.kind == "standing":
            job.state = "waiting"
            return
        if job.kind == "notebook":
            job.state, job.ended_at, job.failure = "failed", self.now, f"{why} (a notebook is not restarted)"
            return
        if job.restarts_left <= 0:
            job.state, job.ended_at = "failed", self.now
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
        job.events.append(f"{_clock(self.now)} {why}: restarted ({job.restart_rule}), {resumed}")
        job.state, job.started_at, job.not_before = "waiting", None, self.now + self.mix.restart_minutes

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

    def pending_pools(self) -> dict[str, list[Job]]:
        """NodePool -> the admitted, waiting jobs whose pending pods Karpenter nominates to its nodes."""
        pools: dict[str, list[Job]] = {}
        for j in self.jobs:
            if j.state == "waiting" and j.arrival.at <= self.now and j.admitted_at is not None:
                for g in j.workload.groups:
                    candidate, _ = self.place(g)
                    if candidate is not None:
                        pools.setdefault(candidate.pool, []).append(j)
        return pools

    def transient(self, jobs: list[Job]) -> bool:
        """Every job is only restarting or waiting for nodes that are launching (not blocked for good)."""
        return bool(jobs) and all(
            j.not_before > self.now
            or "Karpenter launching" in j.last_wait
            or "until NodeRepair" in j.last_wait
            or "to service at" in j.last_wait
            for j in jobs
        )

    def consolidate(self) -> None:
        nominated = self.pending_pools()
        for n in self.nodes:
            empty = n.state == "ready" and not n.holders and n.empty_since is not None and n.pool not in nominated
            empty = empty and n.pool != "system"  # the managed node group is not Karpenter's
            if empty and self.now - (n.empty_since or 0) >= self.mix.consolidate_minutes.get(n.pool, 30):
                n.state = "gone"

    def account(self) -> None:
        nominated = self.pending_pools()
        running = {j.name for j in self.jobs if j.state == "running"}
        for n in self.nodes:
            if n.state == "gone":
                continue
            accel = sum(n.candidate.capacity.get(r, 0.0) for r in ACCELERATORS)
            if not accel:
                continue
            used = accel - sum(max(0.0, n.free.get(r, 0.0)) for r in ACCELERATORS)
            standing = [j for j in self.jobs if j.kind == "standing" and j.name in n.holders]
            if standing:  # slurmd pods hold the node; it computes only while a Slurm job runs there
                slurm_busy = any(
                    j.kind == "slurm" and j.state == "running" and self.standing_of(j) in standing for j in self.jobs
                )
                running = running if slurm_busy else running - {j.name for j in standing}
            busy = used if any(h in running for h in n.holders) else 0.0
            idle = accel - busy
            if idle <= 0:
                continue
            if n.state == "launching" and self.now >= n.gate_from and n.gate_from < n.ready_at:
                cat = "health gate pre-flight"
            elif n.state == "launching":
                cat = "launching"
            elif n.state == "unhealthy":
                cat = "unhealthy"
            elif standing and not busy:
                cat = "standing slurmd nodes without a Slurm job"
            elif (n.holders or n.pool in nominated) and not busy and self.short_of_capacity(n, nominated):
                cat = "held while EC2 has no capacity for the rest (insufficient-capacity)"
            elif n.holders and not busy and self.transient([j for j in self.jobs if j.name in n.holders]):
                cat = "held while the job restarts or its other nodes launch"
            elif n.holders and not busy:
                cat = "stranded (held by a job that cannot start)"
            elif n.holders:
                cat = "fragments (part of a node in use)"
            elif n.pool in nominated and self.transient(nominated[n.pool]):
                cat = "held while the job restarts or its other nodes launch"
            elif n.pool in nominated:
                cat = "stranded (launched for a job that cannot start)"
            elif self.mix.consolidate_minutes.get(n.pool, 30) >= NEVER:
                cat = "kept empty (consolidateAfter: Never, a reservation paid anyway)"
            else:
                cat = "consolidateAfter window"
            part = next(iter(n.candidate.labels.get("ekstrain.io/partition", {n.pool})))
            minutes, usd = self.idle.setdefault(part, {}), self.idle_usd.setdefault(part, {})
            price = n.candidate.instance.price_per_hour_usd or 0.0
            minutes[cat] = minutes.get(cat, 0.0) + idle
            usd[cat] = usd.get(cat, 0.0) + price / 60 * idle / accel

    def short_of_capacity(self, n: SimNode, nominated: dict[str, list[Job]]) -> bool:
        jobs = [j for j in self.jobs if j.name in n.holders] or nominated.get(n.pool, [])
        return bool(jobs) and any("InsufficientInstanceCapacity" in j.last_wait for j in jobs if j.state == "waiting")

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

    def conclude(self) -> None:
        """Problems (exit 1): a job that failed or did not finish with no injected fault to blame, a starved
        queue, a gang admitted but unbindable, idle paid nodes beyond launch and consolidation. A job an
        injected fault hit gets one FAULT line: resumed from its checkpoint, or why not."""
        for j in self.jobs:
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
                    late = self.wait_after_admission(j)
                    how = "launch failed for lack of EC2 capacity" + (
                        f", started {late[0]} min after admission" if late else ""
                    )
                elif not j.restarts:
                    how = "not restarted (the fault did not stop it)"
                elif j.resumes:
                    how = "resumed from its checkpoint"
                else:
                    how = f"not resumed: {j.resume_why}"
                self.fault_outcomes.append(f"FAULT {j.name}: {how}; {outcome}")
                if j.state == "failed":
                    continue  # the FAULT line says why it did not resume
            if j.state == "failed" and not j.hit_by_fault:
                self.problems.append(f"{j.name} failed: {j.failure}")
            elif j.state not in ("finished", "failed"):
                top = j.waited.most_common(1)
                self.problems.append(
                    f"{j.name} did not finish in {self.mix.minutes // 60} h"
                    + (f": {top[0][1]} min {top[0][0]}" if top else "")
                )
            starved = sum(m for r, m in j.all_waits.items() if r.startswith("proportion"))
            if starved:
                self.problems.append(f"{j.name}: starved by proportion for {starved} min")
            if j.workload.volcano_queue is not None and any("limit" in r for r in j.all_waits):
                self.problems.append(f"{j.name}: admitted by its queue but unbindable at the NodePool limit")
            manual = sum(m for r, m in j.all_waits.items() if r.startswith("Slurm holds it"))
            if manual:  # only a hand-run `kubectl scale nodeset` would have started it
                self.problems.append(f"{j.name}: waited {manual} min for a NodeSet nobody scales (no autoscale)")
            bypass = self.outside_queue(j)
            if bypass:
                self.problems.append(bypass)
            late = self.wait_after_admission(j)
            if late is not None and late[0] > late[1] and not j.hit_by_fault:
                self.problems.append(
                    f"{j.name}: started {late[0]} min after its queue admitted it, more than a node launch "
                    f"({late[1]} min): admitted before its nodes could be had"
                )
        timed_out, gave_up = notebooks.timeouts(self)
        self.problems += timed_out
        self.fault_outcomes += gave_up
        self.loop_problems()
        for part, cats in self.idle.items():
            stranded = sum(v for k, v in cats.items() if k.startswith("stranded"))
            if stranded:
                self.problems.append(f"{part}: {stranded / 60:.1f} idle paid accelerator-hours on stranded nodes")
            standing = cats.get("standing slurmd nodes without a Slurm job", 0.0)
            if standing:  # never empty, so WhenEmpty never removes them: idle beyond the consolidation policy
                self.problems.append(
                    f"{part}: {standing / 60:.1f} idle paid accelerator-hours on slurmd nodes without a Slurm job, "
                    "kept beyond the partition's consolidateAfter (schedulers.slurm.nodesetReplicas floor)"
                )

    # -- the platform's own loops: the gate's deadline, the breaker, the guard's hysteresis --------------------

    def loop_fault(self, f: Fault, job: Job | None) -> None:
        """``preflight-hangs``, ``preflight-fails-pool`` and ``condition-flap`` (module docstring)."""
        if job is None:
            return
        job.hit_by_fault = True
        if f.kind == "preflight-hangs":
            self.hanging.add(job.name)
            return
        if f.kind == "preflight-fails-pool":
            pools = {c.pool for c in (self.place(g)[0] for g in job.workload.groups) if c is not None}
            accel = [p for p in pools if p in self.mix.gated_pools] or sorted(pools)
            for pool in accel:
                self.failing_pools[pool] = self.now + f.window
                job.events.append(
                    f"{_clock(self.now)} every node of NodePool {pool} fails its pre-flight until "
                    f"{_clock(self.now + f.window)}"
                )
            return
        bound = [n for _, n in job.bound if n.state == "ready"]
        node = next((n for n in bound if any(n.candidate.capacity.get(r) for r in ACCELERATORS)), None)
        if node is None:
            self.problems.append(f"fault {f.kind} at {_clock(f.at)}: {f.job} has no node then (not injected)")
            return
        leave = self.mix.leave_after.get("NetworkingReady", 0)
        if f.minutes <= leave:
            job.events.append(
                f"{_clock(self.now)} NetworkingReady=False on #{node.ident} for {f.minutes} min: shorter than the "
                f"guard's {leave}-min threshold, the gang stays"
            )
            return
        self.flaps.append((self.now + leave, self.now, f.minutes, node))

    def loop_step(self) -> None:
        """Flaps the guard acts on; pools whose failing window ended: the operator resumes a held one."""
        stated = health_gate.LEAVE_AFTER_SECONDS["NetworkingReady"] // 60
        for at, start, minutes, node in self.flaps:
            if at != self.now or node.state in ("gone", "launching"):
                continue
            node.state = "unhealthy"
            window = health_gate.REPAIR_MINUTES["NetworkingReady"]
            if self.mix.repair and minutes >= window:  # False for NodeRepair's whole window: it replaces the node
                node.repair_at, node.repair_by = start + window, "NodeRepair"
            elif self.mix.recover_minutes is not None:
                node.recover_at = start + minutes + self.mix.recover_minutes
            for victim in self.on_node(node):
                if victim.kind != "standing" and minutes < stated:
                    self.problems.append(
                        f"{victim.name}: gang restarted at {_clock(self.now)} by a transient NetworkingReady=False "
                        f"on #{node.ident} ({minutes} min, shorter than the {stated}-min leave threshold)"
                    )
                self.fail(victim, f"NetworkingReady=False on #{node.ident}: the guard tainted it NoExecute")
        for pool, until in list(self.failing_pools.items()):
            if self.now < until:
                continue
            del self.failing_pools[pool]
            if pool in self.held:  # fixed: `kubectl patch nodepool <pool> ...breaker-resume` (docs/health.md)
                del self.held[pool]
                self.gate_failures.pop(pool, None)
                for n in self.nodes:
                    if n.pool == pool and n.state == "unhealthy" and n.gate_failed_at is not None:
                        n.repair_at, n.repair_by, n.retired = self.now, "guard", True

    def loop_node(self, n: SimNode) -> bool:
        """A node's part of the loops this minute; True when the ordinary rules must skip it."""
        if n.recover_at is not None and self.now >= n.recover_at and n.state == "unhealthy":
            n.state, n.recover_at, n.empty_since = "ready", None, self.now  # the guard returned it to service
            return True
        if n.state != "launching" or n.ready_at > self.now:
            return False
        if n.pool in self.failing_pools and self.now < self.failing_pools[n.pool]:
            n.sick_from_start = True
        if not n.hangs:
            return False
        deadline = self.mix.gate_deadline.get(n.pool)
        if deadline is None or self.now < n.gate_from + deadline:
            return True  # its check hangs: the startup taint stays
        n.state, n.empty_since = "unhealthy", self.now
        n.repair_at, n.repair_by = self.now + math.ceil(health_gate.HOLD_SECONDS / 60), "guard"
        owner = next((j for j in self.jobs if j.name == n.nominated), None)
        if owner is not None:
            owner.events.append(
                f"{_clock(self.now)} node #{n.ident}'s pre-flight hung: its guard failed it at the {deadline}-min "
                f"deadline (tainted NoExecute, deleted at {_clock(n.repair_at)})"
            )
        self.gate_failure(n)
        return True

    def gate_failure(self, n: SimNode) -> None:
        """One gate failure on the node's pool; the breaker holds the pool at its threshold."""
        n.gate_failed_at = self.now
        failures = self.gate_failures.setdefault(n.pool, [])
        failures.append(self.now)
        rule = self.mix.breaker.get(n.pool)
        if rule is None or n.pool in self.held:
            return
        if sum(1 for t in failures if self.now - t < rule[1]) >= rule[0]:
            self.held[n.pool] = self.now
            for j in self.jobs:
                if j.name == n.nominated:
                    j.events.append(
                        f"{_clock(self.now)} NodePool {n.pool}'s breaker held it: {rule[0]} gate failures in "
                        f"{rule[1]} min (limits.nodes 0, failed nodes kept; NodePoolBreakerOpen)"
                    )

    def loop_recovering(self, pool: str) -> str | None:
        """A full pool whose node the guard took out for a flap: its restart waits for the node's recovery."""
        back = [n for n in self.nodes if n.pool == pool and n.state == "unhealthy" and n.recover_at is not None]
        if not back:
            return None
        n = min(back, key=lambda s: s.recover_at or 0)
        when = _clock(n.recover_at)
        return f"NodePool {pool} full until the guard returns unhealthy node #{n.ident} to service at {when}"

    def loop_keeps(self, n: SimNode) -> bool:
        """The guard keeps a failed node while its pool is held."""
        if n.pool in self.held and not n.retired:
            n.repair_at = None
            return True
        return False

    def loop_problems(self) -> None:
        """A node held in pre-flight past the gate's stated deadline; recycles past the breaker's threshold."""
        for n in self.nodes:
            if not n.hangs:
                continue
            end = n.gate_failed_at if n.gate_failed_at is not None else self.now
            stated = health_gate.deadline_minutes(n.candidate.instance.family)
            if end - n.gate_from > stated:
                self.problems.append(
                    f"node #{n.ident} ({n.pool}) held in its pre-flight {end - n.gate_from} min, past the gate's "
                    f"{stated}-min deadline (Karpenter has no initialisation timeout)"
                )
        limit, window = health_gate.BREAKER_FAILURES, health_gate.BREAKER_WINDOW_SECONDS // 60
        for pool, times in sorted(self.recycles.items()):
            past = sum(1 for i, t in enumerate(times) if sum(1 for u in times[: i + 1] if t - u < window) > limit)
            if past:
                self.problems.append(
                    f"NodePool {pool}: {len(times)} failed nodes recycled, {past} past the breaker's {limit} in "
                    f"{window} min"
                )

    def launch_minutes_of(self, j: Job) -> int:
        """A node launch for the job: the longest launch time of the families its pods land on, with the health
        gate's pre-flight on a gated NodePool (the node takes work only after it)."""
        minutes = [0]
        groups = list(j.workload.groups)
        ns = self.cluster.nodesets.get(str(j.workload.slurm.get("partition"))) if j.kind == "slurm" else None
        if not groups and ns is not None:  # an sbatch on standing slurmd pods: its partition's nodes
            groups = [PodGroup("slurmd", 1, nodeset_pod(ns))]
        for g in groups:
            candidate = self.place(g)[0]
            if candidate is not None and candidate.pool != "system":
                family = candidate.instance.family if candidate.instance.family in self.mix.launch_minutes else "cpu"
                gate = (
                    health_gate.gate_minutes(candidate.instance.family) if candidate.pool in self.mix.gated_pools else 0
                )
                minutes.append(self.mix.launch_minutes.get(family, 5) + gate)
        return max(minutes)

    def wait_after_admission(self, j: Job) -> tuple[int, int] | None:
        """(minutes from its queue's admission to its first start, a node launch) for a job in a Volcano queue."""
        if j.workload.volcano_queue is None or j.kind == "standing":
            return None
        if j.admitted_at is None or j.first_started_at is None:
            return None
        return j.first_started_at - j.admitted_at, self.launch_minutes_of(j)

    def waits(self) -> list[str]:
        """The summary of waits: the longest after admission (Volcano and sbatch) and from an sbatch's arrival."""
        after = [(w[0], w[1], j.name) for j in self.jobs if (w := self.wait_after_admission(j)) is not None]
        hit = sum(
            1 for j in self.jobs if j.hit_by_fault and (w := self.wait_after_admission(j)) is not None and w[0] > w[1]
        )
        sbatch = [
            (j.first_started_at - j.arrival.at, self.launch_minutes_of(j), j.name)
            for j in self.jobs
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

    def outside_queue(self, j: Job) -> str | None:
        """A job whose accelerator pods bypass the Volcano queue of their partition: they take the NodePool's
        nodes while the queue's capability still counts them free, so the queue admits gangs that then stop
        at the NodePool limit. The timeline gives them nodes like any pod; this says so."""
        if j.kind != "pods" or not self.cluster.scheduler_config:
            return None
        for g in j.workload.groups:
            accel = sum(match.pod_requests(g.spec).get(r, 0.0) for r in ACCELERATORS)
            part = (g.spec.get("nodeSelector") or {}).get("ekstrain.io/partition")
            if accel and part in self.cluster.queues:
                return (
                    f"{j.name}: {g.count} {g.role} pod(s) with accelerators bypass Volcano queue {part} (no "
                    f"schedulerName volcano / PodGroup): they take NodePool nodes the queue counts as free"
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


def simulate_timeline(cluster: Cluster, mix: Mix) -> Report:
    return Timeline(cluster, mix).run()
