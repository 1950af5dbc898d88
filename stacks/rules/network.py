"""The VPC: ranges, an existing VPC's subnets and their room, allow-lists.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ekstrain.facts import catalog, regions
from ekstrain.layout import subnets
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.partitions import PartitionConfig

# Ranges AWS refuses for a VPC or that collide with what every node runs (docker0 on 172.17.0.0/16).
VPC_RANGES = tuple(ipaddress.IPv4Network(c) for c in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))
VPC_CONFLICTS = {"172.17.0.0/16": "the Docker bridge network on nodes"}
# Not routable from the internet: an allow-list for a public endpoint must not name them.
NON_PUBLIC = tuple(
    ipaddress.IPv4Network(c)
    for c in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/4",
        "240.0.0.0/4",
    )
)
MAX_ALLOWED_ADDRESSES = 2**24
"""An allow-list covering more than a /8 is the internet in pieces (0.0.0.0/1 + 128.0.0.0/1)."""


def _network(cfg: StackConfig) -> list[ConfigIssue]:
    net = cfg.network
    if net.existing_vpc is not None:
        # availabilityZones is (or must equal) the private subnets' zones: reported at existingVpc's keys.
        return _existing_vpc(cfg)
    out = []
    for i, az in enumerate(net.availability_zones):
        problem = regions.zone_problem(cfg.region, az)
        if problem:
            out.append(ConfigIssue(f"ekstrain:network.availabilityZones[{i}]", *problem))
    if net.training_availability_zone not in net.availability_zones:
        out.append(
            ConfigIssue(
                "ekstrain:network.trainingAvailabilityZone",
                f"{net.training_availability_zone!r} is not one of availabilityZones {net.availability_zones}",
                "pick the training AZ from ekstrain:network.availabilityZones (the AZ where "
                "your accelerator capacity or reservation is)",
            )
        )
    vpc = ipaddress.IPv4Network(net.vpc_cidr)
    if not any(vpc.subnet_of(r) for r in VPC_RANGES):
        out.append(
            ConfigIssue(
                "ekstrain:network.vpcCidr",
                f"{vpc} is not inside a private range (RFC 1918 or 100.64.0.0/10)",
                "use a private range such as 10.40.0.0/16",
            )
        )
    for conflict, why in VPC_CONFLICTS.items():
        if vpc.overlaps(ipaddress.IPv4Network(conflict)):
            out.append(
                ConfigIssue(
                    "ekstrain:network.vpcCidr",
                    f"{vpc} overlaps {conflict}, {why}",
                    "use another range such as 10.40.0.0/16",
                )
            )
    out += _efa_subnet_capacity(cfg)
    out += _private_subnet_capacity(cfg)
    return out


EXISTING = "ekstrain:network.existingVpc"


def _existing_vpc(cfg: StackConfig) -> list[ConfigIssue]:
    """``network.existingVpc``: what the program cannot check in AWS, checked from what the stack declares."""
    net = cfg.network
    ev = net.existing_vpc
    assert ev is not None
    out = []
    for field, key in (("vpc_cidr", "vpcCidr"), ("nat_gateways", "natGateways")):
        if field in net.model_fields_set:
            out.append(
                ConfigIssue(
                    f"ekstrain:network.{key}",
                    "is set together with existingVpc, but the program creates no VPC, subnet or NAT gateway there",
                    f"remove ekstrain:network.{key} (the existing VPC's owner decides it)",
                )
            )
    if set(net.availability_zones) != set(ev.private_subnets):
        out.append(
            ConfigIssue(
                "ekstrain:network.availabilityZones",
                f"{net.availability_zones} differs from the zones of existingVpc.privateSubnets "
                f"{list(ev.private_subnets)}",
                "remove availabilityZones (with existingVpc it defaults to the private subnets' zones) "
                "or list exactly those zones",
            )
        )
    training = net.training_availability_zone
    for field, kind in (("privateSubnets", "private"), ("efaSubnets", "EFA")):
        zones = ev.private_subnets if field == "privateSubnets" else ev.efa_subnets
        for az in zones:
            problem = regions.zone_problem(cfg.region, az)
            if problem:
                out.append(ConfigIssue(f"{EXISTING}.{field}.{az}", *problem))
        if training not in zones:
            out.append(
                ConfigIssue(
                    f"{EXISTING}.{field}",
                    f"has no {kind} subnet in the training AZ {training} (zones: {list(zones)})",
                    f"add {training}: {{id: subnet-..., cidr: ...}} for the {kind} subnet there, "
                    "or pick another trainingAvailabilityZone",
                )
            )
    zone_of: dict[str, str] = {}
    for field, zones in (("privateSubnets", ev.private_subnets), ("efaSubnets", ev.efa_subnets)):
        for az, subnet in zones.items():
            first = zone_of.setdefault(subnet.id, az)
            if first != az:
                out.append(
                    ConfigIssue(
                        f"{EXISTING}.{field}.{az}.id",
                        f"{subnet.id} is also given for {first}: a subnet lies in one AZ",
                        f"give the id of a subnet in {az}",
                    )
                )
    out += _existing_subnet_overlaps(ev.subnets())
    out += _existing_subnet_roles(ev)
    if training in ev.private_subnets and training in ev.efa_subnets:
        out += _existing_subnet_capacity(cfg, ev.private_subnets[training], ev.efa_subnets[training])
    for enabled, allowed, key in (
        (cfg.jupyterhub.enabled, cfg.jupyterhub.allowed_cidrs, "ekstrain:jupyterhub.allowedCidrs"),
        (
            cfg.schedulers.slurm.enabled and cfg.schedulers.slurm.login_ssh,
            cfg.schedulers.slurm.login_allowed_cidrs,
            "ekstrain:schedulers.slurm.loginAllowedCidrs",
        ),
    ):
        if enabled and not allowed:
            out.append(
                ConfigIssue(
                    key,
                    "is empty: it defaults to the VPC CIDR, which the program does not know with existingVpc",
                    "list who may reach the internal load balancer (the VPC's CIDR, your VPN's)",
                )
            )
    return out


def _existing_subnet_roles(ev: Any) -> list[ConfigIssue]:
    """What EC2 allows of a declared subnet: a block between /16 and /28 (EC2 User Guide, "Subnet sizing": "The
    allowed block size is between a /28 netmask and /16 netmask"), and a public subnet (route to an internet
    gateway, for internet-facing load balancers) is never one of the private or EFA subnets, whose nodes reach
    out through NAT (a subnet has one route table: it cannot be both)."""
    out = []
    for key, subnet in ev.subnets():
        prefix = ipaddress.IPv4Network(subnet.cidr).prefixlen
        if not 16 <= prefix <= 28:
            out.append(
                ConfigIssue(
                    f"{EXISTING}.{key}.cidr",
                    f"{subnet.cidr}: EC2 subnets are /16 to /28, so no subnet has this block",
                    "give the subnet's CIDR as the VPC console shows it",
                )
            )
    private = {s.id: key for key, s in ev.subnets() if not key.startswith("publicSubnets")}
    for i, subnet in enumerate(ev.public_subnets):
        if subnet.id in private:
            out.append(
                ConfigIssue(
                    f"{EXISTING}.publicSubnets[{i}].id",
                    f"{subnet.id} is also {private[subnet.id]}: a subnet has one route table, so it is public "
                    "(internet gateway) or private (NAT), not both",
                    "list the VPC's public subnets here and its private ones under privateSubnets/efaSubnets",
                )
            )
    return out


def _existing_subnet_overlaps(declared: list[tuple[str, Any]]) -> list[ConfigIssue]:
    """One subnet id, one CIDR; different subnets never overlap (AWS would not have created them)."""
    out = []
    seen: dict[str, tuple[str, Any]] = {}
    for key, subnet in declared:
        first = seen.setdefault(subnet.id, (key, subnet))
        if first[0] != key and first[1].cidr != subnet.cidr:
            out.append(
                ConfigIssue(
                    f"{EXISTING}.{key}.cidr",
                    f"{subnet.cidr} differs from {first[1].cidr} given for the same subnet {subnet.id} at {first[0]}",
                    "give the subnet's CIDR as the VPC console shows it, the same at both keys",
                )
            )
    for i, (key, subnet) in enumerate(declared):
        for other_key, other in declared[:i]:
            if subnet.id == other.id:
                continue
            if ipaddress.IPv4Network(subnet.cidr).overlaps(ipaddress.IPv4Network(other.cidr)):
                out.append(
                    ConfigIssue(
                        f"{EXISTING}.{key}.cidr",
                        f"{subnet.cidr} overlaps {other.cidr} of {other_key} ({other.id}), a different subnet",
                        "give each subnet's own CIDR as the VPC console shows it",
                    )
                )
                break
    return out


def _existing_subnet_capacity(cfg: StackConfig, private: Any, efa: Any) -> list[ConfigIssue]:
    """The declared training-AZ subnets against the partitions' node IPs at maxNodes (same rule as planned ones)."""
    known = [p for p in cfg.partitions if all(t in catalog.known() for t in p.instance_types)]
    efa_parts = [p for p in known if p.efa]
    other = [p for p in known if not p.efa]
    training = cfg.network.training_availability_zone
    if private.id == efa.id:
        where = f"the subnet {efa.id} ({efa.cidr}), both EFA and private subnet of {training},"
        return _subnet_capacity(where, efa.cidr, "", known, f"{EXISTING}.efaSubnets.{training}.cidr")
    out = []
    if efa_parts:
        where = f"the EFA subnet {efa.id} ({efa.cidr})"
        out += _subnet_capacity(where, efa.cidr, "EFA", efa_parts, f"{EXISTING}.efaSubnets.{training}.cidr")
    if other:
        where = f"the private subnet {private.id} ({private.cidr}) of the training AZ"
        out += _subnet_capacity(where, private.cidr, "non-EFA", other, f"{EXISTING}.privateSubnets.{training}.cidr")
    return out


