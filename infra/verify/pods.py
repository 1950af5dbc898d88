"""Pod templates of everything a stack applies, and the objects that exist once it is applied.

Shared by the reference, admission and creation-order checks (references.py, admission.py, order.py):

- :func:`pod_templates` finds every pod spec in an object, built-in or custom (Deployment, Job, MPIJob,
  Volcano Job, RayJob, ClusterTrainingRuntime, Slinky NodeSet...): a ``template.spec`` (or a Pod's
  ``spec``) holding containers, init containers or volumes.
- :func:`kubespawner_pods` builds the user pods JupyterHub's KubeSpawner creates from the hub's values
  (one per profile), the way kubespawner's ``make_pod`` does, so notebooks are checked before a user
  clicks "Start".
- :class:`Inventory` is what exists after the apply: the render's objects, Kubernetes' built-ins, and the
  reviewed list of objects that controllers create at run time (security/reviewed-runtime-objects.yaml).
"""

from __future__ import annotations

import fnmatch
import pathlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from ekstrain.files.paths import REVIEWS
from ekstrain.workloads import registry as workload_kinds

REVIEWED_FILE = REVIEWS / "reviewed-runtime-objects.yaml"

# Cluster-scoped built-in kinds (the rest of the built-ins are namespaced).
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "RuntimeClass",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "APIService",
        "CSIDriver",
        "IngressClass",
        # custom resources of the stack that are cluster-scoped
        "ClusterTrainingRuntime",
        "Queue",
        "NodePool",
        "EC2NodeClass",
        "ClusterIssuer",
    }
)

# What every EKS cluster has before the program runs (Kubernetes' own objects and EKS's).
BUILT_IN: frozenset[tuple[str, str, str]] = frozenset(
    {("Namespace", "", n) for n in ("default", "kube-system", "kube-public", "kube-node-lease")}
    | {("PriorityClass", "", n) for n in ("system-cluster-critical", "system-node-critical")}
    | {("Scheduler", "", "default-scheduler")}
)
WORKLOAD_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"})


@dataclass(frozen=True)
class PodTemplate:
    """One pod spec found in an object: where it is, its metadata (labels, annotations) and spec."""

    owner: str
    """``Kind/namespace/name`` of the object holding it."""
    kind: str
    namespace: str
    name: str
    path: str
    """JSON-ish path of the spec inside the object (``spec.template.spec``)."""
    metadata: dict[str, Any]
    spec: dict[str, Any]
    source: str


