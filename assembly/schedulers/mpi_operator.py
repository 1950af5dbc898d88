"""The MPI operator's install objects, written here as our own dicts.

MPI operator v0.8 has no Helm chart: upstream installs ``deploy/v2beta1/mpi-operator.yaml`` (kubeflow/mpi-operator
v0.8.0, commit 101db144e019e1de65aaded07745e9d805c2852a, ``versions.MPI_OPERATOR_SOURCE``). That file is never
copied into this repository. Its objects other than the CRD are small and are written below with the same
content (the kustomize ``commonLabels`` of ``manifests/base`` on each); the CRD, the one large object, is the pinned
upstream file, vendored in the package (``ekstrain/vendor/``, the same bytes the render validates MPIJobs with) and
given the same labels. The Deployment then gets the program's changes (``operators.patch_operator``: the Volcano
gang flag, requests, an unprivileged securityContext).
"""

from __future__ import annotations

import copy
import hashlib
import pathlib
from typing import Any

import yaml

from ekstrain.facts import versions
from ekstrain.facts.config_errors import ConfigError, ConfigIssue
from ekstrain.files.paths import PACKAGE, upstream_fix
from ekstrain.files.yaml_safe import SAFE_LOADER

NAMESPACE = "mpi-operator"
NAME = "mpi-operator"
"""Namespace, ServiceAccount, ClusterRole(Binding) and Deployment name in the upstream file."""
LABELS = {
    "app": "mpi-operator",
    "app.kubernetes.io/component": "mpijob",
    "app.kubernetes.io/name": "mpi-operator",
    "kustomize.component": "mpi-operator",
}
"""kustomize ``commonLabels`` (manifests/base/kustomization.yaml) on every object of the upstream file."""
ENABLE_KEY = "ekstrain:schedulers.mpiOperator.enabled"

_RBAC = "rbac.authorization.k8s.io/v1"
_AGGREGATE = "rbac.authorization.kubeflow.org/aggregate-to-"
_MPIJOBS = ["mpijobs", "mpijobs/status"]


