"""Every long-running platform container requests cpu and memory (issue 22).

A container with no requests makes its pod BestEffort (or Burstable below what it uses): the kubelet evicts
BestEffort pods first under node pressure (kubernetes pkg/kubelet/eviction: ranking by QoS and usage over
requests), and the scheduler places them anywhere regardless of room, so on the three fixed system nodes a
controller (Argo CD, the hub, Prometheus, cert-manager, the Slurm operator...) is the first thing lost when a
launcher or Ray head fills a node. This check reads every Deployment, StatefulSet and DaemonSet the stack
applies (manifests and chart-rendered objects) and names each container without both requests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ekstrain.infra.verify import Check

CHECK_NAME = "controllers: cpu and memory requests on every container"
KINDS = ("Deployment", "StatefulSet", "DaemonSet")
REQUIRED = ("cpu", "memory")
NO_VALUES_KEY = {
    # (workload, container) -> why the program cannot set its requests: the chart has no values key for them
    # (neuron-helm-chart 1.0.0 templates/scheduler-extn.yaml and device-plugin-daemonset.yaml write no
    # resources). Reported as warnings, not problems.
    ("Deployment/kube-system/k8s-neuron-scheduler", "neuron-scheduler-exp"): "neuron-helm-chart 1.0.0 "
    "scheduler-extn.yaml has no resources value",
    ("DaemonSet/kube-system/neuron-device-plugin", "neuron-device-plugin"): "neuron-helm-chart 1.0.0 "
    "device-plugin-daemonset.yaml has no resources value",
}


def missing_requests(obj: dict[str, Any], exempt: bool = False) -> list[str]:
    """``<Kind>/<namespace>/<name> container <c>: no <resource> request`` for each gap in ``obj``. A limit
    without a request counts: the API server defaults the request to the limit (pkg/apis/core/v1
    defaults.go). ``exempt``: only the containers of :data:`NO_VALUES_KEY` (else all but those)."""
    if obj.get("kind") not in KINDS:
        return []
    meta = obj.get("metadata") or {}
    where = f"{obj['kind']}/{meta.get('namespace') or '-'}/{meta.get('name')}"
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    out = []
    for c in spec.get("containers") or []:
        if ((where, c.get("name")) in NO_VALUES_KEY) != exempt:
            continue
        resources = c.get("resources") or {}
        given = {*(resources.get("requests") or {}), *(resources.get("limits") or {})}
        absent = [r for r in REQUIRED if r not in given]
        if absent:
            out.append(
                f"{where} container {c.get('name')}: no {' or '.join(absent)} request (BestEffort/evicted first)"
            )
    return out


def check(objects: Iterable[dict[str, Any]]) -> Check:
    result = Check(CHECK_NAME, what="workloads")
    for obj in objects:
        if obj.get("kind") in KINDS:
            result.checked += 1
            result.problems += missing_requests(obj)
            result.warnings += [f"{w} ({why})" for w in missing_requests(obj, exempt=True) for why in _why(w)]
    return result


def _why(problem: str) -> list[str]:
    return [why for (where, c), why in NO_VALUES_KEY.items() if problem.startswith(f"{where} container {c}:")]
