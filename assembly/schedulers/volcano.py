"""Volcano values and one ``scheduling.volcano.sh/v1beta1`` Queue per partition.

A Queue's ``capability`` is the partition's ceiling: maxNodes whole nodes of accelerators, EFA
interfaces, vCPUs and memory (largest instance type of the partition, so a full node of any of its
types fits). The same amount is the queue's ``guarantee`` and ``deserved``, and the scheduler runs the
``capacity`` plugin, not ``proportion``:

- ``proportion`` (volcano v1.15.1 pkg/scheduler/plugins/proportion/proportion.go) splits the whole
  cluster's resources between queues by ``weight``. Partitions have disjoint accelerators but share the
  names cpu, memory and ``nvidia.com/gpu``, so a gpu-h100 gang's deserved share depended on what gpu-a100
  and trainium jobs asked for: it could stay partly allocated (gang discards it) while its p5 nodes idled.
- ``capacity`` (pkg/scheduler/plugins/capacity/capacity.go) bounds each queue by its own numbers:
  ``realCapability = min(capability, ExceededPart(total, totalGuarantee) + guarantee)``. With guarantee =
  capability that is the capability whatever nodes exist yet, so its enqueue vote (JobEnqueueableFn:
  allocated + inqueue + the job's minResources <= realCapability) admits a gang exactly when its
  partition has room for it, from zero nodes. Queues never weigh against each other (``weight`` is
  unused by ``capacity``).

Admission (``enqueue``) therefore stays on: the controller creates a gang's pods only once its PodGroup is
Inqueue, so Karpenter never launches nodes for a gang the queue cannot hold (the launched nodes would
idle at the NodePool limit). ``overcommit`` is not enabled: its vote compares against idle resources of
existing nodes, which are zero before Karpenter launches any.

Every pod that holds a partition's nodes is counted in its queue: job templates, slurmd NodeSet pods
(assembly/schedulers/slurm.py) and notebook profiles (assembly/jupyterhub.py) name ``schedulerName: volcano``
and the queue, and the admission policies of assembly/schedulers/ledger.py refuse any other pod that requests
accelerators or EFA in the namespaces people train in. So the capability is the whole partition, standing
slurmd pods included, and a gang the queue admits can bind.

``reclaimable: false``: the reclaim action would evict running pods of a queue over its deserved share
for another queue. A distributed training job loses every rank (and all progress since its last
checkpoint) when one pod is evicted, so training queues must not be reclaimed.
"""

from __future__ import annotations

from typing import Any

import yaml

from ekstrain import names
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.names import SYSTEM_NODE_SELECTOR
from ekstrain.partitions import layout_nodes
from ekstrain.stacks.models import StackConfig

NAMESPACE = "volcano-system"
RELEASE = "volcano"
QUEUE_API = "scheduling.volcano.sh/v1beta1"


# volcano v1.15.1 pkg/scheduler/actions: enqueue (PodGroup Pending -> Inqueue by the plugins' votes; the
# controller creates pods only for Inqueue PodGroups), allocate, backfill. No reclaim/preempt action.
SCHEDULER_ACTIONS = ("enqueue", "allocate", "backfill")
SCHEDULER_TIERS: tuple[tuple[dict[str, Any], ...], ...] = (
    ({"name": "priority"}, {"name": "gang", "enablePreemptable": False}, {"name": "conformance"}),
    (
        {"name": "drf", "enablePreemptable": False},
        {"name": "predicates"},
        {"name": "capacity"},
        {"name": "nodeorder"},
        {"name": "binpack"},
    ),
)


CONTROLLER_RESOURCES: dict[str, dict[str, dict[str, str]]] = {
    "admission": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
    "scheduler": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
    "controller": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
}


def scheduler_config() -> dict[str, Any]:
    return {"actions": ", ".join(SCHEDULER_ACTIONS), "tiers": [{"plugins": list(t)} for t in SCHEDULER_TIERS]}


def volcano_values() -> dict[str, Any]:
    """Admission, controllers and scheduler on system nodes (``custom.default_ns`` is the chart's
    node selector for all of its components); the scheduler config that admits gangs by queue capacity."""
    return {
        "custom": {
            "default_ns": dict(SYSTEM_NODE_SELECTOR),
            "scheduler_config_override": yaml.safe_dump(scheduler_config(), sort_keys=False),
            # The chart sets no resources (values.yaml `*_resources: ~`): BestEffort pods are the kubelet's
            # first eviction victims under node pressure on the shared system nodes. Requests = limits on
            # memory make them Burstable with a floor; cpu is not limited (no throttling of the scheduler).
            **{f"{component}_resources": dict(resources) for component, resources in CONTROLLER_RESOURCES.items()},
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
    share = queue_capability(p, p.config.max_nodes)  # slurmd and notebook pods are in the queue too
    return {
        "apiVersion": QUEUE_API,
        "kind": "Queue",
        "metadata": {"name": p.name, "labels": {names.PARTITION_LABEL: p.name}},
        "spec": {
            "weight": cfg.schedulers.volcano.queue_weights.get(p.name, 1),
            "reclaimable": False,
            "capability": share,
            "deserved": dict(share),
            "guarantee": {"resource": dict(share)},
        },
    }


def queues(cfg: StackConfig) -> list[dict[str, Any]]:
    return [queue(cfg, p) for p in partition_facts(cfg)]
