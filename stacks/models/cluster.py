"""``ekstrain:cluster``: the EKS control plane, access and the system node group."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from ekstrain.facts import versions
from ekstrain.stacks.models.base import IPv4Cidr, Model

LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]
AccessPolicy = Literal["cluster-admin", "admin", "edit", "view"]


ROLE_ARN = r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]+$"


class AdminAccess(Model):
    """An IAM principal granted cluster access through an EKS access entry."""

    principal_arn: str = Field(pattern=r"^arn:aws[a-z-]*:(iam|sts)::\d{12}:(role|user)/.+$")
    """IAM role or user ARN."""
    access_policy: AccessPolicy = "cluster-admin"
    """@default cluster-admin (AmazonEKSClusterAdminPolicy, cluster scope)."""


class SystemNodeGroup(Model):
    """Managed node group for controllers (Karpenter, CoreDNS, operators). Never accelerated."""

    instance_types: list[str] = Field(default_factory=lambda: ["m7i.xlarge"], min_length=1)
    """@default [m7i.xlarge]"""
    min_size: int = Field(default=2, ge=1, le=100)
    """@default 2: controllers keep running through a node replacement."""
    desired_size: int = Field(default=2, ge=1, le=100)
    max_size: int = Field(default=4, ge=1, le=100)
    disk_size_gib: int = Field(default=100, ge=20, le=16384, alias="diskSizeGiB")
    """@default 100 GiB gp3 root volume."""

    @field_validator("instance_types")
    @classmethod
    def _x86(cls, value: list[str]) -> list[str]:
        # The node group's AMI type is AL2023_x86_64_STANDARD (components/cluster.py).
        for name in value:
            match = re.fullmatch(r"[a-z]+\d+(?P<attrs>[a-z-]*)\.[a-z0-9]+", name)
            if match is None:
                raise ValueError(f"{name!r} is not an EC2 instance type name; write it like m7i.xlarge")
            if "g" in match["attrs"] or name.startswith("a1."):
                raise ValueError(
                    f"{name} is a Graviton (arm64) type but the system node group runs the "
                    f"AL2023_x86_64_STANDARD AMI; use an x86_64 type such as m7i.xlarge"
                )
            if name.startswith("mac"):
                raise ValueError(f"{name} is a Mac instance (macOS only, no EKS node AMI); use m7i.xlarge")
        return value


class ClusterConfig(Model):
    name: str = Field(pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
    r"""Physical EKS cluster name (EKS CreateCluster: ``^[0-9A-Za-z][A-Za-z0-9\-_]*``, at most 100); also the
    Karpenter discovery tag value and the SQS queue name. Underscores only with both bucket names set
    (generated S3 bucket names start with it)."""
    kubernetes_version: str = versions.DEFAULT_KUBERNETES_VERSION
    """@default 1.36 (the newest in EKS standard support). Quote it in YAML ("1.30" unquoted is the
    number 1.3). Versions past EKS extended support on the day of validation are refused."""
    endpoint_public_access: bool = False
    """@default false: the API server is reachable only from inside the VPC."""
    public_access_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """Required when endpointPublicAccess is true; 0.0.0.0/0 and documentation ranges are refused."""
    deploy_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """CIDRs of the runners that run `pulumi up` (in the VPC or peered): 443 on the EKS cluster security group.
    Required (or deploySecurityGroupIds) when endpointPublicAccess is false."""
    deploy_security_group_ids: list[str] = Field(default_factory=list)
    """Security groups (sg-...) of the deploy runners: 443 on the EKS cluster security group."""
    admin_access: list[AdminAccess] = Field(default_factory=list)
    """IAM principals given cluster access entries (API authentication mode)."""
    deploy_role_arn: str | None = Field(default=None, pattern=ROLE_ARN)
    """The IAM role that runs `pulumi up` (the workflows' AWS_DEPLOY_ROLE_ARN): a cluster-admin access entry the
    program creates. pulumi-eks always asks EKS to give the cluster's creator an entry of its own
    (bootstrapClusterCreatorAdminPermissions); with this key set the program turns that off, so nothing is
    imported and the first deploy's preview passes. @default none: EKS's entry for the creator stays unmanaged."""
    preview_role_arn: str | None = Field(default=None, pattern=ROLE_ARN)
    """The IAM role of pull-request previews (AWS_PREVIEW_ROLE_ARN): an access entry with ``previewAccessPolicy``.
    @default none: previews cannot read the cluster."""
    preview_access_policy: AccessPolicy = "view"
    """@default view (AmazonEKSViewPolicy). Kubernetes authorizes server-side dry runs as the write they
    simulate, so with ``view`` the real preview diffs AWS resources and reports Kubernetes objects as
    forbidden (``ekstrain diff`` covers them offline); ``edit`` lets it diff them at the cost of write access."""
    bootstrap_access_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """First deploy from outside the VPC (docs/delivery.md, first deploy): while set, the API endpoint is also
    public, limited to these CIDRs (the runner's or laptop's egress address, /32). Remove it once the in-VPC
    runner is up: the next `pulumi up` makes the endpoint private again (an in-place EKS update). @default []."""
    log_types: list[LogType] = Field(
        default_factory=lambda: list[LogType](["api", "audit", "authenticator", "controllerManager", "scheduler"])
    )
    """@default all five control-plane log types."""
    secrets_encryption: bool = True
    """@default true: envelope-encrypt Kubernetes Secrets with a dedicated, rotated KMS key."""
    deletion_protection: bool = True
    """@default true: EKS refuses to delete the cluster until this is turned off."""
    system_node_group: SystemNodeGroup = Field(default_factory=SystemNodeGroup)
    """Managed node group for controllers; never accelerated."""

    @property
    def api_public(self) -> bool:
        """Whether the API endpoint is public: by choice, or while a first deploy runs from outside the VPC."""
        return self.endpoint_public_access or bool(self.bootstrap_access_cidrs)

    @property
    def api_public_cidrs(self) -> list[str]:
        extra = [c for c in self.bootstrap_access_cidrs if c not in self.public_access_cidrs]
        return [*self.public_access_cidrs, *extra]

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _version(cls, value: object) -> object:
        if isinstance(value, float):
            example = versions.DEFAULT_KUBERNETES_VERSION
            raise ValueError(f'got the number {value}; quote the version, e.g. "{example}"')
        if value not in versions.SUPPORTED_KUBERNETES_VERSIONS:
            supported = ", ".join(versions.SUPPORTED_KUBERNETES_VERSIONS)
            raise ValueError(f"{value!r} is not supported; use one of {supported}")
        return value
