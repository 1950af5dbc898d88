"""Every container the stack runs requests cpu and memory (a BestEffort pod is evicted first under pressure).

A container with no requests makes its pod BestEffort (or Burstable below what it uses): the kubelet evicts
BestEffort pods first under node pressure (kubernetes pkg/kubelet/eviction: ranking by QoS and usage over
requests), and the scheduler places them anywhere regardless of room, so on the three fixed system nodes a
controller (Argo CD, the hub, Prometheus, cert-manager, slurmctld...) is the first thing lost when a
launcher or Ray head fills a node; Karpenter sizes nodes from requests, so it cannot make room for them either.

The check reads every object the stack applies (manifests and chart-rendered objects, Helm hook Jobs
included) and finds containers three ways:

- a pod spec anywhere in the object (a ``containers`` list, with its ``initContainers``): Deployments,
  StatefulSets, DaemonSets, Jobs, CronJobs, Pods, and the pod templates of custom resources
  (ClusterTrainingRuntime, Volcano Job, MPIJob, RayCluster, Slinky's ``template.spec.initContainers``);
- a container written as one object with an ``image`` outside any pod spec: how Slinky's CRs declare their
  containers (Controller ``slurmctld``/``reconfigure``/``logfile``, Accounting ``slurmdbd``, RestApi
  ``slurmrestd``, LoginSet ``login``/``initconf``, NodeSet ``slurmd``/``logfile``; slinky.slurm.net v1beta1
  CRDs, slurm-operator 1.2.1) and the Prometheus Operator's (``Prometheus``/``Alertmanager`` ``spec.image`` +
  ``spec.resources``);
- the sidecars an operator adds from its own flags: the Prometheus Operator injects ``config-reloader`` and
  ``init-config-reloader`` into Prometheus and Alertmanager pods with the requests of its
  ``--config-reloader-{cpu,memory}-request`` flags, which kube-prometheus-stack 88.5.3 sets to ``0`` ("no
  request") unless ``prometheusOperator.prometheusConfigReloader.resources`` is given
  (templates/prometheus-operator/deployment.yaml).

A LimitRange of the same namespace with ``defaultRequest`` fills what a container leaves out when the pod is
admitted (kubernetes plugin/pkg/admission/limitranger: ``defaultContainerResourceRequirements``), so those count
as requested: the Neuron chart has no resources value, its two containers get theirs from kube-system's
LimitRange (components/device_plugins.py). A request of zero is no request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ekstrain.infra.verify import Check

CHECK_NAME = "containers: cpu and memory requests on every container"
REQUIRED = ("cpu", "memory")
NOT_WORKLOADS = ("CustomResourceDefinition", "ConfigMap", "Secret")
"""Kinds whose ``containers``/``image`` keys are schemas or data, never a container that runs."""
RELOADED = {"Prometheus", "Alertmanager", "ThanosRuler"}
"""Prometheus Operator CRs (monitoring.coreos.com) whose pods get the operator's config-reloader sidecars."""
RELOADER_CONTAINERS = ("config-reloader", "init-config-reloader")
RELOADER_FLAGS = {"cpu": "--config-reloader-cpu-request=", "memory": "--config-reloader-memory-request="}


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


def _nonzero(value: Any) -> bool:
    """``0``, ``"0"``, ``"0m"``, ``"0Mi"``: the scheduler reserves nothing for them."""
    text = str(value).strip()
    return bool(text) and text.rstrip("numkMGTPEi").rstrip(".0") not in ("", "0")


def requested(resources: dict[str, Any] | None) -> set[str]:
    """Resources a container's ``resources`` requests: a limit without a request counts, the API server
    defaults the request to the limit (pkg/apis/core/v1 defaults.go)."""
    resources = resources or {}
    given = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {r for r, v in given.items() if _nonzero(v)}


def _is_pod_spec(node: dict[str, Any]) -> bool:
    containers = node.get("containers")
    return isinstance(containers, list) and bool(containers) and all(isinstance(c, dict) for c in containers)


