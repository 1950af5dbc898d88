"""Limits of the services a stack feeds, each with its source: what AWS, Karpenter, Volcano or Go would refuse.

The rules in ``stacks/rules.py`` (``_limits``) compare the config with these; every number here is quoted
from the document or schema named next to it (versions as pinned in ``ekstrain/versions.py``).
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

# Karpenter v1.14.1 EC2NodeClass CRD (crds/karpenter.k8s.aws/ec2nodeclass.yaml):
# spec.capacityReservationSelectorTerms maxItems 30, each term's tags maxProperties 20 (non-empty keys/values).
CAPACITY_RESERVATION_TERMS_MAX = 30
CAPACITY_RESERVATION_TAGS_MAX = 20

# Volcano v1.15.1 Queue CRD (crds/scheduling.volcano.sh, spec.weight): minimum 1, maximum 65535.
VOLCANO_QUEUE_WEIGHT_MAX = 65535

# Amazon EKS service quotas: "Public endpoint access CIDR ranges per cluster" 40, not adjustable
# (CreateCluster/UpdateClusterConfig resourcesVpcConfig.publicAccessCidrs).
EKS_PUBLIC_ACCESS_CIDRS_MAX = 40

# Amazon VPC quotas: 60 inbound rules per security group (default, "Inbound or outbound rules per security
# group"); one rule per CIDR and port. The platform adds its own rules to the groups these lists open.
SG_INBOUND_RULES_MAX = 60
SG_RULES_PLATFORM_RESERVE = 10
"""Rules the program or the load balancer controller add to the same group (health checks, node access)."""
SG_CIDR_RULES_MAX = SG_INBOUND_RULES_MAX - SG_RULES_PLATFORM_RESERVE

# EBS gp3: 1 GiB to 16 TiB per volume (Amazon EBS User Guide, "Amazon EBS volume types", gp3).
EBS_GP3_MAX_GIB = 16384

# IAM and AWS tagging: tag keys are case-insensitive for IAM ("you can't create tags that differ only in
# case") and 50 user tags per resource (Tagging AWS resources, "Tag quotas").
AWS_MAX_TAGS = 50

# Kubernetes version skew policy (kubernetes.io/releases/version-skew-policy): kube-proxy must not be newer
# than kube-apiserver and may be up to three minor versions older.
KUBE_PROXY_MAX_SKEW = 3
