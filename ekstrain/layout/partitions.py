"""Facts derived from a partition's instance types: one place for counts every consumer needs.

The EC2NodeClass, NodePool limits, device-plugin selectors, Slurm NodeSets, Volcano queues and
job templates all read these, so a partition's accelerators and EFA count cannot disagree.

A partition whose instance types have different EFA layouts (trn1 with 8 interfaces and trn1n with
16; p5 with 32 and p5en with 16) is split into one *layout* per distinct layout: each becomes its
own EC2NodeClass + NodePool (an EC2NodeClass carries exactly one ``networkInterfaces`` list), so
every type gets its full EFA count. The layouts share the partition's labels, placement group,
Volcano queue and Slurm NodeSet; its ``maxNodes`` is split between them (:func:`split_nodes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.facts import catalog
from ekstrain.layout import efa


@dataclass(frozen=True)
class PartitionShape:
    name: str
    family: str
    instance_types: tuple[catalog.InstanceType, ...]
    efa_enabled: bool

    @property
    def accelerators_per_node(self) -> int:
        return self.instance_types[0].accelerator_count

    @property
    def accelerator_resource(self) -> str:
        return self.instance_types[0].accelerator_resource

    @property
    def efa_interfaces(self) -> int:
        """EFA interfaces every node of the partition has, whichever layout launched it (the least)."""
        if not self.efa_enabled:
            return 0
        return min(t.efa_max_interfaces for t in self.instance_types)

    @property
    def network_interfaces(self) -> list[efa.NetworkInterface]:
        """Interfaces of a single-layout shape (each layout of a mixed partition has its own)."""
        if not self.efa_enabled:
            return []
        narrowest = min(self.instance_types, key=lambda t: (t.efa_max_interfaces, t.network_cards))
        return efa.efa_layout(narrowest)

    @property
    def workers_per_node(self) -> int:
        return self.instance_types[0].workers_per_node

    @property
    def gpudirect_rdma(self) -> bool:
        return all(t.gpudirect_rdma for t in self.instance_types)

    def layouts(self) -> tuple[PartitionShape, ...]:
        """One shape per distinct EFA layout, in the order the types are listed; one (self) without EFA."""
        if not self.efa_enabled:
            return (self,)
        groups: dict[tuple[efa.NetworkInterface, ...], list[catalog.InstanceType]] = {}
        for t in self.instance_types:
            groups.setdefault(tuple(efa.efa_layout(t)), []).append(t)
        if len(groups) == 1:
            return (self,)
        return tuple(
            PartitionShape(layout_name(self.name, tuple(ts)), self.family, tuple(ts), True) for ts in groups.values()
        )

    @property
    def mixed_layout(self) -> bool:
        return len(self.layouts()) > 1

    def efa_for(self, instance_type: str) -> int:
        """EFA interfaces a node of ``instance_type`` launches with in this partition (its full count)."""
        if not self.efa_enabled:
            return 0
        for layout in self.layouts():
            if any(t.name == instance_type for t in layout.instance_types):
                return layout.efa_interfaces
        raise KeyError(f"{instance_type} is not in partition {self.name}")


def layout_name(partition: str, types: tuple[catalog.InstanceType, ...]) -> str:
    """NodePool/EC2NodeClass name of one layout of a mixed partition: ``trainium-trn1n``."""
    return "-".join([partition, *(t.name.split(".", 1)[0] for t in types)])


def split_nodes(max_nodes: int, parts: int) -> list[int]:
    """Split a partition's maxNodes over its layouts: as even as possible, earlier layouts first,
    every layout at least one node when there are enough, and the sum exactly ``max_nodes``."""
    base, extra = divmod(max_nodes, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def layout_nodes(shape_: PartitionShape, max_nodes: int) -> list[tuple[PartitionShape, int]]:
    """(layout, its node limit) for every layout of a partition."""
    layouts = shape_.layouts()
    return list(zip(layouts, split_nodes(max_nodes, len(layouts)), strict=True))


def shape(name: str, family: str, instance_types: list[str], efa_enabled: bool) -> PartitionShape:
    return PartitionShape(name, family, tuple(catalog.get(t) for t in instance_types), efa_enabled)
