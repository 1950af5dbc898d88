"""Cross-field rules over a parsed :class:`StackConfig`: pure, run before any resource exists.

Field-level rules (types, ranges, unknown keys) live on the models; these need several fields
or the instance catalog. Each returns :class:`ConfigIssue`s that name the key and the fix.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from typing import Any

from ekstrain import (
    catalog,
    compat,
    efa,
    karpenter_specs,
    names,
    offerings,
    partitions,
    prometheus_sizing,
    regions,
    spend,
    storage_sizing,
    subnets,
    versions,
)
from ekstrain.stacks import capacity_rules, labels, limits, loop_rules
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.base import kms_key_region
from ekstrain.stacks.models.cluster import ClusterConfig
from ekstrain.stacks.models.partitions import PartitionConfig
from ekstrain.stacks.models.tags import PROGRAM_TAG_KEYS, program_tag_count

FSX_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)


def _p(index: int, part: PartitionConfig, field: str = "") -> str:
    return f"ekstrain:partitions[{index}] ({part.name})" + (f".{field}" if field else "")


def check(cfg: StackConfig, today: dt.date | None = None) -> tuple[list[ConfigIssue], list[str]]:
    """Return (errors, warnings) for the whole stack."""
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    errors += _network(cfg)
    errors += _cluster(cfg)
    part_errors, part_warnings = _partitions(cfg)
    errors += part_errors
    warnings += part_warnings
    storage_errors, storage_warnings = _storage(cfg)
    errors += storage_errors
    warnings += storage_warnings
    errors += _schedulers(cfg)
    warnings += team_warnings(cfg)
    errors += _cost(cfg)
    errors += _versions(cfg)
    errors += _compat(cfg)
    errors += _kms_keys(cfg)
    hub_errors, hub_warnings = _jupyterhub(cfg)
    errors += hub_errors
    tls_errors, tls_warnings = loop_rules.hub_tls(cfg)
    errors += tls_errors
    warnings += tls_warnings
    ck_errors, ck_warnings = loop_rules.checkpoints(cfg)
    errors += ck_errors
    warnings += ck_warnings
    warnings += hub_warnings
    slurm_errors, slurm_warnings = _slurm_login(cfg)
    errors += slurm_errors
    warnings += slurm_warnings
    day = today or dt.date.today()
    errors += _kubernetes_window(cfg, day)
    offer_errors, offer_warnings = _offerings(cfg, day)
    errors += offer_errors
    warnings += offer_warnings
    errors += _ami_against_launch(cfg)
    errors += _limits(cfg, day)
    errors += names_and_room(cfg)
    block_errors, block_warnings = capacity_rules.check(cfg, day)
    errors += block_errors
    warnings += block_warnings
    ami = versions.ami_alias_warning(cfg.versions.ami_alias_version, cfg.versions.ami_alias_max_age_days, day)
    if ami:
        warnings.append(f"ekstrain:versions.amiAliasVersion: {ami}")
    if cfg.cluster.bootstrap_access_cidrs:
        warnings.append(
            "ekstrain:cluster.bootstrapAccessCidrs: the API endpoint is public for "
            f"{cfg.cluster.bootstrap_access_cidrs} (first deploy from outside the VPC); remove the key once the "
            "in-VPC runner is up, and `pulumi up` from it makes the endpoint private (docs/delivery.md, first deploy)"
        )
    warning = versions.support_warning(cfg.cluster.kubernetes_version, day)
    if warning and not errors:
        warnings.append(f"ekstrain:cluster.kubernetesVersion: {warning}")
    return errors, warnings


def compat_pins(cfg: StackConfig) -> compat.Pins:
    """The versions this stack applies, for the compatibility table (ekstrain/compat.py)."""
    k8s = cfg.cluster.kubernetes_version
    return compat.Pins(
        k8s,
        {name: cfg.versions.chart(name).version for name in versions.DEFAULT_CHARTS},
        {name: cfg.versions.addon(name, k8s) for name in versions.DEFAULT_ADDON_VERSIONS},
    )


def _compat(cfg: StackConfig) -> list[ConfigIssue]:
    """Every pinned component supports what it runs on (ekstrain/compat.py: each bound with its source)."""
    return [ConfigIssue(key, problem, fix) for key, problem, fix in compat.problems(compat_pins(cfg))]


def _kubernetes_window(cfg: StackConfig, today: dt.date) -> list[ConfigIssue]:
    """The version must be on EKS's calendar today; a pinned AMI must be newer than the version."""
    out = []
    k8s = cfg.cluster.kubernetes_version
    standard, extended = versions.window(today)
    reason = versions.unsupported_reason(k8s, today)
    if reason:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.kubernetesVersion",
                f"{reason} (as of {today})",
                f"use {versions.newest_standard(today)}; in standard support: "
                f"{', '.join(standard) or 'none'}; in extended support (extra cost): "
                f"{', '.join(extended) or 'none'}",
            )
        )
    ami = cfg.versions.ami_alias_version
    released = versions.ami_release_date(ami)
    if ami != "latest" and released is None:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"{ami!r} is not an AMI release version",
                f"use latest or a release such as {versions.AMI_ALIAS_VERSIONS[k8s]}",
            )
        )
    elif released is not None and released < versions.KUBERNETES_RELEASES[k8s].released:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami} predates Kubernetes {k8s} on EKS "
                f"({versions.KUBERNETES_RELEASES[k8s].released}): al2023@{ami} has no {k8s} image",
                f"use amiAliasVersion: {versions.AMI_ALIAS_VERSIONS[k8s]} (or a later release)",
            )
        )
    elif ami in versions.AMI_RELEASES_WITH_KNOWN_DEFECTS:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami}: {versions.AMI_RELEASES_WITH_KNOWN_DEFECTS[ami]}",
                f"use amiAliasVersion: {versions.AMI_ALIAS_VERSIONS[k8s]}",
            )
        )
    return out


def _offerings(cfg: StackConfig, today: dt.date) -> tuple[list[ConfigIssue], list[str]]:
    """Every partition type is offered in the stack's region (ekstrain/offerings.py: a dated table of EC2
    on-demand offerings by region, extended by ``ekstrain:instanceTypes.<type>.regions``); Karpenter would
    otherwise find no offering and the partition never gets a node. Where the table cannot know (a region
    newer than it, a Capacity-Blocks-only type, a table older than ``STALE_AFTER_DAYS``) a warning, never a refusal."""
    extra = {name: frozenset(f.regions) for name, f in cfg.instance_types.items() if f.regions}
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    for i, p in enumerate(cfg.partitions):
        for name in p.instance_types:
            found = offerings.offering_problem(name, cfg.region, extra, today)
            if found is None:
                continue
            level, problem, fix = found
            key = _p(i, p, "instanceTypes")
            if level == "error":
                errors.append(ConfigIssue(key, problem, fix))
            else:
                warnings.append(f"{key}: {problem}; {fix}")
    return errors, warnings


def _ami_against_launch(cfg: StackConfig) -> list[ConfigIssue]:
    """A pinned AMI release (``al2023@vYYYYMMDD``) dated before a partition type's launch was never built or
    tested for it (its NVIDIA/Neuron driver predates the generation): the dates and their AWS announcements are
    ``ekstrain/offerings.py`` ``LAUNCHED``."""
    ami = cfg.versions.ami_alias_version
    released = versions.ami_release_date(ami)
    if released is None:
        return []
    out = []
    for i, p in enumerate(cfg.partitions):
        launches = [(n, offerings.launched(n)) for n in p.instance_types]
        late = [(n, launch) for n, launch in launches if launch is not None and released < launch.date]
        if not late:
            continue
        newest = max(launch.date for _, launch in late)
        recommended = versions.AMI_ALIAS_VERSIONS.get(cfg.cluster.kubernetes_version, "latest")
        named = "; ".join(f"{n} launched {launch.date} ({launch.source})" for n, launch in late)
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami} ({released}) predates an instance type of {_p(i, p, 'instanceTypes')}: {named}; "
                "no AMI of that release was built or tested for it (its GPU/Neuron driver predates the type)",
                f"pin a release dated on or after {newest}, e.g. amiAliasVersion: {recommended}, or remove the "
                "type from the partition",
            )
        )
    return out


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


