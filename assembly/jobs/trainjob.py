"""TrainJob (Kubeflow Trainer v2, ``trainer.kubeflow.org/v1alpha1``) on the ``torch-distributed`` runtime.

The runtime (a ClusterTrainingRuntime installed by the schedulers component) owns the JobSet
shape; the TrainJob sets image, command, node count, processes per node and per-node resources,
and ``runtimePatches`` add this platform's placement, volumes, annotation and security context
to the runtime's ``node`` replicated job. The torch plugin injects ``PET_NODE_RANK``,
``PET_MASTER_ADDR`` and ``PET_MASTER_PORT``, which the static torchrun rendezvous uses.
"""

from __future__ import annotations

from typing import Any

from assembly.jobs.pod import TERMINATION_GRACE_SECONDS, kubelet_argv, launch_configmap
from assembly.jobs.resolve import PlatformWord, ResolvedRun
from assembly.schedulers import operators

API_VERSION = "trainer.kubeflow.org/v1alpha1"


def torch_runtime(partition: str) -> str:
    """The partition's ClusterTrainingRuntime, installed by the schedulers component (one per partition)."""
    return operators.runtime_name(partition)


NODE_JOB = "node"
"""Replicated job and container name of upstream's torch runtimes."""
PATCH_MANAGER = "ekstrain.io/jobs"
RENDEZVOUS: list[str] = [
    PlatformWord("--node_rank=${PET_NODE_RANK}"),
    PlatformWord("--master_addr=${PET_MASTER_ADDR}"),
    PlatformWord("--master_port=${PET_MASTER_PORT}"),
]


def build(r: ResolvedRun, runtime: str | None = None) -> list[dict[str, Any]]:
    runtime = runtime or torch_runtime(r.shape.name)
    pod_patch = {
        "metadata": {"labels": dict(r.labels), "annotations": r.annotations()},
        "spec": {
            "nodeSelector": r.node_selector(),
            "tolerations": r.tolerations(),
            "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
            "volumes": r.volumes(),
            "containers": [
                {"name": NODE_JOB, "volumeMounts": r.volume_mounts(), "securityContext": r.security_context()}
            ],
        },
    }
    job = {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": r.metadata(),
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": runtime},
            "trainer": {
                "image": r.spec.image,
                "command": kubelet_argv(["/bin/bash", "-c", r.shell(RENDEZVOUS)]),
                "env": r.env_list(),
                "numNodes": r.nodes,
                "numProcPerNode": r.nproc_per_node,
                "resourcesPerNode": r.resources(),
            },
            "runtimePatches": [
                {
                    "manager": PATCH_MANAGER,
                    "trainingRuntimeSpec": {
                        "template": {
                            "spec": {
                                "replicatedJobs": [
                                    {
                                        "name": NODE_JOB,
                                        "template": {"spec": {"template": pod_patch}},
                                    }
                                ]
                            }
                        }
                    },
                }
            ],
        },
    }
    return [*launch_configmap(r), job]
