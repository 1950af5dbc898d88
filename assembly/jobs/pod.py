"""Pod pieces every scheduler's workers share: one container and one pod template per run.

Each builder calls :func:`worker_template` and only adds what its controller needs (restart
policy, scheduler name, hostname/subdomain, the launcher), so resources, EFA, volumes, env,
node placement, the do-not-disrupt annotation and the security context cannot drift apart.
"""

from __future__ import annotations

import re
from typing import Any

from ekstrain.assembly.jobs.env import liveness_probe
from ekstrain.assembly.jobs.resolve import ResolvedRun, kubelet_literal
from ekstrain.facts import training_metrics

TERMINATION_GRACE_SECONDS = 120
"""Time a worker gets after SIGTERM to finish writing a checkpoint shard."""


def kubelet_argv(argv: list[str]) -> list[str]:
    """A container command/args list the kubelet passes on unchanged (no ``$(VAR)`` expansion)."""
    return [kubelet_literal(a) for a in argv]


def worker_container(
    r: ResolvedRun,
    *,
    name: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    ssh: bool = False,
    with_env: bool = True,
) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": r.spec.image, "imagePullPolicy": "IfNotPresent"}
    if command is not None:
        c["command"] = kubelet_argv(command)
    if args is not None:
        c["args"] = kubelet_argv(args)
    if with_env:
        c["env"] = r.env_list()
        c["livenessProbe"] = liveness_probe()  # hang detection (assembly/jobs/env.py PROGRESS_HEARTBEAT_FILE)
        # The progress metrics port the PodMonitor scrapes (ekstrain/facts/training_metrics.py; docs/alerts.md).
        c["ports"] = [training_metrics.container_port()]
    c["resources"] = r.resources()
    c["volumeMounts"] = r.volume_mounts()
    c["securityContext"] = r.security_context(ssh=ssh)
    return c


def worker_pod_spec(r: ResolvedRun, container: dict[str, Any], **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeSelector": r.node_selector(),
        "tolerations": r.tolerations(),
        "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
        "containers": [container],
        "volumes": r.volumes(),
    }
    spec.update(extra)
    return spec


def worker_template(
    r: ResolvedRun, container: dict[str, Any], labels: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "metadata": {"labels": {**r.labels, **(labels or {})}, "annotations": r.annotations()},
        "spec": worker_pod_spec(r, container, **extra),
    }


def small_container(
    r: ResolvedRun,
    *,
    name: str,
    command: list[str] | None = None,
    cpu: str = "2",
    memory: str = "4Gi",
    with_files: bool = False,
    with_fsx: bool = False,
) -> dict[str, Any]:
    """A CPU-only helper container (MPI launcher, Ray head) that runs on any non-accelerator node."""
    c: dict[str, Any] = {"name": name, "image": r.spec.image, "imagePullPolicy": "IfNotPresent"}
    if command is not None:
        c["command"] = kubelet_argv(command)
    c["env"] = r.env_list()
    c["resources"] = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}
    mounts: list[dict[str, Any]] = []
    if with_fsx:
        mounts.append({"name": "fsx", "mountPath": r.mount_path})
    if with_files and r.files():
        mounts.append({"name": "launch", "mountPath": "/etc/ekstrain", "readOnly": True})
    if mounts:
        c["volumeMounts"] = mounts
    c["securityContext"] = r.security_context()
    return c


def small_volumes(r: ResolvedRun, *, with_files: bool = False, with_fsx: bool = False) -> list[dict[str, Any]]:
    vols = [v for v in r.volumes() if (v["name"] == "fsx" and with_fsx) or (v["name"] == "launch" and with_files)]
    return vols


def launch_configmap(r: ResolvedRun) -> list[dict[str, Any]]:
    """The ConfigMap with the run's files (DeepSpeed JSON, Ray launcher); [] when there are none."""
    files = r.files()
    if not files:
        return []
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": r.metadata(r.launch_configmap_name), "data": files}]


# ---- Volcano: every template's pods go through the partition's queue (one ledger) ----------------------------

VOLCANO_SCHEDULER = "volcano"
QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
"""volcano.sh/apis scheduling/v1beta1 ``QueueNameAnnotationKey``: read from a pod by Volcano's PodGroup
controller, from a TrainingRuntime's JobSet template by Kubeflow Trainer's Volcano plugin."""
MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
"""``VolcanoGroupMinMemberAnnotationKey``: on a pod's owner (a batch Job), the ``minMember`` of the PodGroup
Volcano's controller creates for the owner's pods (pkg/controllers/podgroup pg_controller_handler.go
``buildPodGroupFromPod``/``getMinMemberFromUpperRes``; ``--inherit-owner-annotations`` is on by default)."""


def queue(r: ResolvedRun) -> str:
    """The job's Volcano queue: the partition's (assembly/schedulers/volcano.py), or with teams its team's leaf or
    the partition's ``-shared`` leaf (assembly/schedulers/teams.py; resolved into ``r.queue``)."""
    return r.queue or r.shape.name


def _times(value: Any, n: int) -> Any:
    if isinstance(value, int):
        return value * n
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(value))
    if m is None:
        raise ValueError(f"cannot multiply the quantity {value!r}")
    return f"{int(m.group(1)) * n}{m.group(2)}"


def gang_min_resources(r: ResolvedRun) -> dict[str, Any]:
    """Requests of the ``nodes`` workers together: the PodGroup's ``minResources``, which Volcano's enqueue
    compares with the queue's room (capacity plugin: allocated + inqueue + minResources <= realCapability)."""
    return {k: _times(v, r.nodes) for k, v in r.resources()["requests"].items()}
