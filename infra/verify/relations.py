"""The render's relation checks (references, admission, creation order) over one recording and its charts.

Gathers, once, what the three checks read: for every resource that applies Kubernetes objects (a manifest,
or a Helm release with the objects `helm template` rendered for it), those objects, their pod templates and
whether Pulumi/Helm waits for their pods; the pods KubeSpawner builds from the hub's values; and the
inventory of what exists after the apply.
"""

from __future__ import annotations

from typing import Any

from ekstrain.facts.names import TRAINING_NAMESPACE
from ekstrain.infra import offline
from ekstrain.infra.verify import Check, admission, order, references
from ekstrain.infra.verify.charts import Rendered
from ekstrain.infra.verify.pods import PodTemplate, inventory, kubespawner_objects, kubespawner_pods, pod_templates

JUPYTERHUB_CHART = "jupyterhub"
CHECK_NAMES = (references.NAME, admission.NAME, order.NAME)
NOT_MANIFESTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")


def _waits(objects: list[dict[str, Any]]) -> bool:
    for o in objects:
        if o.get("kind") not in order.WAITED_KINDS:
            continue
        annotations = (o.get("metadata") or {}).get("annotations") or {}
        if annotations.get("pulumi.com/skipAwait") == "true":
            continue
        if o.get("kind") == "Job" or (o.get("spec") or {}).get("replicas", 1) != 0:
            return True
    return False


def applied_resources(
    rec: offline.Recording, rendered: Rendered, manifest_of: Any
) -> tuple[list[order.Applied], list[PodTemplate], list[dict[str, Any]]]:
    """(every applying resource, KubeSpawner's user pods, the objects KubeSpawner creates with them)."""
    applied: list[order.Applied] = []
    spawned: list[PodTemplate] = []
    spawned_objects: list[dict[str, Any]] = []
    for r in rec.records:
        if not (r.custom and r.type.startswith("kubernetes:")) or r.type.startswith("pulumi:providers"):
            continue
        group = rec.top_component(r).name
        if r.type == "kubernetes:helm.sh/v3:Release":
            key = f"{group}--{r.inputs.get('name')}"
            objs = rendered.objects.get(key, [])
            templates = [t for o in objs for t in pod_templates(o, key, TRAINING_NAMESPACE)]
            waits = not r.inputs.get("skipAwait") and _waits(objs)
            if str(r.inputs.get("chart", "")).rstrip("/").endswith(JUPYTERHUB_CHART):
                values = offline.plain(r.inputs.get("values") or {})
                spawned += kubespawner_pods(values)
                spawned_objects += kubespawner_objects(values)
            applied.append(order.Applied(r.urn, objs, templates, waits))
        elif not r.type.startswith(NOT_MANIFESTS):
            obj = manifest_of(r)
            templates = pod_templates(obj, group, TRAINING_NAMESPACE)
            applied.append(order.Applied(r.urn, [obj], templates, _waits([obj])))
    return applied, spawned, spawned_objects


def run(rec: offline.Recording, rendered: Rendered, manifest_of: Any) -> tuple[list[Check], order.Graph]:
    applied, spawned, spawned_objects = applied_resources(rec, rendered, manifest_of)
    helm_namespaces = [
        str(r.inputs.get("namespace"))
        for r in rec.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs.get("createNamespace")
    ]
    everything = [(a.urn, o) for a in applied for o in a.objects]
    inv = inventory([*everything, *(("kubespawner", o) for o in spawned_objects)], helm_namespaces)
    templates = [t for a in applied for t in a.templates] + spawned
    objects = [o for _, o in everything]
    source = {a.urn: rec.top_component(rec.by_urn(a.urn) or rec.records[0]).name for a in applied}
    refs = references.check(
        [*((source.get(u, u), o) for u, o in everything), *(("kubespawner", o) for o in spawned_objects)],
        templates,
        inv,
        references.schedulers(objects),
    )
    pss = admission.check(templates, admission.namespace_levels(objects), inv)
    creation, graph = order.check(rec, applied, inv, order.creators_of(applied))
    return [refs, pss, creation], graph


def eks_children(rec: offline.Recording) -> Check:
    """The children registered for pulumi-eks's remote components (infra/eks_children.py): a row of the SUMMARY so
    a reader sees that IAM lint, the policy pack, checkov and the AWS rules looked at them."""
    result = Check("pulumi-eks children: registered offline as pulumi-eks does", what="children")
    for component in rec.of_type("eks:index:Cluster") + rec.of_type("eks:index:ManagedNodeGroup"):
        below, frontier = [], [component.urn]
        while frontier:
            found = [r for r in rec.records if r.parent in frontier]
            below += found
            frontier = [r.urn for r in found]
        result.checked += len(below)
        if not below or not all(r.synthetic for r in below):
            result.problems.append(f"{component.type} {component.name}: its pulumi-eks children are not registered")
    result.note = "compared with pulumi-eks's own code by tests/test_real_eks.py"
    return result
