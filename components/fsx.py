"""FSx for Lustre in the training AZ's EFA subnet, linked to S3 by two data repository associations.

- ``/data`` <- datasets bucket: metadata imported when the association is created, then kept in sync
  with the configured auto-import events; file contents load lazily on first read.
- ``/checkpoints`` -> checkpoints bucket: files written there are exported asynchronously with the
  configured auto-export events; existing checkpoints' metadata is imported on creation so a
  re-created file system can resume from them.

DRAs (with auto-import and auto-export) work on PERSISTENT_2 and on SCRATCH_2 with Lustre 2.12+
(AWS: "aren't available on FSx for Lustre 2.10 file systems or Scratch 1 file systems"); Lustre
2.15 is pinned. Customer KMS keys, backups and a final backup exist for PERSISTENT_2 only.
The FSx service-linked role (created by FSx per file system) reads and writes the buckets; no
bucket policy grant is needed in the same account.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_aws as aws

from ekstrain.components import args as ac
from ekstrain.components import iam
from ekstrain.components.logs import log_group_key
from ekstrain.contracts import kinds
from ekstrain.layout import storage_sizing

DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"

LUSTRE_VERSION = "2.15"
LUSTRE_PORTS: tuple[tuple[int, int], ...] = ((988, 988), (1018, 1023))
"""TCP ports Lustre servers and clients use (LNet 988, and 1018-1023)."""
LOG_LEVEL = "WARN_ERROR"


@dataclass(frozen=True, kw_only=True)
class LustreArgs:
    cluster_name: str
    """Required. The EKS cluster's name (resource names and tags)."""
    vpc_id: pulumi.Input[str]
    """Required. The VPC of the file system's security group."""
    subnet_id: pulumi.Input[str]
    """Required. The EFA subnet: single-AZ file system next to the training nodes."""
    client_security_group_id: pulumi.Input[str]
    """Required. SG every client node carries (the EKS cluster SG); Lustre ports are opened both ways with it."""
    datasets_bucket: pulumi.Input[str]
    """Required. S3 bucket linked at ``data_path`` (``TrainingBuckets.datasets_bucket``)."""
    checkpoints_bucket: pulumi.Input[str]
    """Required. S3 bucket linked at ``checkpoint_path`` (``TrainingBuckets.checkpoints_bucket``)."""
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "PERSISTENT_2"
    """@default PERSISTENT_2."""
    storage_capacity_gib: int = 1200
    """@default 1200."""
    per_unit_storage_throughput: int | None = 250
    """@default 250 MB/s/TiB; ignored for SCRATCH_2."""
    kms_key_arn: str | None = None
    """@default a dedicated rotated key for PERSISTENT_2; SCRATCH_2 uses the FSx-managed key."""
    data_path: str = "/data"
    """@default /data."""
    checkpoint_path: str = "/checkpoints"
    """@default /checkpoints."""
    auto_import_events: Sequence[str] = ("NEW", "CHANGED", "DELETED")
    """@default all three: S3 changes under the datasets bucket appear under data_path."""
    auto_export_events: Sequence[str] = ("NEW", "CHANGED", "DELETED")
    """@default all three: changes under checkpoint_path are exported to the checkpoints bucket."""
    imported_file_chunk_size_mib: int = 1024
    """@default 1024."""
    log_retention_days: int = 30
    """@default 30."""
    protect: bool = True
    """@default true: file system, associations and key are protected and retained on delete."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the file system, key, security group and log group."""

    def __post_init__(self) -> None:
        a = "LustreArgs"
        ac.cluster_name(f"{a}.cluster_name", self.cluster_name)
        ac.one_of(f"{a}.deployment_type", self.deployment_type, ("SCRATCH_2", "PERSISTENT_2"))
        cap = self.storage_capacity_gib
        ac.check(
            isinstance(cap, int) and storage_sizing.valid_capacity(cap),
            f"{a}.storage_capacity_gib",
            cap,
            "not a Lustre SSD capacity",
            "use 1200 or a multiple of 2400 GiB",
        )
        ac.one_of(f"{a}.log_retention_days", self.log_retention_days, ac.LOG_RETENTION_DAYS)
        for name in ("data_path", "checkpoint_path"):
            path = getattr(self, name)
            ac.check(
                isinstance(path, str) and path.startswith("/") and path != "/",
                f"{a}.{name}",
                path,
                "not an absolute directory of the file system",
                "give a path such as /data",
            )
        for name in ("auto_import_events", "auto_export_events"):
            events = list(getattr(self, name))
            unknown = [e for e in events if e not in ("NEW", "CHANGED", "DELETED")]
            ac.check(not unknown, f"{a}.{name}", events, f"unknown events {unknown}", "use NEW, CHANGED, DELETED")


