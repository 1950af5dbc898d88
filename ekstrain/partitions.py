"""Facts derived from a partition's instance types: one place for counts every consumer needs.

The EC2NodeClass, NodePool limits, device-plugin selectors, Slurm NodeSets, Volcano queues and
job templates all read these, so a partition's accelerators and EFA count cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain import catalog, efa


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
        """EFA interfaces every node of the partition gets (the common layout)."""
        if not self.efa_enabled:
            return 0
        return min(t.efa_max_interfaces for t in self.instance_types)

    @property
    def network_interfaces(self) -> list[efa.NetworkInterface]:
        """Layout that every instance type of the partition can launch with."""
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


def shape(name: str, family: str, instance_types: list[str], efa_enabled: bool) -> PartitionShape:
    return PartitionShape(name, family, tuple(catalog.get(t) for t in instance_types), efa_enabled)
