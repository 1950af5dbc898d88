"""Karpenter: node IAM role + access entry, controller role (EKS Pod Identity) with the v1.14
controller policies, the SQS interruption queue fed by EventBridge, and the two Helm charts.

Follows Karpenter v1.14's getting-started CloudFormation (six controller policies scoped by the
cluster tag conditions) plus the placement-group and capacity-reservation permissions the
partitions need. Policies are Python data below; nothing is looked up with an invoke: the account
id comes from the node role's ARN once it exists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ekstrain.components import args as ac
from ekstrain.components import iam
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.facts.names import SYSTEM_NODE_TERM
from ekstrain.facts.versions import Chart
from ekstrain.payloads import karpenter_specs as specs

NAMESPACE = "kube-system"
RELEASE_NAME = "karpenter"
"""Fixed release name: the chart names its ServiceAccount after it, the Pod Identity association matches it."""
SERVICE_ACCOUNT = "karpenter"
NODE_POLICIES = (
    "AmazonEKS_CNI_Policy",
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",  # what Karpenter v1.14's CloudFormation attaches: pull, no listing
    "AmazonSSMManagedInstanceCore",
)

# EventBridge rules feeding Karpenter's interruption queue: rule key -> (source, detail-type).
#
# Karpenter documents a fifth rule, ("aws.health", "AWS Health Event"), deliberately left out: its
# interruption controller (karpenter-provider-aws v1.14.1 pkg/controllers/interruption/controller.go) turns
# every scheduled-change notice into an immediate NodeClaim deletion, i.e. a drain on the day the notice
# arrives, days or weeks before the maintenance window. Pods get their terminationGracePeriodSeconds (the
# job templates' 120 s) while a 70B checkpoint takes ~843 s on prod's FSx, so every job on the node would
# die at once with up to a checkpoint interval lost, for no reason that day. Without the rule the job
# runs on until it ends or the window comes; `docs/simulate.md` ("scheduled maintenance") has the
# operator's procedure (cordon the noticed node so no new gang lands on it, let the running job finish or
# checkpoint, then delete the NodeClaim) and `ekstrain simulate --timeline` plays both behaviours.
# Spot interruptions (2-minute warning), instance stop/terminate and capacity-reservation interruptions
# still drain at once: the instance is going away either way.
INTERRUPTION_EVENTS: dict[str, tuple[str, str]] = {
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "capacity-reservation-interruption": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


@dataclass(frozen=True, kw_only=True)
class KarpenterArgs:
    cluster_name: str
    """Required. The EKS cluster's name (roles, queue, policies' tag conditions, chart settings)."""
    region: str
    """Required. AWS region code (ARNs, the controller's AWS_REGION)."""
    chart: Chart
    """Required. The ``karpenter`` chart (pinned version from config)."""
    crd_chart: Chart
    """Required. The ``karpenter-crd`` chart, installed first."""
    replicas: int = 2
    """@default 2 controller replicas (leader election; anti-affinity spreads them over system nodes)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the roles, queue, rules, policies and access entry."""

    def __post_init__(self) -> None:
        ac.cluster_name("KarpenterArgs.cluster_name", self.cluster_name)
        ac.region("KarpenterArgs.region", self.region)
        ac.positive_int("KarpenterArgs.replicas", self.replicas, "run at least one controller (2 is the default)")


def _arn(region: str, service: str, resource: str, account: str = "*", regional: bool = True) -> str:
    return f"arn:{iam.partition_of(region)}:{service}:{region if regional else ''}:{account}:{resource}"


def controller_policies(
    cluster: str, region: str, account: str, node_role_arn: str, queue_arn: str
) -> dict[str, list[dict[str, Any]]]:
    """Policy short name -> statements, as in Karpenter v1.14's getting-started CloudFormation."""
    owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned", "aws:RequestTag/eks:eks-cluster-name": cluster}
    resource_owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"}
    ec2 = lambda kind: _arn(region, "ec2", f"{kind}/*")  # noqa: E731
    ec2_global = lambda kind: _arn(region, "ec2", f"{kind}/*", account="")  # noqa: E731
    tagged_kinds = ["fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request"]
    profile = _arn(region, "iam", "instance-profile/*", account=account, regional=False)
    cluster_arn = _arn(region, "eks", f"cluster/{cluster}", account=account)
    region_tag = {"aws:RequestTag/topology.kubernetes.io/region": region}
    return {
        "NodeLifecycle": [
            {
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Effect": "Allow",
                "Resource": [
                    ec2_global("image"),
                    ec2_global("snapshot"),
                    ec2("security-group"),
                    ec2("subnet"),
                    ec2("capacity-reservation"),
                    ec2("placement-group"),
                ],
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            },
            {
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Effect": "Allow",
                "Resource": ec2("launch-template"),
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Effect": "Allow",
                "Resource": [ec2(k) for k in tagged_kinds],
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Condition": {"StringEquals": owned, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
            },
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Effect": "Allow",
                "Resource": [ec2(k) for k in tagged_kinds],
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": {
                        **owned,
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    },
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceTagging",
                "Effect": "Allow",
                "Resource": ec2("instance"),
                "Action": "ec2:CreateTags",
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster},
                    "ForAllValues:StringEquals": {
                        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                    },
                },
            },
            {
                "Sid": "AllowScopedDeletion",
                "Effect": "Allow",
                "Resource": [ec2("instance"), ec2("launch-template")],
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
        ],
        "IAMIntegration": [
            {
                "Sid": "AllowPassingInstanceRole",
                "Effect": "Allow",
                "Resource": node_role_arn,
                "Action": "iam:PassRole",
                "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
            },
            {
                "Sid": "AllowScopedInstanceProfileCreationActions",
                "Effect": "Allow",
                "Resource": profile,
                "Action": ["iam:CreateInstanceProfile"],
                "Condition": {
                    "StringEquals": {**owned, **region_tag},
                    "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileTagActions",
                "Effect": "Allow",
                "Resource": profile,
                "Action": ["iam:TagInstanceProfile"],
                "Condition": {
                    "StringEquals": {
                        **resource_owned,
                        "aws:ResourceTag/topology.kubernetes.io/region": region,
                        **owned,
                        **region_tag,
                    },
                    "StringLike": {
                        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    },
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileActions",
                "Effect": "Allow",
                "Resource": profile,
                "Action": [
                    "iam:AddRoleToInstanceProfile",
                    "iam:RemoveRoleFromInstanceProfile",
                    "iam:DeleteInstanceProfile",
                ],
                "Condition": {
                    "StringEquals": {**resource_owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
        ],
        "EKSIntegration": [
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Effect": "Allow",
                "Resource": cluster_arn,
                "Action": "eks:DescribeCluster",
            },
        ],
        "Interruption": [
            {
                "Sid": "AllowInterruptionQueueActions",
                "Effect": "Allow",
                "Resource": queue_arn,
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            },
        ],
        "ResourceDiscovery": [
            {
                "Sid": "AllowRegionalReadActions",
                "Effect": "Allow",
                "Resource": "*",
                "Action": [
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceStatus",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribePlacementGroups",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "AllowSSMReadActions",
                "Effect": "Allow",
                "Resource": _arn(region, "ssm", "parameter/aws/service/*", account=""),
                "Action": "ssm:GetParameter",
            },
            {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
            {
                "Sid": "AllowInstanceProfileReadActions",
                "Effect": "Allow",
                "Resource": profile,
                "Action": "iam:GetInstanceProfile",
            },
            {
                "Sid": "AllowUnscopedInstanceProfileListAction",
                "Effect": "Allow",
                "Resource": "*",
                "Action": "iam:ListInstanceProfiles",
            },
        ],
        "ZonalShift": [
            # GetManagedResource is authorised on `*` with the managed resource in a condition key: an EKS
            # cluster ARN as Resource matches nothing the action takes (it would grant nothing).
            {
                "Sid": "AllowZonalShiftStatusReadOnly",
                "Effect": "Allow",
                "Resource": "*",
                "Action": ["arc-zonal-shift:GetManagedResource"],
                "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
            },
        ],
    }


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS) may send; nothing may talk to the queue without TLS."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "AllowEventsToSend",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def event_pattern(source: str, detail_type: str) -> str:
    return json.dumps({"source": [source], "detail-type": [detail_type]})


def chart_values(cluster_name: str, queue_name: Any, replicas: int, region: str | None = None) -> dict[str, Any]:
    """Values of the karpenter chart (every key exists in its upstream values.yaml)."""
    controller: dict[str, Any] = {
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    }
    if region:
        # System nodes use IMDS hop limit 1: the controller cannot discover its region from IMDS.
        controller["env"] = [{"name": "AWS_REGION", "value": region}]
    return {
        "replicas": replicas,
        # serviceAccount: the chart names it after the release, "karpenter" = SERVICE_ACCOUNT, which the
        # Pod Identity association names.
        # On the system node group only. The list replaces the chart's default term, so it keeps
        # the default's "not on a Karpenter node" expression; podAntiAffinity stays the chart's.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"},
                                SYSTEM_NODE_TERM,
                            ]
                        }
                    ]
                }
            }
        },
        "controller": controller,
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": queue_name,
            # reserved: capacity-type `reserved` for ODCR / Capacity Blocks (beta, on by default).
            # staticCapacity stays off: partitions refuse minNodes > 0 (docs/partitions.md).
            # nodeRepair (alpha in v1.14.1, chart default off): replace nodes whose conditions stay unhealthy,
            # with the conditions the EKS node monitoring agent sets (components/node_health.py) -
            # karpenter-provider-aws pkg/cloudprovider/cloudprovider.go RepairPolicies: AcceleratedHardwareReady
            # False for 10 min; StorageReady, NetworkingReady, KernelReady, ContainerRuntimeReady False for
            # 30 min; core pkg/controllers/node/health skips a NodePool with more than 20 % unhealthy nodes.
            "featureGates": {"reservedCapacity": True, "staticCapacity": False, "nodeRepair": True},
        },
    }


