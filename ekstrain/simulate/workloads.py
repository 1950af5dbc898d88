"""Workload objects -> the pods their controllers create (one PodGroup per role)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ekstrain.simulate.inputs import sbatch_request

VOLCANO = "volcano"
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


def _spec(template: dict[str, Any] | None) -> dict[str, Any]:
    return (template or {}).get("spec") or {}


def _replicas(specs: dict[str, Any]) -> list[PodGroup]:
    return [PodGroup(role, int(s.get("replicas", 1)), _spec(s.get("template"))) for role, s in specs.items()]


def _ray(obj: dict[str, Any], cluster: dict[str, Any]) -> list[PodGroup]:
    groups = [PodGroup("head", 1, _spec(cluster.get("headGroupSpec", {}).get("template")))]
    for g in cluster.get("workerGroupSpecs") or []:
        count = int(g.get("replicas", g.get("minReplicas", 0)) or 0) * int(g.get("numOfHosts", 1) or 1)
        groups.append(PodGroup(g.get("groupName", "workers"), count, _spec(g.get("template"))))
    return groups


def _trainjob(obj: dict[str, Any], runtimes: dict[str, dict[str, Any]]) -> Workload:
    """Trainer v2: the runtime's JobSet, ``numNodes`` pods of the ``node`` job with the trainer's resources,
    runtime patches applied (kubeflow/trainer pkg/runtime/framework/plugins/torch + jobset builder). With the
    runtime's ``podGroupPolicy.volcano`` the Volcano plugin makes one PodGroup of every pod in the queue the
    JobSet template's ``scheduling.volcano.sh/queue-name`` annotation names (plugins/volcano/volcano.go); the
    pods reach Volcano only when their template names it as scheduler."""
    name = f"TrainJob/{obj['metadata']['name']}"
    spec = obj.get("spec", {})
    ref = spec.get("runtimeRef", {}).get("name")
    runtime = runtimes.get(ref or "")
    if runtime is None:
        return Workload(name, [], problems=[f"ClusterTrainingRuntime {ref!r} is not installed by this stack"])
    trainer = spec.get("trainer") or {}
    groups = []
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = dict(_spec(job["template"]["spec"].get("template")))
        count = int(job.get("replicas", 1))
        if job["name"] == "node":
            count = int(trainer.get("numNodes", runtime["spec"].get("mlPolicy", {}).get("numNodes", 1)))
            containers = []
            for c in pod.get("containers", []):
                if c["name"] == "node" and "resourcesPerNode" in trainer:
                    c = {**c, "resources": trainer["resourcesPerNode"]}
                containers.append(c)
            pod["containers"] = containers
        for patch in spec.get("runtimePatches") or []:
            for pj in (
                patch.get("trainingRuntimeSpec", {}).get("template", {}).get("spec", {}).get("replicatedJobs") or []
            ):
                if pj.get("name") != job["name"]:
                    continue
                ps = _spec(pj.get("template", {}).get("spec", {}).get("template"))
                for key in ("nodeSelector", "tolerations", "affinity"):
                    if key in ps:
                        pod[key] = ps[key]
        groups.append(PodGroup(job["name"], count, pod))
    rspec = runtime.get("spec") or {}
    queue = None
    if "volcano" in (rspec.get("podGroupPolicy") or {}) and all(g.spec.get("schedulerName") == VOLCANO for g in groups):
        annotations = dict(((rspec.get("template") or {}).get("metadata") or {}).get("annotations") or {})
        for patch in spec.get("runtimePatches") or []:
            meta = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("metadata") or {}
            annotations.update(meta.get("annotations") or {})
        queue = str(annotations.get(QUEUE_ANNOTATION, "default"))
    return Workload(name, groups, volcano_queue=queue)


def sbatch(name: str, text: str) -> Workload:
    try:
        request = sbatch_request(text)
    except ValueError as exc:
        return Workload(f"sbatch/{name}", [], problems=[str(exc)])
    return Workload(f"sbatch/{name}", [], slurm=request)


def _operator_gang(name: str, groups: list[PodGroup], spec: dict[str, Any], meta: dict[str, Any]) -> Workload:
    """An operator run with Volcano gang scheduling (mpi-operator ``--gang-scheduling=volcano``,
    training-operator ``--gang-scheduler-name=volcano``): one PodGroup of the job in ``schedulingPolicy.queue``
    (else the job's queue-name annotation, else Volcano's default queue) with ``minResources`` when given
    (mpi-operator v0.8 pkg/controller/podgroup.go ``newPodGroup``)."""
    policy = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    queue = policy.get("queue") or (meta.get("annotations") or {}).get(QUEUE_ANNOTATION) or "default"
    minimum = policy.get("minResources")
    return Workload(name, groups, volcano_queue=str(queue), min_resources=dict(minimum) if minimum else None)


def expand(
    obj: dict[str, Any], runtimes: dict[str, dict[str, Any]], gang_kinds: frozenset[str] = frozenset()
) -> Workload | None:
    """The pods ``obj``'s controller creates, or None for objects that create none (ConfigMap, Service).
    ``gang_kinds``: the kinds whose operator the stack runs with Volcano gang scheduling."""
    kind, meta, spec = obj.get("kind"), obj.get("metadata", {}), obj.get("spec") or {}
    group = str(obj.get("apiVersion", "")).split("/")[0]
    name = f"{kind}/{meta.get('name')}"
    labels = meta.get("labels") or {}
    if kind == "ConfigMap":
        texts = [(k, v) for k, v in (obj.get("data") or {}).items() if k.endswith(".sbatch")]
        return sbatch(texts[0][0], texts[0][1]) if texts else None
    if kind == "Pod":
        return Workload(
            name,
            [PodGroup("pod", 1, spec)],
            volcano_queue=_pod_queue(obj) if spec.get("schedulerName") == VOLCANO else None,
        )
    if kind == "Job" and group == "batch":
        template = spec.get("template") or {}
        pods = PodGroup("pod", int(spec.get("parallelism", 1)), _spec(template))
        if pods.spec.get("schedulerName") != VOLCANO:
            return Workload(name, [pods])
        # Volcano's PodGroup controller: one PodGroup for the Job's pods, minMember from the Job's
        # group-min-member annotation (default 1), queue from the pods' annotation (pg_controller_handler.go).
        ann = (template.get("metadata") or {}).get("annotations") or {}
        min_member = int((meta.get("annotations") or {}).get(MIN_MEMBER_ANNOTATION, 1))
        return Workload(
            name, [pods], volcano_queue=str(ann.get(QUEUE_ANNOTATION, "default")), gang=min_member >= pods.count
        )
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        return Workload(name, [PodGroup("pod", int(spec.get("replicas", 1)), _spec(spec.get("template")))])
    if kind == "Job" and group == "batch.volcano.sh":
        groups = [
            PodGroup(t.get("name", "task"), int(t.get("replicas", 1)), _spec(t.get("template")))
            for t in spec.get("tasks") or []
        ]
        return Workload(name, groups, volcano_queue=spec.get("queue", "default"))
    if kind == "MPIJob":
        groups = _replicas(spec.get("mpiReplicaSpecs") or {})
        return _operator_gang(name, groups, spec, meta) if kind in gang_kinds else Workload(name, groups)
    if kind == "PyTorchJob":
        groups = _replicas(spec.get("pytorchReplicaSpecs") or {})
        return _operator_gang(name, groups, spec, meta) if kind in gang_kinds else Workload(name, groups)
    if kind in ("RayJob", "RayCluster"):
        cluster = spec.get("rayClusterSpec", {}) if kind == "RayJob" else spec
        queue = (
            labels.get("volcano.sh/queue-name", "default") if labels.get("ray.io/scheduler-name") == VOLCANO else None
        )
        return Workload(name, _ray(obj, cluster), volcano_queue=queue)
    if kind == "TrainJob":
        return _trainjob(obj, runtimes)
    return None


def _pod_queue(obj: dict[str, Any]) -> str:
    ann = obj.get("metadata", {}).get("annotations") or {}
    return str(ann.get("scheduling.volcano.sh/queue-name", "default"))
