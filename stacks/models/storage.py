"""``ekstrain:storage``: S3 buckets, FSx for Lustre, EFS. Stateful: protected by default."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.models.base import Model

RepositoryEvent = Literal["NEW", "CHANGED", "DELETED"]


class BucketsConfig(Model):
    datasets_bucket: str | None = None
    """@default ``<cluster>-datasets-<account-suffix>`` chosen by Pulumi auto-naming."""
    checkpoints_bucket: str | None = None
    noncurrent_version_days: int = Field(default=30, ge=1)
    """@default 30: old checkpoint object versions are deleted after this many days."""
    kms_key_arn: str | None = None
    """@default SSE-S3 (AES256); give a KMS key ARN for SSE-KMS."""


class FsxConfig(Model):
    enabled: bool = True
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "PERSISTENT_2"
    storage_capacity_gib: int = Field(default=1200, ge=1200, alias="storageCapacityGiB")
    """@default 1200; then multiples of 2400 GiB."""
    per_unit_storage_throughput: int | None = 250
    """MB/s/TiB for PERSISTENT_2 (125, 250, 500, 1000); must be null for SCRATCH_2."""
    data_path: str = "/data"
    checkpoint_path: str = "/checkpoints"
    auto_import_events: list[RepositoryEvent] = Field(default_factory=lambda: ["NEW", "CHANGED", "DELETED"])
    auto_export_events: list[RepositoryEvent] = Field(default_factory=lambda: ["NEW", "CHANGED", "DELETED"])
    kms_key_arn: str | None = None
    """@default a dedicated KMS key created with the file system (PERSISTENT_2 only)."""
    mount_path: str = "/fsx"
    """Where pods mount the file system."""


class EfsConfig(Model):
    enabled: bool = True
    throughput_mode: Literal["elastic", "bursting"] = "elastic"


class CheckpointConfig(Model):
    size_gib: float | None = Field(default=None, gt=0, alias="sizeGiB")
    """Expected checkpoint size; @default taken from the planner for the largest planned model."""
    target_save_seconds: int = Field(default=300, ge=10)


class StorageConfig(Model):
    protect: bool = True
    """@default true: buckets, FSx and EFS get ``protect`` and ``retain_on_delete``."""
    buckets: BucketsConfig = Field(default_factory=BucketsConfig)
    fsx: FsxConfig = Field(default_factory=FsxConfig)
    efs: EfsConfig = Field(default_factory=EfsConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
