"""Placement facts every scheduler builder shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ekstrain.facts import catalog, names
from ekstrain.layout.partitions import PartitionShape, shape

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig
    from ekstrain.stacks.models.partitions import PartitionConfig


@dataclass(frozen=True)
class PartitionFacts:
    """What a scheduler needs to know about one partition."""

    config: PartitionConfig
    shape: PartitionShape

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def accelerator_resource(self) -> str:
        return self.shape.accelerator_resource

    @property
    def node_resources(self) -> dict[str, int]:
        """Extended resources of one whole node (accelerators, EFA interfaces when the partition has EFA)."""
        out = {self.shape.accelerator_resource: self.shape.accelerators_per_node}
        if self.shape.efa_interfaces:
            out[names.EFA_RESOURCE] = self.shape.efa_interfaces
        return out

    @property
    def toleration(self) -> dict[str, str]:
        """The partition's accelerator taint (set by the compute NodePools)."""
        key = self.shape.instance_types[0].accelerator_taint_key
        return {"key": key, "operator": "Equal", "value": names.TAINT_VALUE, "effect": "NoSchedule"}

    @property
    def node_selector(self) -> dict[str, str]:
        """The partition label every NodePool of the partition sets (a mixed-layout partition has
        several NodePools, so ``karpenter.sh/nodepool`` would select only one of them)."""
        return {names.PARTITION_LABEL: self.name}

    @property
    def max_vcpus(self) -> int:
        """vCPUs of the largest instance type (mixed types: a full node of any type must fit)."""
        return max(t.vcpus for t in self.shape.instance_types)

    @property
    def max_memory_gib(self) -> int:
        return max(t.memory_gib for t in self.shape.instance_types)

    @property
    def is_gpu(self) -> bool:
        return self.shape.family == catalog.GPU


def partition_facts(cfg: StackConfig) -> list[PartitionFacts]:
    return [PartitionFacts(p, shape(p.name, p.accelerator, p.instance_types, p.efa)) for p in cfg.partitions]
