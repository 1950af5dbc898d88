"""AWS resource tags a stack adds (``ekstrain:tags``) and tags that select reservations.

AWS allows 50 tags per resource, keys of 1-128 and values of 0-256 characters, and reserves the
``aws:`` prefix. The program adds its own tags (Project, Environment, ManagedBy, Name, bucket role; the
partition and, with ``ekstrain:cost``, the stack and team cost-allocation tags on instances; Karpenter adds Name,
nodepool, nodeclaim, ec2nodeclass, eks-cluster-name and cluster tags to instances), so user tags may use at most
``MAX_USER_TAGS`` and never one of the program's keys.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

from ekstrain.stacks.models.base import Model

AWS_MAX_TAGS = 50
PROGRAM_TAG_BUDGET = 12
"""The most tags the program and Karpenter put on one resource (an accelerated instance): Project, Environment,
ManagedBy, ekstrain.io/partition, ekstrain.io/stack, ekstrain.io/team, and Karpenter's six."""
MAX_USER_TAGS = AWS_MAX_TAGS - PROGRAM_TAG_BUDGET
"""The fewest user tags every stack has room for; a stack without cost tags has more (:func:`program_tag_count`)."""
PROGRAM_TAG_KEYS = ("Project", "Environment", "ManagedBy", "Name")
PROGRAM_TAG_PREFIXES = ("ekstrain.io/", "kubernetes.io/", "k8s.io/", "karpenter.sh/", "karpenter.k8s.aws/", "eks:")
KARPENTER_INSTANCE_TAGS = 6
"""Karpenter v1 tags each instance with Name, karpenter.sh/nodepool, karpenter.sh/nodeclaim,
karpenter.k8s.aws/ec2nodeclass, eks:eks-cluster-name and kubernetes.io/cluster/<cluster> (karpenter-provider-aws
v1 pkg/providers/instance, "tags")."""
COST_INSTANCE_TAGS = 3
"""With ``ekstrain:cost``: ekstrain.io/stack, ekstrain.io/team and ekstrain.io/partition on instances."""
_PUNCTUATION = frozenset("_.:/=+-@")
"""AWS tag keys and values: letters, numbers and spaces representable in UTF-8 and ``_ . : / = + - @`` (EC2 User
Guide, "Tag restrictions"; the Tagging API's pattern ``^([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*)$``,
https://docs.aws.amazon.com/resourcegroupstagging/latest/APIReference/API_Tag.html): any Unicode letter (L*),
number (N*) or space separator (Zs, e.g. the ideographic space U+3000), not only ASCII spaces."""


def program_tag_count(cost: bool, partitions: bool) -> int:
    """The most tags the program and Karpenter put on one resource of a stack: Project, Environment, ManagedBy
    everywhere; on an instance Karpenter's six (Name among them) and, with cost, three cost-allocation tags; on
    other resources Name, a bucket's ekstrain.io/bucket-role and, with cost, ekstrain.io/stack and team."""
    instance = 3 + KARPENTER_INSTANCE_TAGS + (COST_INSTANCE_TAGS if cost else 0) if partitions else 0
    other = 3 + 2 + (2 if cost else 0)
    return max(instance, other)


def _tag_text(text: str) -> bool:
    return all(c in _PUNCTUATION or unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Zs" for c in text)


def tag_problems(tags: dict[str, str], own: bool) -> list[str]:
    """Problems as "problem; fix" strings; ``own`` = tags the stack adds to resources (not a selector)."""
    out = []
    # The stack's own budget (cost tags, partitions) is checked by stacks.rules; here only what no stack allows.
    if own and len(tags) > AWS_MAX_TAGS - program_tag_count(cost=False, partitions=False):
        floor = AWS_MAX_TAGS - program_tag_count(cost=False, partitions=False)
        out.append(
            f"{len(tags)} tags are more than AWS's {AWS_MAX_TAGS} per resource minus the program's own; keep at "
            f"most {floor} (fewer with partitions or cost tags)"
        )
    for key, value in tags.items():
        if not 1 <= len(key) <= 128:
            out.append(f"tag key {key[:40]!r}... has {len(key)} characters; use 1-128")
        if len(value) > 256:
            out.append(f"the value of tag {key[:40]!r} has {len(value)} characters; use at most 256")
        if own and key.lower().startswith("aws:"):  # selecting by AWS's own tags is fine
            out.append(f"tag key {key!r} uses the aws: prefix that AWS reserves; drop the prefix")
        if not _tag_text(key) or not _tag_text(value):
            out.append(f"tag {key[:40]!r} has characters AWS refuses; use letters, digits, spaces and _ . : / = + - @")
        if own and (key in PROGRAM_TAG_KEYS or key.startswith(PROGRAM_TAG_PREFIXES)):
            out.append(
                f"tag {key!r} is set by the program (Project/Environment come from ekstrain:project and "
                "ekstrain:environment); remove it or use your own key such as team:owner"
            )
    return out


def _own(tags: dict[str, str]) -> dict[str, str]:
    problems = tag_problems(tags, own=True)
    if problems:
        raise ValueError(problems[0])
    return tags


def _selector(tags: dict[str, str]) -> dict[str, str]:
    problems = tag_problems(tags, own=False)
    if problems:
        raise ValueError(problems[0])
    return tags


ResourceTags = Annotated[dict[str, str], AfterValidator(_own)]
SelectorTags = Annotated[dict[str, str], AfterValidator(_selector)]


class AwsDefaultTags(Model):
    """``aws:defaultTags`` as the pulumi-aws provider reads it: ``{tags: {key: value}}``."""

    tags: SelectorTags = Field(default_factory=dict)
    """Tags the provider adds to every resource it creates."""
