"""Volcano values and one ``scheduling.volcano.sh/v1beta1`` Queue per partition.

A Queue's ``capability`` is the partition's ceiling: maxNodes whole nodes of accelerators, EFA
interfaces, vCPUs and memory (largest instance type of the partition, so a full node of any of its
types fits). Gang-scheduled jobs submitted to queue P therefore never ask for more than partition P
can launch, and queues of different partitions do not borrow each other's capacity.

``reclaimable: false``: Volcano's reclaim action evicts running pods of a queue that is over its
deserved share when another queue needs resources. A distributed training job loses every rank
(and all progress since its last checkpoint) when one pod is evicted, so training queues must not be
reclaimed; capacity is bounded by ``capability`` instead.
"""

from __future__ import annotations

from typing import Any

from ekstrain import names
from ekstrain.partitions import layout_nodes
from ekstrain.schedulers.common import SYSTEM_NODE_SELECTOR, PartitionFacts, partition_facts
from stacks.models import StackConfig

NAMESPACE = "volcano-system"
RELEASE = "volcano"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


def volcano_values() -> dict[str, Any]:
    """Admission, controllers and scheduler on system nodes (``custom.default_ns`` is the chart's
    node selector for all of its components)."""
    return {"custom": {"default_ns": dict(SYSTEM_NODE_SELECTOR)}}


def queue_capability(p: PartitionFacts) -> dict[str, str]:
    n = p.config.max_nodes
    cap = {
        "cpu": str(p.max_vcpus * n),
        "memory": f"{p.max_memory_gib * n}Gi",
        p.accelerator_resource: str(p.shape.accelerators_per_node * n),
    }
    if p.shape.efa_interfaces:
        # Each layout of a mixed partition contributes its own EFA count times its share of maxNodes.
        cap[names.EFA_RESOURCE] = str(sum(s.efa_interfaces * k for s, k in layout_nodes(p.shape, n)))
    return cap


def queue(cfg: StackConfig, p: PartitionFacts) -> dict[str, Any]:
    return {
        "apiVersion": QUEUE_API, "kind": "Queue",
        "metadata": {"name": p.name, "labels": {names.PARTITION_LABEL: p.name}},
        "spec": {
            "weight": cfg.schedulers.volcano.queue_weights.get(p.name, 1),
            "reclaimable": False,
            "capability": queue_capability(p),
        },
    }


def queues(cfg: StackConfig) -> list[dict[str, Any]]:
    return [queue(cfg, p) for p in partition_facts(cfg)]
