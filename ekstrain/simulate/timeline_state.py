"""The simulator's state: the plain records a :class:`~ekstrain.simulate.timeline.Timeline` plays (Arrival, Fault, Mix,
SimNode, Job, Report, CapacityBlock) and :class:`TimelineState`, the type its collaborators (placement.py,
volcano_admission.py, faults.py, health_loops.py, idle_accounting.py, timeline_report.py, capacity_windows.py,
notebooks.py, slurm_gangs.py, topology.py) take for the timeline. They sit below those modules, and timeline.py
re-exports them, so the collaborators annotate without importing the Timeline that binds their functions as its
methods."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from ekstrain.layout import cold_start
from ekstrain.layout.capacity_windows import KARPENTER_DRAIN_MINUTES
from ekstrain.payloads import health_gate
from ekstrain.simulate.engine import Cluster
from ekstrain.simulate.nodes import Node
from ekstrain.simulate.timeline_base import _clock
from ekstrain.simulate.workloads import PodGroup, Workload


@dataclass(frozen=True)
class CapacityBlock:
    partition: str
    start: int
    """Minute the block becomes active."""
    end: int
    """Minute the block ends (EC2's end time)."""
    signal_minutes: int | None = None
    """Minutes before ``end`` the running jobs get the checkpoint signal; None: no signal."""

    @property
    def drain_at(self) -> int:
        return max(self.start, self.end - KARPENTER_DRAIN_MINUTES)

    @property
    def signal_at(self) -> int | None:
        return None if self.signal_minutes is None else max(self.start, self.end - self.signal_minutes)


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
    too, and the gate's guard taints a sick node NoExecute at once (ekstrain/payloads/health_gate.py)."""
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
    spare_nodes: dict[str, int] = field(default_factory=dict)
    """NodePool -> nodes over its rendered limits (a mix's ``spareNodes``: the reservation one node over the gang,
    without re-rendering; simulate/capacity_windows.py ``with_spare``)."""
    upgrade: Any = None
    """A Kubernetes minor upgrade played while jobs run (ekstrain/simulate/upgrade.py ``Upgrade``); None: none."""
    capacity_blocks: list[CapacityBlock] = field(default_factory=list)
    """Capacity Block windows: their partitions have capacity only inside them (capacity_windows.py)."""
    network_layout: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Instance type -> (instances per layer-3 network node, layer-3 nodes per layer-2 node), over
    ekstrain/layout/topology.py ``LAYOUTS`` (``networkLayout`` in a mix file; simulate/topology.py)."""


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


class TimelineState(Protocol):
    """A :class:`~ekstrain.simulate.timeline.Timeline` as its collaborators see it: its state (set in its
    ``__init__``) and the methods they call on it (the Timeline's own, or the collaborators' functions it binds)."""

    cluster: Cluster
    mix: Mix
    nodes: list[SimNode]
    jobs: list[Job]
    now: int
    idle: dict[str, dict[str, float]]
    idle_usd: dict[str, dict[str, float]]
    problems: list[str]
    _ident: int
    _free_cache: dict[int, dict[str, float]]
    karpenter: Cluster
    fault_outcomes: list[str]
    _placed: dict[int, tuple[Node | None, str]]
    doomed: set[str]
    shortages: dict[str, tuple[int, int]]
    hanging: set[str]
    failing_pools: dict[str, int]
    gate_failures: dict[str, list[int]]
    held: dict[str, int]
    recycles: dict[str, list[int]]
    flaps: list[tuple[int, int, int, SimNode]]
    block_events: list[str]
    topology_lines: list[str]
    topology_notes: dict[str, str]
    signalled: dict[str, tuple[int, float]]

    # timeline.py
    def place(self, g: PodGroup) -> tuple[Node | None, str]: ...
    def launch(self, candidate: Node, for_job: str = "") -> SimNode: ...

    # placement.py
    def node_free(self, candidate: Node) -> dict[str, float]: ...
    def pool_use(self, pool: str) -> dict[str, float]: ...
    def can_launch(self, candidate: Node) -> str | None: ...
    def holders_of(self, pool: str) -> str: ...
    def _group_fit(self, g: PodGroup) -> tuple[Node | None, str, dict[str, float]]: ...
    def _take(self, node: SimNode, req: dict[str, float], job: Job, g: PodGroup) -> None: ...
    def release(self, job: Job) -> None: ...
    def usable(self, n: SimNode) -> bool: ...
    def insufficient_capacity(self, candidate: Node) -> str | None: ...
    def reserved(self, n: SimNode, job: Job) -> bool: ...
    def _lands(self, g: PodGroup, n: SimNode) -> bool: ...
    def pending_pools(self) -> dict[str, list[Job]]: ...

    # volcano_admission.py
    def queue_used(self, queue: str) -> dict[str, float]: ...
    def cluster_total(self) -> dict[str, float]: ...
    def admit(self, job: Job, workload: Workload | None = None) -> str | None: ...

    # faults.py
    def standing_of(self, job: Job) -> Job | None: ...
    def on_node(self, node: SimNode) -> list[Job]: ...
    def kill_node(self, node: SimNode, why: str, drained: bool = False) -> None: ...
    def fail(self, job: Job, why: str) -> None: ...

    # health_loops.py
    def loop_fault(self, f: Fault, job: Job | None) -> None: ...
    def gate_failure(self, n: SimNode) -> None: ...
    def loop_recovering(self, pool: str) -> str | None: ...
    def loop_problems(self) -> None: ...

    # idle_accounting.py
    def transient(self, jobs: list[Job]) -> bool: ...
    def short_of_capacity(self, n: SimNode, nominated: dict[str, list[Job]]) -> bool: ...

    # timeline_report.py
    def launch_minutes_of(self, j: Job) -> int: ...
    def wait_after_admission(self, j: Job) -> tuple[int, int] | None: ...
    def outside_queue(self, j: Job) -> str | None: ...
