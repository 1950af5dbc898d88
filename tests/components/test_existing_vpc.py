"""``ekstrain:network.existingVpc``: a stack file deploying into someone else's VPC.

One offline program run of Pulumi.dev.yaml with the section (no VPC, subnet, NAT or route table registered;
the EC2NodeClasses, the EFA security group and FSx use the given ids), and bad sections refused with the key
and the fix before anything registers.
"""

from __future__ import annotations

import copy
import datetime as dt
import pathlib
from typing import Any

import pytest
from conftest import REPO, run_stack

from ekstrain.infra.offline import Recording
from ekstrain.infra.verify import aws_rules, iam, policy, relations, sdk_schema, secrets
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import load_flat, parse, read_stack_file, sections_from_flat

TODAY = dt.date(2026, 12, 3)
VPC = "vpc-0123456789abcdef0"
PRIVATE_A, PRIVATE_B, EFA_A = "subnet-0aaaaaaaaaaaaaaa1", "subnet-0bbbbbbbbbbbbbbb2", "subnet-0eeeeeeeeeeeeeee3"
PUBLIC_A = "subnet-0ccccccccccccccc4"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"

NETWORK = f"""  ekstrain:network:
    trainingAvailabilityZone: us-west-2a
    existingVpc:
      vpcId: {VPC}
      privateSubnets:
        us-west-2a: {{id: {PRIVATE_A}, cidr: 10.20.0.0/19}}
        us-west-2b: {{id: {PRIVATE_B}, cidr: 10.20.32.0/19}}
      efaSubnets:
        us-west-2a: {{id: {EFA_A}, cidr: 10.20.64.0/18}}
      publicSubnets:
        - {{id: {PUBLIC_A}, cidr: 10.20.128.0/24}}
"""


def _dev_with_existing_vpc(tmp_path: pathlib.Path) -> pathlib.Path:
    text = (REPO / "Pulumi.dev.yaml").read_text()
    start = text.index("  ekstrain:network:\n")
    end = text.index("  ekstrain:partitions:\n")
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text[:start] + NETWORK + text[end:])
    return path


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    flat, _ = read_stack_file(_dev_with_existing_vpc(tmp_path_factory.mktemp("existing-vpc")))
    cfg, _ = load_flat(flat, "Pulumi.dev.yaml", TODAY)
    assert cfg.network.availability_zones == ["us-west-2a", "us-west-2b"]  # derived from privateSubnets
    return run_stack(cfg)