def _slurm_login(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    from ekstrain.stacks import slurm_login

    s = cfg.schedulers.slurm
    if not s.enabled:
        return [], []
    if not s.login_ssh:
        unused = [
            key
            for key, value in (
                ("loginSshAuthorizedKeys", s.login_ssh_authorized_keys),
                ("loginSshAuthorizedKeysFile", s.login_ssh_authorized_keys_file),
                ("loginAllowedCidrs", s.login_allowed_cidrs),
            )
            if value
        ]
        return [
            ConfigIssue(
                f"ekstrain:schedulers.slurm.{key}",
                "is set but loginSsh is false: the login node has no SSH endpoint, so it changes nothing",
                "set loginSsh: true to reach the login node over SSH, or remove the key",
            )
            for key in unused
        ], []
    keys = list(s.login_ssh_authorized_keys)
    path = slurm_login.keys_file(cfg)
    if path is not None:
        file_keys, problems = slurm_login.read_keys_file(path)
        if problems:
            return [ConfigIssue(slurm_login.KEY, problem, fix) for problem, fix in problems], []
        keys += file_keys
    if not keys:
        return [], [
            "ekstrain:schedulers.slurm.loginSshAuthorizedKeys: the login node has no SSH key, so "
            "`ssh root@<login>` is refused; add a public key to loginSshAuthorizedKeys or to the "
            "loginSshAuthorizedKeysFile, then deploy (README, Slurm), or set loginSsh: false (kubectl exec only)"
        ]
    return [], []


def _access_entries(c: ClusterConfig) -> list[ConfigIssue]:
    """EKS allows one access entry per principal (CreateAccessEntry: ResourceInUseException), so each
    principal appears once across adminAccess, deployRoleArn and previewRoleArn."""
    seen: dict[str, str] = {}
    out = []
    named = [(f"adminAccess[{i}].principalArn", a.principal_arn) for i, a in enumerate(c.admin_access)]
    named += [(k, v) for k, v in (("deployRoleArn", c.deploy_role_arn), ("previewRoleArn", c.preview_role_arn)) if v]
    for key, arn in named:
        if arn in seen:
            out.append(
                ConfigIssue(
                    f"ekstrain:cluster.{key}",
                    f"{arn} already has an access entry from ekstrain:cluster.{seen[arn]}; "
                    "EKS allows one per principal",
                    "list each principal once (the deploy role is cluster-admin already; the preview role gets "
                    "previewAccessPolicy)",
                )
            )
        seen.setdefault(arn, key)
    return out


def _cluster(cfg: StackConfig) -> list[ConfigIssue]:
    c = cfg.cluster
    out = []
    if c.endpoint_public_access and not c.public_access_cidrs:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.publicAccessCidrs",
                "endpointPublicAccess is true but no CIDR allow-list is given",
                "list the office/VPN CIDRs that may reach the API server, or set endpointPublicAccess: false",
            )
        )
    out += _allow_list("ekstrain:cluster.publicAccessCidrs", c.public_access_cidrs, public=True)
    out += _allow_list("ekstrain:cluster.bootstrapAccessCidrs", c.bootstrap_access_cidrs, public=True)
    out += _allow_list("ekstrain:cluster.deployCidrs", c.deploy_cidrs, public=False)
    if not c.endpoint_public_access and not (c.deploy_cidrs or c.deploy_security_group_ids):
        out.append(
            ConfigIssue(
                "ekstrain:cluster.deployCidrs",
                "the API endpoint is private and the EKS cluster security group admits only its "
                "members, so nothing that deploys can reach it",
                "list the CIDR of the in-VPC (or peered) deploy runner in deployCidrs, or its "
                "security group in deploySecurityGroupIds (docs/delivery.md)",
            )
        )
    for key, cidrs in (
        ("publicAccessCidrs", c.public_access_cidrs),
        ("deployCidrs", c.deploy_cidrs),
        ("bootstrapAccessCidrs", c.bootstrap_access_cidrs),
    ):
        doc = [x for x in cidrs if any(ipaddress.IPv4Network(x).subnet_of(d) for d in DOCUMENTATION_NETWORKS)]
        if doc:
            out.append(
                ConfigIssue(
                    f"ekstrain:cluster.{key}",
                    f"{doc} are documentation ranges (RFC 5737): no runner or office has them",
                    "list the real CIDRs that run `pulumi up` and kubectl",
                )
            )
    accelerated = [t for t in c.system_node_group.instance_types if catalog.is_accelerated(t)]
    if accelerated:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.systemNodeGroup.instanceTypes",
                f"{accelerated} are accelerated instances; the system node group runs controllers only",
                "use general-purpose types such as m7i.xlarge; accelerators belong in partitions",
            )
        )
    out += _access_entries(c)
    ng = c.system_node_group
    if not ng.min_size <= ng.desired_size <= ng.max_size:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.systemNodeGroup",
                f"needs minSize <= desiredSize <= maxSize, got {ng.min_size}/{ng.desired_size}/{ng.max_size}",
                "adjust the three sizes",
            )
        )
    return out


