"""Training storage, composed from config: buckets, FSx for Lustre, EFS, CSI drivers, volumes.

``build_storage`` (in infra: it reads the config and builds components) is the one call
``infra/program.py`` makes; it maps ``cfg.storage`` onto the
components (each one concern, each in its own module) and returns them, so other components can
depend on the ``training`` namespace (``StorageParts.volumes.namespace``). Disabled pieces
(``fsx.enabled: false``, ``efs.enabled: false``) register nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from ekstrain.components.buckets import BucketsArgs, TrainingBuckets
from ekstrain.components.checkpoints import CheckpointRotation, CheckpointRotationArgs
from ekstrain.components.cluster import Cluster
from ekstrain.components.csi import CsiArgs, CsiDrivers
from ekstrain.components.efs import EfsArgs, ModelStore
from ekstrain.components.fsx import LustreArgs, LustreStorage
from ekstrain.components.network import Network
from ekstrain.components.volumes import SCRATCH_TAG, EfsVolume, FsxScratch, FsxVolume, TrainingVolumes, VolumesArgs
from ekstrain.stacks import loop_rules
from ekstrain.stacks.models import StackConfig


@dataclass(frozen=True)
class StorageParts:
    buckets: TrainingBuckets
    fsx: LustreStorage | None
    efs: ModelStore | None
    csi: CsiDrivers
    volumes: TrainingVolumes


def build_storage(
    cfg: StackConfig, network: Network, cluster: Cluster, extra_tags: dict[str, str] | None = None
) -> StorageParts:
    """``extra_tags``: the cost-allocation tags the file systems carry (stack, team)."""
    st = cfg.storage
    name = cfg.cluster.name
    tags = cfg.common_tags
    buckets = TrainingBuckets(
        "storage",
        BucketsArgs(
            cluster_name=name,
            datasets_bucket=st.buckets.datasets_bucket,
            checkpoints_bucket=st.buckets.checkpoints_bucket,
            noncurrent_version_days=loop_rules.noncurrent_days(cfg),
            abort_incomplete_multipart_days=st.buckets.abort_incomplete_multipart_days,
            kms_key_arn=st.buckets.kms_key_arn,
            protect=st.protect,
            tags=tags,
        ),
    )

    fsx = None
    if st.fsx.enabled:
        f = st.fsx
        fsx = LustreStorage(
            "fsx",
            LustreArgs(
                cluster_name=name,
                vpc_id=network.vpc_id,
                subnet_id=network.efa_subnet_id,
                client_security_group_id=cluster.cluster_security_group_id,
                datasets_bucket=buckets.datasets_bucket,
                checkpoints_bucket=buckets.checkpoints_bucket,
                deployment_type=f.deployment_type,
                storage_capacity_gib=f.storage_capacity_gib,
                per_unit_storage_throughput=f.per_unit_storage_throughput,
                kms_key_arn=f.kms_key_arn,
                data_path=f.data_path,
                checkpoint_path=f.checkpoint_path,
                auto_import_events=f.auto_import_events,
                auto_export_events=f.auto_export_events,
                imported_file_chunk_size_mib=f.imported_file_chunk_size_mib,
                log_retention_days=f.log_retention_days,
                protect=st.protect,
                tags={**tags, **(extra_tags or {})},
            ),
        )

    efs = None
    if st.efs.enabled:
        e = st.efs
        efs = ModelStore(
            "efs",
            EfsArgs(
                cluster_name=name,
                vpc_id=network.vpc_id,
                private_subnet_ids=network.private_subnet_ids,
                availability_zones=cfg.network.availability_zones,
                client_security_group_id=cluster.cluster_security_group_id,
                throughput_mode=e.throughput_mode,
                kms_key_arn=e.kms_key_arn,
                posix_uid=e.posix_uid,
                posix_gid=e.posix_gid,
                models_path=e.models_path,
                protect=st.protect,
                tags={**tags, **(extra_tags or {})},
            ),
        )

    csi = CsiDrivers(
        "storage-csi",
        CsiArgs(
            cluster_name=name,
            region=cfg.region,
            fsx_chart=cfg.versions.chart("aws-fsx-csi-driver") if fsx else None,
            fsx_file_system_arn=fsx.arn if fsx else None,
            fsx_scratch_tag=(SCRATCH_TAG, name) if fsx and st.fsx.scratch.enabled else None,
            efs_chart=cfg.versions.chart("aws-efs-csi-driver") if efs else None,
            tags=tags,
        ),
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]),
    )

    volumes = TrainingVolumes(
        "storage-volumes",
        VolumesArgs(
            fsx=FsxVolume(
                file_system_id=fsx.file_system_id,
                dns_name=fsx.dns_name,
                mount_name=fsx.mount_name,
                capacity_gib=fsx.storage_capacity_gib,
            )
            if fsx
            else None,
            efs=EfsVolume(
                file_system_id=efs.file_system_id,
                access_point_id=efs.access_point_id,
                dynamic_base_path=st.efs.dynamic_base_path,
            )
            if efs
            else None,
            fsx_scratch=FsxScratch(
                subnet_id=network.efa_subnet_id,
                security_group_id=fsx.security_group_id,
                cluster_name=name,
                storage_class_name=st.fsx.scratch.storage_class_name,
                deployment_type=st.fsx.scratch.deployment_type,
                per_unit_throughput=st.fsx.scratch.per_unit_storage_throughput,
            )
            if fsx and st.fsx.scratch.enabled
            else None,
        ),
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[csi]),
    )
    plan = loop_rules.rotation_plan(cfg)
    if fsx is not None and plan is not None:
        # Each job's last N checkpoints on FSx; older ones deleted once exported
        # (ekstrain/agents/checkpoint_rotation.py).
        CheckpointRotation(
            "checkpoint-rotation",
            CheckpointRotationArgs(keep=plan.keep, root=plan.root, mount_path=st.fsx.mount_path),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[volumes]),
        )
    return StorageParts(buckets=buckets, fsx=fsx, efs=efs, csi=csi, volumes=volumes)
