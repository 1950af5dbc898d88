"""Argo CD: the argo-cd chart and the ``ekstrain`` AppProject the emitted Applications belong to.

The Applications themselves are emitted by the render (``build/<stack>/argocd/``) from the
program's Helm releases, see :mod:`ekstrain.payloads.argocd`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts.versions import Chart
from ekstrain.payloads import argocd


@dataclass(frozen=True, kw_only=True)
class ArgoCdArgs:
    chart: Chart
    """Required. The argo-cd chart (pinned in ekstrain/facts/versions.py)."""
    platform_charts: Sequence[Chart]
    """Required. Every chart the platform pins: their registries become repositories and project sources."""


class ArgoCd(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster>])``."""

    release: k8s.helm.v3.Release
    """The argo-cd Helm release."""

    def __init__(self, name: str, args: ArgoCdArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:delivery:ArgoCd", name, None, opts)
        self.release = release(
            name,
            release_name=argocd.RELEASE,
            chart=args.chart,
            namespace=argocd.NAMESPACE,
            create_namespace=True,
            values=argocd.chart_values(c.chart for c in args.platform_charts),
            parent=self,
            depends_on=dependencies(opts),
        )
        project = argocd.app_project(argocd.chart_repo(c.chart, c.repo) for c in args.platform_charts)
        # The AppProject CRD comes with the chart: create the project after the release.
        resource(f"{name}-project", project, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]))
        self.register_outputs({"namespace": argocd.NAMESPACE, "project": argocd.PROJECT})