def _partitions(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    seen: set[str] = set()
    k8s = versions.parse_semver(cfg.cluster.kubernetes_version)
    for i, part in enumerate(cfg.partitions):
        if part.name in seen:
            errors.append(
                ConfigIssue(
                    _p(i, part, "name"),
                    f"partition name {part.name!r} is used twice",
                    "give every partition a unique name",
                )
            )
        seen.add(part.name)
        if part.min_nodes > part.max_nodes:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} is below minNodes {part.min_nodes}",
                    f"raise maxNodes to at least {part.min_nodes} or lower minNodes",
                )
            )
        known: list[catalog.InstanceType] = []
        for j, name in enumerate(part.instance_types):
            key = _p(i, part, f"instanceTypes[{j}]")
            if name not in catalog.known():
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name!r} is not in the instance catalog",
                        f"use one of {', '.join(sorted(catalog.known()))}, or add its facts under "
                        f"ekstrain:instanceTypes.{name} (docs/configuration.md)",
                    )
                )
                continue
            it = catalog.get(name)
            known.append(it)
            if it.architecture != "x86_64":
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} is {it.architecture}: the NodePools and AL2023 AMI aliases of this program are "
                        "x86_64 only",
                        f"use an x86_64 type, or keep {name} out of the partitions until arm64 nodes are supported",
                    )
                )
            if it.family != part.accelerator:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} is a {it.family} instance but the partition's accelerator is {part.accelerator}",
                        f"set accelerator: {it.family} or move {name} to a {it.family} partition",
                    )
                )
            if part.efa and not it.efa_capable:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} has no EFA interfaces but the partition has efa: true",
                        f"remove {name} or set efa: false for this partition",
                    )
                )
            if versions.parse_semver(it.min_kubernetes_version) > k8s:
                errors.append(
                    ConfigIssue(
                        key,
                        f"{name} needs Kubernetes >= {it.min_kubernetes_version} "
                        f"(cluster is {cfg.cluster.kubernetes_version})",
                        f"set ekstrain:cluster.kubernetesVersion to {it.min_kubernetes_version} or later",
                    )
                )
        if len({t.accelerator_count for t in known}) > 1:
            errors.append(
                ConfigIssue(
                    _p(i, part, "instanceTypes"),
                    "instance types have different accelerator counts "
                    f"({ {t.name: t.accelerator_count for t in known} })",
                    "keep types with the same accelerators per node in one partition; "
                    "split the others into their own partition",
                )
            )
        generations = {t.accelerator.generation for t in known}
        if len(generations) > 1:
            by_gen = {g: [t.name for t in known if t.accelerator.generation == g] for g in sorted(generations)}
            errors.append(
                ConfigIssue(
                    _p(i, part, "instanceTypes"),
                    f"instance types mix accelerator generations ({by_gen}); one job's ranks "
                    "would run at the slowest generation's speed",
                    "keep one generation per partition: move "
                    + " / ".join(", ".join(ts) for ts in list(by_gen.values())[1:])
                    + " into a partition of its own",
                )
            )
        layouts = len({tuple(efa.efa_layout(t)) for t in known if t.efa_capable}) if part.efa else 1
        if layouts > 1 and part.max_nodes < layouts:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} cannot be split over the {layouts} EFA layouts of "
                    f"{part.instance_types} (one NodePool each)",
                    f"raise maxNodes to at least {layouts} or keep one EFA layout per partition",
                )
            )
        if part.wants_placement_group and not part.efa:
            errors.append(
                ConfigIssue(
                    _p(i, part, "placementGroup"),
                    "a placement group needs efa: true",
                    "set efa: true or placementGroup: false",
                )
            )
        if part.capacity_type == "reserved" and part.capacity_reservation is None:
            errors.append(
                ConfigIssue(
                    _p(i, part, "capacityReservation"),
                    "capacityType is reserved but no reservation is selected",
                    "add capacityReservation: {ids: [cr-...]} or {tags: {...}}",
                )
            )
        if part.capacity_reservation is not None and part.capacity_type != "reserved":
            errors.append(
                ConfigIssue(
                    _p(i, part, "capacityType"),
                    "a capacityReservation is given but capacityType is not reserved",
                    "set capacityType: reserved",
                )
            )
        cr = part.capacity_reservation
        if cr is not None and cr.instance_count is not None and part.max_nodes > cr.instance_count:
            errors.append(
                ConfigIssue(
                    _p(i, part, "maxNodes"),
                    f"maxNodes {part.max_nodes} exceeds the reservation's {cr.instance_count} instances",
                    f"lower maxNodes to {cr.instance_count} or enlarge the reservation",
                )
            )
        if part.capacity_block and part.placement_group:
            # EC2 User Guide, "Work with Capacity Blocks" (capacity-blocks-using.html): a block already gives its
            # instances low-latency, high-throughput connectivity, "so there is no need to use a cluster placement
            # group". A block is bought without one (PurchaseCapacityBlock has no placement parameter) and a
            # reservation created outside a group cannot be moved into one ("Capacity Reservations in cluster
            # placement groups", Limitations), so a group of ours would never hold the block's capacity.
            errors.append(
                ConfigIssue(
                    _p(i, part, "placementGroup"),
                    "a Capacity Block is never in a placement group of this program (it is bought without one and "
                    "cannot be moved into one), and EC2 co-locates its instances itself",
                    "remove placementGroup (it defaults to false for capacity-block reservations)",
                )
            )
        elif part.capacity_type == "reserved" and part.wants_placement_group:
            warnings.append(
                f"{_p(i, part, 'placementGroup')}: instances launch into the placement group "
                f"{names.placement_group_name(cfg.cluster.name, part.name)} (one per EFA layout), so an On-Demand "
                "Capacity Reservation is only used if it was created in that group (or set placementGroup: false); "
                "for a Capacity Block set capacityReservation.type: capacity-block (no placement group)"
            )
        if part.min_nodes > 0:
            errors.append(
                ConfigIssue(
                    _p(i, part, "minNodes"),
                    f"minNodes {part.min_nodes}: warm nodes need Karpenter's alpha StaticCapacity "
                    "feature gate (NodePool.spec.replicas), which this platform keeps off",
                    "set minNodes: 0; nodes are launched when a job asks for them and kept "
                    "while busy (raise consolidateAfter to keep idle nodes longer)",
                )
            )
        errors += _partition_labels(i, part)
    errors += _pool_name_collisions(cfg)
    if cfg.partitions:
        errors += _karpenter_names(cfg)
    return errors, warnings


def pool_names(part: PartitionConfig) -> list[str]:
    """NodePool/EC2NodeClass names of a partition: its name, or one per EFA layout (``trainium-trn1n``)."""
    known = all(t in catalog.known() for t in part.instance_types)
    if not known or (part.efa and not all(catalog.get(t).efa_capable for t in part.instance_types)):
        return [part.name]  # refused elsewhere; no layouts to name
    shape = partitions.shape(part.name, part.accelerator, part.instance_types, part.efa)
    return [layout.name for layout in shape.layouts()]


def _pool_name_collisions(cfg: StackConfig) -> list[ConfigIssue]:
    """Every partition name and generated NodePool/EC2NodeClass name is distinct across partitions: the
    objects (and the Pulumi resources ``<name>-nodepool``) would otherwise be declared twice."""
    out = []
    owner: dict[str, int] = {}
    for i, part in enumerate(cfg.partitions):
        mine = {part.name, *pool_names(part)}
        for name in sorted(mine):
            j = owner.get(name)
            if j is not None and j != i and cfg.partitions[j].name != part.name:  # same name: reported above
                other = cfg.partitions[j]
                out.append(
                    ConfigIssue(
                        _p(i, part, "name"),
                        f"the NodePool/EC2NodeClass name {name!r} is also generated by "
                        f"{_p(j, other)} (a partition with several EFA layouts gets one pool per layout, "
                        f"named {', '.join(pool_names(other))})",
                        "rename one of the partitions",
                    )
                )
            owner.setdefault(name, i)
        for name in pool_names(part):
            if len(name) > 63:
                out.append(
                    ConfigIssue(
                        _p(i, part, "name"),
                        f"the NodePool name {name!r} is longer than 63 characters (it is the value of the "
                        "karpenter.sh/nodepool label on every node)",
                        "shorten the partition name",
                    )
                )
    return out


def _partition_labels(index: int, part: PartitionConfig) -> list[ConfigIssue]:
    """Kubernetes label syntax and Karpenter's restricted domains and counts (stacks/labels.py)."""
    out = []
    problem = labels.count_problem(part.labels)
    if problem:
        out.append(ConfigIssue(_p(index, part, "labels"), *problem))
    for key, value in part.labels.items():
        where = _p(index, part, f"labels.{key}")
        for found in (labels.key_problem(key), labels.value_problem(value)):
            if found:
                out.append(ConfigIssue(where, *found))
    return out


def _karpenter_names(cfg: StackConfig) -> list[ConfigIssue]:
    """IAM role names are at most 64 characters, SQS queue names at most 80."""
    name = cfg.cluster.name
    too_long = [
        n for n in (karpenter_specs.node_role_name(name), karpenter_specs.controller_role_name(name)) if len(n) > 64
    ]
    if len(karpenter_specs.interruption_queue_name(name)) > 80:
        too_long.append(karpenter_specs.interruption_queue_name(name))
    if not too_long:
        return []
    longest = len(karpenter_specs.node_role_name(""))
    return [
        ConfigIssue(
            "ekstrain:cluster.name",
            f"{name!r} makes Karpenter resource names too long for AWS: {too_long}",
            f"use a cluster name of at most {64 - longest} characters",
        )
    ]


