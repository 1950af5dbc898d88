"""The recording as a Terraform plan: token -> type, camelCase -> snake_case, blocks and references."""

from __future__ import annotations

from typing import Any

import pytest

from ekstrain.infra import offline
from ekstrain.infra.verify import tfplan


@pytest.fixture(scope="module")
def plan(prod_recording: offline.Recording) -> dict[str, Any]:
    return tfplan.plan(prod_recording)


@pytest.mark.parametrize(
    ("token", "tf"),
    [
        ("aws:ec2/vpc:Vpc", "aws_vpc"),
        ("aws:s3/bucketPolicy:BucketPolicy", "aws_s3_bucket_policy"),
        ("aws:fsx/lustreFileSystem:LustreFileSystem", "aws_fsx_lustre_file_system"),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "aws_vpc_security_group_ingress_rule"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "aws_launch_template"),
        ("eks:index:Cluster", None),
    ],
)
def test_type_tokens_map_to_terraform_types(token: str, tf: str | None) -> None:
    assert tfplan.tf_type(token) == tf


def test_every_recorded_aws_resource_is_in_the_plan(plan: dict[str, Any], prod_recording: offline.Recording) -> None:
    rec = prod_recording
    assert len(plan["resource_changes"]) == sum(1 for r in rec.records if r.custom and r.type.startswith("aws:"))
    assert len({c["address"] for c in plan["resource_changes"]}) == len(plan["resource_changes"])


def test_blocks_names_and_references_are_terraform_shaped(plan: dict[str, Any]) -> None:
    after = {c["address"]: c["change"]["after"] for c in plan["resource_changes"]}
    lifecycle = after["aws_s3_bucket_lifecycle_configuration.storage-datasets"]
    # `rules` (the bridge's plural) is Terraform's `rule` block; single nested objects are one-element lists
    assert lifecycle["rule"][0]["abort_incomplete_multipart_upload"] == [{"days_after_initiation": 7}]
    lt = after["aws_launch_template.cluster-system"]
    assert lt["metadata_options"][0]["http_tokens"] == "required"
    assert "block_device_mappings" in lt
    vpc = after["aws_vpc.network"]
    assert vpc["enable_dns_hostnames"] is True and vpc["tags"]["Name"] == "ekstrain-prod-vpc", "tag keys kept"
    config = {r["address"]: r["expressions"] for r in plan["configuration"]["root_module"]["resources"]}
    assert config["aws_flow_log.network-flow-logs"]["vpc_id"]["references"] == ["aws_vpc.network.id", "aws_vpc.network"]


def test_block_names() -> None:
    assert tfplan.block_name("rules") == "rule"
    assert tfplan.block_name("policies") == "policy"
    assert tfplan.block_name("blockDeviceMappings") == "block_device_mappings"
    assert tfplan.block_name("ingress") == "ingress"
    assert tfplan.snake_case("perUnitStorageThroughput") == "per_unit_storage_throughput"
