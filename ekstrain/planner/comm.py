"""Alpha-beta cost of the collectives a training step runs, on a node hierarchy (NVLink + EFA/IB).

Every collective costs a latency term (a base launch latency plus one per ring step, NCCL's own
tuning model) plus its bytes over the bus bandwidth of the slowest link it crosses:

* ring all-reduce of S bytes on n ranks: ``base + 2(n-1) step + 2(n-1)/n S / B`` (Patarasuk and
  Yuan 2009; Thakur et al. 2005); reduce-scatter and all-gather are half of it;
* tree all-reduce (NCCL double binary tree, Sanders et al. 2009): ``base + 2 log2(n) step_tree +
  2 S / B``; an all-reduce costs the cheaper of ring and tree, as NCCL's tuner picks;
* an all-reduce that spans nodes runs hierarchically (NCCL's tree and ring both keep the node's
  ranks together): reduce-scatter inside the node over NVLink, the collective on S/k across nodes
  over the network (k = group members per node), all-gather back; reduce-scatter and all-gather
  are one flat ring over all ranks, as NCCL runs them (``reduce_scatter``);
* all-to-all: every rank sends (n-1)/n of S, the part leaving the node at network speed;
* point-to-point (pipeline sends): ``base + step + S / B``.

Latencies (microseconds) are NCCL's ``src/graph/tuning.cc`` constants for the Simple protocol
(the one large messages use): ``baseLat`` ring 8.4, ``hwLat`` ring NVLink 3.4 / network 9.6 and
tree 28 / 50 (NVIDIA/nccl, ``tuning.cc``, "Latencies in us"). They agree with measured small
all-reduces: ~6 us on 2 NVLink H100s (NVIDIA/nccl#1259), 3.5 us on 4 H800s without CUDA graphs
and 3.7 us for send/recv (NVIDIA/nccl#1984).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, log2

from ekstrain.planner.fleet import Fleet

US = 1e-6
BASE_LATENCY_S = 8.4 * US
RING_STEP_NVLINK_S = 3.4 * US
RING_STEP_NETWORK_S = 9.6 * US
TREE_STEP_NVLINK_S = 28 * US
TREE_STEP_NETWORK_S = 50 * US


@dataclass(frozen=True)
class Links:
    """Achieved per-rank bandwidths (bytes/s, one direction) of a fleet under given efficiencies."""

    ranks_per_node: int
    intra: float
    network: float
    fleet: Fleet | None = None
    """Set when the fleet prices its network tiers (``Fleet.network_topology``): see :meth:`net`."""

    @classmethod
    def of(cls, fleet: Fleet, intra_efficiency: float, network_efficiency: float) -> Links:
        return cls(
            fleet.ranks_per_node,
            fleet.rank_intra_node_bytes_per_s * intra_efficiency,
            fleet.rank_network_bytes_per_s * network_efficiency,
            fleet if fleet.network_topology else None,
        )

    def net(self, n: int, stride: int) -> float:
        """The network bandwidth of a group of ``n`` ranks ``stride`` apart: the tier its span of ``n * stride``
        consecutive ranks reaches keeps its share (ekstrain/layout/topology.py), 1 without network tiers."""
        return self.network if self.fleet is None else self.network * self.fleet.tier_share(n * stride)

    def layout(self, n: int, stride: int) -> tuple[int, int]:
        """(members per node, nodes) of a group of ``n`` ranks ``stride`` ranks apart (Megatron
        rank order puts TP innermost, so a group's stride is the product of the inner degrees)."""
        if n <= 1:
            return 1, 1
        per_node = max(1, min(n, self.ranks_per_node // stride)) if stride < self.ranks_per_node else 1
        return per_node, ceil(n / per_node)


def _ring(bytes_: float, n: int, bandwidth: float, step: float, passes: int) -> float:
    """``passes`` = 2 for all-reduce, 1 for reduce-scatter / all-gather."""
    return passes * (n - 1) * step + passes * (n - 1) / n * bytes_ / bandwidth


def all_reduce(links: Links, bytes_: float, n: int, stride: int) -> float:
    if n <= 1 or bytes_ <= 0:
        return 0.0
    k, nodes = links.layout(n, stride)
    if nodes == 1:
        ring = _ring(bytes_, n, links.intra, RING_STEP_NVLINK_S, 2)
        tree = 2 * log2(n) * TREE_STEP_NVLINK_S + 2 * bytes_ / links.intra
        return BASE_LATENCY_S + min(ring, tree)
    # Hierarchical: reduce-scatter and all-gather within the node, all-reduce of 1/k across nodes.
    intra = _ring(bytes_, k, links.intra, RING_STEP_NVLINK_S, 2) if k > 1 else 0.0
    network = links.net(n, stride)
    ring = _ring(bytes_ / k, nodes, network, RING_STEP_NETWORK_S, 2)
    tree = 2 * log2(nodes) * TREE_STEP_NETWORK_S + 2 * bytes_ / k / network
    return BASE_LATENCY_S + intra + min(ring, tree)


def ring_latency(links: Links, n: int, stride: int) -> float:
    """The latency alone of one flat-ring all-gather or reduce-scatter over ``n`` ranks (what a tiny
    buffer costs): the base launch latency plus n - 1 steps, network steps when the group spans nodes."""
    if n <= 1:
        return 0.0
    _, nodes = links.layout(n, stride)
    return BASE_LATENCY_S + (n - 1) * (RING_STEP_NVLINK_S if nodes == 1 else RING_STEP_NETWORK_S)


def reduce_scatter(links: Links, bytes_: float, n: int, stride: int) -> float:
    """Reduce-scatter of a ``bytes_`` buffer (all-gather of a ``bytes_`` result costs the same).

    NCCL runs both as one flat ring over all n ranks (its tuner offers Ring, plus PAT only at one
    rank per node and NVLS/CollNet only on switch-offload hardware; NVIDIA/nccl src/graph/tuning.cc,
    NCCL_ALGO docs): n - 1 steps, each as slow as its network hop when the group spans nodes, and
    (n-1)/n of the buffer through the node's share of the NICs: k members per node drive k rings'
    worth of NIC bandwidth (nccl-tests' multi-node busbw ~ the node's NIC bandwidth)."""
    if n <= 1 or bytes_ <= 0:
        return 0.0
    k, nodes = links.layout(n, stride)
    if nodes == 1:
        return BASE_LATENCY_S + _ring(bytes_, n, links.intra, RING_STEP_NVLINK_S, 1)
    bandwidth = min(links.intra, k * links.net(n, stride))
    return BASE_LATENCY_S + _ring(bytes_, n, bandwidth, RING_STEP_NETWORK_S, 1)


all_gather = reduce_scatter


def all_to_all(links: Links, bytes_: float, n: int, stride: int) -> float:
    """Each rank sends (n-1)/n of its ``bytes_`` buffer; the share bound for other nodes crosses
    the network while the rest moves over NVLink at the same time."""
    if n <= 1 or bytes_ <= 0:
        return 0.0
    k, nodes = links.layout(n, stride)
    intra = (k - 1) / n * bytes_ / links.intra
    if nodes == 1:
        return BASE_LATENCY_S + RING_STEP_NVLINK_S + intra
    inter = (n - k) / n * bytes_ / links.net(n, stride)
    return BASE_LATENCY_S + RING_STEP_NETWORK_S + max(intra, inter)


def send_recv(links: Links, bytes_: float, same_node: bool) -> float:
    if bytes_ <= 0:
        return 0.0
    if same_node:
        return BASE_LATENCY_S + RING_STEP_NVLINK_S + bytes_ / links.intra
    return BASE_LATENCY_S + RING_STEP_NETWORK_S + bytes_ / links.network


def ring_step(links: Links, bytes_: float, n: int, stride: int) -> float:
    """One step of a ring exchange among ``n`` ranks (context parallelism's K/V ring): every rank
    passes ``bytes_`` to its neighbour; the step is as slow as the slowest hop."""
    if n <= 1:
        return 0.0
    _, nodes = links.layout(n, stride)
    if nodes == 1:
        return RING_STEP_NVLINK_S + bytes_ / links.intra
    return RING_STEP_NETWORK_S + bytes_ / links.net(n, stride)