def _storage(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    st = cfg.storage
    fsx = st.fsx
    out: list[ConfigIssue] = []
    warnings: list[str] = []
    b = st.buckets
    if b.datasets_bucket and b.datasets_bucket == b.checkpoints_bucket:
        out.append(
            ConfigIssue(
                "ekstrain:storage.buckets.checkpointsBucket",
                "datasetsBucket and checkpointsBucket are the same bucket; one bucket cannot be "
                "linked twice to a file system and the lifecycles differ",
                "name two different buckets (or leave both unset for generated names)",
            )
        )
    if cfg.environment == "prod" and not st.protect:
        warnings.append(
            "ekstrain:storage.protect: false in a prod stack: a destroy or replacement deletes "
            "buckets, FSx and EFS with their data"
        )
    if not fsx.enabled:
        if fsx.scratch.enabled:
            out.append(
                ConfigIssue(
                    "ekstrain:storage.fsx.scratch.enabled",
                    "dynamic FSx scratch needs the FSx CSI driver, installed with the FSx file system",
                    "set ekstrain:storage.fsx.enabled: true or scratch.enabled: false",
                )
            )
        return out, warnings
    key = "ekstrain:storage.fsx"
    cap = fsx.storage_capacity_gib
    if not storage_sizing.valid_capacity(cap):
        lower = max(1200, cap // 2400 * 2400)
        out.append(
            ConfigIssue(
                f"{key}.storageCapacityGiB",
                f"{cap} GiB is not a valid Lustre SSD capacity",
                f"use 1200 or a multiple of 2400 (nearest: {lower} or {(cap // 2400 + 1) * 2400})",
            )
        )
    if fsx.deployment_type == "PERSISTENT_2":
        if fsx.per_unit_storage_throughput not in FSX_PERSISTENT_2_THROUGHPUTS:
            out.append(
                ConfigIssue(
                    f"{key}.perUnitStorageThroughput",
                    f"{fsx.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                    f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}",
                )
            )
    else:
        if fsx.per_unit_storage_throughput is not None:
            out.append(
                ConfigIssue(
                    f"{key}.perUnitStorageThroughput",
                    f"{fsx.deployment_type} has a fixed throughput (200 MB/s/TiB)",
                    "remove perUnitStorageThroughput (set it to null)",
                )
            )
        if fsx.kms_key_arn is not None:
            out.append(
                ConfigIssue(
                    f"{key}.kmsKeyArn",
                    f"{fsx.deployment_type} file systems are always encrypted with an FSx-managed "
                    "key and do not accept a customer KMS key",
                    "remove kmsKeyArn, or use deploymentType: PERSISTENT_2",
                )
            )
        if not fsx.auto_export_events:
            # DRAs (import and export) work on SCRATCH_2 with Lustre 2.12+; only SCRATCH_1/2.10 lack them.
            warnings.append(
                f"{key}.autoExportEvents: empty on {fsx.deployment_type}: scratch data is not "
                "replicated, so checkpoints are lost on a file-server failure unless exported to S3"
            )
    paths = {"dataPath": fsx.data_path, "checkpointPath": fsx.checkpoint_path}
    for field, path in paths.items():
        if not path.startswith("/") or path == "/" or path.endswith("/") or "//" in path:
            out.append(
                ConfigIssue(
                    f"{key}.{field}",
                    f"{path!r} is not an absolute sub-directory",
                    "use a path like /data (leading slash, no trailing slash)",
                )
            )
    if fsx.data_path == fsx.checkpoint_path:
        out.append(
            ConfigIssue(
                f"{key}.checkpointPath",
                "dataPath and checkpointPath are the same",
                "use separate paths such as /data and /checkpoints",
            )
        )
    elif (fsx.checkpoint_path + "/").startswith(fsx.data_path + "/") or (fsx.data_path + "/").startswith(
        fsx.checkpoint_path + "/"
    ):
        out.append(
            ConfigIssue(
                f"{key}.checkpointPath",
                f"{fsx.checkpoint_path!r} and {fsx.data_path!r} overlap; two data repository "
                "associations cannot have nested file-system paths",
                "use sibling paths such as /data and /checkpoints",
            )
        )
    for field, events in (("autoImportEvents", fsx.auto_import_events), ("autoExportEvents", fsx.auto_export_events)):
        if len(set(events)) != len(events):
            out.append(
                ConfigIssue(
                    f"{key}.{field}",
                    f"{events} lists an event twice",
                    "list each of NEW, CHANGED, DELETED at most once",
                )
            )
    sc = fsx.scratch
    if (
        sc.enabled
        and sc.deployment_type == "PERSISTENT_2"
        and sc.per_unit_storage_throughput not in (FSX_PERSISTENT_2_THROUGHPUTS)
    ):
        out.append(
            ConfigIssue(
                f"{key}.scratch.perUnitStorageThroughput",
                f"{sc.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}",
            )
        )
    if sc.enabled and sc.deployment_type == "SCRATCH_2" and sc.per_unit_storage_throughput is not None:
        out.append(
            ConfigIssue(
                f"{key}.scratch.perUnitStorageThroughput",
                "SCRATCH_2 has a fixed throughput (200 MB/s/TiB)",
                "remove perUnitStorageThroughput",
            )
        )
    if sc.enabled and sc.storage_class_name in ("gp3", names.EFS_STORAGE_CLASS):
        out.append(
            ConfigIssue(
                f"{key}.scratch.storageClassName",
                f"{sc.storage_class_name!r} is already a StorageClass of the platform",
                "use another name, e.g. fsx-scratch",
            )
        )
    ck = st.checkpoint
    if ck.size_gib is not None and not out:
        result = storage_sizing.report(
            storage_sizing.gib_to_bytes(ck.size_gib),
            ck.target_save_seconds,
            fsx.deployment_type,
            cap,
            fsx.per_unit_storage_throughput,
        )
        if not result.meets_target:
            r = result.recommended
            fix = (
                f"set storageCapacityGiB: {r.capacity_gib} and perUnitStorageThroughput: "
                f"{r.per_unit_throughput} ({r.save_seconds:,.0f} s)"
                if r and fsx.deployment_type == "PERSISTENT_2"
                else f"set storageCapacityGiB: {r.capacity_gib} ({r.save_seconds:,.0f} s)"
                if r
                else "use PERSISTENT_2 with a higher tier, or save sharded/asynchronously"
            )
            warnings.append(
                f"ekstrain:storage.checkpoint: a {ck.size_gib:,.0f} GiB checkpoint takes "
                f"{result.configured.save_seconds:,.0f} s on the configured FSx "
                f"({result.configured.throughput_mb_s:,.0f} MB/s baseline), over targetSaveSeconds "
                f"{ck.target_save_seconds}; {fix}"
            )
    return out, warnings


def team_warnings(cfg: StackConfig) -> list[str]:
    """Guarantees that leave a partition nothing to share: no team can borrow and its ``-shared`` queue (Slurm,
    notebooks, jobs without a team) gets no node."""
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        total = sum(t.guarantees.get(part.name, 0) for t in teams)
        if teams and total == part.max_nodes and any(part.name in t.guarantees for t in teams):
            out.append(
                f"ekstrain:schedulers.volcano.teams: the guarantees in {part.name} cover all its {part.max_nodes} "
                f"nodes, so no team can borrow there and {part.name}-shared (Slurm's slurmd pods, notebooks, jobs "
                "without --team) is never admitted; leave some nodes unguaranteed"
            )
    return out


def _teams(cfg: StackConfig) -> list[ConfigIssue]:
    """``schedulers.volcano.teams``: known partitions, guarantees that fit the partition, unique queue names."""
    teams = cfg.schedulers.volcano.teams
    if not teams:
        return []
    out: list[ConfigIssue] = []
    key = "ekstrain:schedulers.volcano.teams"
    if not cfg.schedulers.volcano.enabled:
        out.append(ConfigIssue(key, "teams are Volcano queues, but Volcano is off", "set schedulers.volcano.enabled"))
    by_name = {p.name: p for p in cfg.partitions}
    seen: set[str] = set()
    for i, team in enumerate(teams):
        at = f"{key}[{i}] ({team.name})"
        if team.name in seen:
            out.append(ConfigIssue(f"{at}.name", "two teams have this name", "give every team its own name"))
        seen.add(team.name)
        if team.name == "shared":
            out.append(
                ConfigIssue(
                    f"{at}.name",
                    "'shared' is the queue of Slurm, notebooks and jobs without a team in each partition",
                    "choose another team name",
                )
            )
        for part, nodes in sorted(team.guarantees.items()):
            where = f"{at}.guarantees.{part}"
            if part not in by_name:
                out.append(
                    ConfigIssue(where, f"{part!r} is not a partition", f"use partition names: {sorted(by_name)}")
                )
            elif not 0 <= nodes <= by_name[part].max_nodes:
                out.append(
                    ConfigIssue(
                        where,
                        f"{nodes} guaranteed nodes is outside 0..maxNodes ({by_name[part].max_nodes})",
                        "guarantee whole nodes the partition can launch",
                    )
                )
    for part in sorted(by_name):
        total = sum(t.guarantees.get(part, 0) for t in teams)
        if total > by_name[part].max_nodes:
            out.append(
                ConfigIssue(
                    key,
                    f"the teams' guarantees in {part} add up to {total} nodes, more than its maxNodes "
                    f"{by_name[part].max_nodes}: Volcano cannot hold them all at once",
                    f"lower the guarantees of {part} to {by_name[part].max_nodes} nodes in total, "
                    "or raise its maxNodes",
                )
            )
        for team in teams:
            queue = f"{part}-{team.name}"
            if part in team.guarantees and queue in by_name:
                out.append(
                    ConfigIssue(
                        key,
                        f"team {team.name!r}'s queue in {part} would be {queue!r}, the name of another "
                        "partition's queue",
                        "rename the team or the partition",
                    )
                )
    return out


def _schedulers(cfg: StackConfig) -> list[ConfigIssue]:
    s = cfg.schedulers
    out = []
    if s.kubeflow.flavor == "training-operator":
        # Nothing unpinned is applied: pulumi-kubernetes's kustomize/v2 Directory fetches this kustomization from
        # GitHub at deploy time, so what `pulumi up` applies is nothing the render checked or pinned by content.
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.kubeflow.flavor",
                "the legacy training operator v1.9.4 is a kustomization fetched from GitHub at deploy time: nothing "
                "the render validated or pinned by content (and it owns mpijobs.kubeflow.org like the MPI operator)",
                "set flavor: trainer (Kubeflow Trainer v2: TrainJob, `ekstrain job render --scheduler trainjob`), "
                "or none and install the legacy operator outside this stack",
            )
        )
    names = {p.name for p in cfg.partitions}
    unknown = sorted(set(s.volcano.queue_weights) - names)
    if unknown:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.volcano.queueWeights",
                f"{unknown} are not partitions",
                f"use partition names: {sorted(names)}",
            )
        )
    bad = {k: v for k, v in s.volcano.queue_weights.items() if v < 1}
    if bad:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.volcano.queueWeights", f"weights must be >= 1, got {bad}", "use positive integers"
            )
        )
    out += _teams(cfg)
    by_name = {p.name: p for p in cfg.partitions}
    for part, replicas in sorted(s.slurm.nodeset_replicas.items()):
        key = f"ekstrain:schedulers.slurm.nodesetReplicas.{part}"
        if part not in by_name:
            out.append(ConfigIssue(key, f"{part!r} is not a partition", f"use partition names: {sorted(names)}"))
        elif not 0 <= replicas <= by_name[part].max_nodes:
            out.append(
                ConfigIssue(
                    key,
                    f"{replicas} slurmd pods is outside 0..maxNodes ({by_name[part].max_nodes})",
                    "each replica holds one whole node: use a count between 0 and the partition's maxNodes",
                )
            )
    out += _allow_list("ekstrain:schedulers.slurm.loginAllowedCidrs", s.slurm.login_allowed_cidrs, public=False)
    if s.slurm.enabled and s.slurm.autoscale and not cfg.observability.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.slurm.autoscale",
                "elastic Slurm reads Slurm's pending-job metrics from Prometheus, which this stack does not install",
                "set ekstrain:observability.enabled: true, or ekstrain:schedulers.slurm.autoscale: false (NodeSets "
                "then keep nodesetReplicas and are scaled by hand)",
            )
        )
    if s.slurm.enabled and not cfg.storage.fsx.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:schedulers.slurm.enabled",
                "Slurm needs the shared FSx file system for its NodeSets and login nodes",
                "set ekstrain:storage.fsx.enabled: true",
            )
        )
    return out


