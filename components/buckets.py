"""Training buckets: datasets and checkpoints in S3, versioned, encrypted, private, TLS-only.

The datasets bucket backs the FSx ``/data`` association (auto-import), the checkpoints bucket the
``/checkpoints`` association (auto-export). Old checkpoint versions expire after a configurable
number of days; current objects never expire (a resume needs them). No ``BucketNotification`` is
managed here on purpose: FSx auto-import configures the bucket's event notifications itself, and a
Pulumi-managed notification resource would overwrite them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from ekstrain.components import iam


def tls_only_statement(bucket_arn: pulumi.Input[str]) -> dict[str, Any]:
    """Deny every request that does not use TLS (aws:SecureTransport=false), for every principal."""
    return {
        "Sid": "DenyInsecureTransport",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [bucket_arn, pulumi.Output.concat(bucket_arn, "/*")],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def lifecycle_rules(
    noncurrent_version_days: int | None, abort_multipart_days: int
) -> list[aws.s3.BucketLifecycleConfigurationRuleArgsDict]:
    rules: list[aws.s3.BucketLifecycleConfigurationRuleArgsDict] = [
        {
            "id": "abort-incomplete-multipart-uploads",
            "status": "Enabled",
            "filter": {"prefix": ""},
            "abort_incomplete_multipart_upload": {"days_after_initiation": abort_multipart_days},
        }
    ]
    if noncurrent_version_days is not None:
        rules.append(
            {
                "id": "expire-noncurrent-versions",
                "status": "Enabled",
                "filter": {"prefix": ""},
                "noncurrent_version_expiration": {"noncurrent_days": noncurrent_version_days},
            }
        )
    return rules


BUCKET_PREFIX_MAX = 37
"""S3 ``bucket_prefix`` limit (63 minus the 26 characters of the generated suffix)."""


def bucket_prefix(cluster_name: str, role: str) -> str:
    """``<cluster>-<role>-``, with the cluster part shortened to fit the prefix limit."""
    room = BUCKET_PREFIX_MAX - len(role) - 2
    return f"{cluster_name[:room].lower().rstrip('-.')}-{role}-"  # bucket names are lowercase


@dataclass(frozen=True, kw_only=True)
class BucketsArgs:
    cluster_name: str
    """Prefix of generated bucket names."""
    datasets_bucket: str | None = None
    """@default generated ``<cluster>-datasets-<random>``."""
    checkpoints_bucket: str | None = None
    """@default generated ``<cluster>-checkpoints-<random>``."""
    noncurrent_version_days: int = 30
    """@default 30: noncurrent checkpoint versions expire after this many days."""
    abort_incomplete_multipart_days: int = 7
    """@default 7."""
    kms_key_arn: str | None = None
    """@default SSE-S3 (AES256); a key ARN switches both buckets to SSE-KMS with S3 Bucket Keys."""
    protect: bool = True
    """@default true: buckets and their versioning are protected and retained on delete."""
    tags: Mapping[str, str] = field(default_factory=dict)


class TrainingBuckets(pulumi.ComponentResource):
    datasets_bucket: pulumi.Output[str]
    datasets_arn: pulumi.Output[str]
    checkpoints_bucket: pulumi.Output[str]
    checkpoints_arn: pulumi.Output[str]

    def __init__(self, name: str, args: BucketsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:Buckets", name, None, opts)
        made = {
            "datasets": self._bucket(name, "datasets", args.datasets_bucket, None, args),
            "checkpoints": self._bucket(
                name, "checkpoints", args.checkpoints_bucket, args.noncurrent_version_days, args
            ),
        }
        self.datasets_bucket = made["datasets"].bucket
        self.datasets_arn = made["datasets"].arn
        self.checkpoints_bucket = made["checkpoints"].bucket
        self.checkpoints_arn = made["checkpoints"].arn
        self.register_outputs(
            {
                "datasetsBucket": self.datasets_bucket,
                "checkpointsBucket": self.checkpoints_bucket,
            }
        )

    def _bucket(
        self, name: str, role: str, bucket_name: str | None, noncurrent_days: int | None, args: BucketsArgs
    ) -> aws.s3.Bucket:
        key = f"{name}-{role}"
        child = pulumi.ResourceOptions(parent=self)
        kept = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        bucket = aws.s3.Bucket(
            key,
            bucket=bucket_name,
            bucket_prefix=None if bucket_name else bucket_prefix(args.cluster_name, role),
            # Never empty a bucket on delete: with protect on, deleting data needs a deliberate act.
            force_destroy=False,
            tags={**args.tags, "Name": f"{args.cluster_name}-{role}", "ekstrain.io/bucket-role": role},
            opts=kept,
        )
        aws.s3.BucketOwnershipControls(
            key, bucket=bucket.bucket, rule={"object_ownership": "BucketOwnerEnforced"}, opts=child
        )
        access_block = aws.s3.BucketPublicAccessBlock(
            key,
            bucket=bucket.bucket,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        versioning = aws.s3.BucketVersioning(
            key, bucket=bucket.bucket, versioning_configuration={"status": "Enabled"}, opts=kept
        )
        sse = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
            sse_algorithm="aws:kms" if args.kms_key_arn else "AES256", kms_master_key_id=args.kms_key_arn
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            key,
            bucket=bucket.bucket,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=sse, bucket_key_enabled=bool(args.kms_key_arn)
                )
            ],
            opts=child,
        )
        # S3 rejects concurrent policy and public-access-block changes on one bucket: serialize them.
        aws.s3.BucketPolicy(
            key,
            bucket=bucket.bucket,
            policy=iam.policy_document([tls_only_statement(bucket.arn)]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[access_block]),
        )
        aws.s3.BucketLifecycleConfiguration(
            key,
            bucket=bucket.bucket,
            rules=lifecycle_rules(noncurrent_days, args.abort_incomplete_multipart_days),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[versioning]),
        )
        return bucket
