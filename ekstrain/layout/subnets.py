"""Carve a VPC CIDR into public, private and EFA subnets (pure, property-tested).

Layout for a /P VPC, split into four /P+2 blocks:
- block 0: the EFA subnet (/P+2) in the training AZ: p5 nodes use one IP each with efa-only
  interfaces, but pods take VPC IPs too, so it gets the biggest share;
- blocks 1-2: one private /P+3 subnet per AZ (up to four AZs) for the system nodes, control-plane
  ENIs and non-EFA workloads;
- block 3: one public /P+6 subnet per AZ for NAT gateways and internet-facing load balancers.

Each AZ's private and public subnet sit in the slot of its zone letter (``a`` -> 0, ``d`` -> 3), not
of its position in the list: reordering or removing an AZ leaves every other subnet's CIDR (a
replace-on-change input) as it is. Zone letters past ``d`` (only us-east-1e/f) take the lowest slot
no listed zone's letter claims, in name order.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from ekstrain.facts.catalog import InstanceType

AWS_RESERVED_PER_SUBNET = 5
"""EC2 keeps the first four and the last address of every subnet."""
VPC_CNI_WARM_ENI_TARGET = 1
"""The VPC CNI default; the program sets no WARM_IP_TARGET, MINIMUM_IP_TARGET or prefix delegation."""
EFA_SUBNET_NODE_SHARE = 0.9
"""Nodes may use 90% of the EFA subnet; the rest is for the FSx file servers' ENIs and replacements."""


@dataclass(frozen=True)
class SubnetPlan:
    efa: str
    private: dict[str, str]
    public: dict[str, str]


def plan_subnets(vpc_cidr: str, zones: list[str]) -> SubnetPlan:
    vpc = ipaddress.IPv4Network(vpc_cidr)
    if len(zones) > 4:
        raise ValueError("at most four availability zones fit the subnet plan")
    blocks = list(vpc.subnets(prefixlen_diff=2))
    private = list(blocks[1].subnets(prefixlen_diff=1)) + list(blocks[2].subnets(prefixlen_diff=1))
    public = list(blocks[3].subnets(prefixlen_diff=4))
    slots = zone_slots(zones)
    return SubnetPlan(
        efa=str(blocks[0]),
        private={az: str(private[slots[az]]) for az in zones},
        public={az: str(public[slots[az]]) for az in zones},
    )


MAX_ZONES = 4


REGION_ZONE = re.compile(r"[a-z]+(-[a-z]+)+-\d+[a-z]")
"""An Availability Zone of a region (us-west-2a), not a Local or Wavelength Zone (us-west-2-lax-1a)."""


def zone_slots(zones: list[str]) -> dict[str, int]:
    """Subnet slot per AZ: its zone letter's (a=0 .. d=3); later letters take the free slots in name order."""
    # An empty or odd name gets a free slot (the stack rules report the name itself, at its key); so does the second
    # of two names ending in the same letter (us-west-2a and the Local Zone us-west-2-lax-1a), in name order.
    slots: dict[str, int] = {}
    for az in sorted(set(zones), key=lambda name: (not REGION_ZONE.fullmatch(name), name)):  # regional zones first
        letter = ord(az[-1]) - ord("a") if az else -1
        if 0 <= letter < MAX_ZONES and letter not in slots.values():
            slots[az] = letter
    free = iter(sorted(set(range(MAX_ZONES)) - set(slots.values())))
    for az in sorted(set(zones) - set(slots)):
        slots[az] = next(free)
    return slots


def usable_ips(cidr: str) -> int:
    return ipaddress.IPv4Network(cidr).num_addresses - AWS_RESERVED_PER_SUBNET


def ips_per_node(instance_type: InstanceType) -> int:
    """Subnet IPs one training node holds with VPC CNI defaults: its pods (daemonsets and one worker
    pod) fit the primary ENI, and WARM_ENI_TARGET keeps one more ENI attached; each ENI is filled with
    ``ipv4_per_eni`` addresses. ``efa-only`` interfaces take none (ekstrain/layout/efa.py)."""
    return (1 + VPC_CNI_WARM_ENI_TARGET) * instance_type.ipv4_per_eni