def ref(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", ""))
    ns = "" if kind in CLUSTER_SCOPED else str(meta.get("namespace") or "default")
    return kind, ns, str(meta.get("name", ""))


def describe(key: tuple[str, str, str]) -> str:
    kind, ns, name = key
    return f"{kind} {ns + '/' if ns else ''}{name}"


def _is_pod_spec(value: Any) -> bool:
    return isinstance(value, dict) and any(isinstance(value.get(k), list) for k in ("containers", "initContainers"))


def pod_templates(obj: dict[str, Any], source: str, used_in: str = "default") -> list[PodTemplate]:
    """Every pod spec inside ``obj`` (a Pod's own spec, or any ``template.spec`` below ``spec``), and for a workload
    kind (ekstrain/workloads) every template where the kind says it keeps them. A cluster-scoped template
    (ClusterTrainingRuntime) makes pods in the namespace of the job using it: ``used_in``."""
    kind, ns, name = ref(obj)
    owner = f"{kind}/{ns + '/' if ns else ''}{name}"
    if not ns:
        ns = used_in
    described = workload_kinds.lookup(obj)
    # Slinky NodeSets keep the slurmd container beside the template; it joins the pod at run time.
    sidecars = described is not None and described.sidecar_pods
    found: list[PodTemplate] = []
    if kind == "Pod" and _is_pod_spec(obj.get("spec")):
        return [PodTemplate(owner, kind, ns, name, "spec", obj.get("metadata") or {}, obj["spec"], source)]

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            template = value.get("template")
            if isinstance(template, dict) and isinstance(template.get("spec"), dict):
                spec = template["spec"]
                if _is_pod_spec(spec) or (sidecars and "volumes" in spec):
                    found.append(
                        PodTemplate(
                            owner, kind, ns, name, f"{path}.template.spec", template.get("metadata") or {}, spec, source
                        )
                    )
            for k, v in value.items():
                walk(v, f"{path}.{k}" if path else k)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(obj.get("spec"), "spec")
    if described is not None:
        # A kind may keep a template where no ``template`` key leads (a toy kind's ``spec.members[*].pod``).
        found += [
            PodTemplate(owner, kind, ns, name, t.path, t.metadata, t.spec, source)
            for t in described.templates(obj)
            if _is_pod_spec(t.spec) or (sidecars and "volumes" in t.spec)
        ]
    # A template.spec found inside another's walk is reported once: keep the distinct paths.
    seen: set[str] = set()
    unique = []
    for t in found:
        if t.path not in seen:
            seen.add(t.path)
            unique.append(t)
    return unique


def containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                yield c


# ---- KubeSpawner ------------------------------------------------------------------------------
# What kubespawner (the version zero-to-jupyterhub 4.x ships) puts into a user pod, from the hub's values
# (jupyterhub chart files/hub/jupyterhub_config.py maps singleuser.* to c.KubeSpawner.*; kubespawner's
# objects.make_pod builds the pod). Only the parts the checks read are modelled.
KUBESPAWNER_NAMESPACE = "jupyterhub"


def _override(base: dict[str, Any], override: dict[str, Any]) -> None:
    for key, value in override.items():
        if key in ("extra_resource_limits", "extra_resource_guarantees", "node_selector"):
            base.setdefault(key, {}).update(value)
        elif key in ("tolerations", "volumes", "volume_mounts", "init_containers"):
            base[key] = list(value)
        else:
            base[key] = value


def kubespawner_pods(values: dict[str, Any], namespace: str = KUBESPAWNER_NAMESPACE) -> list[PodTemplate]:
    """One user pod per profile (and per profile option choice) of the hub's ``singleuser`` values."""
    su = values.get("singleuser") or {}
    storage = su.get("storage") or {}
    base_volumes: list[dict[str, Any]] = []
    if storage.get("type", "dynamic") == "dynamic":
        # The per-user claim KubeSpawner creates (pvc_name_template claim-{username}) in storageClass.
        base_volumes.append({"name": "home", "persistentVolumeClaim": {"claimName": "claim-{username}"}})
    base_volumes += list(storage.get("extraVolumes") or [])
    base_volumes += list(su.get("extraVolumes") or [])
    init: list[dict[str, Any]] = []
    metadata_block = su.get("cloudMetadata") or {}
    if metadata_block.get("blockWithIptables", True):
        # The chart's hub config adds this init container (jupyterhub_config.py, singleuser.cloudMetadata).
        init.append(
            {
                "name": "block-cloud-metadata",
                "image": "quay.io/jupyterhub/k8s-network-tools",
                "securityContext": {"privileged": True, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}},
            }
        )
    uid = su.get("uid", 1000)
    pod_security: dict[str, Any] = {"fsGroup": su.get("fsGid", 100)}
    container_security: dict[str, Any] = {
        "runAsUser": uid,
        "allowPrivilegeEscalation": su.get("allowPrivilegeEscalation", False),
    }
    profiles = su.get("profileList") or [{"slug": "default", "kubespawner_override": {}}]
    pods = []
    for profile in profiles:
        choices: list[tuple[str, dict[str, Any]]] = [("", {})]
        for option_name, option in (profile.get("profile_options") or {}).items():
            choices = [
                (f"{label}{option_name}={choice}", {**so_far, **(c.get("kubespawner_override") or {})})
                for label, so_far in choices
                for choice, c in (option.get("choices") or {}).items()
            ]
        for label, choice_override in choices:
            settings: dict[str, Any] = {
                "image": (su.get("image") or {}).get("name", "jupyterhub/k8s-singleuser-sample")
            }
            _override(settings, profile.get("kubespawner_override") or {})
            _override(settings, choice_override)
            limits = dict(settings.get("extra_resource_limits") or {})
            requests = dict(settings.get("extra_resource_guarantees") or {})
            spec: dict[str, Any] = {
                "securityContext": pod_security,
                "nodeSelector": {**(su.get("nodeSelector") or {}), **(settings.get("node_selector") or {})},
                "tolerations": list(su.get("extraTolerations") or []) + list(settings.get("tolerations") or []),
                "initContainers": init + list(settings.get("init_containers") or []),
                "containers": [
                    {
                        "name": "notebook",
                        "image": settings["image"],
                        "securityContext": container_security,
                        "resources": {"limits": limits, "requests": requests},
                    }
                ],
                "volumes": base_volumes + list(settings.get("volumes") or []),
            }
            slug = profile.get("slug") or profile.get("display_name", "profile")
            pods.append(
                PodTemplate(
                    f"KubeSpawner/{namespace}/jupyter-<user> ({slug}{' ' + label if label else ''})",
                    "Pod",
                    namespace,
                    "jupyter-<user>",
                    "kubespawner",
                    {},
                    spec,
                    "jupyterhub singleuser",
                )
            )
    return pods


