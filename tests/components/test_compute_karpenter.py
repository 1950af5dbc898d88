"""Karpenter component contract: IAM, Pod Identity, interruption queue + rules, chart order and values."""

from __future__ import annotations

import json

import pulumi
import pytest
from conftest import run_program

from ekstrain.components.karpenter import INTERRUPTION_EVENTS, Karpenter, KarpenterArgs
from ekstrain.facts.versions import DEFAULT_CHARTS
from ekstrain.infra.offline import Recording
from ekstrain.tooling import validation

ARGS = KarpenterArgs(
    cluster_name="ml-prod",
    region="us-west-2",
    chart=DEFAULT_CHARTS["karpenter"],
    crd_chart=DEFAULT_CHARTS["karpenter-crd"],
    tags={"Team": "ml"},
)
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def rec() -> Recording:
    def program() -> pulumi.Output[str]:
        k = Karpenter("karpenter", ARGS)
        return k.queue_name

    return run_program(program)


def _policy(rec: Recording, short: str) -> dict:
    return json.loads(rec.one("aws:iam/policy:Policy", f"karpenter-{short}").inputs["policy"])


def test_node_role_access_entry_and_managed_policies(rec: Recording) -> None:
    role = rec.one("aws:iam/role:Role", "karpenter-node")
    assert role.inputs["name"] == "KarpenterNodeRole-ml-prod"
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    attached = sorted(
        r.inputs["policyArn"]
        for r in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("karpenter-node-")
    )
    assert attached == [
        f"arn:aws:iam::aws:policy/{p}"
        for p in (
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonSSMManagedInstanceCore",
        )
    ]
    entry = rec.one("aws:eks/accessEntry:AccessEntry", "karpenter-node")
    assert entry.inputs["type"] == "EC2_LINUX" and entry.inputs["clusterName"] == "ml-prod"
    assert entry.inputs["principalArn"] == role.outputs["arn"]


def test_controller_role_uses_pod_identity_for_the_chart_service_account(rec: Recording) -> None:
    role = rec.one("aws:iam/role:Role", "karpenter-controller")
    assert role.inputs["name"] == "ml-prod-karpenter"
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assoc = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-controller")
    assert (assoc.inputs["namespace"], assoc.inputs["serviceAccount"]) == ("kube-system", "karpenter")
    assert assoc.inputs["roleArn"] == role.outputs["arn"]
    attached = {
        r.inputs["policyArn"]
        for r in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("karpenter-controller-")
    }
    policies = {r.name: r for r in rec.of_type("aws:iam/policy:Policy")}
    assert sorted(p.inputs["name"] for p in policies.values()) == sorted(
        f"KarpenterController{s}Policy-ml-prod"
        for s in (
            "NodeLifecycle",
            "IAMIntegration",
            "EKSIntegration",
            "Interruption",
            "ResourceDiscovery",
            "ZonalShift",
        )
    )
    assert attached == {p.outputs["arn"] for p in policies.values()}


