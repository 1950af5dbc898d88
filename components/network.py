"""Network: VPC, public/private subnets across AZs, NAT, the EFA subnet, EFA SG, placement groups.

EFA's OS-bypass traffic cannot cross subnets, so every EFA partition shares one private subnet
in the training AZ, one security group that allows all traffic to and from itself, and one
cluster placement group per partition (Karpenter selects but never creates placement groups).

With ``existing_vpc_id`` the network creates no VPC, subnet, route, NAT gateway, endpoint or flow log: it
takes the given subnet ids, creates the EFA security group in that VPC (unless
``existing_efa_security_group_id`` is given too) and the placement groups. Existing subnets carry none of
the discovery tags, so pass the ids on to the partitions (``PartitionArgs.subnet_ids``/``security_group_ids``,
docs/components.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from ekstrain.components import args as ac
from ekstrain.components import iam
from ekstrain.components.logs import log_group_key
from ekstrain.facts import names
from ekstrain.facts.names import DISCOVERY_TAG, SG_ROLE_TAG, SUBNET_ROLE_TAG
from ekstrain.layout.subnets import MAX_ZONES, plan_subnets

NAT_GATEWAYS = ("single", "perAz")


@dataclass(frozen=True, kw_only=True)
class NetworkArgs:
    cluster_name: str
    """Required. The EKS cluster's name: the ``karpenter.sh/discovery`` tag value Karpenter selects subnets and
    security groups by, and the prefix of every ``Name`` tag."""
    region: str
    """Required. AWS region code (``us-west-2``): every AZ must be in it; names the S3 gateway endpoint."""
    vpc_cidr: str | None = None
    """@default none; required unless ``existing_vpc_id``. The new VPC's IPv4 block, carved by
    :func:`ekstrain.layout.subnets.plan_subnets` (EFA subnet a quarter, private subnets, small public subnets)."""
    availability_zones: Sequence[str] = ()
    """@default none; required unless ``existing_vpc_id`` (then the keys of ``existing_private_subnet_ids``).
    Zones that get a public and a private subnet (at most four)."""
    training_availability_zone: str
    """Required. The zone of the EFA subnet, the placement groups and every partition's nodes."""
    nat_gateways: str = "single"
    """@default single: one NAT gateway, in the training AZ (where the heavy traffic is); perAz: one per AZ.
    Ignored with ``existing_vpc_id``."""
    flow_log_retention_days: int = 90
    """@default 90 days of VPC flow logs in CloudWatch Logs (one of CloudWatch's retentions). Ignored with
    ``existing_vpc_id`` (the VPC's owner runs its flow logs)."""
    placement_group_partitions: Sequence[str] = ()
    """@default none. Partitions that get a cluster placement group, named ``<cluster>-<partition>``."""
    retain_efa_subnet: bool = False
    """@default false. True when a retained file system (FSx, ``storage.protect``) lives in the EFA subnet:
    its network interfaces outlive ``pulumi destroy``, so the EFA subnet and the VPC cannot be deleted and
    are retained too (docs/delivery.md, teardown runbook). Ignored with ``existing_vpc_id``."""
    existing_vpc_id: pulumi.Input[str] | None = None
    """@default none: the network creates its VPC. Set (``vpc-...``, or an Output of another resource): use
    this VPC and create no VPC, subnet, route table, NAT gateway, S3 endpoint or flow log;
    ``existing_private_subnet_ids`` and ``existing_efa_subnet_ids`` are then required."""
    existing_public_subnet_ids: Sequence[pulumi.Input[str]] = ()
    """@default none. With ``existing_vpc_id``: subnets for internet-facing load balancers (no node runs there)."""
    existing_private_subnet_ids: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """@default none; required with ``existing_vpc_id``. AZ -> private subnet id: control-plane ENIs, system
    nodes, non-EFA partitions; must include the training AZ."""
    existing_efa_subnet_ids: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """@default none; required with ``existing_vpc_id``. AZ -> EFA subnet id (EFA traffic cannot cross
    subnets: one per AZ); the training AZ's is the network's ``efa_subnet_id``."""
    existing_efa_security_group_id: pulumi.Input[str] | None = None
    """@default none: the network creates the EFA security group (all traffic to and from itself) in the VPC.
    Set (``sg-...``, only with ``existing_vpc_id``): use this group; it must allow all traffic to and from
    its own members."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on every resource the network creates (``Name`` is set per resource)."""

    def __post_init__(self) -> None:
        a = "NetworkArgs"
        ac.cluster_name(f"{a}.cluster_name", self.cluster_name)
        ac.region(f"{a}.region", self.region)
        ac.one_of(f"{a}.nat_gateways", self.nat_gateways, NAT_GATEWAYS)
        ac.one_of(
            f"{a}.flow_log_retention_days",
            self.flow_log_retention_days,
            ac.LOG_RETENTION_DAYS,
            "use a retention CloudWatch Logs accepts (90 is the default)",
        )
        duplicated = sorted(
            {p for p in self.placement_group_partitions if list(self.placement_group_partitions).count(p) > 1}
        )
        ac.check(
            not duplicated,
            f"{a}.placement_group_partitions",
            list(self.placement_group_partitions),
            f"lists {duplicated} twice",
            "list each partition once",
        )
        if self.existing_vpc_id is None:
            self._check_new(a)
        else:
            self._check_existing(a)

    def _check_new(self, a: str) -> None:
        for name in ("existing_private_subnet_ids", "existing_efa_subnet_ids", "existing_public_subnet_ids"):
            ac.check(
                not getattr(self, name),
                f"{a}.{name}",
                getattr(self, name),
                "given without existing_vpc_id",
                "also set existing_vpc_id to the VPC these subnets are in, or drop them",
            )
        ac.check(
            self.existing_efa_security_group_id is None,
            f"{a}.existing_efa_security_group_id",
            self.existing_efa_security_group_id,
            "given without existing_vpc_id",
            "also set existing_vpc_id, or drop it (the network creates the EFA security group)",
        )
        ac.check(
            self.vpc_cidr is not None,
            f"{a}.vpc_cidr",
            self.vpc_cidr,
            "required when the network creates the VPC",
            "give the VPC's IPv4 block (10.0.0.0/16), or set existing_vpc_id",
        )
        ac.ipv4_network(f"{a}.vpc_cidr", str(self.vpc_cidr))
        zones = list(self.availability_zones)
        ac.check(
            0 < len(zones) <= MAX_ZONES and len(set(zones)) == len(zones),
            f"{a}.availability_zones",
            zones,
            f"needs one to {MAX_ZONES} distinct zones",
            f"list the zones of {self.region} to spread subnets over ({self.region}a, {self.region}b)",
        )
        for i, zone in enumerate(zones):
            ac.availability_zone(f"{a}.availability_zones[{i}]", zone, self.region)
        ac.check(
            self.training_availability_zone in zones,
            f"{a}.training_availability_zone",
            self.training_availability_zone,
            f"not one of availability_zones {zones}",
            "pick one of availability_zones (or add it there)",
        )

    def _check_existing(self, a: str) -> None:
        ac.aws_id(f"{a}.existing_vpc_id", self.existing_vpc_id, "vpc")
        ac.aws_ids(f"{a}.existing_public_subnet_ids", self.existing_public_subnet_ids, "subnet")
        training = self.training_availability_zone
        for name in ("existing_private_subnet_ids", "existing_efa_subnet_ids"):
            ids = dict(getattr(self, name))
            ac.check(
                training in ids,
                f"{a}.{name}",
                ids,
                f"has no subnet in the training AZ {training}",
                f"map {training} to the id of a {name.split('_')[1]} subnet there",
            )
            for zone, subnet in ids.items():
                ac.availability_zone(f"{a}.{name} key", zone, self.region)
                ac.aws_id(f"{a}.{name}[{zone!r}]", subnet, "subnet")
        if self.existing_efa_security_group_id is not None:
            ac.aws_id(f"{a}.existing_efa_security_group_id", self.existing_efa_security_group_id, "sg")
        if self.availability_zones:
            ac.check(
                set(self.availability_zones) == set(self.existing_private_subnet_ids),
                f"{a}.availability_zones",
                list(self.availability_zones),
                "differs from the zones of existing_private_subnet_ids",
                "leave availability_zones empty with existing_vpc_id (the private subnets' zones are used)",
            )


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
        group_name = f"/aws/vpc/{args.cluster_name}-flow-logs"
        # On a customer managed key like every log group of the stack (components/logs.py).
        key, key_policy = log_group_key(
            f"{name}-flow-logs", group_name, f"VPC flow logs of {args.cluster_name}", tags, child
        )
        group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=group_name,
            kms_key_id=key.arn,
            retention_in_days=args.flow_log_retention_days,
            tags=tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[key_policy])),
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
    """The VPC's id (created, or ``existing_vpc_id``)."""
    public_subnet_ids: pulumi.Output[list[str]]
    """Public subnet ids, one per AZ (none on an existing VPC unless given)."""
    private_subnet_ids: pulumi.Output[list[str]]
    """Private subnet ids, one per AZ, in ``availability_zones`` order."""
    efa_subnet_id: pulumi.Output[str]
    """The EFA subnet in the training AZ."""
    efa_security_group_id: pulumi.Output[str]
    """The EFA security group (all traffic to and from itself)."""
    placement_group_names: dict[str, pulumi.Output[str]]
    """Partition -> cluster placement group name (``<cluster>-<partition>``)."""

    def _create_vpc(
        self, name: str, args: NetworkArgs, named: Callable[..., dict[str, str]], child: pulumi.ResourceOptions
    ) -> tuple[pulumi.Output[str], list[pulumi.Output[str]], list[pulumi.Output[str]], pulumi.Output[str]]:
        """The VPC and everything in it: (vpc id, public subnet ids, private subnet ids, EFA subnet id)."""
        assert args.vpc_cidr is not None  # NetworkArgs requires it without existing_vpc_id
        plan = plan_subnets(args.vpc_cidr, list(args.availability_zones))
        tags = dict(args.tags)
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

        return vpc.id, [s.id for s in public.values()], [s.id for s in private.values()], efa_subnet.id

    def _efa_security_group(
        self,
        name: str,
        args: NetworkArgs,
        vpc_id: pulumi.Input[str],
        named: Callable[..., dict[str, str]],
        child: pulumi.ResourceOptions,
    ) -> pulumi.Output[str]:
        """All traffic to and from its own members (OS-bypass needs both directions), tagged for Karpenter."""
        efa_sg = aws.ec2.SecurityGroup(
            f"{name}-efa",
            vpc_id=vpc_id,
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

        return efa_sg.id

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:network:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)

        def named(suffix: str, **extra: str) -> dict[str, str]:
            return {**tags, "Name": f"{args.cluster_name}-{suffix}", **extra}

        if args.existing_vpc_id is None:
            vpc_id, public_ids, private_ids, efa_subnet_id = self._create_vpc(name, args, named, child)
        else:
            # The VPC's owner manages its subnets, routes, NAT, endpoints and flow logs: nothing of that here.
            vpc_id = pulumi.Output.from_input(args.existing_vpc_id)
            public_ids = [pulumi.Output.from_input(s) for s in args.existing_public_subnet_ids]
            private_ids = [pulumi.Output.from_input(s) for s in args.existing_private_subnet_ids.values()]
            efa_subnet_id = pulumi.Output.from_input(args.existing_efa_subnet_ids[args.training_availability_zone])

        if args.existing_efa_security_group_id is not None:
            efa_sg_id = pulumi.Output.from_input(args.existing_efa_security_group_id)
        else:
            efa_sg_id = self._efa_security_group(name, args, vpc_id, named, child)

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

        self.vpc_id = vpc_id
        self.public_subnet_ids = pulumi.Output.all(*public_ids)
        self.private_subnet_ids = pulumi.Output.all(*private_ids)
        self.efa_subnet_id = efa_subnet_id
        self.efa_security_group_id = efa_sg_id
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
