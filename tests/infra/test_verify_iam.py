"""IAM policy documents: linted against the IAM action database; Karpenter's equal its reference CloudFormation."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import shipped_recording

from ekstrain.infra import offline
from ekstrain.infra.verify import iam

CFN = "aws/karpenter-v1.14.1-cloudformation.yaml"


@pytest.fixture(scope="module")
def prod(prod_recording: offline.Recording) -> offline.Recording:
    """The session's prod recording (conftest.py): the tests deep-copy records before they change any."""
    return prod_recording


def test_every_policy_document_of_every_stack_lints_clean(request: pytest.FixtureRequest) -> None:
    entries = iam.accepted()
    used: set[int] = set()
    for stack in ("prod", "dev"):
        check = iam.check_recording(shipped_recording(request, stack), entries)
        assert check.problems == [], stack
        assert check.checked >= 10
        used |= {i for i, e in enumerate(entries) if any(iam.is_accepted(w, [e]) for w in check.reviewed)}
    assert all(len(e["reason"]) > 30 for e in entries)
    assert used == set(range(len(entries))), "an accepted IAM finding matches nothing: remove it"


@pytest.mark.parametrize(
    ("stmt", "finding"),
    [
        (
            {"Effect": "Allow", "Action": "ec2:DescribeInstancez", "Resource": "*"},
            "unknown action 'ec2:DescribeInstancez'",
        ),
        ({"Effect": "Allow", "Action": "s3:Get*Thing", "Resource": "*"}, "unknown action 's3:Get*Thing'"),
        ({"Effect": "Allow", "Action": "*", "Resource": "*"}, "allows every action"),
        (
            {
                "Effect": "Allow",
                "Action": "arc-zonal-shift:GetManagedResource",
                "Resource": "arn:aws:eks:us-west-2:123456789012:cluster/c",
            },
            "is not an ARN any of",
        ),
        ({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket"}, "is not an ARN any of"),
        (
            {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"},
            "iam:passrole (Permissions management) on Resource '*'",
        ),
    ],
)
def test_seeded_policy_defects_are_caught(stmt: dict[str, Any], finding: str) -> None:
    problems = iam.lint_document({"Statement": [stmt]}, "p")
    assert any(finding in p for p in problems), problems


@pytest.mark.parametrize(
    "stmt",
    [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bucket/*"},
        {"Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"},
        {
            "Effect": "Allow",
            "Action": "arc-zonal-shift:GetManagedResource",
            "Resource": "*",
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": "arn:aws:eks:us-west-2:1:cluster/c"}},
        },
        {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/node"},
    ],
)
def test_sound_statements_pass(stmt: dict[str, Any]) -> None:
    assert iam.lint_document({"Statement": [stmt]}, "p") == []


def test_a_seeded_defect_in_the_recording_fails_the_check(prod: offline.Recording) -> None:
    records = copy.deepcopy(prod.records)
    target = next(r for r in records if r.type == "aws:iam/policy:Policy" and r.name == "karpenter-EKSIntegration")
    doc = json.loads(target.inputs["policy"])
    doc["Statement"][0]["Action"] = "eks:DescribeClustr"
    target.inputs["policy"] = json.dumps(doc)
    check = iam.check_recording(offline.Recording(records, prod.outputs, prod.invokes))
    assert check.problems == [
        "aws:iam/policy:Policy karpenter-EKSIntegration AllowAPIServerEndpointDiscovery: "
        "unknown action 'eks:DescribeClustr'"
    ]


def _reference(prod: offline.Recording) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    from ekstrain.tooling import validation

    upstream = validation.upstream_dir()
    if upstream is None or not (upstream / CFN).exists():
        pytest.skip("Karpenter reference CloudFormation absent from the upstream dir")
    cluster = prod.one("aws:sqs/queue:Queue", "karpenter-interruption").inputs["name"]
    return iam.karpenter_reference(
        upstream / CFN,
        {
            "AWS::Partition": "aws",
            "AWS::Region": "us-west-2",
            "AWS::AccountId": offline.ACCOUNT,
            "AWS::URLSuffix": "amazonaws.com",
            "ClusterName": cluster,
            "KarpenterInterruptionQueue.Arn": prod.one("aws:sqs/queue:Queue", "karpenter-interruption").outputs["arn"],
            "KarpenterNodeRole.Arn": prod.one("aws:iam/role:Role", "karpenter-node").outputs["arn"],
        },
    )


def test_karpenter_controller_policies_equal_the_reference_cloudformation(prod: offline.Recording) -> None:
    # GIVEN Karpenter v1.14.1's getting-started CloudFormation with this stack's names substituted
    reference, _ = _reference(prod)
    # THEN every controller policy has exactly its statements (Sids aside)
    ours = {
        r.inputs["name"].removeprefix("KarpenterController").split("Policy-")[0]: json.loads(r.inputs["policy"])[
            "Statement"
        ]
        for r in prod.of_type("aws:iam/policy:Policy")
        if r.name.startswith("karpenter-")
    }
    assert set(ours) == set(reference)
    for short, statements in reference.items():
        assert sorted(map(iam.normalise, ours[short])) == sorted(map(iam.normalise, statements)), short


def test_karpenter_node_role_policies_equal_the_reference_cloudformation(prod: offline.Recording) -> None:
    _, node_policies = _reference(prod)
    attached = sorted(
        r.inputs["policyArn"]
        for r in prod.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("karpenter-node-")
    )
    assert attached == sorted(node_policies)
    assert "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly" in attached


def test_storage_keys_have_an_explicit_account_key_policy(prod: offline.Recording) -> None:
    # GIVEN the FSx and EFS keys the stack creates (checkov CKV2_AWS_64: a key policy is defined)
    for name in ("fsx-key", "efs-key"):
        key = prod.one("aws:kms/key:Key", name)
        policy = prod.one("aws:kms/keyPolicy:KeyPolicy", name)
        assert policy.inputs["keyId"] == key.outputs["keyId"]
        # THEN the account root administers it (AWS's default, made explicit) and IAM grants use
        assert json.loads(policy.inputs["policy"])["Statement"] == [
            {
                "Sid": "EnableIAMPolicies",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:aws:iam::{offline.ACCOUNT}:root"},
                "Action": "kms:*",
                "Resource": "*",
            }
        ]
