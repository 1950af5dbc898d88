"""Partition: one Karpenter EC2NodeClass + NodePool pair per EFA layout, the real compute of a partition.

A partition whose instance types share one EFA layout gets one pair named after the partition; a
mixed one (trn1 + trn1n) gets one pair per layout (``trainium-trn1``, ``trainium-trn1n``), see
:func:`ekstrain.karpenter_specs.layout_specs`.

The manifests come from :mod:`ekstrain.karpenter_specs`; this component only registers them as
CustomResources after the Karpenter release (which brings the CRDs and the controller).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi

from ekstrain import karpenter_specs as specs
from ekstrain.components.deps import dependencies
from ekstrain.components.manifest import resource


@dataclass(frozen=True, kw_only=True)
class PartitionArgs:
    spec: specs.PartitionSpec
    node_role_name: pulumi.Input[str]
    """``EC2NodeClass.spec.role``: Karpenter creates the instance profile from it."""
    cluster_security_group_id: pulumi.Input[str]
    """The EKS-created cluster SG; every node carries it."""
    placement_group_name: pulumi.Input[str] | None = None
    """@default none; the network's placement group name (an Output, so the group exists first)."""
    tags: Mapping[str, str] = field(default_factory=dict)


class Partition(pulumi.ComponentResource):
    node_pool_names: pulumi.Output[list[str]]
    node_class_names: pulumi.Output[list[str]]

    def __init__(self, name: str, args: PartitionArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:partitions:Partition", name, None, opts)
        deps = dependencies(opts)  # the Karpenter Helm release: CRDs + webhook
        layouts = specs.layout_specs(args.spec)
        for spec in layouts:
            # Single-layout partitions keep the `<partition>-nodeclass` names (no replacement on upgrade).
            child = name if len(layouts) == 1 else f"{name}-{spec.resource_name.removeprefix(args.spec.name + '-')}"
            node_class = specs.ec2_node_class(
                spec,
                node_role=args.node_role_name,
                cluster_security_group_id=args.cluster_security_group_id,
                placement_group=args.placement_group_name,
                tags=args.tags,
            )
            ec2_node_class = resource(
                f"{child}-nodeclass", node_class, opts=pulumi.ResourceOptions(parent=self, depends_on=list(deps))
            )
            resource(
                f"{child}-nodepool",
                specs.node_pool(spec),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[*deps, ec2_node_class]),
            )

        pools = [s.resource_name for s in layouts]
        self.node_pool_names = pulumi.Output.from_input(pools)
        self.node_class_names = pulumi.Output.from_input(pools)
        self.register_outputs({"nodePoolNames": self.node_pool_names, "nodeClassNames": self.node_class_names})


@dataclass(frozen=True, kw_only=True)
class HelperPoolArgs:
    spec: specs.HelperPoolSpec
    node_role_name: pulumi.Input[str]
    cluster_security_group_id: pulumi.Input[str]
    tags: Mapping[str, str] = field(default_factory=dict)


class HelperPool(pulumi.ComponentResource):
    """The untainted CPU NodePool + EC2NodeClass for MPI launchers and Ray heads
    (:func:`ekstrain.karpenter_specs.helper_node_pool`)."""

    node_pool_name: pulumi.Output[str]

    def __init__(self, name: str, args: HelperPoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:partitions:HelperPool", name, None, opts)
        deps = dependencies(opts)
        node_class = resource(
            f"{name}-nodeclass",
            specs.helper_node_class(
                args.spec,
                node_role=args.node_role_name,
                cluster_security_group_id=args.cluster_security_group_id,
                tags=args.tags,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(deps)),
        )
        resource(
            f"{name}-nodepool",
            specs.helper_node_pool(args.spec),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*deps, node_class]),
        )
        self.node_pool_name = pulumi.Output.from_input(specs.HELPER_POOL)
        self.register_outputs({"nodePoolName": self.node_pool_name})