def _cost(cfg: StackConfig) -> list[ConfigIssue]:
    """OpenCost reads the stack's Prometheus; a budget without a limit needs list prices for its default."""
    out = []
    c = cfg.cost
    if c.enabled and c.opencost and not cfg.observability.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:cost.opencost",
                "OpenCost reads node and pod usage from the stack's Prometheus, which this stack does not install",
                "set ekstrain:observability.enabled: true, or ekstrain:cost.opencost: false",
            )
        )
    priced = spend.default_monthly_limit_usd((p.instance_types, p.max_nodes) for p in cfg.partitions)
    if c.enabled and c.budget.monthly_limit_usd is None and priced <= 0:
        out.append(
            ConfigIssue(
                "ekstrain:cost.budget.monthlyLimitUsd",
                "no partition instance type has an on-demand list price, so there is no default limit",
                "set ekstrain:cost.budget.monthlyLimitUsd to the monthly spend you expect",
            )
        )
    if c.enabled and len(c.budget.thresholds_percent) + (c.budget.forecast_percent is not None) > 5:
        out.append(
            ConfigIssue(
                "ekstrain:cost.budget.thresholdsPercent",
                "AWS allows 5 notifications per budget (the forecast one counts)",
                "keep at most 4 thresholds with forecastPercent, or 5 with forecastPercent: null",
            )
        )
    return out


def _notebook_fit(cfg: StackConfig, key: str) -> list[ConfigIssue]:
    """Each profile's notebook pod (assembly/jupyterhub.py: its cpu and memory guarantee, one accelerator) fits
    the allocatable of some instance type of its partition, as Karpenter computes it (ekstrain/simulate/nodes.py,
    karpenter-provider-aws types.go); else the server never schedules and the user waits for the spawn timeout."""
    from ekstrain import notebook_size
    from ekstrain.simulate import nodes

    out = []
    offered = set(cfg.jupyterhub.profiles) or {p.name for p in cfg.partitions}
    cpu, memory = float(notebook_size.NOTEBOOK_CPU), float(notebook_size.NOTEBOOK_MEMORY_GIB * 2**30)
    for i, p in enumerate(cfg.partitions):
        if p.name not in offered or not all(t in catalog.known() for t in p.instance_types):
            continue
        room = []
        for name in p.instance_types:
            it = catalog.get(name)
            room.append((name, nodes.allocatable(it, nodes.capacity(it, None))))
        if not any(a["cpu"] >= cpu and a["memory"] >= memory for _, a in room):
            best = max(room, key=lambda r: r[1]["memory"])
            out.append(
                ConfigIssue(
                    f"{_p(i, p, 'instanceTypes')}",
                    f"a notebook of this partition asks {cpu:g} CPUs and {notebook_size.NOTEBOOK_MEMORY_GIB} GiB, but "
                    f"the largest allocatable of its types is {best[1]['cpu']:.2f} CPUs and "
                    f"{best[1]['memory'] / 2**30:.1f} GiB ({best[0]}): the server would never start",
                    f"add a larger instance type to this partition, or leave it out of {key}.profiles",
                )
            )
    return out


