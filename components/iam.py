"""IAM policy documents as Python data (no ``get_policy_document`` invokes), and ARN helpers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

import pulumi
import pulumi_aws as aws

from ekstrain.facts.regions import partition_of
from ekstrain.payloads import kms_policy


def managed_policy_arn(region: str, name: str) -> str:
    return f"arn:{partition_of(region)}:iam::aws:policy/{name}"


def assume_role_policy(service: str, actions: Sequence[str] = ("sts:AssumeRole",)) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
        }
    )


def pod_identity_trust() -> str:
    """Trust policy for EKS Pod Identity (the agent assumes the role and tags the session)."""
    return assume_role_policy("pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession"))


def policy_document(statements: Sequence[dict[str, Any]]) -> pulumi.Output[str]:
    """JSON policy from statements that may hold Outputs (ARNs of resources being created)."""
    return pulumi.Output.json_dumps({"Version": "2012-10-17", "Statement": list(statements)})


KEY_DELETION_WINDOW_DAYS = 30
"""The longest window KMS allows (ScheduleKeyDeletion PendingWindowInDays, 7-30): a key deleted by mistake can
still be cancelled for a month."""


def account_key_document(key_arn: str) -> dict[str, Any]:
    """The policy AWS applies to a key given none, made explicit (checkov CKV2_AWS_64)."""
    return kms_policy.key_policy(key_arn, "account-administers-iam-grants-use")


@overload
def customer_key(
    name: str,
    description: str,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    alias: str | None = None,
    policy: Callable[[str], dict[str, Any]],
    key_opts: pulumi.ResourceOptions | None = None,
) -> tuple[aws.kms.Key, aws.kms.KeyPolicy]: ...
@overload
def customer_key(
    name: str,
    description: str,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    alias: str | None = None,
    policy: None = None,
    key_opts: pulumi.ResourceOptions | None = None,
) -> tuple[aws.kms.Key, None]: ...
def customer_key(
    name: str,
    description: str,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
    *,
    alias: str | None = None,
    policy: Callable[[str], dict[str, Any]] | None = None,
    key_opts: pulumi.ResourceOptions | None = None,
) -> tuple[aws.kms.Key, aws.kms.KeyPolicy | None]:
    """Every customer managed key the program creates, set up one way: rotated yearly (``enable_key_rotation``),
    :data:`KEY_DELETION_WINDOW_DAYS`, ``alias/<alias>`` when given, and ``policy(key ARN)`` as its explicit key
    policy when given. Key, alias and policy are all named ``name``; ``key_opts`` (else ``opts``) for the key itself
    (a storage key is protected with its file system)."""
    key = aws.kms.Key(
        name,
        description=description,
        enable_key_rotation=True,
        deletion_window_in_days=KEY_DELETION_WINDOW_DAYS,
        tags=dict(tags),
        opts=key_opts or opts,
    )
    if alias is not None:
        aws.kms.Alias(name, name=f"alias/{alias}", target_key_id=key.key_id, opts=opts)
    key_policy = None
    if policy is not None:
        document = policy
        key_policy = aws.kms.KeyPolicy(
            name, key_id=key.key_id, policy=key.arn.apply(lambda arn: json.dumps(document(arn))), opts=opts
        )
    return key, key_policy


def account_key_policy(key_arn: pulumi.Input[str]) -> pulumi.Output[str]:
    """A KMS key's policy made explicit: the account administers it and IAM policies grant its use (what
    AWS applies when no policy is given). The account comes from the key's own ARN: no invoke."""

    def document(arn: str) -> str:
        return json.dumps(account_key_document(arn))

    return pulumi.Output.from_input(key_arn).apply(document)


def log_group_key_policy(key_arn: str, log_group_name: str) -> dict[str, Any]:
    """A CloudWatch log group's own key: the account administers it; CloudWatch Logs of the key's region may use it
    for that log group only (CloudWatch Logs User Guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the
    ``logs.<region>.amazonaws.com`` principal, ``kms:EncryptionContext:aws:logs:arn``). Region, partition and
    account come from the key's ARN, so no invoke is needed."""
    partition, account = kms_policy.arn_account(key_arn)
    region = key_arn.split(":")[3]
    return kms_policy.key_policy(
        key_arn,
        "ekstrain-log-group",
        kms_policy.cloudwatch_logs_statement(
            region, f"arn:{partition}:logs:{region}:{account}:log-group:{log_group_name}"
        ),
    )
