"""EC2 vCPU quotas a stack needs at its node pools' maxima: the account prerequisite of the first deploy
(docs/delivery.md "First deploy", step ``ec2-quotas``).

EC2 counts running instances against one vCPU quota per instance-family group, separately for On-Demand and Spot
(Amazon EC2 User Guide, "Amazon EC2 service quotas", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-resource-limits.html,
and "Spot Instance quotas", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/using-spot-limits.html). New accounts
start at 0 vCPUs for the accelerated groups, so a NodePool's NodeClaims fail with VcpuLimitExceeded / "Max spot
instance count exceeded" until the quota is raised. On-Demand Capacity Reservations count against the On-Demand
quota; Capacity Blocks for ML are bought capacity and are not listed here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

ON_DEMAND = {
    "standard": ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", "L-1216C47A"),
    "p": ("Running On-Demand P instances", "L-417A185B"),
    "g": ("Running On-Demand G and VT instances", "L-DB2E81BA"),
    "trn": ("Running On-Demand Trn instances", "L-2C3B7624"),
    "inf": ("Running On-Demand Inf instances", "L-1945791B"),
    "dl": ("Running On-Demand DL instances", "L-6E869C2A"),
}
"""Family group -> (On-Demand quota name, Service Quotas code)."""

SPOT = {
    "standard": "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
    "p": "All P Spot Instance Requests",
    "g": "All G and VT Spot Instance Requests",
    "trn": "All Trn Spot Instance Requests",
    "inf": "All Inf Spot Instance Requests",
    "dl": "All DL Spot Instance Requests",
}


def family(instance_type: str) -> str:
    """``p4d.24xlarge`` -> ``p``, ``trn1n.32xlarge`` -> ``trn``, ``g6e.48xlarge`` -> ``g``, ``m7i.2xlarge`` ->
    ``standard``."""
    prefix = re.match(r"[a-z]+", instance_type)
    letters = prefix.group(0) if prefix else ""
    for group in ("trn", "inf", "dl", "vt"):
        if letters.startswith(group):
            return "g" if group == "vt" else group
    return letters if letters in ("p", "g") else "standard"


@dataclass(frozen=True)
class Pool:
    """A node pool at its maximum: ``vcpus`` when known as a total (a CPU limit), else types x max nodes."""

    name: str
    instance_types: Sequence[str]
    max_nodes: int
    capacity: str = "on-demand"
    """on-demand, spot, reserved (an On-Demand Capacity Reservation) or capacity-block."""
    vcpus: int | None = None


@dataclass(frozen=True)
class Need:
    quota: str
    code: str
    vcpus: int
    pools: tuple[str, ...]


def needs(pools: Sequence[Pool], vcpus_of: Callable[[str], int]) -> list[Need]:
    """vCPUs each quota must allow with every pool at its maximum (the largest type of a pool, times max nodes)."""
    totals: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for pool in pools:
        if pool.capacity == "capacity-block":
            continue
        by_group: dict[str, int] = {}
        for t in pool.instance_types:
            by_group[family(t)] = max(by_group.get(family(t), 0), vcpus_of(t))
        for group, per_node in sorted(by_group.items()):
            key = (SPOT[group], "-") if pool.capacity == "spot" else ON_DEMAND[group]
            amount = pool.vcpus if pool.vcpus is not None else per_node * pool.max_nodes
            total, names = totals.get(key, (0, []))
            totals[key] = (total + amount, [*names, pool.name])
    return [Need(q, code, n, tuple(names)) for (q, code), (n, names) in sorted(totals.items())]


def table(rows: Sequence[Need]) -> str:
    lines = ["| quota | code | vCPUs at maxNodes | node pools |", "|---|---|---|---|"]
    lines += [f"| {r.quota} | {r.code} | {r.vcpus} | {', '.join(r.pools)} |" for r in rows]
    return "\n".join(lines)
