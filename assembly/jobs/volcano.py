"""Volcano Job (``batch.volcano.sh/v1alpha1``): a gang of ``nodes`` workers in the partition's queue.

``minAvailable`` = workers, so nothing starts until every worker can; a PodEvicted or PodFailed
restarts the whole job (``RestartJob``), which torchrun's static rendezvous needs. The ``svc``
plugin gives stable hostnames (``<job>-worker-<i>.<job>``), ``ssh`` lets users mpirun between
workers, and ``env`` provides ``VC_TASK_INDEX`` (the node rank).
"""

from __future__ import annotations

from typing import Any

from ekstrain.assembly.jobs.pod import launch_configmap, queue, worker_container, worker_template
from ekstrain.assembly.jobs.resolve import MASTER_PORT, ResolvedRun
from ekstrain.layout import topology
from ekstrain.workloads.volcano import KIND

API_VERSION = KIND.api_version
SCHEDULER = "volcano"
TASK = "worker"


def rendezvous(r: ResolvedRun) -> list[str]:
    return r.static_rendezvous("${VC_TASK_INDEX}", f"{r.name}-{TASK}-0.{r.name}", MASTER_PORT)


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    container = worker_container(r, name=TASK, command=["/bin/bash", "-c", r.shell(rendezvous(r))])
    job: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND.kind,
        "metadata": r.metadata(),
        "spec": {
            "schedulerName": SCHEDULER,
            "queue": queue(r),
            "minAvailable": r.nodes,
            "maxRetry": r.spec.max_restarts,
            "plugins": {"ssh": [], "svc": [], "env": []},
            "policies": [
                {"event": "PodEvicted", "action": "RestartJob"},
                {"event": "PodFailed", "action": "RestartJob"},
            ],
            "tasks": [
                {
                    "name": TASK,
                    "replicas": r.nodes,
                    "minAvailable": r.nodes,
                    "template": worker_template(r, container, restartPolicy="Never"),
                }
            ],
        },
    }
    # One network tier for the gang (ekstrain/layout/topology.py): hard within tier 2 for pipeline/context-parallel
    # plans,
    # soft otherwise; only on types EKS labels with network-node layers (HyperNodes exist only for those nodes).
    constraint = topology.network_topology(r.instance.name, r.nodes, r.degrees)
    if constraint is not None:
        job["spec"]["networkTopology"] = constraint
    return [*launch_configmap(r), job]
