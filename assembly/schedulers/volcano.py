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

from typing import TYPE_CHECKING, Any

import yaml

from ekstrain.assembly.schedulers import teams
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.facts import names
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR
from ekstrain.layout import topology
from ekstrain.layout.partitions import layout_nodes

if TYPE_CHECKING:
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
        # Without it a gang's networkTopology is inert: allocate.go tries a hard-mode job on the HyperNode gradients
        # this plugin gives, and with none registered only the cluster's top HyperNode (framework/session_plugins.go
        # HyperNodeGradientForJobFn), so any node would do. It also packs gangs that carry no constraint (the
        # PodGroups the MPI and training operators build) into the fullest HyperNodes, tier 1 weighing most
        # (``hypernode.binpack.normal-pod``; volcano v1.15.1 plugins/network-topology-aware,
        # docs/user-guide/how_to_use_network_topology_aware_scheduling.md).
        {"name": "network-topology-aware", "arguments": topology.scheduler_plugin_arguments()},
    ),
)


CONTROLLER_RESOURCES: dict[str, dict[str, dict[str, str]]] = {
    "admission": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "256Mi"}},
    "scheduler": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
    "controller": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
}


def scheduler_config(hierarchy: bool = False) -> dict[str, Any]:
    """``hierarchy``: the stack names teams, so the capacity plugin runs with ``enableHierarchy`` (volcano v1.15.1
    pkg/scheduler/conf ``enableHierarchy``; docs/user-guide/how_to_use_capacity_plugin.md): each leaf queue is admitted
    against itself and every ancestor (capacity.go ``checkJobEnqueueableHierarchically``)."""
    tiers = [{"plugins": [dict(p) for p in t]} for t in SCHEDULER_TIERS]
    if hierarchy:
        for tier in tiers:
            for plugin in tier["plugins"]:
                if plugin["name"] == "capacity":
                    plugin["enableHierarchy"] = True
    return {"actions": ", ".join(SCHEDULER_ACTIONS), "tiers": tiers}


def volcano_values(cfg: StackConfig | None = None) -> dict[str, Any]:
    """Admission, controllers and scheduler on system nodes (``custom.default_ns`` is the chart's
    node selector for all of its components); the scheduler config that admits gangs by queue capacity."""
    return {
        # The chart pulls its pinned tags with imagePullPolicy Always (values.yaml basic.image_pull_policy): every
        # pod start would depend on Docker Hub's rate limit; a pinned tag never changes, so IfNotPresent.
        "basic": {"image_pull_policy": "IfNotPresent"},
        "custom": {
            "default_ns": dict(SYSTEM_NODE_SELECTOR),
            "scheduler_config_override": yaml.safe_dump(
                scheduler_config(cfg is not None and teams.hierarchy(cfg)), sort_keys=False
            ),
            # HyperNodes from the EKS network-node-layer labels (ekstrain/layout/topology.py; the chart's own
            # controller_config_override example, label source): gangs' networkTopology is resolved against them.
            # A mapping, not a string: templates/controllers.yaml writes it with toYaml into volcano-controller.conf,
            # and a string would land there as one YAML block scalar.
            "controller_config_override": topology.discovery_config(),
            # The chart sets no resources (values.yaml `*_resources: ~`): BestEffort pods are the kubelet's
            # first eviction victims under node pressure on the shared system nodes. Requests = limits on
            # memory make them Burstable with a floor; cpu is not limited (no throttling of the scheduler).
            **{f"{component}_resources": dict(resources) for component, resources in CONTROLLER_RESOURCES.items()},
        },
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


def team_queues(cfg: StackConfig, p: PartitionFacts) -> list[dict[str, Any]]:
    """The leaves under partition ``p``'s queue when teams name it (assembly/schedulers/teams.py): one per team and
    ``<p>-shared``. Volcano v1.15.1 capacity plugin with enableHierarchy (capacity.go ``checkHierarchicalQueue``):

    - ``guarantee`` (= ``deserved``) = the team's guaranteed nodes: no sibling's realCapability includes it
      (``ExceededPart(parent, sum of the children's guarantees) + own guarantee``), so the team's gangs up to it are
      admitted as soon as they arrive, however much others borrowed; ``-shared`` guarantees nothing;
    - ``capability`` = the whole partition (the parent's): a team borrows the nodes nobody is guaranteed when idle;
    - ``priority``: the capacity plugin's QueueOrderFn admits a higher-priority leaf's pending jobs first when room
      frees up in the partition;
    - ``reclaimable: false``, no reclaim action: with ``enqueue`` a gang that does not fit stays Pending, and Volcano's
      reclaim and gangreclaim actions only act for admitted jobs (actions/reclaim/reclaim.go and
      actions/gangreclaim/gangreclaim.go skip ``job.IsPending()``), so reclaim could only evict running training
      ranks for jobs that were admitted anyway. Guarantees are what keeps a team's nodes for it.
    """
    share = queue_capability(p, p.config.max_nodes)
    out = []
    by_team = {t.name: t for t in cfg.schedulers.volcano.teams}
    for name in [*teams.teams_of(cfg, p.name), teams.SHARED]:
        team = by_team.get(name)
        nodes = team.guarantees.get(p.name, 0) if team else 0
        spec: dict[str, Any] = {
            "parent": p.name,
            "reclaimable": False,
            "priority": team.priority if team else 0,
            "capability": dict(share),
        }
        if nodes:
            spec["deserved"] = queue_capability(p, nodes)
            spec["guarantee"] = {"resource": queue_capability(p, nodes)}
        out.append(
            {
                "apiVersion": QUEUE_API,
                "kind": "Queue",
                "metadata": {
                    "name": teams.team_queue(p.name, name),
                    "labels": {names.PARTITION_LABEL: p.name, TEAM_LABEL: name},
                },
                "spec": spec,
            }
        )
    return out


TEAM_LABEL = "ekstrain.io/team"
"""On each team queue: the team (``shared`` for the partition's shared leaf)."""


def queues(cfg: StackConfig) -> list[dict[str, Any]]:
    """One Queue per partition; with teams, the leaves under it (:func:`team_queues`)."""
    out = []
    for p in partition_facts(cfg):
        out.append(queue(cfg, p))
        if teams.has_teams(cfg, p.name):
            out += team_queues(cfg, p)
    return out
