"""What every workload kind declares, once: the shape kueue's ``jobframework.GenericJob`` gives a job kind
(kubernetes-sigs/kueue pkg/controller/jobframework/interface.go: ``GVK()``, ``PodSets()``, the queue name read
from the object, ``Finished()``/restart semantics), cut down to what this project reads.

A kind is one :class:`WorkloadKind` subclass instance in its own module under ``ekstrain/workloads/`` and one
line in :mod:`ekstrain.workloads.registry`. The readers:

- the simulator (``ekstrain/simulate``): :meth:`WorkloadKind.expand` (pod groups, gang, queue),
  :meth:`~WorkloadKind.restart_budget`, :meth:`~WorkloadKind.resumes`, :meth:`~WorkloadKind.check_shape` (the
  input checks) and :attr:`~WorkloadKind.crd` (a kind whose CRD the stack does not install is refused);
- the verifiers (``infra/verify/pods.py``): :meth:`~WorkloadKind.templates` from :attr:`~WorkloadKind.pod_templates`;
- the job builders and ``job logs`` (``assembly/jobs``): :attr:`~WorkloadKind.schedulers`,
  :attr:`~WorkloadKind.log_kind`, :meth:`~WorkloadKind.installed`;
- the diff (``ekstrain/diff/rules.py``): :attr:`~WorkloadKind.replace_on_change`.

This package sits below the simulator: what a kind needs from it (the sbatch directive reader) comes in the
:class:`Context`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

VOLCANO = "volcano"
"""The scheduler name Volcano serves (``schedulerName: volcano``)."""
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"


@dataclass
class PodGroup:
    role: str
    count: int
    spec: dict[str, Any]


@dataclass
class Workload:
    name: str
    """``Kind/name`` as reported."""
    groups: list[PodGroup]
    volcano_queue: str | None = None
    """Set when Volcano gang-schedules the workload (its PodGroup is admitted by the scheduler config)."""
    slurm: dict[str, Any] = field(default_factory=dict)
    """sbatch: partition and nodes; the pods are the partition's Slinky NodeSet pods."""
    problems: list[str] = field(default_factory=list)
    min_resources: dict[str, Any] | None = None
    """The PodGroup's ``minResources`` when the workload sets it (MPIJob ``schedulingPolicy``); None: the
    requests of all its pods."""
    gang: bool = True
    """Volcano binds all pods or none (PodGroup ``minMember`` = every pod); False: one by one in the queue."""


@dataclass(frozen=True)
class Context:
    """What a kind reads beyond its own object."""

    runtimes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Training runtimes by name (the stack's ClusterTrainingRuntimes and the mix's TrainingRuntimes)."""
    gang_kinds: frozenset[str] = frozenset()
    """Kinds whose operator the stack runs with Volcano gang scheduling (operator flags, ``gang_flag``)."""
    sbatch: Callable[[str], dict[str, Any]] | None = None
    """The simulator's ``#SBATCH`` reader (partition and nodes; ValueError on a bad directive)."""


@dataclass(frozen=True)
class Template:
    """One pod template inside an object: its dotted path (``spec.template``), metadata and pod spec."""

    path: str
    metadata: dict[str, Any]
    spec: dict[str, Any]


def pod_spec(template: dict[str, Any] | None) -> dict[str, Any]:
    return (template or {}).get("spec") or {}


