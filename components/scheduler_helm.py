"""One way to install a pinned chart as a ``helm.v3.Release`` (values visible to tests and render)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.versions import Chart


def release(resource_name: str, *, release_name: str, chart: Chart, namespace: str, values: Mapping[str, Any],
            parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] = (),
            create_namespace: bool = True) -> k8s.helm.v3.Release:
    return k8s.helm.v3.Release(
        resource_name,
        name=release_name,
        chart=chart.chart,
        version=chart.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo) if chart.repo else None,
        namespace=namespace,
        create_namespace=create_namespace,
        values=dict(values),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(depends_on)),
    )