class LustreStorage(pulumi.ComponentResource):
    file_system_id: pulumi.Output[str]
    """FSx for Lustre file system id."""
    arn: pulumi.Output[str]
    """Its ARN."""
    dns_name: pulumi.Output[str]
    """Its DNS name (mount source)."""
    mount_name: pulumi.Output[str]
    """Its Lustre mount name."""
    security_group_id: pulumi.Output[str]
    """The file system's security group (Lustre ports with the client group)."""
    storage_capacity_gib: int
    """Storage capacity in GiB (``LustreArgs.storage_capacity_gib``)."""

    def __init__(self, name: str, args: LustreArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:Lustre", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        tags = dict(args.tags)
        persistent = args.deployment_type.startswith("PERSISTENT")

        sg = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            name=f"{args.cluster_name}-lustre",
            description="FSx for Lustre: LNet ports between file servers and client nodes",
            tags={**tags, "Name": f"{args.cluster_name}-lustre"},
            # description is replace-on-change and the name is fixed: an edited description must not replace it.
            # A retained file system keeps its network interfaces in this group: retain the group with it.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["description"], retain_on_delete=args.protect),
        )
        # Lustre servers talk to each other and to clients in both directions, and the rules must
        # exist before the file system is created (later changes do not reach its servers).
        rules: list[pulumi.Resource] = []
        peers = {"self": sg.id, "clients": args.client_security_group_id}
        for low, high in LUSTRE_PORTS:
            ports = f"{low}" if low == high else f"{low}-{high}"
            for peer, peer_id in peers.items():
                rules.append(
                    aws.vpc.SecurityGroupIngressRule(
                        f"{name}-in-{peer}-{ports}",
                        security_group_id=sg.id,
                        ip_protocol="tcp",
                        from_port=low,
                        to_port=high,
                        referenced_security_group_id=peer_id,
                        description=f"Lustre {ports} from {peer}",
                        tags=tags,
                        opts=child,
                    )
                )
                rules.append(
                    aws.vpc.SecurityGroupEgressRule(
                        f"{name}-out-{peer}-{ports}",
                        security_group_id=sg.id,
                        ip_protocol="tcp",
                        from_port=low,
                        to_port=high,
                        referenced_security_group_id=peer_id,
                        description=f"Lustre {ports} to {peer}",
                        tags=tags,
                        opts=child,
                    )
                )
            # Client side: the cluster SG admits only itself, so let the servers reach the clients.
            rules.append(
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-clients-from-lustre-{ports}",
                    security_group_id=args.client_security_group_id,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    referenced_security_group_id=sg.id,
                    description=f"Lustre {ports} from the FSx file servers",
                    tags=tags,
                    opts=child,
                )
            )

        kms_key_id: pulumi.Input[str] | None = None
        if persistent:
            if args.kms_key_arn:
                kms_key_id = args.kms_key_arn
            else:
                key, _ = iam.customer_key(
                    f"{name}-key",
                    f"FSx for Lustre of {args.cluster_name}",
                    tags,
                    child,
                    alias=f"{args.cluster_name}-fsx",
                    policy=iam.account_key_document,
                    key_opts=kept,
                )
                kms_key_id = key.arn

        # FSx only accepts log groups under /aws/fsx/.
        group_name = f"/aws/fsx/{args.cluster_name}-lustre"
        # On a customer managed key like every log group of the stack (components/logs.py).
        log_key, log_key_policy = log_group_key(
            f"{name}-logs", group_name, f"FSx for Lustre logs of {args.cluster_name}", tags, child
        )
        logs = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=group_name,
            kms_key_id=log_key.arn,
            retention_in_days=args.log_retention_days,
            tags=tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[log_key_policy])),
        )

        fs = aws.fsx.LustreFileSystem(
            name,
            deployment_type=args.deployment_type,
            storage_type="SSD",
            storage_capacity=args.storage_capacity_gib,
            per_unit_storage_throughput=args.per_unit_storage_throughput if persistent else None,
            file_system_type_version=LUSTRE_VERSION,
            # pulumi-aws 7 takes the single subnet as a string (FSx for Lustre supports one subnet).
            subnet_ids=args.subnet_id,
            security_group_ids=[sg.id],
            kms_key_id=kms_key_id,
            data_compression_type="LZ4",
            log_configuration={"level": LOG_LEVEL, "destination": logs.arn},
            # Scratch file systems have no backups; persistent ones take a final backup when protected.
            skip_final_backup=None if not persistent else not args.protect,
            copy_tags_to_backups=True if persistent else None,
            tags={**tags, "Name": f"{args.cluster_name}-lustre"},
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=rules, protect=args.protect, retain_on_delete=args.protect
            ),
        )

        # One after the other, each with longer timeouts (ekstrain/contracts/kinds.py): associations created at the
        # same time on one file system end FAILED (terraform-provider-aws#24678), and the provider's 10-minute
        # default runs out while a populated bucket's metadata is imported.
        timeouts = pulumi.CustomTimeouts(
            **{op: v for op, v in kinds.CONTRACTS[DRA].timeouts.items() if op in ("create", "update", "delete")}
        )
        previous: list[pulumi.Resource] = []

        def association(
            suffix: str, path: str, bucket: pulumi.Input[str], s3: aws.fsx.DataRepositoryAssociationS3Args | None
        ) -> None:
            dra = aws.fsx.DataRepositoryAssociation(
                f"{name}-{suffix}",
                file_system_id=fs.id,
                file_system_path=path,
                data_repository_path=pulumi.Output.concat("s3://", bucket),
                batch_import_meta_data_on_create=True,
                imported_file_chunk_size=args.imported_file_chunk_size_mib,
                s3=s3,
                delete_data_in_filesystem=False,
                tags=tags,
                opts=pulumi.ResourceOptions.merge(
                    kept, pulumi.ResourceOptions(depends_on=list(previous), custom_timeouts=timeouts)
                ),
            )
            previous[:] = [dra]

        imports = aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(events=list(args.auto_import_events))
        exports = aws.fsx.DataRepositoryAssociationS3AutoExportPolicyArgs(events=list(args.auto_export_events))
        association(
            "data",
            args.data_path,
            args.datasets_bucket,
            aws.fsx.DataRepositoryAssociationS3Args(auto_import_policy=imports) if args.auto_import_events else None,
        )
        association(
            "checkpoints",
            args.checkpoint_path,
            args.checkpoints_bucket,
            aws.fsx.DataRepositoryAssociationS3Args(auto_export_policy=exports) if args.auto_export_events else None,
        )

        self.file_system_id = fs.id
        self.arn = fs.arn
        self.dns_name = fs.dns_name
        self.mount_name = fs.mount_name
        self.security_group_id = sg.id
        self.storage_capacity_gib = args.storage_capacity_gib
        self.register_outputs(
            {
                "fileSystemId": self.file_system_id,
                "dnsName": self.dns_name,
                "mountName": self.mount_name,
                "securityGroupId": self.security_group_id,
            }
        )