def _jupyterhub(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    """No open hub: an authenticator restricted to listed users/organizations, never dummy in prod."""
    j = cfg.jupyterhub
    if not j.enabled:
        return [], []
    key = "ekstrain:jupyterhub"
    a = j.auth
    out = []
    if a.type == "dummy" and cfg.environment == "prod":
        out.append(
            ConfigIssue(
                f"{key}.auth.type",
                "the dummy authenticator lets anyone with the shared password in; it is not allowed in a prod stack",
                "use type: github (clientId, callbackUrl, allowedOrganizations) or generic-oauth",
            )
        )
    warnings: list[str] = []
    if cfg.jupyterhub_client_secret is None:
        if a.type == "dummy":
            out.append(
                ConfigIssue(
                    "ekstrain:jupyterhubClientSecret",
                    "the dummy authenticator needs a password",
                    "pulumi config set --secret ekstrain:jupyterhubClientSecret <password>",
                )
            )
        else:
            # The hub's pod reads it through a non-optional secretKeyRef; a Secret nobody creates in the same
            # `up` leaves the release waiting until Helm's timeout fails the deploy.
            out.append(
                ConfigIssue(
                    "ekstrain:jupyterhubClientSecret",
                    f"the {a.type} authenticator needs the OAuth app's client secret; the program creates the "
                    "Secret jupyterhub/jupyterhub-oauth from it, and without it the hub never starts",
                    "pulumi config set --secret ekstrain:jupyterhubClientSecret <client secret of the OAuth app>",
                )
            )
    if a.type in ("github", "generic-oauth"):
        missing = [f for f, v in (("clientId", a.client_id), ("callbackUrl", a.callback_url)) if not v]
        if a.type == "generic-oauth":
            missing += [
                f
                for f, v in (
                    ("authorizeUrl", a.authorize_url),
                    ("tokenUrl", a.token_url),
                    ("userdataUrl", a.userdata_url),
                )
                if not v
            ]
        if missing:
            out.append(
                ConfigIssue(
                    f"{key}.auth", f"{a.type} needs {', '.join(missing)}", "set them from your OAuth application"
                )
            )
    if not (a.allowed_users or a.allowed_organizations or a.admin_users):
        out.append(
            ConfigIssue(
                f"{key}.auth.allowedUsers",
                "nobody is listed, so the hub would be open to every account of the identity provider",
                "list allowedUsers or (github) allowedOrganizations",
            )
        )
    if a.allowed_organizations and a.type != "github":
        out.append(
            ConfigIssue(
                f"{key}.auth.allowedOrganizations",
                "only the github authenticator has organizations",
                "use allowedUsers",
            )
        )
    if any(ipaddress.IPv4Network(c).prefixlen == 0 for c in j.allowed_cidrs):
        out.append(
            ConfigIssue(
                f"{key}.allowedCidrs",
                "0.0.0.0/0 opens the hub's load balancer to every address that reaches the VPC",
                "list the VPC, VPN or office CIDRs",
            )
        )
    names_ = {p.name for p in cfg.partitions}
    unknown = sorted(set(j.profiles) - names_)
    if unknown:
        out.append(ConfigIssue(f"{key}.profiles", f"{unknown} are not partitions", f"use some of {sorted(names_)}"))
    out += _notebook_fit(cfg, key)
    if not cfg.partitions:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "there are no partitions to offer as profiles",
                "add a partition or disable JupyterHub",
            )
        )
    if not cfg.storage.efs.enabled:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "user homes live on EFS but ekstrain:storage.efs.enabled is false",
                "set ekstrain:storage.efs.enabled: true",
            )
        )
    if not cfg.storage.fsx.enabled:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "notebooks mount the training FSx read-only but ekstrain:storage.fsx.enabled is false",
                "set ekstrain:storage.fsx.enabled: true",
            )
        )
    return out, warnings


def _versions(cfg: StackConfig) -> list[ConfigIssue]:
    out = []
    # Pinned add-ons against the cluster's Kubernetes version (ekstrain/versions.py ADDON_COMPATIBILITY and the
    # source of each bound in ADDON_SOURCES; add-ons without a citable table are left to EKS).
    for name, pin in sorted(cfg.versions.addons.items()):
        problem = versions.addon_problem(name, pin, cfg.cluster.kubernetes_version)
        if problem:
            out.append(ConfigIssue(f"ekstrain:versions.addons.{name}", *problem))
    cni = cfg.versions.addon("vpc-cni")
    if cni and any(p.efa for p in cfg.partitions):
        try:
            parsed = versions.parse_semver(cni)
        except ValueError:
            parsed = None
        if parsed is None or parsed < versions.MIN_VPC_CNI_FOR_EFA_ONLY:
            out.append(
                ConfigIssue(
                    "ekstrain:versions.addons.vpc-cni",
                    f"{cni} cannot attach efa-only interfaces (needs v1.18.4 or later)",
                    f"use {versions.DEFAULT_ADDON_VERSIONS['vpc-cni']}",
                )
            )
    return out


def _kms_keys(cfg: StackConfig) -> list[ConfigIssue]:
    """KMS keys are regional and partitioned: a key elsewhere fails at create time."""
    st = cfg.storage
    out = []
    for key, arn in (
        ("buckets.kmsKeyArn", st.buckets.kms_key_arn),
        ("fsx.kmsKeyArn", st.fsx.kms_key_arn),
        ("efs.kmsKeyArn", st.efs.kms_key_arn),
    ):
        if arn is None:
            continue
        if not arn.startswith("arn:aws:"):
            out.append(
                ConfigIssue(
                    f"ekstrain:storage.{key}",
                    f"{arn} is not in the aws partition",
                    "use a key of the aws partition (arn:aws:kms:...)",
                )
            )
        elif kms_key_region(arn) != cfg.region:
            out.append(
                ConfigIssue(
                    f"ekstrain:storage.{key}",
                    f"the key is in {kms_key_region(arn)}, the stack in {cfg.region}",
                    f"use a KMS key created in {cfg.region}",
                )
            )
    return out