def _efa_subnet_capacity(cfg: StackConfig) -> list[ConfigIssue]:
    """Every EFA node lands in the one EFA subnet: its IPs at maxNodes must fit."""
    efa_parts = [p for p in cfg.partitions if p.efa and all(t in catalog.known() for t in p.instance_types)]
    if not efa_parts:
        return []
    plan = subnets.plan_subnets(cfg.network.vpc_cidr, cfg.network.availability_zones[:4])
    return _subnet_capacity(f"the EFA subnet {plan.efa}", plan.efa, "EFA", efa_parts)


def _private_subnet_capacity(cfg: StackConfig) -> list[ConfigIssue]:
    """Non-EFA partitions launch in the training AZ's private subnet (zone requirement): their IPs must fit."""
    parts = [p for p in cfg.partitions if not p.efa and all(t in catalog.known() for t in p.instance_types)]
    zones = cfg.network.availability_zones
    if not parts or cfg.network.training_availability_zone not in zones:
        return []
    plan = subnets.plan_subnets(cfg.network.vpc_cidr, zones[:4])
    subnet = plan.private[cfg.network.training_availability_zone]
    return _subnet_capacity(f"the private subnet {subnet} of the training AZ", subnet, "non-EFA", parts)


def _subnet_capacity(
    where: str, subnet: Any, kind: str, parts: list[PartitionConfig], key: str = ""
) -> list[ConfigIssue]:
    """The partitions' node IPs at maxNodes against the share of ``subnet`` nodes may use.

    ``key``: a declared subnet's (``existingVpc``); none: the planned subnets of ``vpcCidr``."""
    room = int(subnets.usable_ips(subnet) * subnets.EFA_SUBNET_NODE_SHARE)
    need = {p.name: p.max_nodes * max(subnets.ips_per_node(catalog.get(t)) for t in p.instance_types) for p in parts}
    if not parts or sum(need.values()) <= room:
        return []
    detail = ", ".join(f"{name} {ips}" for name, ips in need.items())
    return [
        ConfigIssue(
            key or "ekstrain:network.vpcCidr",
            f"{where} has room for {room} node IPs but the {kind + ' ' if kind else ''}partitions at maxNodes need "
            f"{sum(need.values())} ({detail}; VPC CNI defaults: two ENIs of IPs per node)",
            "use a larger subnet (and declare its CIDR here) or lower maxNodes"
            if key
            else "use a larger vpcCidr (e.g. a /16) or lower maxNodes",
        )
    ]


def _allow_list(key: str, cidrs: list[str], public: bool) -> list[ConfigIssue]:
    """No world-open list (whole or split), and for a public endpoint no private or reserved ranges."""
    nets = [ipaddress.IPv4Network(c) for c in cidrs]
    out = []
    covered = sum(n.num_addresses for n in ipaddress.collapse_addresses(nets))
    if covered > MAX_ALLOWED_ADDRESSES:
        out.append(
            ConfigIssue(
                key,
                f"the list covers {covered:,} addresses (more than a /8): that opens the port to "
                "the internet, whether written as 0.0.0.0/0 or split into pieces",
                "list the specific office, VPN or VPC CIDRs",
            )
        )
    if public:
        private = [str(n) for n in nets if any(n.overlaps(r) for r in NON_PUBLIC)]
        if private:
            out.append(
                ConfigIssue(
                    key,
                    f"{private} are private or reserved ranges; the public endpoint only sees public source addresses",
                    "list public CIDRs (in-VPC clients use the private endpoint)",
                )
            )
    return out


DOCUMENTATION_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))
