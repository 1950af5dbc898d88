"""The cluster: access entries, endpoint, the cluster security group's rules.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

import ipaddress

from ekstrain.facts import catalog
from ekstrain.stacks import limits
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.cluster import ClusterConfig
from ekstrain.stacks.rules.network import DOCUMENTATION_NETWORKS, _allow_list


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
