"""KubeRay, Kubeflow Trainer and MPI operator: values and runtimes.

MPI operator v0.8 has no Helm chart (upstream installs ``deploy/v2beta1/mpi-operator.yaml``), and the
Kubeflow Trainer chart does not bundle it (Trainer v2 runs MPI through its own ``mlPolicy.mpi``
runtime, not MPIJob). So the MPI operator is installed from the pinned manifest URL
(``versions.MPI_OPERATOR_MANIFEST``); it coexists with Trainer v2 (different API group,
``trainer.kubeflow.org``) but not with the legacy training operator, which ships its own
``mpijobs.kubeflow.org`` (rule in stacks/rules.py).
"""

from __future__ import annotations

from typing import Any

from ekstrain import names, versions
from ekstrain.assembly.jobs import env as envtable
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.names import SYSTEM_NODE_SELECTOR
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
        "manager": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR)},
        "runtimes": {"defaultEnabled": False, "installer": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR)}},
    }


def runtime_name(partition: str) -> str:
    return f"torch-distributed-{partition}"


def torch_runtime(cfg: StackConfig, p: PartitionFacts) -> dict[str, Any]:
    """A ClusterTrainingRuntime shaped like upstream ``torch-distributed`` (JobSet with one ``node``
    replicated job, ``mlPolicy.torch``), pinned to partition P: whole nodes, EFA, /dev/shm, FSx."""
    resources = {k: str(v) for k, v in p.node_resources.items()}
    return {
        "apiVersion": TRAINER_API,
        "kind": "ClusterTrainingRuntime",
        "metadata": {
            "name": runtime_name(p.name),
            "labels": {"trainer.kubeflow.org/framework": "torch", names.PARTITION_LABEL: p.name},
        },
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {
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
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def torch_runtimes(cfg: StackConfig) -> list[dict[str, Any]]:
    return [torch_runtime(cfg, p) for p in partition_facts(cfg)]