def containers(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """(``<path> <name>``, resources) of every container ``obj`` runs (see the module docstring)."""
    if obj.get("kind") in NOT_WORKLOADS:
        return

    def walk(node: Any, path: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
        if isinstance(node, list):
            for item in node:
                yield from walk(item, path)
            return
        if not isinstance(node, dict):
            return
        if _is_pod_spec(node):
            # A workload's own template is named by the container alone; a CR's nested one by its path too.
            where = "" if path in ("", "template.spec.") else f"{path.rstrip('.')} "
            for key, suffix in (("initContainers", " (init)"), ("containers", "")):
                for c in node.get(key) or []:
                    if isinstance(c, dict):
                        yield f"{where}{c.get('name')}{suffix}", c.get("resources")
            return
        if isinstance(node.get("image"), str) and node is not obj.get("spec"):
            yield path.rstrip(".") or "spec", node.get("resources")
        for key, value in node.items():
            if key not in ("metadata", "status"):
                yield from walk(value, f"{path}{key}.")

    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("image"), str):
        # Prometheus Operator style: the CR's spec is its main container (spec.image, spec.resources).
        yield str(obj.get("kind", "")).lower(), spec.get("resources")
    yield from walk(spec, "")


def reloader_requests(objects: Iterable[dict[str, Any]]) -> set[str] | None:
    """What the Prometheus Operator's config-reloader sidecars request, from the operator Deployment's flags;
    None when no operator is in ``objects``."""
    for obj in objects:
        if obj.get("kind") != "Deployment":
            continue
        for c in ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or []:
            args = [str(a) for a in c.get("args") or []]
            if not any(a.startswith("--prometheus-config-reloader=") for a in args):
                continue
            out = set()
            for resource, flag in RELOADER_FLAGS.items():
                values = [a.removeprefix(flag) for a in args if a.startswith(flag)]
                if values and _nonzero(values[-1]):
                    out.add(resource)
            return out
    return None


def missing_requests(
    obj: dict[str, Any], defaulted: set[str] | frozenset[str] = frozenset(), reloader: set[str] | None = None
) -> list[str]:
    """``<Kind>/<namespace>/<name> container <c>: no <resource> request`` for each gap in ``obj``; a resource in
    ``defaulted`` (the namespace's LimitRange default) counts as requested; ``reloader``: what the operator's
    config-reloader sidecars request (:func:`reloader_requests`), for Prometheus Operator CRs."""
    meta = obj.get("metadata") or {}
    where = f"{obj.get('kind')}/{meta.get('namespace') or '-'}/{meta.get('name')}"
    found = list(containers(obj))
    if obj.get("kind") in RELOADED and str(obj.get("apiVersion", "")).startswith("monitoring.coreos.com/"):
        flagged = {r: "set" for r in reloader or set()}  # reloader_requests kept only the non-zero flags
        found += [
            (f"{name} (operator's --config-reloader-*-request)", {"requests": flagged}) for name in RELOADER_CONTAINERS
        ]
    out = []
    for name, resources in found:
        absent = [r for r in REQUIRED if r not in requested(resources) | set(defaulted)]
        if absent:
            out.append(f"{where} container {name}: no {' or '.join(absent)} request (BestEffort/evicted first)")
    return out


def check(objects: Iterable[dict[str, Any]]) -> Check:
    objects = list(objects)
    defaults = namespace_defaults(objects)
    reloader = reloader_requests(objects)
    result = Check(CHECK_NAME, what="containers")
    for obj in objects:
        n = len(list(containers(obj)))
        if obj.get("kind") in RELOADED:
            n += len(RELOADER_CONTAINERS)
        result.checked += n
        if n:
            ns = (obj.get("metadata") or {}).get("namespace") or "default"
            result.problems += missing_requests(obj, defaults.get(ns, set()), reloader)
    return result
