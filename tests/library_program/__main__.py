"""Someone else's Pulumi program: its own VPC (plain pulumi_aws), its own ``components`` package, and ekstrain's
Network (on that VPC), Cluster and one GPU partition from the installed wheel."""

import pulumi
import pulumi_aws as aws

from components import tags
from ekstrain.components.cluster import Cluster, ClusterArgs
from ekstrain.components.network import Network, NetworkArgs
from ekstrain.components.partitions import Partition, PartitionArgs
from ekstrain.layout.partitions import shape
from ekstrain.payloads.karpenter_specs import PartitionSpec

CLUSTER = "acme-train"
REGION = "us-east-2"
TRAINING_AZ = "us-east-2b"
ZONES = ["us-east-2a", "us-east-2b"]

vpc = aws.ec2.Vpc("acme", cidr_block="10.42.0.0/16", enable_dns_hostnames=True, tags=tags("vpc"))
private = {
    az: aws.ec2.Subnet(
        f"acme-private-{az}", vpc_id=vpc.id, cidr_block=f"10.42.{i}.0/24", availability_zone=az, tags=tags(az)
    )
    for i, az in enumerate(ZONES)
}
efa = aws.ec2.Subnet(
    "acme-efa", vpc_id=vpc.id, cidr_block="10.42.128.0/18", availability_zone=TRAINING_AZ, tags=tags("efa")
)

network = Network(
    "net",
    NetworkArgs(
        cluster_name=CLUSTER,
        region=REGION,
        training_availability_zone=TRAINING_AZ,
        existing_vpc_id=vpc.id,
        existing_private_subnet_ids={az: s.id for az, s in private.items()},
        existing_efa_subnet_ids={TRAINING_AZ: efa.id},
        placement_group_partitions=["h100"],
        tags={"Owner": "acme-ml"},
    ),
)
cluster = Cluster(
    "eks",
    ClusterArgs(
        cluster_name=CLUSTER,
        region=REGION,
        kubernetes_version="1.33",
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        public_subnet_ids=[],
        tags={"Owner": "acme-ml"},
    ),
)
gpu = Partition(
    "h100",
    PartitionArgs(
        spec=PartitionSpec(
            name="h100",
            shape=shape("h100", "gpu", ["p5.48xlarge"], True),
            cluster_name=CLUSTER,
            availability_zone=TRAINING_AZ,
            max_nodes=4,
            placement_group=True,
        ),
        node_role_name="AcmeKarpenterNode",
        cluster_security_group_id=cluster.cluster_security_group_id,
        placement_group_name=network.placement_group_names["h100"],
        subnet_ids=[network.efa_subnet_id],
        security_group_ids=[network.efa_security_group_id],
        tags={"Owner": "acme-ml"},
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]),
)

pulumi.export("clusterName", cluster.cluster_name)
pulumi.export("nodePools", gpu.node_pool_names)
