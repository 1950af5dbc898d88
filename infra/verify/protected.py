"""No role the stack creates can delete or modify protected data.

Protected: every FSx for Lustre and EFS file system, the S3 buckets (datasets, checkpoints) and their objects, the KMS
keys and the EKS cluster the stack records. For every IAM role, the statements it is allowed (inline policies,
customer policies attached to it, and the AWS managed policies it attaches, from :data:`MANAGED_POLICIES`) are
evaluated against each protected resource's ARN for the actions in :data:`DESTRUCTIVE`:

- an Allow matches when one of its actions (wildcards expanded) is destructive for the resource's service and one of
  its resources (``*`` or an ARN pattern) matches the resource's ARN (a bucket's objects: ``<bucket ARN>/*``);
- its tag conditions are evaluated: ``aws:ResourceTag/K`` holds when the resource carries that tag, **or when the
  role itself may put it there** (an allowed tagging action on the resource whose conditions hold: an
  ``aws:RequestTag`` condition is the caller's to satisfy on a tagging call) - the escalation the FSx CSI role had:
  tag the protected file system with the scratch tag, then delete it; ``aws:RequestTag`` on a non-tagging action and
  a ``<service>:CreateAction`` condition never hold for an existing resource; any other condition is assumed to hold;
- an explicit Deny of the action on the resource (no condition) wins (IAM policy evaluation logic).

Each reachable (role, action, resource) is a problem naming the statement and, for the tag route, the statement that
lets the role set the tag.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ekstrain.infra import offline
from ekstrain.infra.verify import Check
from ekstrain.infra.verify.iam import as_list, expand

CHECK_NAME = "IAM: no role can delete or modify protected data (incl. via tags it may set)"

DESTRUCTIVE: dict[str, tuple[str, tuple[str, ...]]] = {
    # type -> (service prefix, actions that delete or modify it); Service Authorization Reference per service.
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "fsx",
        ("DeleteFileSystem", "UpdateFileSystem", "TagResource", "UntagResource"),
    ),
    "aws:efs/fileSystem:FileSystem": (
        "elasticfilesystem",
        (
            "DeleteFileSystem",
            "UpdateFileSystem",
            "UpdateFileSystemProtection",
            "PutFileSystemPolicy",
            "DeleteFileSystemPolicy",
            "PutLifecycleConfiguration",
            "PutBackupPolicy",
            "DeleteMountTarget",
            "TagResource",
            "UntagResource",
        ),
    ),
    "aws:s3/bucket:Bucket": (
        "s3",
        (
            "DeleteBucket",
            "DeleteBucketPolicy",
            "PutBucketPolicy",
            "PutLifecycleConfiguration",
            "PutBucketVersioning",
            "PutEncryptionConfiguration",
            "PutBucketPublicAccessBlock",
            "PutBucketAcl",
            "PutBucketTagging",
            "DeleteObject",
            "DeleteObjectVersion",
            "PutObject",
        ),
    ),
    "aws:kms/key:Key": (
        "kms",
        (
            "ScheduleKeyDeletion",
            "DisableKey",
            "DisableKeyRotation",
            "PutKeyPolicy",
            "CreateGrant",
            "TagResource",
            "UntagResource",
        ),
    ),
    "aws:eks/cluster:Cluster": (
        "eks",
        (
            "DeleteCluster",
            "UpdateClusterConfig",
            "UpdateClusterVersion",
            "AssociateEncryptionConfig",
            "CreateAccessEntry",
            "UpdateAccessEntry",
            "DeleteAccessEntry",
            "AssociateAccessPolicy",
            "DisassociateAccessPolicy",
            "TagResource",
            "UntagResource",
        ),
    ),
}
TAGGING = {
    "fsx:TagResource",
    "elasticfilesystem:TagResource",
    "s3:PutBucketTagging",
    "kms:TagResource",
    "eks:TagResource",
}
"""Actions that put a tag on an existing resource of the protected services."""

MANAGED_POLICIES: dict[str, list[dict[str, Any]]] = {
    # The statements of each AWS managed policy the stack attaches that act on a protected service (AWS Managed
    # Policy Reference Guide, current versions); [] = none does (EC2, ENI, ECR, SSM, ELB, autoscaling only).
    "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy": [
        {
            "Effect": "Allow",
            "Action": ["elasticfilesystem:DescribeAccessPoints", "elasticfilesystem:DescribeFileSystems"],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Action": ["elasticfilesystem:CreateAccessPoint"],
            "Resource": "*",
            "Condition": {"StringLike": {"aws:RequestTag/efs.csi.aws.com/cluster": "true"}},
        },
        {
            "Effect": "Allow",
            "Action": ["elasticfilesystem:TagResource"],
            "Resource": "*",
            "Condition": {"StringLike": {"aws:ResourceTag/efs.csi.aws.com/cluster": "true"}},
        },
        {
            "Effect": "Allow",
            "Action": "elasticfilesystem:DeleteAccessPoint",
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:ResourceTag/efs.csi.aws.com/cluster": "true"}},
        },
    ],
    "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy": [],
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy": [
        {"Effect": "Allow", "Action": ["eks:DescribeCluster"], "Resource": "*"},
    ],
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy": [],
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly": [],
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore": [],
    "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy": [
        {"Effect": "Allow", "Action": ["kms:DescribeKey"], "Resource": "*"},
    ],
}


@dataclass(frozen=True)
class Protected:
    type: str
    name: str
    arn: str
    tags: Mapping[str, str]

    @property
    def arns(self) -> list[str]:
        return [self.arn, f"{self.arn}/*"] if self.type == "aws:s3/bucket:Bucket" else [self.arn]


def protected_resources(records: Iterable[offline.Record]) -> list[Protected]:
    out = []
    for r in records:
        if r.type in DESTRUCTIVE and not r.import_id:
            arn = str(r.outputs.get("arn") or "")
            tags = {str(k): str(v) for k, v in (r.inputs.get("tags") or {}).items()}
            out.append(Protected(r.type, r.name, arn, tags))
    return out


def _actions(stmt: Mapping[str, Any]) -> set[str]:
    """The statement's actions, wildcards expanded, lowercase (IAM action names are case-insensitive)."""
    return {x.lower() for a in as_list(stmt.get("Action", [])) if isinstance(a, str) for x in (expand(a) or [a])}


