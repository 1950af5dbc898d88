"""IAM policy documents as Python data (no ``get_policy_document`` invokes), and ARN helpers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi

from ekstrain import kms_policy
from ekstrain.regions import partition_of


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


def account_key_policy(key_arn: pulumi.Input[str]) -> pulumi.Output[str]:
    """A KMS key's policy made explicit: the account administers it and IAM policies grant its use (what
    AWS applies when no policy is given). The account comes from the key's own ARN: no invoke."""

    def document(arn: str) -> str:
        return json.dumps(kms_policy.key_policy(arn, "account-administers-iam-grants-use"))

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