def api_group(obj: dict[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).split("/")[0] if "/" in str(obj.get("apiVersion", "")) else ""


def resolve(obj: Any, pattern: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of every place ``pattern`` names in ``obj``: dotted keys, ``*`` for every key of a mapping
    or item of a list (``spec.mpiReplicaSpecs.*.template``); list items are written ``[i]`` in the path."""
    found: list[tuple[str, Any]] = [("", obj)]
    for part in [p for p in pattern.split(".") if p]:
        nxt: list[tuple[str, Any]] = []
        for path, value in found:
            if part == "*" and isinstance(value, dict):
                nxt += [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
            elif part == "*" and isinstance(value, list):
                nxt += [(f"{path}[{i}]", v) for i, v in enumerate(value)]
            elif isinstance(value, dict) and part in value:
                nxt.append((f"{path}.{part}" if path else part, value[part]))
        found = nxt
    yield from found


class WorkloadKind:
    """One workload kind. Subclasses set the class attributes and override what their controller does
    differently; the defaults are those of a Kubernetes built-in workload run by the default scheduler."""

    kind: str = ""
    group: str = ""
    """API group ("" core, ``batch``, ``kubeflow.org``...)."""
    version: str = "v1"
    plural: str | None = None
    """CRD plural (``mpijobs``): the stack must install ``<plural>.<group>``; None for built-in kinds."""
    group_required: bool = False
    """Match the group too: two kinds share the name (batch ``Job`` and Volcano's ``Job``)."""
    log_kind: str = ""
    """The ``ekstrain.io/job-kind`` label on its pods (and the log record's ``job_kind``)."""
    log_fields: tuple[str, ...] = ("namespace", "job", "job_kind")
    """The record fields ``job logs`` filters on (assembly/jobs/logs.py): pods carry the namespace, the
    ``ekstrain.io/job`` and ``ekstrain.io/job-kind`` labels; a node-tailed log (sbatch) has no namespace."""
    log_extra_shown: tuple[str, ...] = ()
    """Record fields the log query shows beyond the common ones (sbatch: ``slurm_job_id``)."""
    rank_labels: tuple[str, ...] = ()
    """Pod labels its controller sets to the pod's rank or index: the log agent's ``rank`` field reads them
    (assembly/logs.py ``FIELDS``, first match wins, in registry order)."""
    schedulers: tuple[str, ...] = ()
    """``ekstrain job render --scheduler`` names that build it (assembly/jobs/render.py has the builders)."""
    installed_by: tuple[str, Any, str] | None = None
    """(dotted attribute of the stack's ``schedulers`` config, the value that installs its controller, the
    stack-file setting to tell the user); None: nothing to install (built in)."""
    pod_templates: tuple[str, ...] = ()
    """Where its pod templates are (:func:`resolve` patterns to a ``{metadata, spec}`` template; "" the object
    itself, as a Pod is its own template). The verifiers walk these (infra/verify/pods.py)."""
    sidecar_pods: bool = False
    """Its templates may lack ``containers`` (Slinky adds the slurmd container beside the template at run time)."""
    gang_flag: str | None = None
    """The operator flag that hands its pods to Volcano as one PodGroup (read from the rendered operator)."""
    replace_on_change: dict[str, tuple[str, ...]] = {}
    """Pulumi type token -> inputs whose change replaces the object (pulumi-kubernetes forcenew.go); for kinds the
    platform itself applies."""
    placement: str | None = None
    """How the simulator's timeline places it: ``slurm`` (on its partition's NodeSet), ``notebook``; None:
    ``volcano`` when it has a Volcano queue, else ``pods`` (one pod at a time by the default scheduler)."""
    restart_policy: str = "not restarted"
    """What restarts it, in words (docs and reports)."""
    queue_rule: str = "none: the default scheduler places its pods"
    """How its queue is set, in words."""

    # -- identity --
    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def crd(self) -> str | None:
        return f"{self.plural}.{self.group}" if self.plural else None

    def matches(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == self.kind and (not self.group_required or api_group(obj) == self.group)

    def name_of(self, obj: dict[str, Any]) -> str:
        return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"

    def arrival_name(self, obj: dict[str, Any]) -> str:
        """How a mix file's arrival of ``obj`` is named (faults name the job so)."""
        return self.name_of(obj)

    # -- pods --
    def templates(self, obj: dict[str, Any]) -> list[Template]:
        """Every pod template of ``obj`` at :attr:`pod_templates`."""
        out = []
        for pattern in self.pod_templates:
            for path, t in resolve(obj, pattern):
                if isinstance(t, dict) and isinstance(t.get("spec"), dict):
                    out.append(Template(f"{path}.spec" if path else "spec", t.get("metadata") or {}, t["spec"]))
        return out

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        """One group per role: (role, pods, pod spec). Default: one ``pod`` group of ``spec.replicas``."""
        spec = obj.get("spec") or {}
        return [PodGroup("pod", int(spec.get("replicas", 1)), pod_spec(spec.get("template")))]

    def queue(self, obj: dict[str, Any], groups: list[PodGroup], ctx: Context) -> str | None:
        """The Volcano queue its PodGroup is in when Volcano gang-schedules it; None: the default scheduler."""
        return None

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        """The pods its controller creates (None: it creates none)."""
        groups = self.pod_groups(obj, ctx)
        return Workload(self.name_of(obj), groups, volcano_queue=self.queue(obj, groups, ctx))

    def placement_of(self, w: Workload) -> str:
        return self.placement or ("volcano" if w.volcano_queue is not None else "pods")

    # -- restarts --
    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        """(whole-workload restarts its controller makes on a pod failure, the rule in words)."""
        return 0, f"{obj.get('kind')} is not restarted"

    def resumes(self, obj: dict[str, Any]) -> tuple[bool, str]:
        """(a restart resumes from a checkpoint, why not): the pods name a checkpoint to resume from."""
        env = env_names(obj)
        if {"CHECKPOINT_DIR", "RESUME_FROM_CHECKPOINT"} <= env:
            return True, ""
        return False, "its pods carry no CHECKPOINT_DIR/RESUME_FROM_CHECKPOINT: it starts over"

    # -- input checks (ekstrain simulate) --
    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        """Type-check what the simulator reads of ``spec`` with the simulator's checker ``v``
        (ekstrain/simulate/inputs.py ``_Checker``: mapping, count, text, template, ...)."""
        v.count(spec.get("replicas"), "spec.replicas")
        v.template(spec.get("template"), "spec.template")

    # -- job builders --
    def installed(self, schedulers: Any) -> tuple[bool, str] | None:
        """(its controller runs on a stack with this ``schedulers`` config, the setting that installs it); None:
        nothing to install (a built-in kind)."""
        if self.installed_by is None:
            return None
        attr, want, fix = self.installed_by
        value: Any = schedulers
        for part in attr.split("."):
            value = getattr(value, part)
        return value == want, fix


def env_names(obj: Any) -> set[str]:
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


def replicas(specs: dict[str, Any]) -> list[PodGroup]:
    """Kubeflow ``<x>ReplicaSpecs``: one group per role with its ``replicas`` and template."""
    return [PodGroup(role, int(s.get("replicas", 1)), pod_spec(s.get("template"))) for role, s in specs.items()]
