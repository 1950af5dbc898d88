"""Partition: one Karpenter EC2NodeClass + NodePool pair per EFA layout, the real compute of a partition.

A partition whose instance types share one EFA layout gets one pair named after the partition; a
mixed one (trn1 + trn1n) gets one pair per layout (``trainium-trn1``, ``trainium-trn1n``), see
:func:`ekstrain.payloads.karpenter_specs.layout_specs`.

The manifests come from :mod:`ekstrain.payloads.karpenter_specs`; this component only registers them as
CustomResources after the Karpenter release (which brings the CRDs and the controller).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi

from ekstrain.components import args as ac
from ekstrain.components.deps import dependencies
from ekstrain.components.manifest import resource
from ekstrain.facts import catalog, names
from ekstrain.payloads import karpenter_specs as specs

CAPACITY_TYPES = ("on-demand", "spot", "reserved")
CAPACITY_RESERVATION_TYPES = ("default", "capacity-block")
DURATION = re.compile(r"Never|([0-9]+(\.[0-9]+)?(s|m|h))+")
MAX_ROOT_VOLUME_GIB = 16384
"""gp3's largest volume (16 TiB)."""


def check_spec(spec: specs.PartitionSpec, a: str = "PartitionArgs.spec") -> None:
    """Refuse a partition Karpenter could not launch or that would not be what it says (facts:
    ekstrain/facts/catalog.py)."""
    ac.check(
        isinstance(spec.name, str) and names.is_dns_label(spec.name, 50),
        f"{a}.name",
        spec.name,
        "not a lowercase DNS label of at most 50 characters (it names the NodePool, EC2NodeClass and labels)",
        "use lowercase letters, digits and '-' (gpu-h100)",
    )
    ac.cluster_name(f"{a}.cluster_name", spec.cluster_name)
    shape = spec.shape
    ac.one_of(f"{a}.shape.family", shape.family, (catalog.GPU, catalog.TRAINIUM))
    ac.check(
        bool(shape.instance_types),
        f"{a}.shape.instance_types",
        [],
        "empty",
        "list the partition's instance types (ekstrain.layout.partitions.shape(name, family, [types], efa))",
    )
    same_family = ", ".join(n for n, c in sorted(catalog.CATALOG.items()) if c.family == shape.family)
    for t in shape.instance_types:
        ac.check(
            t.family == shape.family,
            f"{a}.shape.instance_types",
            t.name,
            f"a {t.family} instance type ({t.accelerator_count} x {t.accelerator.model}) in a {shape.family} partition",
            f"use {shape.family} instance types ({same_family}) or family={t.family!r}",
        )
        ac.check(
            not shape.efa_enabled or t.efa_capable,
            f"{a}.shape.instance_types",
            t.name,
            "has no EFA interface but the partition has EFA enabled",
            "use EFA-capable types, or build the shape with efa_enabled=False",
        )
    counts = sorted({t.accelerator_count for t in shape.instance_types})
    ac.check(
        len(counts) == 1,
        f"{a}.shape.instance_types",
        [t.name for t in shape.instance_types],
        f"types with different accelerator counts {counts} (the NodePool limit counts accelerators per node)",
        "split them into one partition per accelerator count",
    )
    generations = sorted({t.accelerator.generation for t in shape.instance_types})
    ac.check(
        len(generations) == 1,
        f"{a}.shape.instance_types",
        [t.name for t in shape.instance_types],
        f"mixes accelerator generations {generations} (a job's ranks would run at the slowest one's speed)",
        "one partition per generation",
    )
    layouts = len(shape.layouts())
    ac.positive_int(
        f"{a}.max_nodes",
        spec.max_nodes,
        f"set max_nodes to the most nodes the partition may run at once (at least {layouts}, one per EFA layout)",
        minimum=layouts,
    )
    ac.one_of(f"{a}.capacity_type", spec.capacity_type, CAPACITY_TYPES)
    ac.check(
        spec.capacity_type != "reserved" or bool(spec.capacity_reservation_ids or spec.capacity_reservation_tags),
        f"{a}.capacity_type",
        spec.capacity_type,
        "reserved capacity without a reservation to select",
        "give capacity_reservation_ids (cr-...) or capacity_reservation_tags",
    )
    ac.one_of(f"{a}.capacity_reservation_type", spec.capacity_reservation_type, CAPACITY_RESERVATION_TYPES)
    for i, reservation in enumerate(spec.capacity_reservation_ids):
        ac.check(
            isinstance(reservation, str) and reservation.startswith("cr-"),
            f"{a}.capacity_reservation_ids[{i}]",
            reservation,
            "not a capacity reservation id",
            "give the id as AWS prints it (cr-0123456789abcdef0)",
        )
    ac.check(
        isinstance(spec.availability_zone, str) and spec.availability_zone[-1:].isalpha(),
        f"{a}.availability_zone",
        spec.availability_zone,
        "not an availability zone name",
        "give the training AZ (us-west-2b)",
    )
    ac.positive_int(
        f"{a}.root_volume_gib",
        spec.root_volume_gib,
        f"give a size from 20 to {MAX_ROOT_VOLUME_GIB} GiB (500 is the default)",
        minimum=20,
        maximum=MAX_ROOT_VOLUME_GIB,
    )
    ac.check(
        isinstance(spec.consolidate_after, str) and bool(DURATION.fullmatch(spec.consolidate_after)),
        f"{a}.consolidate_after",
        spec.consolidate_after,
        "not a Karpenter duration",
        "use Never or a Go duration such as 30m or 1h30m",
    )
    if spec.weight is not None:
        ac.positive_int(f"{a}.weight", spec.weight, "give a NodePool weight from 1 to 100, or None", 1, 100)


