"""Partitions: instance types, sizes, labels, and the Karpenter names they derive.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.facts import catalog, names, versions
from ekstrain.layout import efa, partitions
from ekstrain.payloads import karpenter_specs
from ekstrain.stacks import labels
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.partitions import PartitionConfig
from ekstrain.stacks.rules.common import _p


def _partitions(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    seen: set[str] = set()
    k8s = versions.parse_semver(cfg.cluster.kubernetes_version)
    for i, part in enumerate(cfg.partitions):
        if part.name in seen:
            errors.append(
                ConfigIssue(
                    _p(i, part, "name"),
                    f"partition name {part.name!r} is used twice",
                    "give every partition a unique name",
                )
            )
        seen.add(part.name)
        if part.min_nodes > part.max_nodes:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} is below minNodes {part.min_nodes}",
                    f"raise maxNodes to at least {part.min_nodes} or lower minNodes",
                )
            )
        known: list[catalog.InstanceType] = []
        for j, name in enumerate(part.instance_types):
            key = _p(i, part, f"instanceTypes[{j}]")
            if name not in catalog.known():
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name!r} is not in the instance catalog",
                        f"use one of {', '.join(sorted(catalog.known()))}, or add its facts under "
                        f"ekstrain:instanceTypes.{name} (docs/configuration.md)",
                    )
                )
                continue
            it = catalog.get(name)
            known.append(it)
            if it.architecture != "x86_64":
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} is {it.architecture}: the NodePools and AL2023 AMI aliases of this program are "
                        "x86_64 only",
                        f"use an x86_64 type, or keep {name} out of the partitions until arm64 nodes are supported",
                    )
                )
            if it.family != part.accelerator:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} is a {it.family} instance but the partition's accelerator is {part.accelerator}",
                        f"set accelerator: {it.family} or move {name} to a {it.family} partition",
                    )
                )
            if part.efa and not it.efa_capable:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} has no EFA interfaces but the partition has efa: true",
                        f"remove {name} or set efa: false for this partition",
                    )
                )
            if versions.parse_semver(it.min_kubernetes_version) > k8s:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} needs Kubernetes >= {it.min_kubernetes_version} "
                        f"(cluster is {cfg.cluster.kubernetes_version})",
                        f"set ekstrain:cluster.kubernetesVersion to {it.min_kubernetes_version} or later",
                    )
                )
        if len({t.accelerator_count for t in known}) > 1:
            errors.append(
                ConfigIssue(
                    _p(i, part, "instanceTypes"),
                    "instance types have different accelerator counts "
                    f"({ {t.name: t.accelerator_count for t in known} })",
                    "keep types with the same accelerators per node in one partition; "
                    "split the others into their own partition",
                )
            )
        generations = {t.accelerator.generation for t in known}
        if len(generations) > 1:
            by_gen = {g: [t.name for t in known if t.accelerator.generation == g] for g in sorted(generations)}
            errors.append(
                ConfigIssue(
                    _p(i, part, "instanceTypes"),
                    f"instance types mix accelerator generations ({by_gen}); one job's ranks "
                    "would run at the slowest generation's speed",
                    "keep one generation per partition: move "
                    + " / ".join(", ".join(ts) for ts in list(by_gen.values())[1:])
                    + " into a partition of its own",
                )
            )
        layouts = len({tuple(efa.efa_layout(t)) for t in known if t.efa_capable}) if part.efa else 1
        if layouts > 1 and part.max_nodes < layouts:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} cannot be split over the {layouts} EFA layouts of "
                    f"{part.instance_types} (one NodePool each)",
                    f"raise maxNodes to at least {layouts} or keep one EFA layout per partition",
                )
            )
        if part.wants_placement_group and not part.efa:
            errors.append(
                ConfigIssue(
                    _p(i, part, "placementGroup"),
                    "a placement group needs efa: true",
                    "set efa: true or placementGroup: false",
                )
            )
        if part.capacity_type == "reserved" and part.capacity_reservation is None:
            errors.append(
                ConfigIssue(
                    _p(i, part, "capacityReservation"),
                    "capacityType is reserved but no reservation is selected",
                    "add capacityReservation: {ids: [cr-...]} or {tags: {...}}",
                )
            )
        if part.capacity_reservation is not None and part.capacity_type != "reserved":
            errors.append(
                ConfigIssue(
                    _p(i, part, "capacityType"),
                    "a capacityReservation is given but capacityType is not reserved",
                    "set capacityType: reserved",
                )
            )
        cr = part.capacity_reservation
        if cr is not None and cr.instance_count is not None and part.max_nodes > cr.instance_count:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} exceeds the reservation's {cr.instance_count} instances",
                    f"lower maxNodes to {cr.instance_count} or enlarge the reservation",
                )
            )
        if part.capacity_block and part.placement_group:
            # EC2 User Guide, "Work with Capacity Blocks" (capacity-blocks-using.html): a block already gives its
            # instances low-latency, high-throughput connectivity, "so there is no need to use a cluster placement
            # group". A block is bought without one (PurchaseCapacityBlock has no placement parameter) and a
            # reservation created outside a group cannot be moved into one ("Capacity Reservations in cluster
            # placement groups", Limitations), so a group of ours would never hold the block's capacity.
            errors.append(
                ConfigIssue(
                    _p(i, part, "placementGroup"),
                    "a Capacity Block is never in a placement group of this program (it is bought without one and "
                    "cannot be moved into one), and EC2 co-locates its instances itself",
                    "remove placementGroup (it defaults to false for capacity-block reservations)",
                )
            )
        elif part.capacity_type == "reserved" and part.wants_placement_group:
            warnings.append(
                f"{_p(i, part, 'placementGroup')}: instances launch into the placement group "
                f"{names.placement_group_name(cfg.cluster.name, part.name)} (one per EFA layout), so an On-Demand "
                "Capacity Reservation is only used if it was created in that group (or set placementGroup: false); "
                "for a Capacity Block set capacityReservation.type: capacity-block (no placement group)"
            )
        if part.min_nodes > 0:
            errors.append(
                ConfigIssue(
                    _p(i, part, "minNodes"),
                    f"minNodes {part.min_nodes}: warm nodes need Karpenter's alpha StaticCapacity "
                    "feature gate (NodePool.spec.replicas), which this platform keeps off",
                    "set minNodes: 0; nodes are launched when a job asks for them and kept "
                    "while busy (raise consolidateAfter to keep idle nodes longer)",
                )
            )
        errors += _partition_labels(i, part)
    errors += _pool_name_collisions(cfg)
    if cfg.partitions:
        errors += _karpenter_names(cfg)
    return errors, warnings


def pool_names(part: PartitionConfig) -> list[str]:
    """NodePool/EC2NodeClass names of a partition: its name, or one per EFA layout (``trainium-trn1n``)."""
    known = all(t in catalog.known() for t in part.instance_types)
    if not known or (part.efa and not all(catalog.get(t).efa_capable for t in part.instance_types)):
        return [part.name]  # refused elsewhere; no layouts to name
    shape = partitions.shape(part.name, part.accelerator, part.instance_types, part.efa)
    return [layout.name for layout in shape.layouts()]


def _pool_name_collisions(cfg: StackConfig) -> list[ConfigIssue]:
    """Every partition name and generated NodePool/EC2NodeClass name is distinct across partitions: the
    objects (and the Pulumi resources ``<name>-nodepool``) would otherwise be declared twice."""
    out = []
    owner: dict[str, int] = {}
    for i, part in enumerate(cfg.partitions):
        mine = {part.name, *pool_names(part)}
        for name in sorted(mine):
            j = owner.get(name)
            if j is not None and j != i and cfg.partitions[j].name != part.name:  # same name: reported above
                other = cfg.partitions[j]
                out.append(
                    ConfigIssue(
                        _p(i, part, "name"),
                        f"the NodePool/EC2NodeClass name {name!r} is also generated by "
                        f"{_p(j, other)} (a partition with several EFA layouts gets one pool per layout, "
                        f"named {', '.join(pool_names(other))})",
                        "rename one of the partitions",
                    )
                )
            owner.setdefault(name, i)
        for name in pool_names(part):
            if len(name) > 63:
                out.append(
                    ConfigIssue(
                        _p(i, part, "name"),
                        f"the NodePool name {name!r} is longer than 63 characters (it is the value of the "
                        "karpenter.sh/nodepool label on every node)",
                        "shorten the partition name",
                    )
                )
    return out


def _partition_labels(index: int, part: PartitionConfig) -> list[ConfigIssue]:
    """Kubernetes label syntax and Karpenter's restricted domains and counts (stacks/labels.py)."""
    out = []
    problem = labels.count_problem(part.labels)
    if problem:
        out.append(ConfigIssue(_p(index, part, "labels"), *problem))
    for key, value in part.labels.items():
        where = _p(index, part, f"labels.{key}")
        for found in (labels.key_problem(key), labels.value_problem(value)):
            if found:
                out.append(ConfigIssue(where, *found))
    return out


def _karpenter_names(cfg: StackConfig) -> list[ConfigIssue]:
    """IAM role names are at most 64 characters, SQS queue names at most 80."""
    name = cfg.cluster.name
    too_long = [
        n for n in (karpenter_specs.node_role_name(name), karpenter_specs.controller_role_name(name)) if len(n) > 64
    ]
    if len(karpenter_specs.interruption_queue_name(name)) > 80:
        too_long.append(karpenter_specs.interruption_queue_name(name))
    if not too_long:
        return []
    longest = len(karpenter_specs.node_role_name(""))
    return [
        ConfigIssue(
            "ekstrain:cluster.name",
            f"{name!r} makes Karpenter resource names too long for AWS: {too_long}",
            f"use a cluster name of at most {64 - longest} characters",
        )
    ]
