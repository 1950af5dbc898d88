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
from ekstrain.facts.versions import Chart


@dataclass(frozen=True, kw_only=True)
class VolcanoArgs:
    chart: Chart
    """Required. The volcano chart (pinned in ekstrain/facts/versions.py)."""
    values: Mapping[str, Any]
    """Required. Helm values (``ekstrain.assembly.schedulers.volcano``)."""
    queues: Sequence[Mapping[str, Any]]
    """Required. ``scheduling.volcano.sh/v1beta1`` Queue manifests (assembly.schedulers.volcano.queues)."""
    admission_policies: Sequence[Mapping[str, Any]] = ()
    """@default none. ValidatingAdmissionPolicies and their bindings that make every accelerator pod use its
    partition's queue (assembly.schedulers.ledger.policies); created after the queues they point pods at."""


class Volcano(pulumi.ComponentResource):
    volcano_release: k8s.helm.v3.Release
    """The volcano Helm release."""

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
        made: list[pulumi.Resource] = []
        by_queue: dict[str, pulumi.Resource] = {}
        for q in args.queues:
            # A team queue after its parent (Volcano's queue webhook refuses a child whose parent does not exist).
            parent_queue = (q.get("spec") or {}).get("parent")
            opts = after
            if parent_queue in by_queue:
                opts = pulumi.ResourceOptions(parent=self, depends_on=[self.volcano_release, by_queue[parent_queue]])
            by_queue[q["metadata"]["name"]] = resource(f"{name}-queue-{q['metadata']['name']}", q, opts=opts)
            made.append(by_queue[q["metadata"]["name"]])
        # After the queues: a pod the policies admit names a queue that exists.
        after_queues = pulumi.ResourceOptions(parent=self, depends_on=[self.volcano_release, *made])
        for obj in args.admission_policies:
            kind = "binding" if obj["kind"].endswith("Binding") else "policy"
            resource(f"{name}-{kind}-{obj['metadata']['name']}", obj, opts=after_queues)
        self.register_outputs(
            {
                "queues": [q["metadata"]["name"] for q in args.queues],
                "admission_policies": [
                    o["metadata"]["name"] for o in args.admission_policies if "Binding" not in o["kind"]
                ],
            }
        )
