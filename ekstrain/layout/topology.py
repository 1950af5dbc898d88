"""One network topology for every scheduler: the EKS/EC2 network-node layers, the Volcano HyperNode tiers they
become, and the constraint a gang's plan asks for.

Sources:

- EC2 instance topology (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-ec2-instance-topology-works.html and
  ec2-instance-topology-prerequisites.html): the network is a hierarchy of layers described top-down, the bottom node
  connected to the instance; the supported types return 3 network nodes, p6-b200/p6-b300 return 4
  (:data:`LAYERS`). EKS puts them on nodes as ``topology.k8s.aws/network-node-layer-1..N`` (layer 1 the top).
- Volcano v1.15.1 HyperNode label discovery (chart values.yaml ``custom.controller_config_override``, the
  ``networkTopologyDiscovery`` ``source: label`` example; volcano-sh/volcano
  docs/user-guide/how_to_use_hypernode_auto_discovery.md): ``nodeLabel`` entries listed from the highest domain to
  ``kubernetes.io/hostname``; the entries above the hostname become HyperNode tiers from the bottom, tier 1 first.
  So tier 1 = layer 3 (the node the instance plugs into), tier 2 = layer 2, tier 3 = layer 1.
- The Volcano Job's ``spec.networkTopology`` (batch.volcano.sh/v1alpha1, pinned job.yaml CRD): ``mode`` hard|soft,
  ``highestTierAllowed``.

Assumption (stated, not published by AWS): the relative bandwidth a collective sees when its ring crosses a tier
(:data:`TIER_BANDWIDTH_FRACTION`); the planner may read it to price a data-parallel ring that spans a wider tier.
"""

from __future__ import annotations

from typing import Any

LABEL_PREFIX = "topology.k8s.aws/network-node-layer-"
HOSTNAME_LABEL = "kubernetes.io/hostname"

_THREE = (
    "p3dn.24xlarge",
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6e-gb200.36xlarge",
    "trn1.2xlarge",
    "trn1.32xlarge",
    "trn1n.32xlarge",
    "trn2.48xlarge",
    "trn2u.48xlarge",
)
LAYERS: dict[str, int] = {**dict.fromkeys(_THREE, 3), "p6-b200.48xlarge": 4, "p6-b300.48xlarge": 4}
"""Instance type -> network-node layers EC2 reports (ec2-instance-topology-prerequisites, accelerated types)."""

TIER_BANDWIDTH_FRACTION = {1: 1.0, 2: 0.5, 3: 0.25, 4: 0.125}
"""ASSUMPTION: the share of a node's EFA bandwidth a ring keeps when it spans HyperNode tier N (1: all nodes under
one layer-3 network node). AWS publishes no oversubscription figures; halving per tier is this platform's stated
planning assumption, to be replaced by measured NCCL all-reduce numbers (`ekstrain job render --scheduler
nccl-test`)."""


def labels(layers: int = 3) -> list[str]:
    return [f"{LABEL_PREFIX}{i}" for i in range(1, layers + 1)]


def discovery_config() -> dict[str, Any]:
    """Volcano's controller config: HyperNodes discovered from the EKS layer labels, three tiers. One topology type
    only: in the list form a type's membership is its lowest label, and a 4-layer node (p6-b200/b300) also carries
    layer 3, so a second, 4-layer type would claim the same nodes twice; those nodes are grouped by layers 1-3."""
    types = {"eks": [{"nodeLabel": k} for k in labels(3)] + [{"nodeLabel": HOSTNAME_LABEL}]}
    return {
        "networkTopologyDiscovery": [
            {"source": "label", "enabled": True, "interval": "10m", "config": {"networkTopologyTypes": types}}
        ]
    }


def scheduler_plugin_arguments() -> dict[str, Any]:
    """Volcano's ``network-topology-aware`` plugin: HyperNode bin packing by accelerators (the resources a gang holds
    whole nodes of), also for pods without a networkTopology, each tier up weighing 0.8 of the one below (the
    plugin's defaults and keys; volcano v1.15.1 plugins/network-topology-aware/network_topology_aware.go)."""
    return {
        "weight": 10,
        "hypernode.binpack.resources": "nvidia.com/gpu, aws.amazon.com/neuron",
        "hypernode.binpack.resources.nvidia.com/gpu": 10,
        "hypernode.binpack.resources.aws.amazon.com/neuron": 10,
        "hypernode.binpack.normal-pod.enable": True,
        "hypernode.binpack.normal-pod.fading": 0.8,
    }


