"""TrainJob (Kubeflow Trainer v2, ``trainer.kubeflow.org/v1alpha1``) on a per-job ``TrainingRuntime``.

The runtime is shaped like upstream ``torch-distributed`` and like the partition's ClusterTrainingRuntime
(``ekstrain.assembly.schedulers.operators.torch_runtime``: a JobSet with one ``node`` replicated job,
``mlPolicy.torch``) and carries this run's placement, volumes, annotation and security context. It is
per job because the restart policy lives in the JobSet template, which a TrainJob cannot patch
(``runtimePatches`` of Trainer v2.3 allow only pod-level fields; pinned CRD trainjob.yaml): the JobSet
restarts every node ``--max-restarts`` times (``failurePolicy.maxRestarts``) and a Job fails on its first
pod failure (``backoffLimit: 0``), the whole-gang restart of kubernetes-sigs/jobset
examples/simple/max-restarts.yaml and of Volcano's ``RestartJob``. The TrainJob sets image, command,
env, node count, processes per node and per-node resources. The torch plugin injects
``PET_NODE_RANK``, ``PET_MASTER_ADDR`` and ``PET_MASTER_PORT``, which the static torchrun rendezvous uses.
"""

from __future__ import annotations

from typing import Any

from ekstrain.assembly.jobs.pod import (
    QUEUE_ANNOTATION,
    VOLCANO_SCHEDULER,
    kubelet_argv,
    launch_configmap,
    queue,
    worker_container,
    worker_template,
)
from ekstrain.assembly.jobs.resolve import PlatformWord, ResolvedRun
from ekstrain.layout import topology
from ekstrain.workloads.trainjob import KIND

API_VERSION = KIND.api_version
NODE_JOB = "node"
"""Replicated job and container name of upstream's torch runtimes."""
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
"""Marks the replicated job the TrainJob's ``trainer`` applies to (as the partition runtimes do)."""
RENDEZVOUS: list[str] = [
    PlatformWord("--node_rank=${PET_NODE_RANK}"),
    PlatformWord("--master_addr=${PET_MASTER_ADDR}"),
    PlatformWord("--master_port=${PET_MASTER_PORT}"),
]


def runtime_name(r: ResolvedRun) -> str:
    return f"{r.name}-runtime"


def training_runtime(r: ResolvedRun) -> dict[str, Any]:
    """With Volcano: ``podGroupPolicy.volcano`` makes Trainer's Volcano plugin create one PodGroup per TrainJob
    (minMember = every node, minResources = their requests) in the queue named by the JobSet template's
    ``scheduling.volcano.sh/queue-name`` annotation (kubeflow/trainer pkg/runtime/framework/plugins/volcano
    volcano.go ``Build``; pkg/runtime/core/trainingruntime.go passes the template's annotations); the plugin
    does not set the scheduler, so the pods name it (``schedulerName: volcano``)."""
    container = worker_container(r, name=NODE_JOB)
    pod_extra: dict[str, Any] = {"restartPolicy": "Never"}
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": r.nodes, "torch": {}}}
    template: dict[str, Any] = {}
    if r.volcano:
        # Trainer v2.3 PodGroupPolicy.volcano.networkTopology (the pinned TrainingRuntime CRD) goes onto the PodGroup
        # its Volcano plugin creates: the same tier a Volcano Job of this plan asks (ekstrain/layout/topology.py).
        constraint = topology.network_topology(r.instance.name, r.nodes, r.degrees)
        spec["podGroupPolicy"] = {"volcano": {"networkTopology": constraint} if constraint else {}}
        template["metadata"] = {"annotations": {QUEUE_ANNOTATION: queue(r)}}
        pod_extra["schedulerName"] = VOLCANO_SCHEDULER
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": {
            **r.metadata(runtime_name(r)),
            "labels": {**r.labels, "trainer.kubeflow.org/framework": "torch"},
        },
        "spec": {
            **spec,
            "template": {
                **template,
                "spec": {
                    "failurePolicy": {"maxRestarts": r.spec.max_restarts},
                    "replicatedJobs": [
                        {
                            "name": NODE_JOB,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "backoffLimit": 0,
                                    "template": worker_template(r, container, **pod_extra),
                                },
                            },
                        }
                    ],
                },
            },
        },
    }


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    job = {
        "apiVersion": API_VERSION,
        "kind": KIND.kind,
        "metadata": r.metadata(),
        "spec": {
            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": runtime_name(r)},
            "trainer": {
                "image": r.spec.image,
                "command": kubelet_argv(["/bin/bash", "-c", r.shell(RENDEZVOUS)]),
                "env": r.env_list(),
                "numNodes": r.nodes,
                "numProcPerNode": r.nproc_per_node,
                "resourcesPerNode": r.resources(),
            },
        },
    }
    return [*launch_configmap(r), training_runtime(r), job]
