"""The one way a component installs a pinned chart: a ``helm.v3.Release`` (values visible to tests and render).

Dependencies follow the components' idiom (components/deps.py): the caller hands this helper the
resources the release waits for. Options left ``None`` are not sent (the provider's default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.diff.rules import chart_name, deletes_crds_with_release
from ekstrain.facts.versions import Chart


def release(
    resource_name: str,
    *,
    chart: Chart,
    namespace: str,
    parent: pulumi.Resource,
    release_name: str | None = None,
    values: Mapping[str, Any] | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    create_namespace: bool | None = None,
    skip_crds: bool | None = None,
) -> k8s.helm.v3.Release:
    """``release_name`` defaults to the resource name; ``chart.repo`` (unset for OCI charts) becomes
    ``repositoryOpts``."""
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name or resource_name,
        chart=chart.chart,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo) if chart.repo else None,
        namespace=namespace,
        create_namespace=create_namespace,
        skip_crds=skip_crds,
        values=dict(values) if values is not None else None,
        # A new name or namespace replaces the release; the chart's objects keep their names (CRDs, ClusterRoles,
        # webhooks), which Helm refuses to install while the old release owns them: delete it first.
        # A chart whose CRDs are templates takes them, and every custom resource of them, with it when it goes:
        # protected, so that takes a deliberate `pulumi state unprotect` (docs/delivery.md, upgrade runbook).
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=list(depends_on),
            delete_before_replace=True,
            protect=deletes_crds_with_release(chart_name(chart.chart)),
        ),
    )
