"""KubeRay, Kubeflow Trainer and MPI operator: values and runtimes.

MPI operator v0.8 has no Helm chart (upstream installs ``deploy/v2beta1/mpi-operator.yaml``), and the
Kubeflow Trainer chart does not bundle it (Trainer v2 runs MPI through its own ``mlPolicy.mpi``
runtime, not MPIJob). So the program writes the MPI operator's install objects itself (module
``mpi_operator``: our own dicts, the CRD from the pinned upstream directory), gang flag applied at render time
(:func:`mpi_operator_objects`); it coexists with Trainer v2 (different API group,
``trainer.kubeflow.org``) but not with the legacy training operator, which ships its own
``mpijobs.kubeflow.org`` (rule in stacks/rules/schedulers.py).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from ekstrain.assembly.jobs import env as envtable
from ekstrain.assembly.jobs.pod import QUEUE_ANNOTATION, VOLCANO_SCHEDULER
from ekstrain.assembly.jobs.resolve import worker_cpu_memory
from ekstrain.assembly.jobs.spec import RunSpec
from ekstrain.assembly.schedulers import mpi_operator, teams
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.facts import names, versions
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR
from ekstrain.layout.controller_resources import MEDIUM

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

KUBERAY_NAMESPACE = "kuberay-system"
TRAINER_NAMESPACE = "kubeflow-system"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"

TORCH_IMAGES = {
    "gpu": versions.GPU_TRAINING_IMAGE,
    "trainium": versions.NEURON_TRAINING_IMAGE,
}
"""Default trainer images of the runtimes (EFA-capable); a TrainJob overrides them with ``spec.trainer.image``."""


def runtime_env(cfg: StackConfig, p: PartitionFacts) -> list[dict[str, str]]:
    """The EFA/NCCL/Neuron env table (assembly/jobs/env.py) for a whole node of the partition; a TrainJob's
    ``spec.trainer.env`` adds or overrides per run."""
    it = p.shape.instance_types[0]
    mount = cfg.storage.fsx.mount_path.rstrip("/")
    ctx = envtable.EnvContext(
        family=p.shape.family,
        efa=p.shape.efa_interfaces,
        gpudirect_rdma=p.shape.gpudirect_rdma,
        hugepages=False,
        neuron_cores=it.neuron_cores,
        checkpoint_dir=f"{mount}{cfg.storage.fsx.checkpoint_path}",
        data_dir=f"{mount}{cfg.storage.fsx.data_path}",
        compile_cache=f"{mount}/neuron-cache",
    )
    return [{"name": k, "value": v} for k, v in envtable.platform_env(ctx).items()]


def kuberay_values(cfg: StackConfig) -> dict[str, Any]:
    values: dict[str, Any] = {"nodeSelector": dict(SYSTEM_NODE_SELECTOR)}
    if cfg.schedulers.volcano.enabled:
        # kuberay-operator values.yaml: set `name` only (`enabled: true` is the deprecated form and
        # setting both is an error).
        values["batchScheduler"] = {"name": "volcano"}
    return values


def trainer_values() -> dict[str, Any]:
    """Kubeflow Trainer 2.3 with its JobSet dependency; our own per-partition runtimes replace the
    chart's generic ones (left disabled)."""
    return {
        "jobset": {"install": True},
        "manager": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": MEDIUM},
        # runtimes: the chart's generic runtimes stay off (its default, defaultEnabled: false), so its
        # installer Job is never rendered and has nothing to place.
    }


RUNTIME_MAX_RESTARTS = RunSpec.max_restarts
"""Whole-gang restarts of a TrainJob on a ClusterTrainingRuntime: `ekstrain job render`'s ``--max-restarts``
default (assembly/jobs/spec.py), so a hand-written TrainJob survives as many bad nodes as a rendered one."""


def runtime_name(partition: str) -> str:
    return f"torch-distributed-{partition}"


def torch_runtime(cfg: StackConfig, p: PartitionFacts) -> dict[str, Any]:
    """A ClusterTrainingRuntime shaped like upstream ``torch-distributed`` (JobSet with one ``node``
    replicated job, ``mlPolicy.torch``), pinned to partition P: whole nodes, EFA, /dev/shm, FSx."""
    resources = {k: str(v) for k, v in p.node_resources.items()}
    # cpu and memory as the TrainJobs `ekstrain job render` writes (assembly/jobs/resolve.py), for the
    # partition's smallest type: a runtime a user's TrainJob references is never BestEffort, and its pod
    # fits every node of the partition. requests == limits: a Guaranteed pod (extended resources must be).
    cpu, memory = min(
        (worker_cpu_memory(t.vcpus, t.memory_gib) for t in p.shape.instance_types),
        key=lambda cm: (int(cm[0]), int(cm[1].removesuffix("Gi"))),
    )
    resources.update(cpu=cpu, memory=memory)
    # With Volcano, the same gang through the partition's queue as a TrainJob's own runtime
    # (assembly/jobs/trainjob.py training_runtime: Trainer's Volcano plugin, queue from the annotation).
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": 1, "torch": {}}}
    template: dict[str, Any] = {}
    pod: dict[str, Any] = {}
    if cfg.schedulers.volcano.enabled:
        spec["podGroupPolicy"] = {"volcano": {}}
        # the partition's queue for work of no team (its -shared leaf when teams name it: schedulers/teams.py)
        template["metadata"] = {"annotations": {QUEUE_ANNOTATION: teams.shared_queue(cfg, p.name)}}
        pod["schedulerName"] = VOLCANO_SCHEDULER
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {
            "name": runtime_name(p.name),
            "labels": {"trainer.kubeflow.org/framework": "torch", names.PARTITION_LABEL: p.name},
        },
        "spec": {
            **spec,
            "template": {
                **template,
                "spec": {
                    # A failed node restarts the whole gang (every Job recreated, new pods placed anew: never on a
                    # node the health gate tainted unhealthy) up to RUNTIME_MAX_RESTARTS times; without it a user's
                    # TrainJob failed on its first lost node (jobset api: failurePolicy.maxRestarts defaults to 0).
                    # As the per-job runtimes of `ekstrain job render` (assembly/jobs/trainjob.py).
                    "failurePolicy": {"maxRestarts": RUNTIME_MAX_RESTARTS},
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    # A Job fails on its first pod failure, so the JobSet's restart is the only one.
                                    "backoffLimit": 0,
                                    "template": {
                                        "spec": {
                                            **pod,
                                            "restartPolicy": "Never",
                                            "nodeSelector": dict(p.node_selector),
                                            "tolerations": [p.toleration],
                                            "containers": [
                                                {
                                                    "name": "node",
                                                    "image": TORCH_IMAGES[p.shape.family],
                                                    "command": ["torchrun"],
                                                    "env": runtime_env(cfg, p),
                                                    "resources": {
                                                        "requests": dict(resources),
                                                        "limits": dict(resources),
                                                    },
                                                    "volumeMounts": [
                                                        {"name": "dshm", "mountPath": "/dev/shm"},
                                                        {"name": "fsx", "mountPath": cfg.storage.fsx.mount_path},
                                                    ],
                                                }
                                            ],
                                            "volumes": [
                                                {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                                                {"name": "fsx", "persistentVolumeClaim": {"claimName": names.FSX_PVC}},
                                            ],
                                        }
                                    },
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def torch_runtimes(cfg: StackConfig) -> list[dict[str, Any]]:
    return [torch_runtime(cfg, p) for p in partition_facts(cfg)]


# ---- operators installed from upstream's objects: their Deployment as the program patches it -------------

MPI_OPERATOR = "mpi-operator"
"""Deployment and container name in mpi-operator v0.8 deploy/v2beta1/mpi-operator.yaml."""
TRAINING_OPERATOR = "training-operator"
"""Deployment and container name in kubeflow/trainer v1.9 manifests/base (the legacy training operator)."""
MPI_OPERATOR_CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": 65532,
}
"""The upstream Deployment sets no securityContext and its image (gcr.io/distroless/base-debian12, binary in /opt,
mpi-operator Dockerfile) runs as root; the operator only talks to the API server, so it runs unprivileged, with a
writable /tmp (emptyDir) for klog's files (``-alsologtostderr`` also logs to files)."""
OPERATOR_RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}
"""Neither upstream manifest sets resources (BestEffort, evicted first under node pressure)."""


def gang_args(cfg: StackConfig) -> dict[str, list[str]]:
    """Installed operator Deployment -> the flags that make it gang-schedule through Volcano (none without it):
    mpi-operator ``--gang-scheduling=volcano`` (cmd/mpi-operator/app/options), training-operator v1.9
    ``--gang-scheduler-name=volcano``. Both manifests' ClusterRoles already grant podgroups of
    scheduling.volcano.sh."""
    s = cfg.schedulers
    out: dict[str, list[str]] = {}
    if s.volcano.enabled and s.mpi_operator.enabled:
        out[MPI_OPERATOR] = ["--gang-scheduling=volcano"]
    if s.volcano.enabled and s.kubeflow.flavor == "training-operator":
        out[TRAINING_OPERATOR] = ["--gang-scheduler-name=volcano"]
    return out


def patch_operator(obj: dict[str, Any], extra_args: dict[str, list[str]]) -> dict[str, Any] | None:
    """The upstream operator Deployment ``obj`` with the gang flags appended to its container's args and
    requests set (the program's transform on the manifest's children, components/operators.py); None for
    any other object."""
    name = (obj.get("metadata") or {}).get("name")
    if obj.get("kind") != "Deployment" or name not in (MPI_OPERATOR, TRAINING_OPERATOR):
        return None
    out = copy.deepcopy(obj)
    for c in out.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        if c.get("name") != name:
            continue
        args = list(c.get("args") or [])
        missing = [a for a in extra_args.get(name, []) if a not in args]
        if missing:
            c["args"] = args + missing
        c.setdefault("resources", copy.deepcopy(OPERATOR_RESOURCES))
        if name == MPI_OPERATOR:
            c.setdefault("securityContext", copy.deepcopy(MPI_OPERATOR_CONTAINER_SECURITY))
            c.setdefault("volumeMounts", [{"name": "tmp", "mountPath": "/tmp"}])
    if name == MPI_OPERATOR:
        pod = out["spec"]["template"]["spec"]
        pod.setdefault("securityContext", {"seccompProfile": {"type": "RuntimeDefault"}})
        pod.setdefault("volumes", [{"name": "tmp", "emptyDir": {}}])
    return out


def mpi_operator_objects(gang: dict[str, list[str]], crd: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of mpi-operator's install (``mpi_operator.install_objects``, our own dicts with upstream's
    content; ``crd`` from ``mpi_operator.mpijob_crd``), in upstream's order (Namespace, CRD, ServiceAccount,
    ClusterRoles, ClusterRoleBinding, Deployment), with the Deployment patched (:func:`patch_operator`: the gang
    flag from ``gang``, requests). What the render writes and validates is what ``pulumi up`` applies."""
    out = []
    for obj in mpi_operator.install_objects(crd):
        patched = patch_operator(obj, gang)
        out.append(patched if patched is not None else obj)
    return out
