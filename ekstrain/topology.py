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


def layout(index: int, layers: int = 3) -> tuple[str, ...]:
    """The position of the ``index``-th instance launched into one placement group / block, filled bottom-up."""
    l3 = index // LAYOUT_NODES_PER_LAYER3
    l2 = l3 // LAYOUT_LAYER3_PER_LAYER2
    top = ("nn-1",)
    mid = (f"nn-2-{l2}",)
    low = (f"nn-3-{l3}",)
    extra = (f"nn-4-{index // 4}",) if layers >= 4 else ()
    return top + mid + low + extra
