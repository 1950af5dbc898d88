"""Every long-running platform container requests cpu and memory (issue 22).

A container with no requests makes its pod BestEffort (or Burstable below what it uses): the kubelet evicts
BestEffort pods first under node pressure (kubernetes pkg/kubelet/eviction: ranking by QoS and usage over
requests), and the scheduler places them anywhere regardless of room, so on the three fixed system nodes a
controller (Argo CD, the hub, Prometheus, cert-manager, the Slurm operator...) is the first thing lost when a
launcher or Ray head fills a node. This check reads every Deployment, StatefulSet and DaemonSet the stack
applies (manifests and chart-rendered objects) and names each container without both requests. A LimitRange
of the same namespace with ``defaultRequest`` fills what a container leaves out when the pod is admitted
(kubernetes plugin/pkg/admission/limitranger: ``defaultContainerResourceRequirements``), so those count as
requested: the Neuron chart has no resources value, its two containers get theirs from kube-system's
LimitRange (components/device_plugins.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ekstrain.infra.verify import Check

CHECK_NAME = "controllers: cpu and memory requests on every container"
KINDS = ("Deployment", "StatefulSet", "DaemonSet")
REQUIRED = ("cpu", "memory")


def namespace_defaults(objects: Iterable[dict[str, Any]]) -> dict[str, set[str]]:
    """namespace -> resources its LimitRanges default for a container (``type: Container``, ``defaultRequest``;
    ``default`` too: the limit becomes the request when none is given)."""
    out: dict[str, set[str]] = {}
    for obj in objects:
        if obj.get("kind") != "LimitRange":
            continue
        ns = (obj.get("metadata") or {}).get("namespace") or "default"
        for limit in (obj.get("spec") or {}).get("limits") or []:
            if limit.get("type") == "Container":
                out.setdefault(ns, set()).update({*(limit.get("defaultRequest") or {}), *(limit.get("default") or {})})
    return out


def missing_requests(obj: dict[str, Any], defaulted: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """``<Kind>/<namespace>/<name> container <c>: no <resource> request`` for each gap in ``obj``. A limit
    without a request counts: the API server defaults the request to the limit (pkg/apis/core/v1
    defaults.go); so does a resource in ``defaulted`` (the namespace's LimitRange default)."""
    if obj.get("kind") not in KINDS:
        return []
    meta = obj.get("metadata") or {}
    where = f"{obj['kind']}/{meta.get('namespace') or '-'}/{meta.get('name')}"
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    out = []
    for c in spec.get("containers") or []:
        resources = c.get("resources") or {}
        given = {*(resources.get("requests") or {}), *(resources.get("limits") or {}), *defaulted}
        absent = [r for r in REQUIRED if r not in given]
        if absent:
            out.append(
                f"{where} container {c.get('name')}: no {' or '.join(absent)} request (BestEffort/evicted first)"
            )
    return out


def check(objects: Iterable[dict[str, Any]]) -> Check:
    objects = list(objects)
    defaults = namespace_defaults(objects)
    result = Check(CHECK_NAME, what="workloads")
    for obj in objects:
        if obj.get("kind") in KINDS:
            result.checked += 1
            ns = (obj.get("metadata") or {}).get("namespace") or "default"
            result.problems += missing_requests(obj, defaults.get(ns, set()))
    return result