def kubespawner_objects(values: dict[str, Any], namespace: str = KUBESPAWNER_NAMESPACE) -> list[dict[str, Any]]:
    """Objects KubeSpawner creates beside a user pod: the per-user home claim (storage.type dynamic)."""
    storage = (values.get("singleuser") or {}).get("storage") or {}
    if storage.get("type", "dynamic") != "dynamic":
        return []
    dynamic = storage.get("dynamic") or {}
    spec: dict[str, Any] = {"accessModes": dynamic.get("storageAccessModes") or ["ReadWriteOnce"]}
    if dynamic.get("storageClass"):
        spec["storageClassName"] = dynamic["storageClass"]
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim-{username}", "namespace": namespace},
            "spec": spec,
        }
    ]


# ---- what exists after the apply --------------------------------------------------------------
@dataclass(frozen=True)
class Reviewed:
    """One reviewed entry: an object a controller creates at run time, or an admission exception."""

    check: str
    kind: str
    namespace: str
    name: str
    by: str
    why: str

    def matches(self, check: str, key: tuple[str, str, str]) -> bool:
        kind, ns, name = key
        return (
            self.check == check
            and self.kind == kind
            and fnmatch.fnmatchcase(ns, self.namespace or "")
            and fnmatch.fnmatchcase(name, self.name)
        )


def reviewed(path: pathlib.Path = REVIEWED_FILE) -> list[Reviewed]:
    """The reviewed list: every entry names who creates the object (or why the exception holds) and why."""
    entries = yaml.safe_load(path.read_text()) or []
    out = []
    for e in entries:
        missing = [k for k in ("check", "kind", "name", "by", "why") if not e.get(k)]
        if missing:
            raise ValueError(f"{path.name}: entry {e} lacks {missing}: every exception says who and why")
        out.append(Reviewed(e["check"], e["kind"], e.get("namespace", ""), e["name"], e["by"], e["why"]))
    return out


@dataclass
class Inventory:
    """Objects that exist once the stack is applied, each with the resource that creates it."""

    created_by: dict[tuple[str, str, str], str] = field(default_factory=dict)
    reviewed: list[Reviewed] = field(default_factory=list)

    def add(self, obj: dict[str, Any], creator: str) -> None:
        self.created_by.setdefault(ref(obj), creator)
        kind, ns, name = ref(obj)
        # Objects that bring others with them: every namespace has its default ServiceAccount; a
        # cert-manager Certificate writes its Secret; a StatefulSet's claims come from its templates.
        if kind == "Namespace":
            self.created_by.setdefault(("ServiceAccount", name, "default"), creator)
        if kind == "Certificate" and (obj.get("spec") or {}).get("secretName"):
            self.created_by.setdefault(("Secret", ns, obj["spec"]["secretName"]), f"cert-manager ({creator})")

    def exists(self, key: tuple[str, str, str]) -> bool:
        kind, ns, name = key
        if key in self.created_by or key in BUILT_IN:
            return True
        if kind == "ServiceAccount" and name == "default":
            return ("Namespace", "", ns) in self.created_by or ("Namespace", "", ns) in BUILT_IN
        return False

    def creator(self, key: tuple[str, str, str]) -> str | None:
        return self.created_by.get(key)

    def reviewed_for(self, check: str, key: tuple[str, str, str]) -> Reviewed | None:
        return next((r for r in self.reviewed if r.matches(check, key)), None)


def inventory(objects: Iterable[tuple[str, dict[str, Any]]], namespaces: Iterable[str] = ()) -> Inventory:
    """``objects``: (creator, object) pairs; ``namespaces``: created by Helm (``createNamespace``)."""
    inv = Inventory(reviewed=reviewed())
    for creator, obj in objects:
        inv.add(obj, creator)
    for ns in namespaces:
        inv.add({"kind": "Namespace", "metadata": {"name": ns}}, "helm createNamespace")
    return inv