class Karpenter(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster component>])``:
    the cluster is referenced by its plain name, so the dependency must be explicit."""

    node_role_name: pulumi.Output[str]
    """Name of the node IAM role (``PartitionArgs.node_role_name``)."""
    node_role_arn: pulumi.Output[str]
    """ARN of the node IAM role."""
    controller_role_arn: pulumi.Output[str]
    """ARN of the controller's Pod Identity role."""
    queue_name: pulumi.Output[str]
    """The SQS interruption queue's name."""
    release: k8s.helm.v3.Release
    """The karpenter Helm release: partitions depend on it (CRDs and webhook)."""

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:karpenter:Karpenter", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=dependencies(opts))
        tags = dict(args.tags)
        cluster = args.cluster_name

        node_role = aws.iam.Role(
            f"{name}-node",
            name=specs.node_role_name(cluster),
            assume_role_policy=iam.assume_role_policy("ec2.amazonaws.com"),
            description=f"Nodes Karpenter launches for {cluster}",
            tags=tags,
            opts=child,
        )
        for managed in NODE_POLICIES:
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{managed}",
                role=node_role.name,
                policy_arn=iam.managed_policy_arn(args.region, managed),
                opts=child,
            )
        access_entry = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster,
            principal_arn=node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            opts=after_cluster,
        )

        queue = aws.sqs.Queue(
            f"{name}-interruption",
            name=specs.interruption_queue_name(cluster),
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        queue_policy_res = aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn))),
            opts=child,
        )
        for key, (source, detail_type) in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{key}",
                description=f"Karpenter interruption: {detail_type}",
                event_pattern=event_pattern(source, detail_type),
                tags=tags,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{key}", rule=rule.name, arn=queue.arn, target_id="KarpenterInterruptionQueueTarget", opts=child
            )

        controller_role = aws.iam.Role(
            f"{name}-controller",
            name=specs.controller_role_name(cluster),
            assume_role_policy=iam.pod_identity_trust(),
            description=f"Karpenter controller of {cluster}",
            tags=tags,
            opts=child,
        )
        documents = pulumi.Output.all(node_role.arn, queue.arn).apply(
            lambda a: controller_policies(cluster, args.region, a[0].split(":")[4], a[0], a[1])
        )

        def document(short: str) -> pulumi.Output[str]:
            return documents.apply(lambda d: json.dumps({"Version": "2012-10-17", "Statement": d[short]}))

        attachments = []
        for short in (
            "NodeLifecycle",
            "IAMIntegration",
            "EKSIntegration",
            "Interruption",
            "ResourceDiscovery",
            "ZonalShift",
        ):
            policy = aws.iam.Policy(
                f"{name}-{short}",
                name=f"KarpenterController{short}Policy-{cluster}",
                description=f"Karpenter controller ({short}) for {cluster}",
                policy=document(short),
                tags=tags,
                opts=child,
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(
                    f"{name}-controller-{short}", role=controller_role.name, policy_arn=policy.arn, opts=child
                )
            )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-controller",
            cluster_name=cluster,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=controller_role.arn,
            tags=tags,
            opts=after_cluster,
        )

        crds = release(
            f"{name}-crd",
            release_name="karpenter-crd",
            chart=args.crd_chart,
            namespace=NAMESPACE,
            parent=self,
            depends_on=dependencies(opts),
        )
        self.release = release(
            name,
            release_name=RELEASE_NAME,
            chart=args.chart,
            namespace=NAMESPACE,
            # The CRDs belong to the karpenter-crd release (upgraded with the chart, unlike crds/).
            skip_crds=True,
            values=chart_values(cluster, queue.name, args.replicas, args.region),
            parent=self,
            depends_on=[crds, association, access_entry, queue_policy_res, *attachments],
        )

        self.node_role_name = node_role.name
        self.node_role_arn = node_role.arn
        self.controller_role_arn = controller_role.arn
        self.queue_name = queue.name
        self.register_outputs(
            {
                "nodeRoleName": self.node_role_name,
                "nodeRoleArn": self.node_role_arn,
                "controllerRoleArn": self.controller_role_arn,
                "interruptionQueueName": self.queue_name,
            }
        )
