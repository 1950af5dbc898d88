"""Volcano values and one ``scheduling.volcano.sh/v1beta1`` Queue per partition.

A Queue's ``capability`` is the partition's ceiling: maxNodes whole nodes of accelerators, EFA
interfaces, vCPUs and memory (largest instance type of the partition, so a full node of any of its
types fits), less the nodes standing slurmd pods hold (``schedulers.slurm.nodesetReplicas``). Gang-
scheduled jobs submitted to queue P therefore never ask for more than partition P can launch (a gang
admitted beyond it would leave Karpenter's nodes idle at the NodePool limit, never binding), and
queues of different partitions do not borrow each other's capacity.

``reclaimable: false``: Volcano's reclaim action evicts running pods of a queue that is over its
deserved share when another queue needs resources. A distributed training job loses every rank
(and all progress since its last checkpoint) when one pod is evicted, so training queues must not be
reclaimed; capacity is bounded by ``capability`` instead.
"""

from __future__ import annotations

from typing import Any

import yaml

from assembly.schedulers.common import PartitionFacts, partition_facts
from assembly.schedulers.slurm import standing_nodes
from ekstrain import names
from ekstrain.names import SYSTEM_NODE_SELECTOR
from ekstrain.partitions import layout_nodes
from stacks.models import StackConfig

NAMESPACE = "volcano-system"
RELEASE = "volcano"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


# Scheduler actions without ``enqueue``. The chart default (``enqueue, allocate, backfill`` with the
# ``overcommit`` plugin) moves a PodGroup Pending -> Inqueue only when the cluster's idle resources x 1.2
# cover minResources (volcano pkg/scheduler/plugins/overcommit/overcommit.go, JobEnqueueableFn), and
# the controller creates pods only for Inqueue PodGroups (volcano docs, actions.md "Enqueue"). With
# every Karpenter pool at zero nodes there is no idle GPU, no pod is ever created and Karpenter never
# scales. Without ``enqueue``, allocate moves Pending jobs to Inqueue itself ("no enqueue action is
# configured", pkg/scheduler/actions/allocate/allocate.go); pods are created, stay Pending until
# Karpenter's nodes join, and gang still binds all-or-nothing. Queue capability bounds each partition.
SCHEDULER_ACTIONS = ("allocate", "backfill")
SCHEDULER_TIERS: tuple[tuple[dict[str, Any], ...], ...] = (
    ({"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}),
    (
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        {"name": "proportion"},
        {"name": "nodeorder"},
        {"name": "binpack"},
    ),
)


def scheduler_config() -> dict[str, Any]:
    return {"actions": ", ".join(SCHEDULER_ACTIONS), "tiers": [{"plugins": list(t)} for t in SCHEDULER_TIERS]}


def volcano_values() -> dict[str, Any]:
    """Admission, controllers and scheduler on system nodes (``custom.default_ns`` is the chart's
    node selector for all of its components); the scheduler config that starts jobs from zero nodes."""
    return {
        "custom": {
            "default_ns": dict(SYSTEM_NODE_SELECTOR),
            "scheduler_config_override": yaml.safe_dump(scheduler_config(), sort_keys=False),
        }
    }


def queue_capability(p: PartitionFacts, n: int) -> dict[str, str]:
    """What ``n`` whole nodes of the partition hold."""
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
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": p.name, "labels": {names.PARTITION_LABEL: p.name}},
        "spec": {
            "weight": cfg.schedulers.volcano.queue_weights.get(p.name, 1),
            "reclaimable": False,
            "capability": queue_capability(p, p.config.max_nodes - standing_nodes(cfg, p.name)),
        },
    }


def queues(cfg: StackConfig) -> list[dict[str, Any]]:
    return [queue(cfg, p) for p in partition_facts(cfg)]
