"""PyTorchJob v1 (Kubeflow Training Operator): a Master and ``nodes - 1`` Workers, torchrun in each.

The operator sets ``RANK`` (the pod's replica rank = node rank), ``MASTER_ADDR`` and ``MASTER_PORT``
in every replica; torchrun's static rendezvous uses them, and torchrun itself then sets the
per-process RANK/LOCAL_RANK/WORLD_SIZE.
"""

from __future__ import annotations

from typing import Any

from ekstrain.assembly.jobs.pod import launch_configmap, queue, worker_container, worker_template
from ekstrain.assembly.jobs.resolve import JOB_LABEL, PlatformWord, ResolvedRun
from ekstrain.layout import topology
from ekstrain.workloads.pytorchjob import KIND

API_VERSION = KIND.api_version
CONTAINER = "pytorch"
"""The operator finds the training container by this exact name."""
RENDEZVOUS: list[str] = [
    PlatformWord("--node_rank=${RANK}"),
    PlatformWord("--master_addr=${MASTER_ADDR}"),
    PlatformWord("--master_port=${MASTER_PORT}"),
]


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    body = r.shell(RENDEZVOUS)
    container = worker_container(r, name=CONTAINER, command=["/bin/bash", "-c", body])
    # The plan's network tier as a preference of every replica (all hold GPU nodes): training-operator v1.9.4 fills
    # the PodGroup's whole spec itself on every sync (pkg/controller.v1/common/job.go, the Volcano ``pgSpecFill``:
    # minMember, queue, priorityClassName, minResources) and names it on every pod (control/podgroup_control.go
    # ``DecoratePodTemplateSpec``), so a networkTopology set on it would be dropped and Volcano's pod-annotation
    # route never runs (the same as assembly/jobs/mpijob.py ``worker_affinity``).
    affinity = topology.preferred_pod_affinity(
        {JOB_LABEL: r.name}, topology.network_topology(r.instance.name, r.nodes, r.degrees)
    )
    replica = {
        "restartPolicy": "OnFailure",
        "template": worker_template(r, container, **({"affinity": affinity} if affinity else {})),
    }
    specs: dict[str, Any] = {"Master": {"replicas": 1, **replica}}
    if r.nodes > 1:
        specs["Worker"] = {"replicas": r.nodes - 1, **replica}
    run_policy: dict[str, Any] = {"cleanPodPolicy": "Running", "backoffLimit": r.spec.max_restarts * r.nodes}
    if r.volcano:
        # training-operator v1.9 with --gang-scheduler-name=volcano (components/operators.py): a PodGroup in
        # this queue, minMember = every replica (the default), schedulerName set on every pod.
        run_policy["schedulingPolicy"] = {"queue": queue(r), "minAvailable": r.nodes}
    job = {
        "apiVersion": API_VERSION,
        "kind": KIND.kind,
        "metadata": r.metadata(),
        "spec": {
            "nprocPerNode": str(r.nproc_per_node),
            # The operator counts container restarts of every replica against backoffLimit (training-operator
            # v1.9 PastBackoffLimit); one whole-job restart restarts every node's container once.
            "runPolicy": run_policy,
            "pytorchReplicaSpecs": specs,
        },
    }
    return [*launch_configmap(r), job]
