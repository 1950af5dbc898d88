"""AWS create-time rules the mock accepts: each seeded defect is caught; every stack is clean."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from conftest import STACK_NAMES, shipped_recording

from ekstrain.infra import offline
from ekstrain.infra.verify import aws_rules


@pytest.fixture(scope="module")
def prod(prod_recording: offline.Recording) -> offline.Recording:
    """The session's prod recording (conftest.py): the tests deep-copy records before they change any."""
    return prod_recording


def seeded(
    rec: offline.Recording, type_token: str, change: Callable[[offline.Record], None], name: str | None = None
) -> list[str]:
    records = copy.deepcopy(rec.records)
    target = next(r for r in records if r.type == type_token and (name is None or r.name == name))
    change(target)
    return aws_rules.check_recording(offline.Recording(records, rec.outputs, rec.invokes)).problems


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_every_stack_follows_the_aws_rules(stack: str, request: pytest.FixtureRequest) -> None:
    check = aws_rules.check_recording(shipped_recording(request, stack))
    assert check.problems == []
    assert check.checked > 50


def test_an_autoname_too_long_for_iam_is_caught(prod: offline.Recording) -> None:
    # GIVEN a role with no name whose logical name + 8 autoname characters exceeds IAM's 64
    def rename(r: offline.Record) -> None:
        r.name = "r" * 60

    [problem] = seeded(prod, "aws:iam/role:Role", rename, "cluster-system-node")
    assert problem == (
        f"aws:iam/role:Role {'r' * 60}: name autoname {'r' * 60}-<7 random> is 68 characters; "
        "IAM CreateRole RoleName allows 1-64"
    )


def test_an_explicit_name_with_bad_characters_is_caught(prod: offline.Recording) -> None:
    def bad(r: offline.Record) -> None:
        r.inputs["name"] = "karpenter interruption!"

    [problem] = seeded(prod, "aws:sqs/queue:Queue", bad)
    assert "has characters SQS CreateQueue QueueName rejects" in problem


@pytest.mark.parametrize(
    ("name", "finding"),
    [
        ("My_Bucket", "3-63 lowercase"),
        ("a..b", "adjacent dots"),
        ("192.168.1.1", "IP address"),
        ("xn--bucket", "reserved prefix"),
        ("b" * 64, "3-63 lowercase"),
        ("data-s3alias", "reserved prefix"),
    ],
)
def test_bad_bucket_names_are_caught(prod: offline.Recording, name: str, finding: str) -> None:
    def bad(r: offline.Record) -> None:
        r.inputs.pop("bucketPrefix", None)
        r.inputs["bucket"] = name

    problems = seeded(prod, "aws:s3/bucket:Bucket", bad)
    assert len(problems) >= 1 and all("S3 bucket naming rules" in p for p in problems)
    assert any(finding in p for p in problems), problems
    assert aws_rules.bucket_name_problems("ekstrain-prod-datasets-0123456789") == []


def test_a_bucket_prefix_too_long_for_the_unique_suffix_is_caught(prod: offline.Recording) -> None:
    def long_prefix(r: offline.Record) -> None:
        r.inputs["bucketPrefix"] = "p" * 38

    [problem] = seeded(prod, "aws:s3/bucket:Bucket", long_prefix)
    assert "bucketPrefix" in problem and "allows 37" in problem


@pytest.mark.parametrize(
    ("tags", "finding"),
    [
        ({f"k{i}": "v" for i in range(51)}, "51 tags; AWS allows 50"),
        ({"k" * 129: "v"}, "is 129 characters (max 128)"),
        ({"owner": "v" * 257}, "value is 257 characters (max 256)"),
        ({"aws:owner": "me"}, "reserved aws: prefix"),
        ({"team": "ml;ops"}, "has characters AWS rejects"),
    ],
)
def test_tag_limits_are_caught(prod: offline.Recording, tags: dict[str, Any], finding: str) -> None:
    def tag(r: offline.Record) -> None:
        r.inputs["tags"] = tags

    problems = seeded(prod, "aws:ec2/vpc:Vpc", tag)
    assert any(finding in p for p in problems), problems


def test_a_subnet_outside_its_vpc_or_overlapping_is_caught(prod: offline.Recording) -> None:
    def outside(r: offline.Record) -> None:
        r.inputs["cidrBlock"] = "10.99.0.0/24"

    [problem] = seeded(prod, "aws:ec2/subnet:Subnet", outside)
    assert "is not inside VPC network's 10.40.0.0/16" in problem
    subnets = [r for r in prod.records if r.type == "aws:ec2/subnet:Subnet"]

    def overlap(r: offline.Record) -> None:
        r.inputs["cidrBlock"] = subnets[1].inputs["cidrBlock"]

    problems = seeded(prod, "aws:ec2/subnet:Subnet", overlap, subnets[0].name)
    assert problems == [
        f"aws:ec2/subnet:Subnet {subnets[0].name} ({subnets[1].inputs['cidrBlock']}) overlaps "
        f"{subnets[1].name} ({subnets[1].inputs['cidrBlock']}) in the same VPC"
    ]


def test_two_efs_mount_targets_in_one_az_are_caught(prod: offline.Recording) -> None:
    targets = [r for r in prod.records if r.type == "aws:efs/mountTarget:MountTarget"]
    assert len(targets) >= 2

    def same_subnet(r: offline.Record) -> None:
        r.inputs["subnetId"] = targets[0].inputs["subnetId"]

    [problem] = seeded(prod, "aws:efs/mountTarget:MountTarget", same_subnet, targets[1].name)
    assert "EFS allows one per Availability Zone" in problem


@pytest.mark.parametrize(
    ("deployment", "storage", "capacity", "throughput", "finding"),
    [
        ("PERSISTENT_2", "SSD", 3000, 250, "1200, 2400 or multiples of 2400"),
        ("SCRATCH_1", "SSD", 4800, None, "multiples of 3600"),
        ("PERSISTENT_1", "HDD", 1800, 12, "multiples of 6000"),
        ("PERSISTENT_2", "SSD", 4800, 200, "offers [125, 250, 500, 1000]"),
    ],
)
def test_fsx_capacity_steps_and_throughput_are_caught(
    prod: offline.Recording, deployment: str, storage: str, capacity: int, throughput: int | None, finding: str
) -> None:
    def size(r: offline.Record) -> None:
        r.inputs.update(deploymentType=deployment, storageType=storage, storageCapacity=capacity)
        r.inputs.pop("perUnitStorageThroughput", None)
        if throughput is not None:
            r.inputs["perUnitStorageThroughput"] = throughput

    problems = seeded(prod, "aws:fsx/lustreFileSystem:LustreFileSystem", size)
    assert any(finding in p for p in problems), problems
    assert aws_rules.fsx_problems("PERSISTENT_2", "SSD", 7200, 500) == []