def _limits(cfg: StackConfig, today: dt.date) -> list[ConfigIssue]:
    """Service limits across sections (stacks/limits.py names the source of each number)."""
    out: list[ConfigIssue] = []
    c = cfg.cluster
    partition = regions.partition(cfg.region)
    if "_" in c.name and not (cfg.storage.buckets.datasets_bucket and cfg.storage.buckets.checkpoints_bucket):
        out.append(
            ConfigIssue(
                "ekstrain:cluster.name",
                f"{c.name!r} has an underscore: EKS accepts it, but the generated S3 bucket names start with the "
                "cluster name and S3 refuses underscores",
                "use hyphens, or set both storage.buckets.datasetsBucket and checkpointsBucket",
            )
        )
    bad_sg = [g for g in c.deploy_security_group_ids if not limits.SECURITY_GROUP_ID.fullmatch(g)]
    if bad_sg:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.deploySecurityGroupIds",
                f"{[g[:40] for g in bad_sg]} are not security group ids (sg- and 8 or 17 lowercase hex digits)",
                "use ids of the form sg-0123456789abcdef0",
            )
        )
    for i, access in enumerate(c.admin_access):
        arn = access.principal_arn
        key = f"ekstrain:cluster.adminAccess[{i}].principalArn"
        if arn.split(":")[1] != partition:
            out.append(
                ConfigIssue(
                    key,
                    f"the principal is in the {arn.split(':')[1]} partition, the stack's region "
                    f"{cfg.region} in {partition}",
                    f"use an IAM role or user of the {partition} partition (arn:{partition}:iam::...)",
                )
            )
        elif not _IAM_PRINCIPAL.fullmatch(arn):
            out.append(
                ConfigIssue(
                    key,
                    f"{arn[:80]!r} is not an IAM role or user ARN (EKS access entries refuse STS session ARNs; IAM "
                    "names are 1-64 of letters, digits and +=,.@_-, under an optional /path/)",
                    "use the role's ARN: arn:aws:iam::<account>:role/<name>",
                )
            )
    if len(c.public_access_cidrs) > limits.EKS_PUBLIC_ACCESS_CIDRS_MAX:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.publicAccessCidrs",
                f"{len(c.public_access_cidrs)} CIDRs are more than EKS's "
                f"{limits.EKS_PUBLIC_ACCESS_CIDRS_MAX} per cluster",
                "merge them into fewer, larger ranges",
            )
        )
    out += _cluster_sg_rules(cfg)
    for i, part in enumerate(cfg.partitions):
        seconds = limits.duration_seconds(part.effective_consolidate_after)
        if seconds is not None and seconds > limits.GO_DURATION_MAX_SECONDS:
            out.append(
                ConfigIssue(
                    _p(i, part, "consolidateAfter"),
                    f"{part.effective_consolidate_after[:40]!r} is longer than a Go time.Duration holds "
                    "(about 292 years), so Karpenter cannot parse it",
                    "use a duration such as 720h, or Never",
                )
            )
        cr = part.capacity_reservation
        if cr is not None:
            terms = len(cr.ids) + (1 if cr.tags else 0)
            if terms > limits.CAPACITY_RESERVATION_TERMS_MAX:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.ids"),
                        f"{terms} capacity reservation selector terms are more than Karpenter's EC2NodeClass "
                        f"accepts ({limits.CAPACITY_RESERVATION_TERMS_MAX}: one per id, one for the tags)",
                        "select the reservations by tags instead of listing ids",
                    )
                )
            if len(cr.tags) > limits.CAPACITY_RESERVATION_TAGS_MAX:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.tags"),
                        f"{len(cr.tags)} tags are more than a Karpenter capacity reservation selector term holds "
                        f"({limits.CAPACITY_RESERVATION_TAGS_MAX})",
                        f"select with at most {limits.CAPACITY_RESERVATION_TAGS_MAX} tags",
                    )
                )
            empty = [k for k, v in cr.tags.items() if not k or not v]
            if empty:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.tags"),
                        f"{empty} have an empty key or value, which Karpenter's selector refuses",
                        "give every selector tag a key and a value",
                    )
                )
    for name, weight in sorted(cfg.schedulers.volcano.queue_weights.items()):
        if weight > limits.VOLCANO_QUEUE_WEIGHT_MAX:
            out.append(
                ConfigIssue(
                    f"ekstrain:schedulers.volcano.queueWeights.{name}",
                    f"{weight} is above the Volcano Queue's maximum weight {limits.VOLCANO_QUEUE_WEIGHT_MAX}",
                    f"use 1..{limits.VOLCANO_QUEUE_WEIGHT_MAX} (weights are relative)",
                )
            )
    obs = cfg.observability
    if obs.enabled and obs.storage_gib is None:
        gib = prometheus_sizing.prometheus_storage_gib(
            obs.retention_days,
            obs.scrape_interval_seconds,
            sum(p.max_nodes for p in cfg.partitions),
            c.system_node_group.max_size,
        )
        if gib > limits.EBS_GP3_MAX_GIB:
            out.append(
                ConfigIssue(
                    "ekstrain:observability.retentionDays",
                    f"{obs.retention_days} days of samples every {obs.scrape_interval_seconds} s from every node at "
                    f"maxNodes need a {gib:,} GiB Prometheus volume, beyond the largest gp3 volume "
                    f"({limits.EBS_GP3_MAX_GIB:,} GiB)",
                    "lower retentionDays (keep history in AMP: observability.amp.enabled) or raise "
                    "scrapeIntervalSeconds",
                )
            )
    out += _oauth_urls(cfg)
    out += _tag_budget(cfg)
    released = versions.ami_release_date(cfg.versions.ami_alias_version)
    if released is not None and released > today:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {cfg.versions.ami_alias_version} is dated after today ({today}): no such release exists",
                f"use a published release such as {versions.AMI_ALIAS_VERSIONS[cfg.cluster.kubernetes_version]}",
            )
        )
    return out


def cluster_sg_inbound_rules(cfg: StackConfig) -> dict[str, int]:
    """Inbound IPv4 rules of the EKS cluster security group, by the key that causes them.

    Every node carries that group (system node group and Karpenter EC2NodeClasses), and it is the one tagged
    ``kubernetes.io/cluster/<name>``, so it receives: EKS's own rule, one 443 rule per deploy CIDR or deploy
    security group (components/cluster.py), and the rules the cloud provider adds for each internal NLB
    (the Slurm login node's port 22 when loginSsh is on, JupyterHub's proxy on port 80), each NLB in one
    private subnet per availability zone (stacks/limits.py, nlb_node_rules)."""
    c, s, hub = cfg.cluster, cfg.schedulers.slurm, cfg.jupyterhub
    zones = len(cfg.network.availability_zones)
    rules = {
        "EKS's own rule": limits.EKS_CLUSTER_SG_DEFAULT_INBOUND,
        "ekstrain:cluster.deployCidrs": len(c.deploy_cidrs) + len(c.deploy_security_group_ids),
    }
    if s.enabled and s.login_ssh:
        rules["ekstrain:schedulers.slurm.loginAllowedCidrs"] = limits.nlb_node_rules(
            len(s.login_allowed_cidrs) or 1, ports=1, subnets=zones
        )
    if hub.enabled:
        rules["ekstrain:jupyterhub.allowedCidrs"] = limits.nlb_node_rules(
            len(hub.allowed_cidrs) or 1, ports=1, subnets=zones
        )
    return rules


def _cluster_sg_rules(cfg: StackConfig) -> list[ConfigIssue]:
    rules = cluster_sg_inbound_rules(cfg)
    total = sum(rules.values())
    if total <= limits.SG_INBOUND_RULES_MAX:
        return []
    key = max((k for k in rules if k.startswith("ekstrain:")), key=lambda k: rules[k])
    parts = ", ".join(f"{n} {k.removeprefix('ekstrain:')}" for k, n in rules.items())
    return [
        ConfigIssue(
            key,
            f"the EKS cluster security group would hold {total} inbound rules ({parts}), more than the "
            f'{limits.SG_INBOUND_RULES_MAX} a group holds (VPC quota "Inbound or outbound rules per security '
            'group"; each NLB source range costs 2 rules, plus one health-check rule per zone)',
            f"merge the CIDRs into fewer, larger ranges (at most {limits.SG_INBOUND_RULES_MAX} rules in all)",
        )
    ]


def _oauth_urls(cfg: StackConfig) -> list[ConfigIssue]:
    """OAuth endpoints and the callback carry codes and tokens: https only, with a host."""
    a = cfg.jupyterhub.auth
    out: list[ConfigIssue] = []
    if not cfg.jupyterhub.enabled:
        return out
    for field, url in (
        ("callbackUrl", a.callback_url),
        ("authorizeUrl", a.authorize_url),
        ("tokenUrl", a.token_url),
        ("userdataUrl", a.userdata_url),
    ):
        if url is not None and not _HTTPS_URL.fullmatch(url):
            out.append(
                ConfigIssue(
                    f"ekstrain:jupyterhub.auth.{field}",
                    f"{url[:80]!r} is not an https:// URL with a host (OAuth codes and tokens would travel in clear "
                    "or to no server)",
                    "write it like https://hub.example.com/hub/oauth_callback",
                )
            )
    return out


# IAM CreateRole/CreateUser: Path "(/)|(/[!-~]+/)" up to 512, RoleName/UserName "[\\w+=,.@-]+" of 1-64.
_IAM_PRINCIPAL = re.compile(r"arn:aws:iam::[0-9]{12}:(role|user)(/|/[!-~]{1,510}/)[\w+=,.@-]{1,64}", re.ASCII)
_HTTPS_URL = re.compile(r"https://[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?(/[\x21-\x7e]*)?")


