"""Trainium: an Indexed ``batch/v1`` Job (one pod per trn node) plus its headless Service.

Pod ``i`` is ``<job>-i.<job>`` (Indexed Job hostname + ``subdomain``); node rank =
``JOB_COMPLETION_INDEX``. Before training, each node runs ``neuron_parallel_compile`` once with
the same torchrun command (graphs cached on FSx at ``/fsx/neuron-cache``; a marker file skips the
step on restarts). A failed pod restarts its index; the others then fail on the collective
timeout and restart too, so the static rendezvous re-forms (``backoffLimit`` counts pods).
"""

from __future__ import annotations

from typing import Any

from ekstrain.assembly.jobs.pod import (
    MIN_MEMBER_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO_SCHEDULER,
    launch_configmap,
    queue,
    worker_container,
    worker_template,
)
from ekstrain.assembly.jobs.resolve import MASTER_PORT, ResolvedRun

CONTAINER = "trainer"


def rendezvous(r: ResolvedRun) -> list[str]:
    return r.static_rendezvous("${JOB_COMPLETION_INDEX}", f"{r.name}-0.{r.name}", MASTER_PORT)


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    container = worker_container(r, name=CONTAINER, command=["/bin/bash", "-c", r.shell(rendezvous(r))])
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": r.metadata(),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"ekstrain.io/job": r.name},
            "ports": [{"name": "rendezvous", "port": MASTER_PORT, "targetPort": MASTER_PORT}],
        },
    }
    template = worker_template(r, container, restartPolicy="Never", subdomain=r.name)
    meta = r.metadata()
    if r.volcano:
        # Volcano's PodGroup controller gives the pods of a ``schedulerName: volcano`` Job one PodGroup
        # (podgroup-<job uid>), minMember from the Job's group-min-member annotation, queue from the pods'
        # queue-name annotation (volcano pkg/controllers/podgroup pg_controller_handler.go): a gang in the
        # partition's queue.
        meta["annotations"] = {MIN_MEMBER_ANNOTATION: str(r.nodes)}
        template["metadata"]["annotations"] = {**template["metadata"]["annotations"], QUEUE_ANNOTATION: queue(r)}
        template["spec"]["schedulerName"] = VOLCANO_SCHEDULER
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "completionMode": "Indexed",
            "completions": r.nodes,
            "parallelism": r.nodes,
            "backoffLimit": r.spec.max_restarts * r.nodes,
            "template": template,
        },
    }
    return [*launch_configmap(r), service, job]
