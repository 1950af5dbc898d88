"""Limits of the services a stack feeds, each with its source: what AWS, Karpenter, Volcano or Go would refuse.

The rules in ``stacks/rules/quotas.py`` (``_limits``) compare the config with these; every number here is quoted
from the document or schema named next to it (versions as pinned in ``ekstrain/facts/versions.py``).
"""

from __future__ import annotations

import re

# Go's time.Duration is an int64 count of nanoseconds (time.ParseDuration returns "invalid duration" past
# it): Karpenter's consolidateAfter/expireAfter are parsed with it.
GO_DURATION_MAX_SECONDS = (2**63 - 1) // 10**9
_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_DURATION_SECONDS = {"h": 3600, "m": 60, "s": 1}


def duration_seconds(text: str) -> int | None:
    """Seconds of a Karpenter duration such as ``1h30m``; None for ``Never``."""
    if text == "Never":
        return None
    return sum(int(n) * _DURATION_SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


# EC2 resource ids: "sg-" and 8 (older) or 17 hex digits (EC2 API reference, "Resource IDs").
SECURITY_GROUP_ID = re.compile(r"sg-([0-9a-f]{8}|[0-9a-f]{17})")
VPC_ID = re.compile(r"vpc-([0-9a-f]{8}|[0-9a-f]{17})")
SUBNET_ID = re.compile(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})")

# Karpenter v1.14.1 EC2NodeClass CRD (crds/karpenter.k8s.aws/ec2nodeclass.yaml):
# spec.capacityReservationSelectorTerms maxItems 30, each term's tags maxProperties 20 (non-empty keys/values).
CAPACITY_RESERVATION_TERMS_MAX = 30
CAPACITY_RESERVATION_TAGS_MAX = 20

# Volcano v1.15.1 Queue CRD (crds/scheduling.volcano.sh, spec.weight): minimum 1, maximum 65535.
VOLCANO_QUEUE_WEIGHT_MAX = 65535

# Amazon EKS User Guide, "View and manage Amazon EKS and Fargate service quotas" (service-quotas.html; source
# awsdocs/amazon-eks-user-guide service-quotas): "Public endpoint access CIDR ranges per cluster", default 40,
# adjustable: No ("these are specified when you create or update the cluster": resourcesVpcConfig.publicAccessCidrs).
EKS_PUBLIC_ACCESS_CIDRS_MAX = 40

# Amazon VPC User Guide, "Amazon VPC quotas", Security groups (amazon-vpc-limits.html; source
# awsdocs/amazon-vpc-user-guide doc_source/amazon-vpc-limits.md): "Inbound or outbound rules per security group",
# default 60: 60 inbound and 60 outbound, enforced separately for IPv4 and IPv6 rules; a rule that references a
# security group counts as one rule for IPv4 and one for IPv6. Adjustable, but (rules per group) x (groups per
# network interface, default 5) may not exceed 1000. The check uses the default.
SG_INBOUND_RULES_MAX = 60

# Amazon EKS User Guide, "View Amazon EKS security group requirements for clusters" (sec-group-reqs.html),
# "Default cluster security group": one inbound rule (all traffic from the group itself; EKS recreates it).
EKS_CLUSTER_SG_DEFAULT_INBOUND = 1


def nlb_node_rules(client_cidrs: int, ports: int, subnets: int) -> int:
    """Inbound rules the in-tree AWS cloud provider (which EKS runs) adds to the nodes' cluster-tagged security
    group for one NLB Service with instance targets (kubernetes/cloud-provider-aws, pkg/providers/v1/
    aws_loadbalancer.go, ``updateInstanceSecurityGroupsForNLB``): a TCP rule per client CIDR per port
    (``loadBalancerSourceRanges``), an ICMP type 3 code 4 rule per client CIDR (path MTU discovery), and a
    health-check rule per NLB subnet CIDR per health-check port (skipped only for one 0.0.0.0/0 client CIDR,
    which the platform never allows)."""
    return client_cidrs * ports + client_cidrs + subnets * ports


# EBS gp3: 1 GiB to 16 TiB per volume (Amazon EBS User Guide, "Amazon EBS volume types", gp3).
EBS_GP3_MAX_GIB = 16384

# IAM and AWS tagging: tag keys are case-insensitive for IAM ("you can't create tags that differ only in
# case") and 50 user tags per resource (Tagging AWS resources, "Tag quotas").
AWS_MAX_TAGS = 50

# Add-on versions per Kubernetes version (kube-proxy's version skew, CoreDNS builds): ekstrain/facts/versions.py
# ADDON_COMPATIBILITY, with the source of each bound in ADDON_SOURCES.
