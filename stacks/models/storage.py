"""``ekstrain:storage``: S3 buckets, FSx for Lustre, EFS. Stateful: protected by default.

Layout and behaviour: docs/storage.md. Cross-field rules (capacity steps, throughput tiers,
data repository paths and events, checkpoint save time): ``ekstrain.stacks.rules.storage``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ekstrain.facts.cloudwatch import RETENTION_DAYS as LOG_RETENTION_DAYS
from ekstrain.stacks.models.base import DNS_LABEL, AbsolutePath, BucketName, KmsKeyArn, Model, MountPath

RepositoryEvent = Literal["NEW", "CHANGED", "DELETED"]


def _all_events() -> list[RepositoryEvent]:
    return ["NEW", "CHANGED", "DELETED"]


class BucketsConfig(Model):
    datasets_bucket: BucketName | None = None
    """@default ``<cluster>-datasets-<random>`` (Pulumi auto-naming from a prefix)."""
    checkpoints_bucket: BucketName | None = None
    """@default ``<cluster>-checkpoints-<random>``."""
    noncurrent_version_days: int | None = Field(default=None, ge=1, le=36500)
    """Old checkpoint object versions (a rotated or overwritten checkpoint's S3 copy) are deleted after this many
    days. @default with checkpoint rotation: the window of saves FSx keeps (``keepLast`` x 30 min, at least 1 day:
    ``ekstrain.agents.checkpoint_rotation.noncurrent_days``), else 30."""
    abort_incomplete_multipart_days: int = Field(default=7, ge=1, le=36500)
    """@default 7: incomplete multipart uploads (both buckets) are aborted after this many days."""
    kms_key_arn: KmsKeyArn | None = None
    """@default SSE-S3 (AES256); give a KMS key ARN for SSE-KMS (its key policy must let the FSx
    service-linked role use it, see docs/storage.md)."""


class ScratchConfig(Model):
    """A StorageClass that creates a new FSx for Lustre file system per PVC (per-job scratch)."""

    enabled: bool = False
    """@default false. Each PVC of class ``storageClassName`` creates (and, on delete, destroys) its own
    Lustre file system in the training AZ's EFA subnet: fast scratch that never outlives its job."""
    storage_class_name: str = Field(default="fsx-scratch", pattern=DNS_LABEL)
    """@default fsx-scratch."""
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "SCRATCH_2"
    """@default SCRATCH_2 (no replication, 200 MB/s/TiB; the data is disposable)."""
    per_unit_storage_throughput: int | None = None
    """PERSISTENT_2 only: 125, 250, 500 or 1000 MB/s/TiB; @default none."""


class FsxConfig(Model):
    enabled: bool = True
    """@default true: an FSx for Lustre file system in the EFA subnet (training AZ)."""
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "PERSISTENT_2"
    """@default PERSISTENT_2 (replicated, KMS-encrypted); SCRATCH_2 for cheap dev stacks."""
    storage_capacity_gib: int = Field(default=1200, ge=1200, le=2_400_000, alias="storageCapacityGiB")
    """@default 1200; then multiples of 2400 GiB."""
    per_unit_storage_throughput: int | None = 250
    """@default 250 MB/s/TiB for PERSISTENT_2 (125, 250, 500, 1000); must be null for SCRATCH_2 (200 fixed)."""
    data_path: AbsolutePath = "/data"
    """@default /data: file-system path linked to the datasets bucket (auto-import)."""
    checkpoint_path: AbsolutePath = "/checkpoints"
    """@default /checkpoints: file-system path linked to the checkpoints bucket (auto-export)."""
    auto_import_events: list[RepositoryEvent] = Field(default_factory=_all_events)
    """@default [NEW, CHANGED, DELETED]: S3 changes in the datasets bucket that show up under dataPath."""
    auto_export_events: list[RepositoryEvent] = Field(default_factory=_all_events)
    """@default [NEW, CHANGED, DELETED]: file changes under checkpointPath that are written to S3."""
    imported_file_chunk_size_mib: int = Field(default=1024, ge=1, le=512000, alias="importedFileChunkSizeMiB")
    """@default 1024 MiB: stripe size for files imported from S3 (FSx default)."""
    kms_key_arn: KmsKeyArn | None = None
    """@default a dedicated, rotated KMS key created with the file system (PERSISTENT_2 only)."""
    log_retention_days: int = 30
    """@default 30: retention of the ``/aws/fsx/<cluster>-lustre`` log group (data repository events)."""
    mount_path: MountPath = "/fsx"
    """@default /fsx: where pods mount the file system."""
    scratch: ScratchConfig = Field(default_factory=ScratchConfig)
    """Dynamic provisioning next to the static volume: @default off."""

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"CloudWatch Logs does not offer {value} days; use one of {', '.join(map(str, LOG_RETENTION_DAYS))}"
            )
        return value


class EfsConfig(Model):
    enabled: bool = True
    """@default true: an EFS file system for shared model weights (``model-store`` PVC)."""
    throughput_mode: Literal["elastic", "bursting"] = "elastic"
    """@default elastic."""
    kms_key_arn: KmsKeyArn | None = None
    """@default a dedicated, rotated KMS key."""
    posix_uid: int = Field(default=1000, ge=0, le=4294967295)
    """@default 1000: user id every access through the model-store access point is mapped to."""
    posix_gid: int = Field(default=1000, ge=0, le=4294967295)
    """@default 1000."""
    models_path: AbsolutePath = "/models"
    """@default /models: root directory of the model-store access point."""
    dynamic_base_path: AbsolutePath = "/dynamic"
    """@default /dynamic: where the ``efs-ap`` StorageClass creates per-PVC access-point directories."""


class CheckpointConfig(Model):
    size_gib: float | None = Field(default=None, gt=0, le=1_000_000, alias="sizeGiB")
    """Expected size of one full checkpoint (all shards). @default none: no save-time check; set it
    from the planner's estimate for the largest planned model."""
    target_save_seconds: int = Field(default=300, ge=10, le=86400)
    """@default 300: a warning is raised when the configured FSx cannot write a checkpoint this fast."""
    rotation: bool = True
    """@default true (with FSx): a CronJob keeps each job's last ``keepLast`` checkpoints under the FSx checkpoint
    path and deletes an older one only once ``lfs hsm_state`` shows it exported to S3 (docs/storage.md)."""
    keep_last: int | None = Field(default=None, ge=1, le=10000, alias="keepLast")
    """Checkpoints kept per job on FSx. @default half the FSx capacity / ``sizeGiB`` (at least 2), or 3 without
    ``sizeGiB`` (``ekstrain.agents.checkpoint_rotation.default_keep``)."""


class StorageConfig(Model):
    protect: bool = True
    """@default true: buckets, FSx, DRAs, EFS and their KMS keys get ``protect`` and ``retain_on_delete``."""
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    fsx: FsxConfig = Field(default_factory=FsxConfig)
    efs: EfsConfig = Field(default_factory=EfsConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