def _matches_resource(stmt: Mapping[str, Any], resource: Protected) -> bool:
    patterns = [p for p in as_list(stmt.get("Resource", [])) if isinstance(p, str)]
    return any(fnmatch.fnmatchcase(arn, p) or p == "*" for p in patterns for arn in resource.arns)


def _tag_conditions(stmt: Mapping[str, Any]) -> Iterable[tuple[str, str, list[str]]]:
    """(kind, key, values) of each condition: kind ``resource`` (aws:ResourceTag/K), ``request`` (aws:RequestTag/K),
    ``create`` (<service>:CreateAction), ``other``."""
    for operator, block in (stmt.get("Condition") or {}).items():
        for key, value in (block or {}).items():
            values = [str(v) for v in as_list(value)]
            if key.startswith("aws:ResourceTag/"):
                yield "resource", key.removeprefix("aws:ResourceTag/"), values
            elif key.startswith("aws:RequestTag/"):
                yield "request", key.removeprefix("aws:RequestTag/"), values
            elif key.endswith(":CreateAction"):
                yield "create", key, values
            else:
                yield "other", f"{operator} {key}", values


def _proper(action: str) -> str:
    """``fsx:deletefilesystem`` -> ``fsx:DeleteFileSystem`` (the spelling of :data:`DESTRUCTIVE`)."""
    service, _, name = action.partition(":")
    for svc, names in DESTRUCTIVE.values():
        for n in names:
            if svc == service and n.lower() == name:
                return f"{svc}:{n}"
    return action


def _denied(action: str, resource: Protected, statements: list[tuple[str, dict[str, Any]]]) -> bool:
    return any(
        s.get("Effect") == "Deny"
        and not s.get("Condition")
        and action in _actions(s)
        and _matches_resource(s, resource)
        for _, s in statements
    )