def _tag_budget(cfg: StackConfig) -> list[ConfigIssue]:
    """User tags plus aws:defaultTags within AWS's 50 with the program's, and no key equal to another but for case
    (IAM tag keys are case-insensitive: CreateRole refuses the pair)."""
    own = dict(cfg.tags)
    default = dict(cfg.default_tags.tags) if cfg.default_tags else {}
    out = []
    reserved = {k.lower(): k for k in (*PROGRAM_TAG_KEYS, "Name")}
    for where, tags in (("ekstrain:tags", own), ("aws:defaultTags.tags", default)):
        for key in tags:
            if key.lower() in reserved and key != reserved[key.lower()]:
                out.append(
                    ConfigIssue(
                        f"{where}.{key}",
                        f"{key!r} differs from the program's tag {reserved[key.lower()]!r} only in case; IAM treats "
                        "tag keys case-insensitively and refuses the pair",
                        "use another key such as team:owner",
                    )
                )
    for key in default:
        if key.lower().startswith("aws:"):
            out.append(
                ConfigIssue(
                    f"aws:defaultTags.tags.{key}",
                    f"tag key {key!r} uses the aws: prefix that AWS reserves",
                    "drop the prefix",
                )
            )
    lowered: dict[str, str] = {}
    for key in [*own, *default]:
        if key.lower() in lowered and lowered[key.lower()] != key:
            out.append(
                ConfigIssue(
                    f"aws:defaultTags.tags.{key}",
                    f"{key!r} and {lowered[key.lower()]!r} differ only in case; IAM refuses the pair",
                    "keep one spelling",
                )
            )
        lowered.setdefault(key.lower(), key)
    # The program's own tags on this stack's most-tagged resource (an instance: fewer without cost tags).
    program = program_tag_count(cfg.cost.enabled, bool(cfg.partitions))
    total = len(set(own) | set(default)) + program
    if total > limits.AWS_MAX_TAGS:
        out.append(
            ConfigIssue(
                "aws:defaultTags.tags" if default else "ekstrain:tags",
                f"ekstrain:tags ({len(own)}) and aws:defaultTags ({len(default)}) with the program's "
                f"{program} make {total} tags per resource, more than AWS's {limits.AWS_MAX_TAGS}",
                f"keep at most {limits.AWS_MAX_TAGS - program} distinct user and default tags",
            )
        )
    return out


# ---- names the program derives, and what a partition's standing pods need ---------------------------------------

VOLCANO_BUILTIN_QUEUES = ("root", "default")
"""Queues Volcano creates itself (volcano v1.15.1 installer: the ``default`` queue, and ``root`` of the hierarchy)."""
QUEUE_NAME_MAX = 63
"""A queue's name is also the value of the ``volcano.sh/queue-name`` annotation's selectors and of the
``ekstrain.io/queue`` label on every pod (Kubernetes label values: at most 63 characters, a DNS-1123 label)."""
_DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def derived_queue_names(cfg: StackConfig) -> list[tuple[str, str]]:
    """Every Volcano queue the program registers, as (name, what it is): one per partition and, in a partition a
    team names, ``<partition>-<team>`` per team and ``<partition>-shared`` (assembly/schedulers/teams.py)."""
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        out.append((part.name, f"partition {part.name}'s queue"))
        named = [t.name for t in teams if part.name in t.guarantees]
        for team in named:
            out.append((f"{part.name}-{team}", f"team {team}'s queue in {part.name}"))
        if named:
            out.append((f"{part.name}-shared", f"the shared queue of {part.name}"))
    return out


def _derived_queue_names(cfg: StackConfig) -> list[ConfigIssue]:
    """Two queues of one name would be two resources of one URN (a traceback at registration) and one Queue
    object in the cluster; a name that is no DNS-1123 label fails the label that carries it."""
    if not cfg.schedulers.volcano.enabled:
        return []
    key = "ekstrain:schedulers.volcano.teams" if cfg.schedulers.volcano.teams else "ekstrain:partitions"
    out: list[ConfigIssue] = []
    seen: dict[str, str] = {}
    for name, what in derived_queue_names(cfg):
        if name in VOLCANO_BUILTIN_QUEUES:
            out.append(ConfigIssue(key, f"{what} would be {name!r}, Volcano's built-in queue", "rename it"))
        elif name in seen and seen[name] != what:
            out.append(
                ConfigIssue(
                    key,
                    f"{what} and {seen[name]} would both be the Volcano queue {name!r}",
                    "rename the team or the partition so that every <partition>, <partition>-<team> and "
                    "<partition>-shared differs",
                )
            )
        elif len(name) > QUEUE_NAME_MAX or not _DNS_1123_LABEL.fullmatch(name):
            out.append(
                ConfigIssue(
                    key,
                    f"{what} would be {name[:80]!r} ({len(name)} characters), not a DNS-1123 label of at most "
                    f"{QUEUE_NAME_MAX}",
                    "shorten the partition or team name",
                )
            )
        seen.setdefault(name, what)
    return out


def _slurmd_room(cfg: StackConfig) -> list[ConfigIssue]:
    """Slurm's standing slurmd pods (nodesetReplicas, one whole node each) run in the partition's shared queue,
    which gets only the nodes no team is guaranteed: guarantees plus standing pods must fit in maxNodes, or the
    NodeSet's pods stay pending forever (Volcano capacity plugin: a guarantee is never lent, capacity.go)."""
    if not (cfg.schedulers.slurm.enabled and cfg.schedulers.volcano.enabled):
        return []
    out = []
    teams = cfg.schedulers.volcano.teams
    for part in cfg.partitions:
        guaranteed = sum(t.guarantees.get(part.name, 0) for t in teams)
        standing = cfg.schedulers.slurm.nodeset_replicas.get(part.name, part.min_nodes)
        if guaranteed and standing and guaranteed + standing > part.max_nodes:
            out.append(
                ConfigIssue(
                    f"ekstrain:schedulers.slurm.nodesetReplicas.{part.name}",
                    f"{standing} standing slurmd pods (one node each) and the teams' {guaranteed} guaranteed nodes "
                    f"need {guaranteed + standing} nodes, more than {part.name}'s maxNodes {part.max_nodes}: the "
                    f"pods wait in {part.name}-shared for nodes the guarantees never lend",
                    f"lower nodesetReplicas.{part.name} to {max(part.max_nodes - guaranteed, 0)} or less, lower the "
                    "guarantees, or raise maxNodes",
                )
            )
    return out


CAPACITY_BLOCK_INSTANCE_TYPES = frozenset(
    {
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.4xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
        "p6e-gb200.36xlarge",
        "trn1.32xlarge",
        "trn2.48xlarge",
    }
)
"""Instance types EC2 sells as Capacity Blocks for ML: EC2 User Guide "Capacity Blocks for ML", Supported instance
types and Regions (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html: p4d, p5, p5e,
p5en, trn1, trn2), with the later p4de, p5.4xlarge, p6-b200 and p6e-gb200 of the same offering (SageMaker API
ReservedCapacityInstanceType, botocore 2025-06) and p6-b300 (AWS PCS User Guide, "Using Amazon EC2 Capacity Blocks
for ML": P6-B300, P6-B200, P5en, P5e, P5, P4d)."""


def _capacity_block_types(cfg: StackConfig) -> list[ConfigIssue]:
    out = []
    for i, part in enumerate(cfg.partitions):
        if not part.capacity_block:
            continue
        for j, name in enumerate(part.instance_types):
            if name not in CAPACITY_BLOCK_INSTANCE_TYPES:
                out.append(
                    ConfigIssue(
                        _p(i, part, f"instanceTypes[{j}]"),
                        f"{name} is not sold as an EC2 Capacity Block, so no block can hold this partition's nodes",
                        f"use a Capacity Block type ({', '.join(sorted(CAPACITY_BLOCK_INSTANCE_TYPES))}), or "
                        "capacityReservation.type: default for an On-Demand Capacity Reservation",
                    )
                )
    return out


def names_and_room(cfg: StackConfig) -> list[ConfigIssue]:
    """The derived queue names, the Capacity Block types and the standing slurmd pods' room (one entry for check)."""
    return _derived_queue_names(cfg) + _capacity_block_types(cfg) + _slurmd_room(cfg)
