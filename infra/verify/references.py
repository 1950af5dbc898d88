"""References resolve: every object a rendered pod or workload names exists once the stack is applied.

A pod that names a Secret, ConfigMap, PVC, ServiceAccount, PriorityClass, RuntimeClass, scheduler or
Volcano queue that nobody creates never starts: admission refuses it (ServiceAccount, PriorityClass,
RuntimeClass), or it waits forever (Secret, ConfigMap, PVC, queue), and Helm's or Pulumi's wait then
fails the `up`. Each reference must name an object in the render (manifests and chart objects), a
Kubernetes/EKS built-in, be marked ``optional``, or be on the reviewed list of objects controllers
create at run time (security/reviewed-runtime-objects.yaml: by whom, and why).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from ekstrain.infra.verify import Check
from ekstrain.infra.verify.pods import CLUSTER_SCOPED, Inventory, PodTemplate, containers, describe, pod_templates, ref

NAME = "references: secrets, claims, accounts, classes, queues exist"
CHECK = "references"
VOLCANO_QUEUE_KEYS = ("scheduling.volcano.sh/queue-name", "volcano.sh/queue-name")
_SCHEDULER_ARG = re.compile(r"--scheduler-name=([a-z0-9.-]+)")
_SCHEDULER_CONF = re.compile(r"schedulerName:\s*['\"]?([a-z0-9.-]+)")

Ref = tuple[str, str, str]


def pod_references(t: PodTemplate) -> Iterator[tuple[Ref, str]]:
    """(referenced object, where) for everything a pod spec names; optional references are left out."""
    spec, ns = t.spec, t.namespace
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    yield ("ServiceAccount", ns, sa), "serviceAccountName"
    for key, kind in (("priorityClassName", "PriorityClass"), ("runtimeClassName", "RuntimeClass")):
        if spec.get(key):
            yield (kind, "", spec[key]), key
    yield ("Scheduler", "", spec.get("schedulerName") or "default-scheduler"), "schedulerName"
    for s in spec.get("imagePullSecrets") or []:
        yield ("Secret", ns, s.get("name", "")), "imagePullSecrets"
    for v in spec.get("volumes") or []:
        name = v.get("name")
        if "secret" in v and not v["secret"].get("optional"):
            yield ("Secret", ns, v["secret"].get("secretName", "")), f"volume {name}"
        if "configMap" in v and not v["configMap"].get("optional"):
            yield ("ConfigMap", ns, v["configMap"].get("name", "")), f"volume {name}"
        if "persistentVolumeClaim" in v:
            yield ("PersistentVolumeClaim", ns, v["persistentVolumeClaim"].get("claimName", "")), f"volume {name}"
        for source in (v.get("projected") or {}).get("sources") or []:
            for key, kind in (("secret", "Secret"), ("configMap", "ConfigMap")):
                if key in source and not source[key].get("optional"):
                    yield (kind, ns, source[key].get("name", "")), f"projected volume {name}"
    for c in containers(spec):
        where = f"container {c.get('name')}"
        for e in c.get("env") or []:
            value_from = e.get("valueFrom") or {}
            for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                r = value_from.get(key)
                if r and not r.get("optional"):
                    yield (kind, ns, r.get("name", "")), f"{where} env {e.get('name')}"
        for e in c.get("envFrom") or []:
            for key, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                r = e.get(key)
                if r and not r.get("optional"):
                    yield (kind, ns, r.get("name", "")), f"{where} envFrom"
    labels = {**(t.metadata.get("labels") or {}), **(t.metadata.get("annotations") or {})}
    for key in VOLCANO_QUEUE_KEYS:
        if labels.get(key):
            yield ("Queue", "", labels[key]), key


def object_references(obj: dict[str, Any]) -> Iterator[tuple[Ref, str]]:
    """References an object makes outside its pod templates: its namespace, storage classes, queues."""
    kind, ns, _ = ref(obj)
    spec = obj.get("spec") or {}
    if ns and kind not in CLUSTER_SCOPED:
        yield ("Namespace", "", ns), "metadata.namespace"
    claims: list[dict[str, Any]] = []
    if kind == "PersistentVolumeClaim":
        claims.append(spec)
    if kind == "StatefulSet":
        claims += [(t.get("spec") or {}) for t in spec.get("volumeClaimTemplates") or []]
    for claim in claims:
        if claim.get("storageClassName"):
            yield ("StorageClass", "", claim["storageClassName"]), "storageClassName"
        if claim.get("volumeName"):
            yield ("PersistentVolume", "", claim["volumeName"]), "volumeName"
    # Volcano Job / PodGroup queue (batch.volcano.sh, scheduling.volcano.sh); RayJob/RayCluster labels.
    if kind in ("Job", "PodGroup") and str(obj.get("apiVersion", "")).startswith(("batch.volcano.sh", "scheduling.")):
        yield ("Queue", "", spec.get("queue") or "default"), "spec.queue"
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get("volcano.sh/queue-name"):
        yield ("Queue", "", labels["volcano.sh/queue-name"]), "volcano.sh/queue-name"


def schedulers(objects: Iterable[dict[str, Any]]) -> set[str]:
    """Scheduler names some rendered scheduler serves: ``--scheduler-name=`` args and scheduler configs."""
    names: set[str] = set()
    for obj in objects:
        if obj.get("kind") == "ConfigMap":
            for text in (obj.get("data") or {}).values():
                names.update(_SCHEDULER_CONF.findall(str(text)))
        for t in pod_templates(obj, ""):
            for c in containers(t.spec):
                for arg in [*(c.get("args") or []), *(c.get("command") or [])]:
                    names.update(_SCHEDULER_ARG.findall(str(arg)))
    return names


def check(
    objects: list[tuple[str, dict[str, Any]]],
    templates: list[PodTemplate],
    inventory: Inventory,
    scheduler_names: set[str],
) -> Check:
    """``objects``: (source, object) of everything applied; ``templates``: every pod template incl. KubeSpawner's."""
    result = Check(NAME, what="references")
    found: list[tuple[Ref, str, str]] = []
    for source, obj in objects:
        for r, where in object_references(obj):
            found.append((r, f"{describe(ref(obj))} ({source}) {where}", source))
    for t in templates:
        for r, where in pod_references(t):
            found.append((r, f"{t.owner} ({t.source}) {t.path} {where}", t.source))
    for r, where, _ in found:
        result.checked += 1
        kind, _, name = r
        if kind == "Scheduler" and (name in scheduler_names or inventory.exists(r)):
            continue
        if inventory.exists(r):
            continue
        reviewed = inventory.reviewed_for(CHECK, r)
        if reviewed is not None:
            continue
        result.problems.append(
            f"{where} names {describe(r)}, which nothing creates: add it to the stack, mark the reference "
            "optional, or (if a controller creates it at run time) list it in security/reviewed-runtime-objects.yaml"
        )
    return result