def _meta(name: str, namespace: str | None = None, **extra_labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": {**LABELS, **extra_labels}, "name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _cluster_role(name: str, labels: dict[str, str], **body: Any) -> dict[str, Any]:
    return {"apiVersion": _RBAC, "kind": "ClusterRole", "metadata": _meta(name, **labels), **body}


def operator_rules() -> list[dict[str, Any]]:
    """The operator's own ClusterRole rules (upstream ``mpi-operator`` ClusterRole, in its order, less pods/exec)."""
    return [
        {
            "apiGroups": [""],
            "resources": ["configmaps", "secrets", "services"],
            "verbs": ["create", "list", "watch", "update"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["create", "get", "list", "watch", "delete", "update", "patch"],
        },
        # Upstream's pods/exec (create) is left out: it served v1's kubectl-delivery launcher; the v2beta1 controller
        # starts workers over SSH and never execs (kubeflow/mpi-operator#373, "Replace kubectl ... with ssh").
        {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["create", "get", "update"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "list", "update", "watch"]},
        {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["create", "get"]},
        {
            "apiGroups": ["kubeflow.org"],
            "resources": ["mpijobs", "mpijobs/finalizers", "mpijobs/status"],
            "verbs": ["*"],
        },
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]},
        {
            # the gang schedulers' PodGroups (Volcano's among them: --gang-scheduling=volcano needs no more)
            "apiGroups": ["scheduling.incubator.k8s.io", "scheduling.sigs.dev", "scheduling.volcano.sh"],
            "resources": ["queues", "podgroups"],
            "verbs": ["*"],
        },
        {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"], "verbs": ["*"]},
        {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["get", "list", "watch"]},
    ]


def deployment() -> dict[str, Any]:
    """The operator Deployment as upstream writes it (before ``operators.patch_operator``)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, NAMESPACE),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {
                "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}, "labels": dict(LABELS)},
                "spec": {
                    "containers": [
                        {
                            "args": ["-alsologtostderr", f"--lock-namespace={NAMESPACE}"],
                            "image": versions.MPI_OPERATOR_IMAGE,
                            "name": NAME,
                        }
                    ],
                    "serviceAccountName": NAME,
                },
            },
        },
    }


def install_objects(crd: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of upstream's install file, in its order (Namespace, CRD, ServiceAccount, ClusterRoles,
    ClusterRoleBinding, Deployment), ``crd`` (:func:`mpijob_crd`) as the CRD, the Deployment unpatched."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE)},
        copy.deepcopy(crd),
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME, NAMESPACE)},
        # kubeflow-mpijobs-{admin,edit,view}: aggregated into Kubeflow's kubeflow-{admin,edit,view} roles
        _cluster_role(
            "kubeflow-mpijobs-admin",
            {f"{_AGGREGATE}kubeflow-admin": "true"},
            aggregationRule={
                "clusterRoleSelectors": [{"matchLabels": {f"{_AGGREGATE}kubeflow-mpijobs-admin": "true"}}]
            },
        ),
        _cluster_role(
            "kubeflow-mpijobs-edit",
            {f"{_AGGREGATE}kubeflow-edit": "true", f"{_AGGREGATE}kubeflow-mpijobs-admin": "true"},
            rules=[
                {
                    "apiGroups": ["kubeflow.org"],
                    "resources": list(_MPIJOBS),
                    "verbs": ["get", "list", "watch", "create", "delete", "deletecollection", "patch", "update"],
                }
            ],
        ),
        _cluster_role(
            "kubeflow-mpijobs-view",
            {f"{_AGGREGATE}kubeflow-view": "true"},
            rules=[{"apiGroups": ["kubeflow.org"], "resources": list(_MPIJOBS), "verbs": ["get", "list", "watch"]}],
        ),
        _cluster_role(NAME, {}, rules=operator_rules()),
        {
            "apiVersion": _RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(NAME),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
        },
        deployment(),
    ]


_parsed: dict[str, dict[str, Any]] = {}
"""The pinned CRD parsed, by sha256 (there is one): 650 kB of YAML, ~50 ms a parse, read twice by each render (the
CLI's check, then the program) and once by every program run; a deep copy takes ~3 ms."""


def crd_from_text(data: bytes, source: str) -> dict[str, Any]:
    """The pinned MPIJob CRD file's bytes -> the CRD the program applies (upstream's, with the install file's
    labels). Any other file is refused: the program applies it to the cluster."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != versions.MPIJOB_CRD_SHA256:
        raise ConfigError(
            [
                ConfigIssue(
                    ENABLE_KEY,
                    f"{source}: sha256 {digest} is not the pinned {versions.MPIJOB_CRD_SHA256} "
                    f"(mpi-operator {versions.MPI_OPERATOR_VERSION} manifests/base/kubeflow.org_mpijobs.yaml)",
                    f"restore the pinned upstream file ({upstream_fix()})",
                )
            ],
            source="the upstream directory",
        )
    if digest not in _parsed:
        _parsed[digest] = yaml.load(data, Loader=SAFE_LOADER)
    crd = copy.deepcopy(_parsed[digest])  # a fresh copy for each caller
    meta = crd["metadata"]
    # the install file's key order: annotations, labels, name
    crd["metadata"] = {
        **({"annotations": meta["annotations"]} if "annotations" in meta else {}),
        "labels": {**LABELS, **(meta.get("labels") or {})},
        **{k: v for k, v in meta.items() if k not in ("annotations", "labels")},
    }
    return crd


VENDORED = PACKAGE / "vendor" / versions.MPIJOB_CRD.removeprefix("crds/")
"""The MPIJob CRD shipped with the package (``ekstrain/vendor/kubeflow.org/mpijob.yaml``, provenance in
``ekstrain/vendor/SOURCES.md``): the program applies it to the cluster, so a plain clone or a wheel renders the
stacks that enable the MPI operator without the upstream directory. Same bytes and sha256 as the pinned upstream
file (mpi-operator v0.8.0 ``manifests/base/kubeflow.org_mpijobs.yaml``); tests/test_plain_clone.py compares them."""


def mpijob_crd(upstream: pathlib.Path | None = None) -> dict[str, Any]:
    """The MPIJob CRD the program applies: the pinned upstream directory's copy when ``upstream`` holds one (so a
    tampered upstream file is still refused), else the vendored copy (:data:`VENDORED`). Either must match
    :data:`versions.MPIJOB_CRD_SHA256`; a ConfigError naming the key and the fix otherwise, so the program stops
    before registering anything."""
    path = upstream / versions.MPIJOB_CRD if upstream is not None else None
    if path is None or not path.is_file():
        path = VENDORED
    if not path.is_file():
        raise ConfigError(
            [
                ConfigIssue(
                    ENABLE_KEY,
                    f"the MPI operator's CRD ({versions.MPIJOB_CRD}) is neither in the package ({path}) nor in "
                    "an upstream directory",
                    f"reinstall ekstrain, or {upstream_fix()}; or set {ENABLE_KEY}: false",
                )
            ],
            source="the upstream directory",
        )
    return crd_from_text(path.read_bytes(), str(path))
