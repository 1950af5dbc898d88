"""Component args check themselves (components/args.py): a bad value is refused when the args object is built,
so no Pulumi runtime is needed to see it and no child can have been registered; the message names the argument,
the value and the fix. Plus the library paths: Network on an existing VPC, partitions selecting ids."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import run_program

from ekstrain.components.args import ComponentArgsError
from ekstrain.components.buckets import BucketsArgs
from ekstrain.components.cluster import AdminPrincipal, ClusterArgs
from ekstrain.components.efs import EfsArgs
from ekstrain.components.fsx import LustreArgs
from ekstrain.components.karpenter import KarpenterArgs
from ekstrain.components.network import Network, NetworkArgs
from ekstrain.components.partitions import HelperPool, HelperPoolArgs, Partition, PartitionArgs
from ekstrain.facts.versions import Chart
from ekstrain.layout.partitions import shape
from ekstrain.payloads.karpenter_specs import HelperPoolSpec, PartitionSpec

H100 = PartitionSpec(
    name="gpu-h100",
    shape=shape("gpu-h100", "gpu", ["p5.48xlarge"], True),
    cluster_name="ml",
    availability_zone="us-west-2b",
    max_nodes=4,
)


LUSTRE = {
    "cluster_name": "ml",
    "vpc_id": "vpc-1",
    "subnet_id": "subnet-e",
    "client_security_group_id": "sg-c",
    "datasets_bucket": "d",
    "checkpoints_bucket": "c",
}
EFS = {
    "cluster_name": "ml",
    "vpc_id": "vpc-1",
    "private_subnet_ids": ["subnet-a"],
    "availability_zones": ["us-west-2a"],
    "client_security_group_id": "sg-c",
}
CHART = Chart(chart="oci://public.ecr.aws/karpenter/karpenter", version="1.14.1")


def partition_args(**spec: Any) -> PartitionArgs:
    return PartitionArgs(spec=replace(H100, **spec), node_role_name="role", cluster_security_group_id="sg-1")


def refused(build: Any, argument: str, *words: str) -> str:
    with pytest.raises(ComponentArgsError) as info:
        build()
    message = str(info.value)
    assert info.value.argument == argument and message.startswith(argument + "="), message
    assert "fix: " in message and all(w in message for w in words), message
    return message


def test_negative_max_nodes_is_refused_with_the_argument_and_the_fix() -> None:
    message = refused(lambda: partition_args(max_nodes=-3), "PartitionArgs.spec.max_nodes", "-3", "at least 1")
    assert "most nodes the partition may run" in message


def test_a_trainium_partition_of_p5_nodes_is_refused() -> None:
    refused(
        lambda: partition_args(shape=shape("trn", "trainium", ["p5.48xlarge"], True)),
        "PartitionArgs.spec.shape.instance_types",
        "'p5.48xlarge'",
        "a gpu instance type",
        "trainium partition",
        "trn1.32xlarge",
    )


@pytest.mark.parametrize(
    ("spec", "argument"),
    [
        ({"capacity_type": "preemptible"}, "PartitionArgs.spec.capacity_type"),
        ({"capacity_type": "reserved"}, "PartitionArgs.spec.capacity_type"),
        ({"root_volume_gib": 5}, "PartitionArgs.spec.root_volume_gib"),
        ({"consolidate_after": "soon"}, "PartitionArgs.spec.consolidate_after"),
        ({"weight": 0}, "PartitionArgs.spec.weight"),
        ({"name": "GPU_H100"}, "PartitionArgs.spec.name"),
        (
            {"shape": shape("g", "gpu", ["g5.48xlarge", "p5.48xlarge"], False)},
            "PartitionArgs.spec.shape.instance_types",
        ),
        (
            {"shape": shape("trn", "trainium", ["trn1.32xlarge", "trn1n.32xlarge"], True), "max_nodes": 1},
            "PartitionArgs.spec.max_nodes",
        ),
    ],
)
def test_partition_spec_values_karpenter_could_not_use_are_refused(spec: dict[str, Any], argument: str) -> None:
    refused(lambda: partition_args(**spec), argument)


def test_partition_ids_must_be_ids() -> None:
    base = {"spec": H100, "node_role_name": "r", "cluster_security_group_id": "sg-1"}
    refused(lambda: PartitionArgs(**base, subnet_ids=[]), "PartitionArgs.subnet_ids", "empty")
    refused(lambda: PartitionArgs(**base, subnet_ids="subnet-1"), "PartitionArgs.subnet_ids", "pass a list")
    refused(lambda: PartitionArgs(**base, security_group_ids=["10.0.0.0/16"]), "PartitionArgs.security_group_ids[0]")


NET = {"cluster_name": "ml", "region": "us-west-2", "training_availability_zone": "us-west-2b"}
EXISTING = {
    **NET,
    "existing_vpc_id": "vpc-0a1",
    "existing_private_subnet_ids": {"us-west-2a": "subnet-0a", "us-west-2b": "subnet-0b"},
    "existing_efa_subnet_ids": {"us-west-2b": "subnet-0e"},
}


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ({**NET, "availability_zones": ["us-west-2b"]}, "NetworkArgs.vpc_cidr"),
        ({**NET, "vpc_cidr": "10.0.0.0/33", "availability_zones": ["us-west-2b"]}, "NetworkArgs.vpc_cidr"),
        (
            {**NET, "vpc_cidr": "10.0.0.0/16", "availability_zones": ["us-west-2a"]},
            "NetworkArgs.training_availability_zone",
        ),
        ({**NET, "vpc_cidr": "10.0.0.0/16", "availability_zones": ["eu-west-1b"]}, "NetworkArgs.availability_zones[0]"),
        (
            {**NET, "vpc_cidr": "10.0.0.0/16", "availability_zones": ["us-west-2b"], "nat_gateways": "both"},
            "NetworkArgs.nat_gateways",
        ),
        (
            {**NET, "vpc_cidr": "10.0.0.0/16", "availability_zones": ["us-west-2b"], "flow_log_retention_days": 42},
            "NetworkArgs.flow_log_retention_days",
        ),
        (
            {
                **NET,
                "vpc_cidr": "10.0.0.0/16",
                "availability_zones": ["us-west-2b"],
                "existing_efa_subnet_ids": {"us-west-2b": "subnet-1"},
            },
            "NetworkArgs.existing_efa_subnet_ids",
        ),
        ({**EXISTING, "existing_efa_subnet_ids": {"us-west-2a": "subnet-0e"}}, "NetworkArgs.existing_efa_subnet_ids"),
        ({**EXISTING, "existing_vpc_id": "10.0.0.0/16"}, "NetworkArgs.existing_vpc_id"),
        ({**EXISTING, "existing_efa_security_group_id": "efa"}, "NetworkArgs.existing_efa_security_group_id"),
        ({**EXISTING, "cluster_name": "-ml"}, "NetworkArgs.cluster_name"),
    ],
)
def test_network_args_are_refused_naming_the_argument(args: dict[str, Any], argument: str) -> None:
    refused(lambda: NetworkArgs(**args), argument)


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        ({"kubernetes_version": "v1.33"}, "ClusterArgs.kubernetes_version"),
        ({"system_min_size": 3, "system_desired_size": 2}, "ClusterArgs.system_desired_size"),
        ({"system_instance_types": ["p5.48xlarge"]}, "ClusterArgs.system_instance_types"),
        (
            {"admin_principals": [AdminPrincipal(principal_arn="Admin")]},
            "ClusterArgs.admin_principals[0].principal_arn",
        ),
        ({"preview_access_policy": "read"}, "ClusterArgs.preview_access_policy"),
        ({"log_types": ["api", "kubelet"]}, "ClusterArgs.log_types"),
        ({"deploy_cidrs": ["10.0.0.300/32"]}, "ClusterArgs.deploy_cidrs"),
    ],
)
def test_cluster_args_are_refused_naming_the_argument(change: dict[str, Any], argument: str) -> None:
    base = {"cluster_name": "ml", "region": "us-west-2", "kubernetes_version": "1.33", "vpc_id": "vpc-1"}
    refused(lambda: ClusterArgs(**{**base, "private_subnet_ids": ["subnet-a"], **change}), argument)


def test_network_on_an_existing_vpc_creates_only_the_efa_group_and_placement_groups() -> None:
    args = NetworkArgs(**EXISTING, existing_public_subnet_ids=["subnet-0p"], placement_group_partitions=["gpu-h100"])
    rec = run_program(
        lambda: {
            "vpc": (n := Network("net", args)).vpc_id,
            "private": n.private_subnet_ids,
            "efa": n.efa_subnet_id,
            "sg": n.efa_security_group_id,
            "public": n.public_subnet_ids,
        }
    )
    children = sorted((r.type, r.name) for r in rec.records if r.type != "ekstrain:network:Network")
    assert children == [
        ("aws:ec2/placementGroup:PlacementGroup", "net-pg-gpu-h100"),
        ("aws:ec2/securityGroup:SecurityGroup", "net-efa"),
        ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "net-efa-self-egress"),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "net-efa-self-ingress"),
    ]
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup", "net-efa")
    assert sg.inputs["vpcId"] == "vpc-0a1"
    assert rec.outputs == {
        "vpc": "vpc-0a1",
        "private": ["subnet-0a", "subnet-0b"],
        "efa": "subnet-0e",
        "sg": sg.outputs["id"],
        "public": ["subnet-0p"],
    }
    given_sg = replace(args, existing_efa_security_group_id="sg-0efa", placement_group_partitions=())
    rec = run_program(lambda: Network("net", given_sg).efa_security_group_id)
    assert [r.type for r in rec.records] == ["ekstrain:network:Network"] and rec.outputs == "sg-0efa"


def test_partitions_select_given_subnets_and_groups_by_id() -> None:
    def program() -> Any:
        Partition(
            "gpu-h100",
            PartitionArgs(
                spec=H100,
                node_role_name="role",
                cluster_security_group_id="sg-cluster",
                subnet_ids=["subnet-0e"],
                security_group_ids=["sg-0efa"],
            ),
        )
        return HelperPool(
            "helpers",
            HelperPoolArgs(
                spec=HelperPoolSpec(cluster_name="ml", availability_zone="us-west-2b"),
                node_role_name="role",
                cluster_security_group_id="sg-cluster",
                subnet_ids=["subnet-0a", "subnet-0b"],
            ),
        ).node_pool_name

    rec = run_program(program)
    gpu = rec.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "gpu-h100-nodeclass").inputs["spec"]
    assert gpu["subnetSelectorTerms"] == [{"id": "subnet-0e"}]
    assert gpu["securityGroupSelectorTerms"] == [{"id": "sg-cluster"}, {"id": "sg-0efa"}]
    helpers = rec.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "helpers-nodeclass").inputs["spec"]
    assert helpers["subnetSelectorTerms"] == [{"id": "subnet-0a"}, {"id": "subnet-0b"}]
    assert helpers["securityGroupSelectorTerms"] == [{"id": "sg-cluster"}]


def test_without_ids_partitions_keep_the_documented_discovery_tags() -> None:
    rec = run_program(lambda: Partition("gpu-h100", partition_args()).node_pool_names)
    spec = rec.one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "gpu-h100-nodeclass").inputs["spec"]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml", "ekstrain.io/subnet-role": "efa"}}]
    assert spec["securityGroupSelectorTerms"] == [
        {"id": "sg-1"},
        {"tags": {"karpenter.sh/discovery": "ml", "ekstrain.io/sg-role": "efa"}},
    ]


@pytest.mark.parametrize(
    ("build", "argument"),
    [
        (
            lambda: LustreArgs(**LUSTRE, storage_capacity_gib=1500),
            "LustreArgs.storage_capacity_gib",
        ),
        (lambda: LustreArgs(**LUSTRE, deployment_type="PERSISTENT_1"), "LustreArgs.deployment_type"),
        (lambda: LustreArgs(**LUSTRE, data_path="data"), "LustreArgs.data_path"),
        (lambda: LustreArgs(**LUSTRE, auto_export_events=["NEW", "MOVED"]), "LustreArgs.auto_export_events"),
        (
            lambda: KarpenterArgs(cluster_name="ml", region="us-west-2", chart=CHART, crd_chart=CHART, replicas=0),
            "KarpenterArgs.replicas",
        ),
        (lambda: EfsArgs(**EFS, throughput_mode="provisioned"), "EfsArgs.throughput_mode"),
        (lambda: BucketsArgs(cluster_name="ml", noncurrent_version_days=0), "BucketsArgs.noncurrent_version_days"),
    ],
)
def test_storage_and_karpenter_args_are_refused_naming_the_argument(build: Any, argument: str) -> None:
    refused(build, argument)


def test_ids_may_be_outputs_of_other_resources() -> None:
    import pulumi

    def program() -> Any:
        ids = pulumi.Output.from_input(["subnet-0a", "subnet-0b"])
        return HelperPool(
            "helpers",
            HelperPoolArgs(
                spec=HelperPoolSpec(cluster_name="ml", availability_zone="us-west-2b"),
                node_role_name="role",
                cluster_security_group_id=pulumi.Output.from_input("sg-cluster"),
                subnet_ids=ids,
            ),
        ).node_pool_name

    spec = run_program(program).one("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "helpers-nodeclass").inputs["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-0a"}, {"id": "subnet-0b"}]
