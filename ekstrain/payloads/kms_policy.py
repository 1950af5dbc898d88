"""KMS key policies: one shape for every key the program creates.

Each policy states what AWS applies when a key has no policy (the account administers the key and IAM policies
grant its use: the KMS developer guide, "Default key policy") and adds the service statements a key needs (the
budget topic's, the log groups'). The account and partition come from the key's own ARN, so no invoke is needed.
"""

from __future__ import annotations

from typing import Any


def arn_account(key_arn: str) -> tuple[str, str]:
    """(partition, account) of an ARN such as ``arn:aws:kms:us-west-2:123456789012:key/...``."""
    parts = key_arn.split(":")
    return parts[1], parts[4]


def key_policy(key_arn: str, policy_id: str, *service_statements: dict[str, Any]) -> dict[str, Any]:
    """The account administers the key (``kms:*`` for its root principal) plus ``service_statements``."""
    partition, account = arn_account(key_arn)
    admin = {
        "Sid": "EnableIAMPolicies",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:{partition}:iam::{account}:root"},
        "Action": "kms:*",
        "Resource": "*",
    }
    return {"Version": "2012-10-17", "Id": policy_id, "Statement": [admin, *service_statements]}


def cloudwatch_logs_statement(region: str, log_group_arn: str) -> dict[str, Any]:
    """CloudWatch Logs of ``region`` may use the key for the log groups ``log_group_arn`` matches (CloudWatch Logs
    User Guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the ``logs.<region>.amazonaws.com`` principal,
    the ``kms:EncryptionContext:aws:logs:arn`` condition)."""
    return {
        "Sid": "CloudWatchLogsUsesKey",
        "Effect": "Allow",
        "Principal": {"Service": f"logs.{region}.amazonaws.com"},
        "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
        "Resource": "*",
        "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_group_arn}},
    }
