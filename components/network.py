"""Network: VPC, public/private subnets across AZs, NAT, the EFA subnet, EFA SG, placement groups.

EFA's OS-bypass traffic cannot cross subnets, so every EFA partition shares one private subnet
in the training AZ, one security group that allows all traffic to and from itself, and one
cluster placement group per partition (Karpenter selects but never creates placement groups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from ekstrain import names
from ekstrain.components import iam
from ekstrain.names import DISCOVERY_TAG, SG_ROLE_TAG, SUBNET_ROLE_TAG
from ekstrain.subnets import plan_subnets


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    cluster_name: str
    """Discovery-tag value Karpenter selects subnets and security groups by."""
    region: str
    vpc_cidr: str
    availability_zones: Sequence[str]
    training_availability_zone: str
    nat_gateways: str = "single"
    """@default single: one NAT gateway, in the training AZ (where the heavy traffic is); perAz: one per AZ."""
    flow_log_retention_days: int = 90
    """@default 90 days of VPC flow logs in CloudWatch Logs."""
    placement_group_partitions: Sequence[str] = ()
    """Partitions that get a cluster placement group, named ``<cluster>-<partition>``."""
    retain_efa_subnet: bool = False
    """@default false. True when a retained file system (FSx, ``storage.protect``) lives in the EFA subnet:
    its network interfaces outlive ``pulumi destroy``, so the EFA subnet and the VPC cannot be deleted and
    are retained too (docs/delivery.md, teardown runbook)."""
    tags: Mapping[str, str] = field(default_factory=dict)


class Network(pulumi.ComponentResource):
    def _flow_logs(
        self,
        name: str,
        vpc: aws.ec2.Vpc,
        args: NetworkArgs,
        tags: dict[str, str],
        flow_tags: dict[str, str],
        child: pulumi.ResourceOptions,
    ) -> None:
        """VPC flow logs (accepted and rejected) to CloudWatch Logs, for incident response (CKV2_AWS_11)."""
        group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=f"/aws/vpc/{args.cluster_name}-flow-logs",
            retention_in_days=args.flow_log_retention_days,
            tags=tags,
            opts=child,
        )
        role = aws.iam.Role(
            f"{name}-flow-logs",
            assume_role_policy=iam.assume_role_policy("vpc-flow-logs.amazonaws.com"),
            description=f"VPC flow logs of {args.cluster_name}",
            tags=tags,
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-flow-logs",
            role=role.id,
            policy=iam.policy_document(
                [
                    {
                        "Effect": "Allow",
                        "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                        "Resource": [group.arn, pulumi.Output.concat(group.arn, ":*")],
                    }
                ]
            ),
            opts=child,
        )
        aws.ec2.FlowLog(
            f"{name}-flow-logs",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=group.arn,
            iam_role_arn=role.arn,
            tags=flow_tags,
            opts=child,
        )

    vpc_id: pulumi.Output[str]
    public_subnet_ids: pulumi.Output[list[str]]
    private_subnet_ids: pulumi.Output[list[str]]
    efa_subnet_id: pulumi.Output[str]
    efa_security_group_id: pulumi.Output[str]
    placement_group_names: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        plan = plan_subnets(args.vpc_cidr, list(args.availability_zones))
        tags = dict(args.tags)

        def named(suffix: str, **extra: str) -> dict[str, str]:
            return {**tags, "Name": f"{args.cluster_name}-{suffix}", **extra}

        kept = pulumi.ResourceOptions(parent=self, retain_on_delete=True) if args.retain_efa_subnet else child
        vpc = aws.ec2.Vpc(
            name,
            cidr_block=args.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=named("vpc"),
            opts=kept,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=named("igw"), opts=child)
        # Nothing uses the VPC's default security group; managing it with no rules strips the all-members
        # rules AWS creates, so nothing attached to it by mistake can talk (checkov CKV2_AWS_12).
        aws.ec2.DefaultSecurityGroup(f"{name}-default", vpc_id=vpc.id, tags=named("default-no-rules"), opts=child)
        self._flow_logs(name, vpc, args, tags, named("flow-logs"), child)

        public_rt = aws.ec2.RouteTable(f"{name}-public", vpc_id=vpc.id, tags=named("public"), opts=child)
        aws.ec2.Route(
            f"{name}-public-default",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
            opts=child,
        )
        public: dict[str, aws.ec2.Subnet] = {}
        for az, cidr in plan.public.items():
            public[az] = aws.ec2.Subnet(
                f"{name}-public-{az}",
                vpc_id=vpc.id,
                cidr_block=cidr,
                availability_zone=az,
                map_public_ip_on_launch=False,
                tags=named(f"public-{az}", **{"kubernetes.io/role/elb": "1"}),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{az}", subnet_id=public[az].id, route_table_id=public_rt.id, opts=child
            )

        nat_azs = list(args.availability_zones) if args.nat_gateways == "perAz" else [args.training_availability_zone]
        nats: dict[str, aws.ec2.NatGateway] = {}
        for az in nat_azs:
            eip = aws.ec2.Eip(f"{name}-nat-{az}", domain="vpc", tags=named(f"nat-{az}"), opts=child)
            nats[az] = aws.ec2.NatGateway(
                f"{name}-nat-{az}",
                allocation_id=eip.id,
                subnet_id=public[az].id,
                tags=named(f"nat-{az}"),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
            )

        route_tables = []

        def private_subnet(
            key: str, az: str, cidr: str, role: str, extra: dict[str, str], opts: pulumi.ResourceOptions = child
        ) -> aws.ec2.Subnet:
            nat = nats.get(az) or nats[args.training_availability_zone]
            rt = aws.ec2.RouteTable(f"{name}-{key}", vpc_id=vpc.id, tags=named(key), opts=child)
            aws.ec2.Route(
                f"{name}-{key}-default",
                route_table_id=rt.id,
                destination_cidr_block="0.0.0.0/0",
                nat_gateway_id=nat.id,
                opts=child,
            )
            route_tables.append(rt)
            subnet = aws.ec2.Subnet(
                f"{name}-{key}",
                vpc_id=vpc.id,
                cidr_block=cidr,
                availability_zone=az,
                map_public_ip_on_launch=False,
                tags=named(key, **{SUBNET_ROLE_TAG: role, DISCOVERY_TAG: args.cluster_name, **extra}),
                opts=opts,
            )
            aws.ec2.RouteTableAssociation(f"{name}-{key}", subnet_id=subnet.id, route_table_id=rt.id, opts=child)
            return subnet

        private = {
            az: private_subnet(f"private-{az}", az, cidr, "private", {"kubernetes.io/role/internal-elb": "1"})
            for az, cidr in plan.private.items()
        }
        efa_az = args.training_availability_zone
        efa_subnet = private_subnet(f"efa-{efa_az}", efa_az, plan.efa, "efa", {}, kept)

        # Training data and checkpoints flow to S3: a gateway endpoint keeps that off the NAT bill.
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in route_tables],
            tags=named("s3"),
            opts=child,
        )

        efa_sg = aws.ec2.SecurityGroup(
            f"{name}-efa",
            vpc_id=vpc.id,
            name=f"{args.cluster_name}-efa",
            description="EFA: all traffic to and from members (OS-bypass needs both directions)",
            tags=named("efa", **{DISCOVERY_TAG: args.cluster_name, SG_ROLE_TAG: "efa"}),
            # description is replace-on-change and the name is fixed: an edited description must not replace it.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["description"]),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-self-ingress",
            security_group_id=efa_sg.id,
            ip_protocol="-1",
            referenced_security_group_id=efa_sg.id,
            description="EFA from members",
            tags=named("efa-self-ingress"),
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-self-egress",
            security_group_id=efa_sg.id,
            ip_protocol="-1",
            referenced_security_group_id=efa_sg.id,
            description="EFA to members",
            tags=named("efa-self-egress"),
            opts=child,
        )

        self.placement_group_names = {}
        for partition in args.placement_group_partitions:
            pg = aws.ec2.PlacementGroup(
                f"{name}-pg-{partition}",
                name=names.placement_group_name(args.cluster_name, partition),
                strategy="cluster",
                tags=named(f"pg-{partition}"),
                opts=child,
            )
            self.placement_group_names[partition] = pg.name

        self.vpc_id = vpc.id
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in public.values()])
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private.values()])
        self.efa_subnet_id = efa_subnet.id
        self.efa_security_group_id = efa_sg.id
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "publicSubnetIds": self.public_subnet_ids,
                "privateSubnetIds": self.private_subnet_ids,
                "efaSubnetId": self.efa_subnet_id,
                "efaSecurityGroupId": self.efa_security_group_id,
                "placementGroupNames": self.placement_group_names,
            }
        )