def test_no_vpc_subnet_nat_route_or_endpoint_is_registered(recording: Recording) -> None:
    for token in (
        "aws:ec2/vpc:Vpc",
        "aws:ec2/subnet:Subnet",
        "aws:ec2/natGateway:NatGateway",
        "aws:ec2/routeTable:RouteTable",
        "aws:ec2/route:Route",
        "aws:ec2/internetGateway:InternetGateway",
        "aws:ec2/eip:Eip",
        "aws:ec2/vpcEndpoint:VpcEndpoint",
        "aws:ec2/flowLog:FlowLog",
        "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    ):
        assert recording.of_type(token) == [], token
    assert recording.outputs["vpcId"] == VPC
    assert recording.outputs["privateSubnetIds"] == [PRIVATE_A, PRIVATE_B]
    assert recording.outputs["publicSubnetIds"] == [PUBLIC_A]
    assert recording.outputs["efaSubnetId"] == EFA_A


def test_cluster_gets_the_given_vpc_and_subnets(recording: Recording) -> None:
    (cluster,) = recording.of_type("eks:index:Cluster")
    assert cluster.inputs["vpcId"] == VPC
    assert cluster.inputs["privateSubnetIds"] == [PRIVATE_A, PRIVATE_B]
    assert cluster.inputs["publicSubnetIds"] == [PUBLIC_A]


def test_nodeclasses_select_the_given_subnets_and_efa_group_by_id(recording: Recording) -> None:
    efa_sg = recording.one("aws:ec2/securityGroup:SecurityGroup", "network-efa")
    assert efa_sg.inputs["vpcId"] == VPC
    classes = {nc.inputs["metadata"]["name"]: nc.inputs["spec"] for nc in recording.of_type(NODECLASS)}
    assert set(classes) == {"gpu-small", "cpu-helpers"}
    gpu = classes["gpu-small"]  # g5.8xlarge, EFA on: the training AZ's EFA subnet, cluster SG + EFA SG
    assert gpu["subnetSelectorTerms"] == [{"id": EFA_A}]
    sg_ids = [t["id"] for t in gpu["securityGroupSelectorTerms"]]
    assert sg_ids == [recording.outputs["clusterSecurityGroupId"], recording.outputs["efaSecurityGroupId"]]
    assert all(set(t) == {"id"} for t in gpu["securityGroupSelectorTerms"])
    assert classes["cpu-helpers"]["subnetSelectorTerms"] == [{"id": PRIVATE_A}, {"id": PRIVATE_B}]


def test_fsx_lives_in_the_training_az_efa_subnet_of_the_given_vpc(recording: Recording) -> None:
    (fsx,) = recording.of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    assert fsx.inputs["subnetIds"] == EFA_A
    fsx_sg = recording.one("aws:ec2/securityGroup:SecurityGroup", "fsx-sg")
    assert fsx_sg.inputs["vpcId"] == VPC


def test_a_given_efa_security_group_is_used_and_none_created() -> None:
    sections = _sections()
    sections["network"]["existingVpc"]["efaSecurityGroupId"] = "sg-0fedcba9876543210"
    sections["partitions"][0]["efa"] = False
    sections["partitions"].append({**sections["partitions"][0], "name": "gpu-efa", "efa": True})
    rec = run_stack(parse(sections, "test", today=TODAY)[0])
    assert [r.name for r in rec.of_type("aws:ec2/securityGroup:SecurityGroup") if r.name.startswith("network")] == []
    classes = {nc.inputs["metadata"]["name"]: nc.inputs["spec"] for nc in rec.of_type(NODECLASS)}
    assert classes["gpu-efa"]["securityGroupSelectorTerms"][1] == {"id": "sg-0fedcba9876543210"}
    # Non-EFA partition: the private subnets (the zone requirement keeps it in the training AZ), cluster SG only.
    assert classes["gpu-small"]["subnetSelectorTerms"] == [{"id": PRIVATE_A}, {"id": PRIVATE_B}]
    assert len(classes["gpu-small"]["securityGroupSelectorTerms"]) == 1


def test_the_renders_aws_checks_and_policy_pack_pass(recording: Recording) -> None:
    """What the offline render checks without helm: SDK schemas, IAM, create-time rules, the CrossGuard pack
    (efa-single-subnet reads id selectors when the stack has no subnet), secrets, pulumi-eks children."""
    checks = [
        relations.eks_children(recording),
        sdk_schema.check_recording(recording),
        iam.check_recording(recording),
        aws_rules.check_recording(recording),
        policy.check_recording(recording, "dev"),
        secrets.check_recording(recording),
    ]
    assert {c.name: c.problems for c in checks if c.problems} == {}


def test_efs_mount_targets_go_in_the_given_private_subnets() -> None:
    sections = _sections()
    sections["storage"]["efs"] = {"enabled": True}
    rec = run_stack(parse(sections, "test", today=TODAY)[0])
    targets = sorted(r.inputs["subnetId"] for r in rec.of_type("aws:efs/mountTarget:MountTarget"))
    assert targets == [PRIVATE_A, PRIVATE_B]
    assert rec.one("aws:ec2/securityGroup:SecurityGroup", "efs-sg").inputs["vpcId"] == VPC


# ---- refused before anything registers ---------------------------------------------------------------


def _sections() -> dict[str, Any]:
    flat, _ = read_stack_file(REPO / "Pulumi.dev.yaml")
    sections, _ = sections_from_flat(flat)
    sections["network"] = {
        "trainingAvailabilityZone": "us-west-2a",
        "existingVpc": {
            "vpcId": VPC,
            "privateSubnets": {
                "us-west-2a": {"id": PRIVATE_A, "cidr": "10.20.0.0/19"},
                "us-west-2b": {"id": PRIVATE_B, "cidr": "10.20.32.0/19"},
            },
            "efaSubnets": {"us-west-2a": {"id": EFA_A, "cidr": "10.20.64.0/18"}},
        },
    }
    return sections


def _set(path: str, value: Any) -> Any:
    def change(sections: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node = sections
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value

    return change


DELETE = object()
E = "ekstrain:network.existingVpc"

BAD = {
    "vpc id shape": (_set("network/existingVpc/vpcId", "vpc-123"), f"{E}.vpcId", "vpc-0123456789abcdef0"),
    "subnet id shape": (
        _set("network/existingVpc/privateSubnets/us-west-2a/id", "subnet-XYZ"),
        f"{E}.privateSubnets.us-west-2a.id",
        "subnet-0123456789abcdef0",
    ),
    "sg id shape": (
        _set("network/existingVpc/efaSecurityGroupId", "sg-12"),
        f"{E}.efaSecurityGroupId",
        "sg-0123456789abcdef0",
    ),
    "subnet cidr": (
        _set("network/existingVpc/efaSubnets/us-west-2a/cidr", "10.20.64.1/18"),
        f"{E}.efaSubnets.us-west-2a.cidr",
        "write it like 10.0.0.0/16",
    ),
    "no EFA subnet in the training AZ": (
        _set("network/existingVpc/efaSubnets", {"us-west-2b": {"id": EFA_A, "cidr": "10.20.64.0/18"}}),
        f"{E}.efaSubnets",
        "add us-west-2a: {id: subnet-..., cidr: ...}",
    ),
    "no private subnet in the training AZ": (
        _set("network/trainingAvailabilityZone", "us-west-2c"),
        f"{E}.privateSubnets",
        "add us-west-2c: {id: subnet-..., cidr: ...}",
    ),
    "vpcCidr with existingVpc": (_set("network/vpcCidr", "10.0.0.0/16"), "ekstrain:network.vpcCidr", "remove"),
    "natGateways with existingVpc": (_set("network/natGateways", "perAz"), "ekstrain:network.natGateways", "remove"),
    "availabilityZones differ": (
        _set("network/availabilityZones", ["us-west-2a", "us-west-2c"]),
        "ekstrain:network.availabilityZones",
        "remove availabilityZones",
    ),
    "overlapping subnets": (
        _set("network/existingVpc/privateSubnets/us-west-2b/cidr", "10.20.16.0/20"),
        f"{E}.privateSubnets.us-west-2b.cidr",
        "give each subnet's own CIDR",
    ),
    "one id in two zones": (
        _set("network/existingVpc/privateSubnets/us-west-2b/id", PRIVATE_A),
        f"{E}.privateSubnets.us-west-2b.id",
        "give the id of a subnet in us-west-2b",
    ),
    "unknown zone": (
        _set(
            "network/existingVpc/privateSubnets/us-east-1a",
            {"id": "subnet-0ddddddddddddddd5", "cidr": "10.20.160.0/20"},
        ),
        f"{E}.privateSubnets.us-east-1a",
        "",
    ),
    "EFA subnet too small for maxNodes": (
        _set("network/existingVpc/efaSubnets/us-west-2a/cidr", "10.20.64.0/27"),
        f"{E}.efaSubnets.us-west-2a.cidr",
        "use a larger subnet",
    ),
    "shared EFA/private subnet too small for all partitions": (
        lambda s: (
            _set("network/existingVpc/efaSubnets/us-west-2a", {"id": PRIVATE_A, "cidr": "10.20.0.0/26"})(s),
            _set("network/existingVpc/privateSubnets/us-west-2a/cidr", "10.20.0.0/26")(s),
        ),
        f"{E}.efaSubnets.us-west-2a.cidr",
        "use a larger subnet",
    ),
    "same subnet, two CIDRs": (
        _set("network/existingVpc/efaSubnets/us-west-2a", {"id": PRIVATE_A, "cidr": "10.20.0.0/20"}),
        f"{E}.efaSubnets.us-west-2a.cidr",
        "the same at both keys",
    ),
    "unknown key": (_set("network/existingVpc/vpcCidr", "10.0.0.0/16"), f"{E}.vpcCidr", "allowed here"),
    "hub without allow-list": (
        _set("jupyterhub", {"enabled": True}),
        "ekstrain:jupyterhub.allowedCidrs",
        "list who may reach",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_existing_vpc_is_refused_with_key_and_fix(case: str) -> None:
    change, key, fix = BAD[case]
    sections = _sections()
    change(sections)
    with pytest.raises(ConfigError) as err:
        parse(sections, "test", today=TODAY)
    matching = [i for i in err.value.issues if i.key == key]
    assert matching, str(err.value)
    if key.startswith(E):  # reported once, at the key the user wrote (availabilityZones may be derived)
        assert not [i for i in err.value.issues if i.key.startswith("ekstrain:network.availabilityZones")]
    assert any(fix in i.fix for i in matching), str(err.value)


def test_the_good_section_parses() -> None:
    cfg, _ = parse(_sections(), "test", today=TODAY)
    assert cfg.network.existing_vpc is not None


ODD_VALUES = [None, "", 0, -1, True, [], {}, "x" * 300, "us-west-2a", "subnet-0aaaaaaaaaaaaaaa1", "10.20.0.0/19"]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [path] + [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [path] + [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))]
    return [path]


def test_any_value_anywhere_in_the_section_is_valid_or_a_config_error() -> None:
    """Every key of network (existingVpc included) set to odd values, or deleted: parse returns or raises
    ConfigError, never another exception (the rules read only what the models admitted)."""
    base = _sections()
    base["network"]["existingVpc"]["publicSubnets"] = [{"id": PUBLIC_A, "cidr": "10.20.128.0/24"}]
    base["network"]["existingVpc"]["efaSecurityGroupId"] = "sg-0fedcba9876543210"
    outcomes = {"valid": 0, "error": 0}
    for path in _leaves(base["network"]):
        for value in [DELETE, *ODD_VALUES]:
            sections = copy.deepcopy(base)
            node: Any = sections["network"]
            if not path:
                sections["network"] = None if value is DELETE else value
            else:
                for part in path[:-1]:
                    node = node[part]
                if value is DELETE:
                    del node[path[-1]]
                else:
                    node[path[-1]] = value
            try:
                parse(sections, "test", today=TODAY)
                outcomes["valid"] += 1
            except ConfigError as exc:
                assert all(i.key and i.problem and i.fix for i in exc.issues), str(exc)
                outcomes["error"] += 1
    assert outcomes["valid"] and outcomes["error"] > 100, outcomes