@dataclass(frozen=True, kw_only=True)
class PartitionArgs:
    spec: specs.PartitionSpec
    """Required. Name, instance types (``ekstrain.layout.partitions.shape``), training AZ, ``max_nodes``, capacity type,
    placement group, reservations, root volume, labels, AMI pin
    (:class:`ekstrain.payloads.karpenter_specs.PartitionSpec`,
    each field's default there); checked against ekstrain/facts/catalog.py."""
    node_role_name: pulumi.Input[str]
    """Required. ``EC2NodeClass.spec.role``: Karpenter creates the instance profile from it
    (``Karpenter.node_role_name``)."""
    cluster_security_group_id: pulumi.Input[str]
    """Required. The EKS-created cluster SG; every node carries it (``Cluster.cluster_security_group_id``)."""
    placement_group_name: pulumi.Input[str] | None = None
    """@default none: ``<cluster>-<NodePool>`` when ``spec.placement_group``; the network's placement group
    name (an Output, so the group exists first), for every layout that ``placement_group_names`` does not name."""
    placement_group_names: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """@default none. Per NodePool (one per EFA layout, ``ekstrain.layout.partitions.layout_name``) its own placement
    group
    (the network's ``placement_group_names``): one cluster placement group per NodePool layout, so trn1 and trn1n
    are never packed into one group (EC2 places a cluster group best with one instance type launched together)."""
    subnet_ids: pulumi.Input[Sequence[str]] | None = None
    """@default none: subnets selected by tag, ``karpenter.sh/discovery=<cluster>`` and
    ``ekstrain.io/subnet-role=efa`` (EFA partitions) or ``private`` (the Network tags its own subnets so).
    Set: exactly these subnets, e.g. an existing VPC's (an EFA partition: the EFA subnet of the training AZ)."""
    security_group_ids: pulumi.Input[Sequence[str]] | None = None
    """@default none: the cluster SG plus, on EFA partitions, the SG tagged ``karpenter.sh/discovery=<cluster>``
    and ``ekstrain.io/sg-role=efa`` (the Network's EFA SG). Set: the cluster SG plus exactly these (an EFA
    partition needs a group that allows all traffic to and from itself)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags Karpenter puts on the instances, volumes and ENIs it launches."""

    def __post_init__(self) -> None:
        check_spec(self.spec)
        if self.subnet_ids is not None:  # empty: Karpenter would find no subnet to launch into
            ac.aws_ids("PartitionArgs.subnet_ids", self.subnet_ids, "subnet", allow_empty=False)
        ac.aws_ids("PartitionArgs.security_group_ids", self.security_group_ids or [], "sg")


def id_terms(ids: pulumi.Input[Sequence[str]], *first: pulumi.Input[str]) -> pulumi.Output[list[dict[str, str]]]:
    """Karpenter selector terms ``[{"id": ...}]`` for ``first`` then every id in ``ids``."""
    return pulumi.Output.all(pulumi.Output.all(*first), pulumi.Output.from_input(ids)).apply(
        lambda both: [{"id": i} for i in [*both[0], *both[1]]]
    )


class Partition(pulumi.ComponentResource):
    node_pool_names: pulumi.Output[list[str]]
    """NodePool names: the partition's, or one per EFA layout of a mixed partition."""
    node_class_names: pulumi.Output[list[str]]
    """EC2NodeClass names (same as the NodePools')."""

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
                placement_group=args.placement_group_names.get(spec.resource_name, args.placement_group_name),
                tags=args.tags,
                subnet_terms=None if args.subnet_ids is None else id_terms(args.subnet_ids),
                security_group_terms=(
                    None
                    if args.security_group_ids is None
                    else id_terms(args.security_group_ids, args.cluster_security_group_id)
                ),
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
    """Required. Cluster name, training AZ, vCPU limit (@default 256), AMI pin, consolidation delay
    (:class:`ekstrain.payloads.karpenter_specs.HelperPoolSpec`)."""
    node_role_name: pulumi.Input[str]
    """Required. ``EC2NodeClass.spec.role`` (``Karpenter.node_role_name``)."""
    cluster_security_group_id: pulumi.Input[str]
    """Required. The EKS-created cluster SG, the pool's only security group."""
    subnet_ids: pulumi.Input[Sequence[str]] | None = None
    """@default none: the private subnets by tag (``karpenter.sh/discovery=<cluster>``,
    ``ekstrain.io/subnet-role=private``). Set: exactly these subnets (an existing VPC's private subnets)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags Karpenter puts on what it launches."""

    def __post_init__(self) -> None:
        a = "HelperPoolArgs.spec"
        ac.cluster_name(f"{a}.cluster_name", self.spec.cluster_name)
        ac.positive_int(f"{a}.max_vcpus", self.spec.max_vcpus, "give the pool's vCPU limit (256 is the default)")
        ac.aws_ids("HelperPoolArgs.subnet_ids", self.subnet_ids or [], "subnet")


class HelperPool(pulumi.ComponentResource):
    """The untainted CPU NodePool + EC2NodeClass for MPI launchers and Ray heads
    (:func:`ekstrain.payloads.karpenter_specs.helper_node_pool`)."""

    node_pool_name: pulumi.Output[str]
    """The CPU pool's NodePool name (``cpu-helpers``)."""

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
                subnet_terms=None if args.subnet_ids is None else id_terms(args.subnet_ids),
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
