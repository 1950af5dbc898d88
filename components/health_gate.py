"""HealthGate: the pre-flight of every accelerator NodePool and the guard that keeps sick nodes out of service.

The objects come from :mod:`ekstrain.payloads.health_gate` (the one source of the taint keys and checks, which the
NodePools'
``startupTaints`` and the simulator read too); this component only registers them: the guard's script, its service
account and RBAC (nodes; NodePools for the breaker), the ValidatingAdmissionPolicies that keep it on its own node
and, on NodePools, to the breaker's fields (``spec.limits.nodes`` and three annotations), and one DaemonSet per
accelerator NodePool (one per EFA layout of a mixed partition), whose guard is a native sidecar that bounds the
pre-flight by a deadline. docs/health.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from ekstrain.components.deps import dependencies
from ekstrain.components.manifest import resource
from ekstrain.payloads import health_gate
from ekstrain.payloads.karpenter_specs import PartitionSpec, layout_specs


@dataclass(frozen=True, kw_only=True)
class HealthGateArgs:
    partitions: Sequence[PartitionSpec]
    """Required. The accelerator partitions (``ekstrain.payloads.karpenter_specs.PartitionSpec``, as given to
    ``Partition``):
    one pre-flight DaemonSet per NodePool of each."""


class HealthGate(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<the partitions>])``."""

    daemonsets: pulumi.Output[list[str]]
    """The pre-flight DaemonSets' names (``health-gate-<nodepool>``, in kube-system)."""

    def __init__(self, name: str, args: HealthGateArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:healthgate:HealthGate", name, None, opts)
        pools = [layout for spec in args.partitions for layout in layout_specs(spec)]
        objects = health_gate.gate_objects(pools)
        shared = [o for o in objects if o["kind"] != "DaemonSet"]
        made = [
            resource(
                f"{name}-{o['kind'].lower()}-{o['metadata']['name']}",
                o,
                opts=pulumi.ResourceOptions(parent=self, depends_on=dependencies(opts)),
            )
            for o in shared
        ]
        names = []
        for o in objects:
            if o["kind"] == "DaemonSet":
                names.append(o["metadata"]["name"])
                # After the policy, the RBAC and the script: a guard never runs without its limits.
                pool = o["metadata"]["name"].removeprefix("health-gate-")
                resource(f"{name}-{pool}", o, opts=pulumi.ResourceOptions(parent=self, depends_on=made))
        self.daemonsets = pulumi.Output.from_input(names)
        self.register_outputs({"daemonsets": self.daemonsets})