def test_node_lifecycle_allows_placement_groups_and_reservations_scoped_to_the_cluster(rec: Recording) -> None:
    statements = {s["Sid"]: s for s in _policy(rec, "NodeLifecycle")["Statement"]}
    access = statements["AllowScopedEC2InstanceAccessActions"]["Resource"]
    assert "arn:aws:ec2:us-west-2:*:placement-group/*" in access
    assert "arn:aws:ec2:us-west-2:*:capacity-reservation/*" in access
    assert "arn:aws:ec2:us-west-2::image/*" in access
    tagged = statements["AllowScopedEC2InstanceActionsWithTags"]["Condition"]
    assert tagged["StringEquals"] == {
        "aws:RequestTag/kubernetes.io/cluster/ml-prod": "owned",
        "aws:RequestTag/eks:eks-cluster-name": "ml-prod",
    }
    assert tagged["StringLike"] == {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    deletion = statements["AllowScopedDeletion"]
    assert deletion["Action"] == ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"]
    assert deletion["Condition"]["StringEquals"] == {"aws:ResourceTag/kubernetes.io/cluster/ml-prod": "owned"}
    every_action = [
        a for s in statements.values() for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    assert "*" not in every_action and "ec2:*" not in every_action


def test_discovery_iam_eks_interruption_and_zonal_shift(rec: Recording) -> None:
    discovery = {s["Sid"]: s for s in _policy(rec, "ResourceDiscovery")["Statement"]}
    read = discovery["AllowRegionalReadActions"]
    assert {"ec2:DescribePlacementGroups", "ec2:DescribeCapacityReservations"} <= set(read["Action"])
    assert read["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}
    assert discovery["AllowSSMReadActions"]["Resource"] == "arn:aws:ssm:us-west-2::parameter/aws/service/*"
    node_role_arn = rec.one("aws:iam/role:Role", "karpenter-node").outputs["arn"]
    account = node_role_arn.split(":")[4]
    iam_stmts = {s["Sid"]: s for s in _policy(rec, "IAMIntegration")["Statement"]}
    assert iam_stmts["AllowPassingInstanceRole"]["Resource"] == node_role_arn
    assert iam_stmts["AllowScopedInstanceProfileCreationActions"]["Resource"] == (
        f"arn:aws:iam::{account}:instance-profile/*"
    )
    cluster_arn = f"arn:aws:eks:us-west-2:{account}:cluster/ml-prod"
    assert _policy(rec, "EKSIntegration")["Statement"][0]["Resource"] == cluster_arn
    assert _policy(rec, "ZonalShift")["Statement"] == [
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Resource": "*",
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
        }
    ]
    queue = rec.one("aws:sqs/queue:Queue", "karpenter-interruption")
    interruption = _policy(rec, "Interruption")["Statement"][0]
    assert interruption["Resource"] == queue.outputs["arn"]
    assert interruption["Action"] == ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]


def test_queue_is_encrypted_and_https_only(rec: Recording) -> None:
    queue = rec.one("aws:sqs/queue:Queue", "karpenter-interruption")
    assert queue.inputs["name"] == "ml-prod" and queue.inputs["sqsManagedSseEnabled"] is True
    assert queue.inputs["messageRetentionSeconds"] == 300
    policy = json.loads(rec.one("aws:sqs/queuePolicy:QueuePolicy", "karpenter-interruption").inputs["policy"])
    allow, deny = policy["Statement"]
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    assert allow["Action"] == "sqs:SendMessage"
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_interruption_rules_target_the_queue_and_health_notices_do_not_drain(rec: Recording) -> None:
    rules = {r.name: json.loads(r.inputs["eventPattern"]) for r in rec.of_type("aws:cloudwatch/eventRule:EventRule")}
    # No aws.health rule: Karpenter drains on a scheduled-change notice's arrival, days before the window.
    assert {(p["source"][0], p["detail-type"][0]) for p in rules.values()} == {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    }
    assert len(rules) == len(INTERRUPTION_EVENTS) == 4
    queue_arn = rec.one("aws:sqs/queue:Queue", "karpenter-interruption").outputs["arn"]
    targets = rec.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 4 and {t.inputs["arn"] for t in targets} == {queue_arn}


def test_crd_chart_installs_before_the_controller_chart(rec: Recording) -> None:
    crd = rec.one(RELEASE, "karpenter-crd")
    main = rec.one(RELEASE, "karpenter")
    assert (crd.inputs["name"], crd.inputs["chart"], crd.inputs["version"]) == (
        "karpenter-crd",
        "oci://public.ecr.aws/karpenter/karpenter-crd",
        "1.14.1",
    )
    assert (main.inputs["name"], main.inputs["chart"], main.inputs["version"], main.inputs["namespace"]) == (
        "karpenter",
        "oci://public.ecr.aws/karpenter/karpenter",
        "1.14.1",
        "kube-system",
    )
    assert crd.urn in main.dependencies
    assert main.inputs["skipCrds"] is True
    assoc = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-controller")
    assert assoc.urn in main.dependencies, "the controller starts with its credentials in place"
    assert "repositoryOpts" not in main.inputs, "OCI charts take no repository"


def test_chart_values_settings_and_system_node_placement(rec: Recording) -> None:
    values = rec.one(RELEASE, "karpenter").inputs["values"]
    assert values["settings"]["clusterName"] == "ml-prod"
    assert values["settings"]["interruptionQueue"] == "ml-prod"
    assert "serviceAccount" not in values, "the chart names it after the release: karpenter (a no-op value)"
    assert values["settings"]["featureGates"]["staticCapacity"] is False
    assert values["settings"]["featureGates"]["nodeRepair"] is True  # bad hardware is replaced
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                {"key": "ekstrain.io/node-role", "operator": "In", "values": ["system"]},
            ]
        }
    ]
    if validation.upstream_dir() is None:
        pytest.skip("upstream values.yaml absent")
    assert validation.unknown_value_keys(values, validation.chart_defaults("karpenter")) == []


def test_cluster_dependency_reaches_children_that_name_the_cluster() -> None:
    def program() -> pulumi.Output[str]:
        dep = pulumi.CustomResource("test:index:Cluster", "eks", {})
        return Karpenter("karpenter", ARGS, opts=pulumi.ResourceOptions(depends_on=[dep])).queue_name

    rec = run_program(program)
    dep = rec.one("test:index:Cluster", "eks").urn
    for typ, name in (
        ("aws:eks/accessEntry:AccessEntry", "karpenter-node"),
        ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "karpenter-controller"),
        (RELEASE, "karpenter-crd"),
    ):
        assert dep in rec.one(typ, name).dependencies, (typ, name)
