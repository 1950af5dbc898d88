"""Network component contract: exact child types, names and key inputs as the engine received them."""

from __future__ import annotations

import pytest
from conftest import run_program

from ekstrain.components.network import Network, NetworkArgs
from ekstrain.infra.offline import Recording

ARGS = NetworkArgs(
    cluster_name="ml",
    region="us-west-2",
    vpc_cidr="10.0.0.0/16",
    availability_zones=["us-west-2a", "us-west-2b"],
    training_availability_zone="us-west-2b",
    placement_group_partitions=["gpu-h100"],
    tags={"Team": "ml"},
)


@pytest.fixture(scope="module")
def rec() -> Recording:
    return run_program(lambda: Network("net", ARGS).efa_subnet_id)


def test_children_are_named_from_the_component_and_parented_to_it(rec: Recording) -> None:
    component = rec.one("ekstrain:network:Network", "net")
    children = [r for r in rec.records if r is not component]
    assert children and all(r.parent == component.urn for r in children)
    assert all(r.name == "net" or r.name.startswith("net-") for r in children)


def test_efa_subnet_is_single_private_subnet_in_training_az_with_discovery_tags(rec: Recording) -> None:
    efa = rec.one("aws:ec2/subnet:Subnet", "net-efa-us-west-2b")
    assert efa.inputs["availabilityZone"] == "us-west-2b"
    assert efa.inputs["cidrBlock"] == "10.0.0.0/18"
    assert efa.inputs["mapPublicIpOnLaunch"] is False
    assert efa.inputs["tags"]["karpenter.sh/discovery"] == "ml"
    assert efa.inputs["tags"]["ekstrain.io/subnet-role"] == "efa"
    assert efa.inputs["tags"]["Team"] == "ml"
    efa_subnets = [
        r for r in rec.of_type("aws:ec2/subnet:Subnet") if r.inputs["tags"].get("ekstrain.io/subnet-role") == "efa"
    ]
    assert len(efa_subnets) == 1


def test_public_and_private_subnets_per_az(rec: Recording) -> None:
    names = sorted(r.name for r in rec.of_type("aws:ec2/subnet:Subnet"))
    assert names == [
        "net-efa-us-west-2b",
        "net-private-us-west-2a",
        "net-private-us-west-2b",
        "net-public-us-west-2a",
        "net-public-us-west-2b",
    ]
    assert rec.one("aws:ec2/subnet:Subnet", "net-public-us-west-2a").inputs["tags"]["kubernetes.io/role/elb"] == "1"
    private = rec.one("aws:ec2/subnet:Subnet", "net-private-us-west-2a")
    assert private.inputs["tags"]["kubernetes.io/role/internal-elb"] == "1"


def test_single_nat_sits_in_training_az_and_every_private_route_uses_it(rec: Recording) -> None:
    nats = rec.of_type("aws:ec2/natGateway:NatGateway")
    assert [n.name for n in nats] == ["net-nat-us-west-2b"]
    nat_id = nats[0].outputs["id"]
    private_routes = [r for r in rec.of_type("aws:ec2/route:Route") if "natGatewayId" in r.inputs]
    assert len(private_routes) == 3 and {r.inputs["natGatewayId"] for r in private_routes} == {nat_id}


def test_efa_security_group_allows_all_traffic_to_and_from_itself_only(rec: Recording) -> None:
    sg = rec.one("aws:ec2/securityGroup:SecurityGroup", "net-efa")
    assert "ingress" not in sg.inputs and "egress" not in sg.inputs, "rules are separate resources"
    sg_id = sg.outputs["id"]
    ingress = rec.one("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "net-efa-self-ingress")
    egress = rec.one("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "net-efa-self-egress")
    for rule in (ingress, egress):
        assert rule.inputs["ipProtocol"] == "-1"
        assert rule.inputs["securityGroupId"] == sg_id
        assert rule.inputs["referencedSecurityGroupId"] == sg_id
        assert "cidrIpv4" not in rule.inputs
    assert sg.inputs["tags"]["karpenter.sh/discovery"] == "ml"


def test_one_cluster_placement_group_per_efa_partition(rec: Recording) -> None:
    pgs = rec.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert [(p.name, p.inputs["name"], p.inputs["strategy"]) for p in pgs] == [
        ("net-pg-gpu-h100", "ml-gpu-h100", "cluster")
    ]


def test_s3_gateway_endpoint_serves_all_private_route_tables(rec: Recording) -> None:
    endpoint = rec.one("aws:ec2/vpcEndpoint:VpcEndpoint", "net-s3")
    assert endpoint.inputs["serviceName"] == "com.amazonaws.us-west-2.s3"
    assert len(endpoint.inputs["routeTableIds"]) == 3


def test_per_az_nat() -> None:
    args = NetworkArgs(**{**ARGS.__dict__, "nat_gateways": "perAz"})
    rec = run_program(lambda: Network("net", args).vpc_id)
    assert sorted(n.name for n in rec.of_type("aws:ec2/natGateway:NatGateway")) == [
        "net-nat-us-west-2a",
        "net-nat-us-west-2b",
    ]


def test_default_security_group_is_managed_with_no_rules(rec: Recording) -> None:
    vpc = rec.one("aws:ec2/vpc:Vpc", "net")
    default = rec.one("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup", "net-default")
    assert default.inputs["vpcId"] == vpc.outputs["id"]
    assert "ingress" not in default.inputs and "egress" not in default.inputs


def test_vpc_flow_logs_go_to_a_log_group_through_a_scoped_role(rec: Recording) -> None:
    import json

    flow = rec.one("aws:ec2/flowLog:FlowLog", "net-flow-logs")
    group = rec.one("aws:cloudwatch/logGroup:LogGroup", "net-flow-logs")
    role = rec.one("aws:iam/role:Role", "net-flow-logs")
    assert flow.inputs["vpcId"] == rec.one("aws:ec2/vpc:Vpc", "net").outputs["id"]
    assert (flow.inputs["trafficType"], flow.inputs["logDestinationType"]) == ("ALL", "cloud-watch-logs")
    assert flow.inputs["logDestination"] == group.outputs["arn"] and flow.inputs["iamRoleArn"] == role.outputs["arn"]
    assert group.inputs["retentionInDays"] == 90
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "vpc-flow-logs.amazonaws.com"}
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "net-flow-logs").inputs["policy"])
    assert policy["Statement"][0]["Resource"] == [group.outputs["arn"], group.outputs["arn"] + ":*"]