def _tag_setter(
    key: str, values: list[str], resource: Protected, statements: list[tuple[str, dict[str, Any]]]
) -> str | None:
    """The statement (its label) that lets the role put tag ``key`` (one of ``values``) on ``resource``, if any."""
    for label, s in statements:
        if s.get("Effect") != "Allow" or not _matches_resource(s, resource):
            continue
        for action in sorted(_actions(s) & {t.lower() for t in TAGGING}):
            if action.split(":")[0] != DESTRUCTIVE[resource.type][0] or _denied(action, resource, statements):
                continue
            ok = True
            for kind, ckey, cvalues in _tag_conditions(s):
                if kind == "create":
                    ok = False  # tagging allowed only inside a create call: never an existing resource
                elif (
                    kind == "resource"
                    and resource.tags.get(ckey) not in cvalues
                    or kind == "request"
                    and ckey == key
                    and not set(values) & set(cvalues)
                    and "*" not in cvalues
                ):
                    ok = False
            if ok:
                return f"{label} ({_proper(action)})"
    return None


def reachable(role: str, statements: list[tuple[str, dict[str, Any]]], resource: Protected) -> list[str]:
    """Problems: each destructive action ``role``'s statements allow on ``resource``."""
    service, destructive = DESTRUCTIVE[resource.type]
    wanted = {f"{service}:{a}".lower() for a in destructive}
    out = []
    for label, s in statements:
        if s.get("Effect") != "Allow" or not _matches_resource(s, resource):
            continue
        for action in sorted(_actions(s) & wanted):
            if _denied(action, resource, statements):
                continue
            via: list[str] = []
            ok = True
            for kind, key, values in _tag_conditions(s):
                if kind == "create":
                    ok = False
                elif kind == "request" and action not in {t.lower() for t in TAGGING}:
                    ok = False  # a delete or update call carries no request tags
                elif kind == "resource" and resource.tags.get(key) not in values:
                    setter = _tag_setter(key, values, resource, statements)
                    if setter is None:
                        ok = False
                    else:
                        via.append(f"tag {key}={values[0]} the role may set itself through {setter}")
            if ok:
                how = f" via {'; '.join(via)}" if via else ""
                out.append(f"role {role}: {_proper(action)} reaches {resource.type} {resource.name} ({label}){how}")
    return out


def role_statements(records: list[offline.Record]) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], list[str]]:
    """role name -> (label, statement) of everything it is allowed or denied; problems for attached policies the
    check cannot read (an AWS managed policy not in :data:`MANAGED_POLICIES`)."""
    roles = {}
    for r in records:
        if r.type == "aws:iam/role:Role":
            for ref in (r.outputs.get("name"), r.outputs.get("id"), r.inputs.get("name")):
                if isinstance(ref, str) and ref:
                    roles[ref] = r.name
    customer = {
        str(r.outputs.get("arn")): (r.name, r.inputs.get("policy"))
        for r in records
        if r.type == "aws:iam/policy:Policy"
    }
    out: dict[str, list[tuple[str, dict[str, Any]]]] = {name: [] for name in set(roles.values())}
    problems = []

    def add(role_ref: Any, label: str, doc: Any) -> None:
        role = roles.get(str(role_ref))
        if role is None:
            return
        parsed = json.loads(doc) if isinstance(doc, str) else doc
        for i, stmt in enumerate(as_list((parsed or {}).get("Statement", []))):
            if isinstance(stmt, dict):
                out[role].append((f"{label} {stmt.get('Sid') or f'Statement[{i}]'}", stmt))

    for r in records:
        if r.type == "aws:iam/rolePolicy:RolePolicy":
            add(r.inputs.get("role"), f"inline policy {r.name}", r.inputs.get("policy"))
        elif r.type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment":
            arn = str(r.inputs.get("policyArn"))
            if arn in customer:
                add(r.inputs.get("role"), f"policy {customer[arn][0]}", customer[arn][1])
            elif arn in MANAGED_POLICIES:
                add(r.inputs.get("role"), f"managed {arn.rsplit('/', 1)[-1]}", {"Statement": MANAGED_POLICIES[arn]})
            elif str(r.inputs.get("role")) in roles:
                problems.append(
                    f"role {roles[str(r.inputs.get('role'))]}: attaches {arn}, which this check has not reviewed; "
                    "fix: add its statements on protected services to infra/verify/protected.py MANAGED_POLICIES"
                )
    return out, problems


def check_recording(rec: offline.Recording) -> Check:
    check = Check(CHECK_NAME, what="roles")
    resources = protected_resources(rec.records)
    statements, problems = role_statements(rec.records)
    check.checked = len(statements)
    check.problems += problems
    for role, stmts in sorted(statements.items()):
        for resource in resources:
            check.problems += reachable(role, stmts, resource)
    return check
