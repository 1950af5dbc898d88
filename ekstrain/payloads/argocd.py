"""Argo CD as a delivery option: chart values, the ``ekstrain`` AppProject and one Application per
platform Helm release (the seed deploys Slinky with an Argo CD Application).

An Application is built from what a Helm release of the program asks for (release name, chart,
version, repository, namespace, values), so Pulumi and Argo CD describe the same install. Classic
repositories are used as is; OCI charts (``oci://registry/path/chart``) become Argo CD's Helm-OCI
form (``repoURL: registry/path``, ``chart: chart``) with a repository entry ``enableOCI: "true"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ekstrain.layout.controller_resources import LARGE, SMALL, sized

NAMESPACE = "argocd"
RELEASE = "argo-cd"
PROJECT = "ekstrain"
API = "argoproj.io/v1alpha1"
IN_CLUSTER = "https://kubernetes.default.svc"


def oci_parts(chart: str) -> tuple[str, str] | None:
    """'oci://ghcr.io/slinkyproject/charts/slurm' -> ('ghcr.io/slinkyproject/charts', 'slurm')."""
    if not chart.startswith("oci://"):
        return None
    repo, _, name = chart.removeprefix("oci://").rpartition("/")
    return repo, name


def source(release: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.source`` of the Application for one recorded Helm release."""
    chart = str(release["chart"])
    oci = oci_parts(chart)
    repo = oci[0] if oci else str((release.get("repositoryOpts") or {}).get("repo", ""))
    helm: dict[str, Any] = {"releaseName": release["name"]}
    if release.get("values"):
        helm["valuesObject"] = release["values"]
    if release.get("skipCrds"):
        helm["skipCrds"] = True
    return {"repoURL": repo, "chart": oci[1] if oci else chart, "targetRevision": str(release["version"]), "helm": helm}


IGNORED_FIELDS: dict[str, list[dict[str, Any]]] = {
    # KEDA scales each Slinky NodeSet through its scale subresource (assembly/schedulers/autoscaling.py): the
    # chart's replicas are only the floor, so Argo CD must neither show the NodeSets OutOfSync nor reset KEDA's count
    # on a sync (Argo CD docs, "Diffing Customization": ignoreDifferences with jsonPointers; "Sync Options":
    # RespectIgnoreDifferences=true makes a sync leave the ignored fields as they are in the cluster).
    "slurm": [{"group": "slinky.slurm.net", "kind": "NodeSet", "jsonPointers": ["/spec/replicas"]}],
}
"""Release name -> fields another controller owns in its objects."""


def application(release: Mapping[str, Any]) -> dict[str, Any]:
    ignored = IGNORED_FIELDS.get(str(release["name"]), [])
    options = ["CreateNamespace=true", "ServerSideApply=true"] + (["RespectIgnoreDifferences=true"] if ignored else [])
    return {
        "apiVersion": API,
        "kind": "Application",
        "metadata": {
            "name": release["name"],
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "ekstrain"},
            # Argo CD never cascades a delete into the platform's workloads.
            "finalizers": [],
        },
        "spec": {
            "project": PROJECT,
            "source": source(release),
            "destination": {"server": IN_CLUSTER, "namespace": release["namespace"]},
            # Manual sync: Pulumi delivers these releases too; apply one only for a chart Pulumi stops managing.
            "syncPolicy": {"syncOptions": options},
            **({"ignoreDifferences": [dict(i) for i in ignored]} if ignored else {}),
        },
    }


def applications(releases: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Applications for every release except Argo CD's own."""
    return [application(r) for r in releases if r["name"] != RELEASE]


def oci_repositories(charts: Iterable[str]) -> dict[str, dict[str, str]]:
    """``configs.repositories`` of the argo-cd chart: one Helm-OCI repository per OCI chart location."""
    out: dict[str, dict[str, str]] = {}
    for chart in charts:
        parts = oci_parts(chart)
        if parts:
            key = re.sub(r"[^a-z0-9-]+", "-", parts[0].lower()).strip("-")
            out[key] = {"url": parts[0], "name": key, "type": "helm", "enableOCI": "true"}
    return dict(sorted(out.items()))


def chart_values(charts: Iterable[str]) -> dict[str, Any]:
    """Values of argo-cd (keys from its upstream values.yaml): no Dex (no SSO is configured; the
    initial admin secret is used), no notifications controller, the server inside the cluster only
    (``ClusterIP``; reach it with ``kubectl port-forward``), and the OCI chart registries."""
    return {
        "dex": {"enabled": False},
        "notifications": {"enabled": False},
        "server": {"service": {"type": "ClusterIP"}, "resources": sized("50m", "128Mi", "256Mi")},
        "configs": {"repositories": oci_repositories(charts)},
        # Requests for every component the chart runs (ekstrain/layout/controller_resources.py).
        "controller": {"resources": LARGE},
        "repoServer": {"resources": sized("50m", "256Mi", "1Gi")},
        "applicationSet": {"resources": sized("50m", "128Mi", "256Mi")},
        "redis": {"resources": sized("50m", "64Mi", "256Mi")},
        # The pre-install hook Job that writes the redis password Secret (one kubectl-style call): a sidecar size.
        "redisSecretInit": {"resources": SMALL},
    }


def chart_repo(chart: str, repo: str | None) -> str:
    """The repoURL an Application uses for a pinned chart."""
    parts = oci_parts(chart)
    return parts[0] if parts else str(repo)


def app_project(repos: Iterable[str], namespaces: Iterable[str] = ("*",)) -> dict[str, Any]:
    """The ``ekstrain`` AppProject: only the platform's pinned chart repositories, in-cluster only."""
    return {
        "apiVersion": API,
        "kind": "AppProject",
        "metadata": {"name": PROJECT, "namespace": NAMESPACE},
        "spec": {
            "description": "ekstrain platform charts",
            "sourceRepos": sorted(set(repos)),
            "destinations": [{"server": IN_CLUSTER, "namespace": ns} for ns in sorted(set(namespaces))],
            # Charts install CRDs, webhooks and cluster roles.
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }
