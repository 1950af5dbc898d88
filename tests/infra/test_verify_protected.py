"""infra/verify/protected.py: no role of the stack can delete or modify protected data (FSx, EFS, buckets, KMS keys,
the cluster), including by first putting on it a tag that one of its conditions asks for."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from ekstrain.components import csi
from ekstrain.infra.offline import Recording
from ekstrain.infra.verify import protected

SCRATCH = ("ekstrain.io/fsx-scratch", "ekstrain-prod")
FSX_POLICY = ("aws:iam/rolePolicy:RolePolicy", "storage-csi-fsx")


def _with_policy(rec: Recording, statements: list[dict[str, Any]]) -> Recording:
    """``rec`` with the FSx CSI role's inline policy replaced by ``statements``."""
    out = copy.copy(rec)
    out.records = [copy.copy(r) for r in rec.records]
    policy = out.one(*FSX_POLICY)
    policy.inputs = {**policy.inputs, "policy": json.dumps({"Version": "2012-10-17", "Statement": statements})}
    return out


def _fs_arn(rec: Recording) -> str:
    return str(rec.one("aws:fsx/lustreFileSystem:LustreFileSystem", "fsx").outputs["arn"])


def test_prod_and_dev_have_no_role_that_reaches_protected_data(
    prod_recording: Recording, dev_recording: Recording
) -> None:
    for rec in (prod_recording, dev_recording):
        check = protected.check_recording(rec)
        assert check.problems == []
        assert check.checked >= 7  # every role the stack creates, pulumi-eks's included
    kinds = {p.type for p in protected.protected_resources(prod_recording.records)}
    assert kinds == set(protected.DESTRUCTIVE), "FSx, EFS, both buckets, the KMS keys and the cluster are covered"


SEEDED: dict[str, tuple[Callable[[str], list[dict[str, Any]]], str]] = {
    # the earlier policy: TagResource on any file system with only an aws:RequestTag condition, and
    # DeleteFileSystem on whatever carries the scratch tag: tag the protected file system, then delete it
    "tag then delete (the old scratch policy)": (
        lambda arn: [
            {
                "Effect": "Allow",
                "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestTag/ekstrain.io/fsx-scratch": "ekstrain-prod"}},
            },
            {
                "Effect": "Allow",
                "Action": ["fsx:DeleteFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:ResourceTag/ekstrain.io/fsx-scratch": "ekstrain-prod"}},
            },
        ],
        "fsx:DeleteFileSystem reaches aws:fsx/lustreFileSystem:LustreFileSystem fsx (inline policy storage-csi-fsx "
        "Statement[1]) via tag ekstrain.io/fsx-scratch=ekstrain-prod the role may set itself through inline policy "
        "storage-csi-fsx Statement[0] (fsx:TagResource)",
    ),
    "resize the protected file system": (
        lambda arn: [{"Effect": "Allow", "Action": ["fsx:UpdateFileSystem"], "Resource": arn}],
        "fsx:UpdateFileSystem reaches aws:fsx/lustreFileSystem:LustreFileSystem fsx",
    ),
    "wildcard delete": (
        lambda arn: [{"Effect": "Allow", "Action": "fsx:Delete*", "Resource": "*"}],
        "fsx:DeleteFileSystem reaches aws:fsx/lustreFileSystem:LustreFileSystem fsx",
    ),
    "delete checkpoint objects": (
        lambda arn: [{"Effect": "Allow", "Action": ["s3:DeleteObject"], "Resource": "arn:aws:s3:::ekstrain-prod-*/*"}],
        "s3:DeleteObject reaches aws:s3/bucket:Bucket storage-checkpoints",
    ),
    "schedule a key's deletion": (
        lambda arn: [{"Effect": "Allow", "Action": ["kms:ScheduleKeyDeletion"], "Resource": "*"}],
        "kms:ScheduleKeyDeletion reaches aws:kms/key:Key cluster-secrets",
    ),
    "delete the cluster": (
        lambda arn: [{"Effect": "Allow", "Action": ["eks:DeleteCluster"], "Resource": "*"}],
        "eks:DeleteCluster reaches aws:eks/cluster:Cluster cluster-eksCluster",
    ),
}


@pytest.mark.parametrize("case", sorted(SEEDED))
def test_each_seeded_escalation_is_refused_naming_role_action_resource(case: str, prod_recording: Recording) -> None:
    statements, expected = SEEDED[case]
    rec = _with_policy(prod_recording, statements(_fs_arn(prod_recording)))
    problems = protected.check_recording(rec).problems
    assert any(p.startswith("role storage-csi-fsx: ") and expected in p for p in problems), problems


def test_tagging_only_inside_a_create_call_cannot_open_the_route(prod_recording: Recording) -> None:
    # GIVEN the old delete statement but tagging allowed only by a create action (a <service>:CreateAction condition)
    rec = _with_policy(
        prod_recording,
        [
            {
                "Effect": "Allow",
                "Action": ["fsx:TagResource"],
                "Resource": "*",
                "Condition": {"StringEquals": {"fsx:CreateAction": "CreateFileSystem"}},
            },
            {
                "Effect": "Allow",
                "Action": ["fsx:DeleteFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:ResourceTag/ekstrain.io/fsx-scratch": "ekstrain-prod"}},
            },
        ],
    )
    assert protected.check_recording(rec).problems == []


def test_the_shipped_policy_blocks_the_route_with_an_explicit_deny(prod_recording: Recording) -> None:
    shipped = csi.fsx_controller_policy(_fs_arn(prod_recording), SCRATCH)
    assert protected.check_recording(_with_policy(prod_recording, shipped)).problems == []
    # WITHOUT its Deny the tag route is open again (TagResource with a request-tag condition is callable later)
    opened = protected.check_recording(_with_policy(prod_recording, shipped[:-1])).problems
    assert any("via tag ekstrain.io/fsx-scratch=ekstrain-prod" in p and "DeleteFileSystem" in p for p in opened)


def test_an_unreviewed_managed_policy_is_a_problem(prod_recording: Recording) -> None:
    rec = copy.copy(prod_recording)
    rec.records = [copy.copy(r) for r in prod_recording.records]
    attach = rec.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "storage-csi-efs")
    attach.inputs = {**attach.inputs, "policyArn": "arn:aws:iam::aws:policy/AmazonS3FullAccess"}
    (problem,) = protected.check_recording(rec).problems
    assert "attaches arn:aws:iam::aws:policy/AmazonS3FullAccess, which this check has not reviewed" in problem