def network_topology(instance_type: str, nodes: int, degrees: dict[str, Any]) -> dict[str, Any] | None:
    """The Volcano ``networkTopology`` for a gang, or None (one node, or a type EKS gives no layer labels: a hard
    constraint there would leave the gang pending, no HyperNode holds such nodes).

    Hard within tier 2 (one layer-2 network node) when the plan sends pipeline or context-parallel traffic between
    nodes (pp > 1 or cp > 1: point-to-point on every micro-batch); soft (Volcano packs it as low as it can, never
    waits for it) for data-parallel-only plans, whose gradient all-reduce overlaps compute."""
    if nodes < 2 or instance_type not in LAYERS:
        return None
    if int(degrees.get("pp", 1) or 1) > 1 or int(degrees.get("cp", 1) or 1) > 1:
        return {"mode": "hard", "highestTierAllowed": 2}
    return {"mode": "soft"}


def tiers_spanned(positions: list[tuple[str, ...]]) -> int:
    """The HyperNode tier that holds every node of a gang (one position per node: its layer values top-down, layer 1
    first): 0 for one node, 1 when all share the bottom network node, ... the number of layers + 1 when even the top
    differs."""
    if len(positions) <= 1:
        return 0
    depth = min(len(p) for p in positions)
    for tier in range(1, depth + 1):
        # tier t = all share layers 1..depth-t+1 (the network node t levels above the instance)
        shared = depth - tier + 1
        if len({p[:shared] for p in positions}) == 1:
            return tier
    return depth + 1


LAYOUT_NODES_PER_LAYER3 = 16
LAYOUT_LAYER3_PER_LAYER2 = 4
"""ASSUMPTION for the simulator's layout: 16 instances under one layer-3 network node, 4 layer-3 nodes under a
layer-2 node (AWS publishes no counts; ``aws ec2 describe-capacity-reservation-topology`` shows yours)."""

LAYOUTS: dict[str, tuple[int, int]] = dict.fromkeys(LAYERS, (LAYOUT_NODES_PER_LAYER3, LAYOUT_LAYER3_PER_LAYER2))
"""Instance type -> (instances per layer-3 network node, layer-3 nodes per layer-2 node): the same stated assumption
for every type EC2 reports a topology for, until measured per type; a mix file overrides it per type
(``networkLayout``, docs/simulate.md)."""


def layout(
    index: int,
    layers: int = 3,
    per_layer3: int = LAYOUT_NODES_PER_LAYER3,
    layer3_per_layer2: int = LAYOUT_LAYER3_PER_LAYER2,
) -> tuple[str, ...]:
    """The position of the ``index``-th instance launched into one placement group / block, filled bottom-up."""
    l3 = index // per_layer3
    l2 = l3 // layer3_per_layer2
    top = ("nn-1",)
    mid = (f"nn-2-{l2}",)
    low = (f"nn-3-{l3}",)
    extra = (f"nn-4-{index // 4}",) if layers >= 4 else ()
    return top + mid + low + extra


def tier_label(tier: int) -> str:
    """The EKS label whose value names a gang's HyperNode of ``tier`` (tier 1 = layer 3, the bottom network node;
    :func:`discovery_config`)."""
    return f"{LABEL_PREFIX}{4 - tier}"


