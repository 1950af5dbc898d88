"""EFS for shared model weights: encrypted, one mount target per AZ, an access point for models.

EFS allows one mount target per Availability Zone, so targets go in the private subnets (one per
AZ). Training nodes in the EFA subnet use the mount target of their AZ (the training AZ always has
a private subnet too): traffic inside a VPC is routed locally, and efs-utils resolves the
AZ-specific mount-target name, not a subnet one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from ekstrain.components import args as ac
from ekstrain.components import iam

NFS_PORT = 2049


@dataclass(frozen=True, kw_only=True)
class EfsArgs:
    cluster_name: str
    """Required. The EKS cluster's name (resource names and tags)."""
    vpc_id: pulumi.Input[str]
    """Required. The VPC of the mount targets' security group."""
    private_subnet_ids: pulumi.Input[list[str]]
    """Required. One private subnet per AZ (Network.private_subnet_ids)."""
    availability_zones: Sequence[str]
    """Required. The AZs of ``private_subnet_ids``, in the same order; known from config, the ids are not at preview."""
    client_security_group_id: pulumi.Input[str]
    """Required. SG every node carries (the EKS cluster SG): the only source allowed to NFS."""
    throughput_mode: Literal["elastic", "bursting"] = "elastic"
    """@default elastic."""
    kms_key_arn: str | None = None
    """@default a dedicated rotated key."""
    posix_uid: int = 1000
    """@default 1000."""
    posix_gid: int = 1000
    """@default 1000."""
    models_path: str = "/models"
    """@default /models: root of the model-store access point (created with posix_uid/gid, mode 0775)."""
    protect: bool = True
    """@default true: file system, access point and key are protected and retained on delete."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the file system, key, security group and access point."""

    def __post_init__(self) -> None:
        a = "EfsArgs"
        ac.cluster_name(f"{a}.cluster_name", self.cluster_name)
        ac.one_of(f"{a}.throughput_mode", self.throughput_mode, ("elastic", "bursting"))
        ac.check(
            bool(list(self.availability_zones)), f"{a}.availability_zones", [], "empty", "list the AZs of the subnets"
        )
        for name in ("posix_uid", "posix_gid"):
            ac.positive_int(f"{a}.{name}", getattr(self, name), "give a POSIX id (1000 is the default)", minimum=0)
        ac.check(
            self.models_path.startswith("/") and self.models_path != "/",
            f"{a}.models_path",
            self.models_path,
            "not an absolute directory below the file system's root",
            "give a path such as /models",
        )


class ModelStore(pulumi.ComponentResource):
    file_system_id: pulumi.Output[str]
    """EFS file system id."""
    access_point_id: pulumi.Output[str]
    """Access point id of ``models_path``."""
    security_group_id: pulumi.Output[str]
    """Security group of the mount targets (NFS from the client group only)."""
    mount_targets: list[aws.efs.MountTarget]
    """One mount target per AZ (depend on them before mounting)."""

    def __init__(self, name: str, args: EfsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:Efs", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        tags = dict(args.tags)

        kms_key_id: pulumi.Input[str]
        if args.kms_key_arn:
            kms_key_id = args.kms_key_arn
        else:
            key, _ = iam.customer_key(
                f"{name}-key",
                f"EFS model store of {args.cluster_name}",
                tags,
                child,
                alias=f"{args.cluster_name}-efs",
                policy=iam.account_key_document,
                key_opts=kept,
            )
            kms_key_id = key.arn

        fs = aws.efs.FileSystem(
            name,
            encrypted=True,
            kms_key_id=kms_key_id,
            throughput_mode=args.throughput_mode,
            performance_mode="generalPurpose",
            # Weights are read far more often than written: infrequent-access tiering would slow loads.
            tags={**tags, "Name": f"{args.cluster_name}-models"},
            opts=kept,
        )

        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            name=f"{args.cluster_name}-efs",
            description="EFS mount targets: NFS from cluster nodes",
            tags={**tags, "Name": f"{args.cluster_name}-efs"},
            # description is replace-on-change and the name is fixed: an edited description must not replace it.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["description"]),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-nfs",
            security_group_id=sg.id,
            ip_protocol="tcp",
            from_port=NFS_PORT,
            to_port=NFS_PORT,
            referenced_security_group_id=args.client_security_group_id,
            description="NFS from cluster nodes",
            tags=tags,
            opts=child,
        )

        subnets = pulumi.Output.from_input(args.private_subnet_ids)

        def subnet(index: int) -> pulumi.Output[str]:
            return subnets.apply(lambda ids: ids[index])

        # Keyed by AZ (EFS allows one mount target per AZ): removing or reordering an AZ touches only its
        # own target. The alias adopts the state of the position-keyed name (`-mt-<i>`) earlier versions used.
        self.mount_targets = [
            aws.efs.MountTarget(
                f"{name}-mt-{az}",
                file_system_id=fs.id,
                subnet_id=subnet(i),
                security_groups=[sg.id],
                opts=pulumi.ResourceOptions(parent=self, aliases=[pulumi.Alias(name=f"{name}-mt-{i}")]),
            )
            for i, az in enumerate(args.availability_zones)
        ]

        ap = aws.efs.AccessPoint(
            f"{name}-models",
            file_system_id=fs.id,
            posix_user={"uid": args.posix_uid, "gid": args.posix_gid},
            root_directory={
                "path": args.models_path,
                "creation_info": {"owner_uid": args.posix_uid, "owner_gid": args.posix_gid, "permissions": "0775"},
            },
            tags={**tags, "Name": f"{args.cluster_name}-models"},
            opts=kept,
        )

        self.file_system_id = fs.id
        self.access_point_id = ap.id
        self.security_group_id = sg.id
        self.register_outputs(
            {
                "fileSystemId": self.file_system_id,
                "accessPointId": self.access_point_id,
                "securityGroupId": self.security_group_id,
            }
        )
