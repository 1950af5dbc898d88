"""Volcano: the chart, then one cluster-scoped Queue per partition (after the chart's CRDs exist)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.assembly.schedulers import volcano as build
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.versions import Chart


@dataclass(frozen=True, kw_only=True)
class VolcanoArgs:
    chart: Chart
    values: Mapping[str, Any]
    queues: Sequence[Mapping[str, Any]]
    """``scheduling.volcano.sh/v1beta1`` Queue manifests (assembly.schedulers.volcano.queues)."""


class Volcano(pulumi.ComponentResource):
    volcano_release: k8s.helm.v3.Release

    def __init__(self, name: str, args: VolcanoArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:volcano:Volcano", name, None, opts)
        self.volcano_release = release(
            name,
            release_name=build.RELEASE,
            chart=args.chart,
            namespace=build.NAMESPACE,
            values=args.values,
            parent=self,
            create_namespace=True,
            depends_on=dependencies(opts),  # the cluster: its node group runs the scheduler and admission pods
        )
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.volcano_release])
        for q in args.queues:
            resource(f"{name}-queue-{q['metadata']['name']}", q, opts=after)
        self.register_outputs({"queues": [q["metadata"]["name"] for q in args.queues]})