def preferred_pod_affinity(selector: dict[str, str], constraint: dict[str, Any] | None) -> dict[str, Any] | None:
    """The pods' ``affinity`` for a gang whose controller builds its own PodGroup and cannot carry ``networkTopology``
    (MPIJob, PyTorchJob): prefer the nodes under the network node that already holds the gang's other pods, tier 1
    first (weight 100), then tier 2 (50), up to the tier the plan asks. Volcano v1.15.1 scores it (nodeorder plugin,
    k8s InterPodAffinity, and predicates.go adds each pod the session allocates to the node snapshot, so the next
    pod of the gang sees it). Preferred, never required: Karpenter v1.14.1 cannot give a new node a
    network-node-layer domain (scheduling/topology.go ``AddRequirements`` fails a required term whose key no
    NodePool offers, so it would never launch the gang's nodes) and relaxes preferred terms instead."""
    if constraint is None:
        return None
    highest = int(constraint.get("highestTierAllowed", 2) or 2) if constraint.get("mode") == "hard" else 2
    terms = [
        {
            "weight": 100 // 2 ** (tier - 1),
            "podAffinityTerm": {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": tier_label(tier)},
        }
        for tier in range(1, min(highest, 3) + 1)
    ]
    return {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def packed_tier(nodes: int, instance_type: str) -> int:
    """The HyperNode tier ``nodes`` instances of ``instance_type`` span when packed into as few network nodes as the
    stated layout allows (:data:`LAYOUTS`): 0 for one node, 1 within one layer-3 node, ... 3 across layer-2 nodes."""
    if nodes <= 1:
        return 0
    per_l3, l3_per_l2 = LAYOUTS.get(instance_type, (LAYOUT_NODES_PER_LAYER3, LAYOUT_LAYER3_PER_LAYER2))
    if nodes <= per_l3:
        return 1
    if nodes <= per_l3 * l3_per_l2:
        return 2
    return 3


def ring_bandwidth_fraction(instance_type: str, nodes: int) -> tuple[int, float]:
    """For the planner: (tier, share of a node's EFA bandwidth) a data-parallel ring over ``nodes`` nodes of
    ``instance_type`` keeps, when they are packed (:func:`packed_tier`) and each wider tier halves it
    (:data:`TIER_BANDWIDTH_FRACTION`, a stated assumption). A type without EC2 topology is priced at tier 1 (no
    layer is known to narrow it)."""
    if instance_type not in LAYERS:
        return (1 if nodes > 1 else 0), 1.0
    tier = packed_tier(nodes, instance_type)
    return tier, TIER_BANDWIDTH_FRACTION.get(tier, 1.0) if tier else 1.0


SLURM_TOPOLOGY_NAME = "default"
"""The topology name of ``topology.conf`` (Slurm doc/html/dynamic_nodes.shtml "Dynamic Nodes + Topology": with
topology.conf the name is ``default``)."""
SLURM_ROOT_SWITCH = "eks"


def slurm_switch(nodeset: str) -> str:
    return f"{SLURM_ROOT_SWITCH}-{nodeset}"


def slurm_topology_conf(nodesets: dict[str, int]) -> str:
    """``topology.conf`` for ``TopologyPlugin=topology/tree`` (Slurm topology.conf(5), 24.05+): one leaf switch per
    NodeSet holding its nodes ``<nodeset>-0..<n-1>`` (Slinky names a NodeSet's Slurm nodes by the pod ordinal), under
    one top switch, so a job is placed within one NodeSet's switch (its partition's cluster placement group) first.
    Slinky's slurmd pods register as dynamic nodes, which join a switch through their ``Topology=default:<switch>``
    registration option (dynamic_nodes.shtml), set per NodeSet (assembly/schedulers/slurm.py). The network-node
    layers inside a NodeSet are known only once its instances run: slurm-operator v1.2.1 copies a Kubernetes node's
    ``topology.slinky.slurm.net/spec`` annotation onto its Slurm node (internal/controller/nodeset/nodeset_sync.go
    ``syncSlurmTopology``)."""
    lines = [
        "# Generated by ekstrain (ekstrain/layout/topology.py slurm_topology_conf): one switch per Slinky NodeSet.",
        *(f"SwitchName={slurm_switch(name)} Nodes={name}-[0-{n - 1}]" for name, n in sorted(nodesets.items()) if n),
        f"SwitchName={SLURM_ROOT_SWITCH} Switches="
        + ",".join(slurm_switch(n) for n, c in sorted(nodesets.items()) if c),
    ]
    return "\n".join(lines) + "\n"
