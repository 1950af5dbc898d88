"""Cluster: EKS control plane (pulumi-eks), access entries, system node group, core add-ons,
the Kubernetes provider and the default gp3 StorageClass.

The physical cluster name is a plain ``str`` from config, so everything that needs it (Karpenter
settings, discovery tags, IAM conditions, add-ons) is known at preview time without reading the
remote component's resource-typed outputs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from ekstrain.components import iam
from ekstrain.names import SYSTEM_NODE_SELECTOR

ACCESS_POLICIES = {
    "cluster-admin": "AmazonEKSClusterAdminPolicy",
    "admin": "AmazonEKSAdminPolicy",
    "edit": "AmazonEKSEditPolicy",
    "view": "AmazonEKSViewPolicy",
}
SYSTEM_NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",  # as Karpenter's node role: pull images, no listing
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",
)


@dataclass(frozen=True, kw_only=True)
class AdminPrincipal:
    principal_arn: str
    access_policy: str = "cluster-admin"


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    cluster_name: str
    region: str
    kubernetes_version: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: pulumi.Input[Sequence[str]]
    """Control-plane ENIs and the system node group."""
    public_subnet_ids: pulumi.Input[Sequence[str]]
    """For internet-facing load balancers only; no node runs there."""
    endpoint_public_access: bool = False
    """@default false (private endpoint only)."""
    public_access_cidrs: Sequence[str] = ()
    deploy_cidrs: Sequence[str] = ()
    """Where `pulumi up` runs (in-VPC or peered runner): HTTPS to the API server's private endpoint."""
    deploy_security_group_ids: Sequence[str] = ()
    """Security groups of the deploy runners: HTTPS to the private endpoint."""
    admin_principals: Sequence[AdminPrincipal] = ()
    deploy_role_arn: str | None = None
    """The role that runs `pulumi up`. EKS makes the cluster's creator an admin through an access entry of its own
    (pulumi-eks always sends bootstrapClusterCreatorAdminPermissions: true, and EKS allows one entry per
    principal), so this entry is adopted (imported), not created: the first `up` must run as this role.
    @default none (the creator's entry stays unmanaged)."""
    preview_role_arn: str | None = None
    """The role of pull-request previews: an access entry with ``preview_access_policy``. @default none."""
    preview_access_policy: str = "view"
    """@default view (AmazonEKSViewPolicy)."""
    protect: bool = False
    """@default false. True: the cluster and its Secrets KMS key are protected (``pulumi destroy`` and a
    replacing edit stop with an error) and the key is retained if the resource is ever deleted."""
    log_types: Sequence[str] = ("api", "audit", "authenticator", "controllerManager", "scheduler")
    secrets_encryption: bool = True
    """@default true: a dedicated, rotated KMS key envelope-encrypts Secrets."""
    deletion_protection: bool = True
    system_instance_types: Sequence[str] = ("m7i.xlarge",)
    system_min_size: int = 2
    system_desired_size: int = 2
    system_max_size: int = 4
    system_disk_size_gib: int = 100
    addon_versions: Mapping[str, str | None] = field(default_factory=dict)
    """EKS add-on name -> version; None lets EKS choose its default for the Kubernetes version."""
    tags: Mapping[str, str] = field(default_factory=dict)


def access_entry_key(principal_arn: str) -> str:
    """Stable access-entry key of a principal: ``role-PlatformAdmin`` for ``arn:aws:iam::1:role/PlatformAdmin``."""
    resource = principal_arn.split(":", 5)[-1]
    return re.sub(r"[^A-Za-z0-9-]+", "-", resource).strip("-")


def access_policy_arn(partition: str, policy: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ACCESS_POLICIES[policy]}"


class Cluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    oidc_provider_arn: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    system_node_role_arn: pulumi.Output[str]
    provider: k8s.Provider
    eks_cluster: eks.Cluster
    system_node_group: eks.ManagedNodeGroup

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:cluster:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        partition = iam.partition_of(args.region)

        key_arn = None
        keep = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        if args.secrets_encryption:
            # Protected with the cluster: a scheduled key deletion makes every Secret of the cluster unreadable.
            key = aws.kms.Key(
                f"{name}-secrets",
                description=f"EKS Secrets envelope encryption for {args.cluster_name}",
                enable_key_rotation=True,
                deletion_window_in_days=30,
                tags=tags,
                opts=keep,
            )
            aws.kms.Alias(
                f"{name}-secrets", name=f"alias/{args.cluster_name}-eks-secrets", target_key_id=key.key_id, opts=child
            )
            key_arn = key.arn

        # Keyed by principal, not list position: reordering or removing one leaves the others in place.
        grants = [(p.principal_arn, p.access_policy) for p in args.admin_principals]
        if args.preview_role_arn:
            grants.append((args.preview_role_arn, args.preview_access_policy))
        access_entries = {
            access_entry_key(arn): eks.AccessEntryArgs(
                principal_arn=arn,
                access_policies={
                    policy: eks.AccessPolicyAssociationArgs(
                        policy_arn=access_policy_arn(partition, policy),
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    )
                },
            )
            for arn, policy in grants
        }

        self.eks_cluster = eks.Cluster(
            name,
            name=args.cluster_name,
            version=args.kubernetes_version,
            vpc_id=args.vpc_id,
            private_subnet_ids=args.private_subnet_ids,
            public_subnet_ids=args.public_subnet_ids,
            endpoint_private_access=True,
            endpoint_public_access=args.endpoint_public_access,
            public_access_cidrs=list(args.public_access_cidrs) if args.endpoint_public_access else None,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=access_entries,
            enabled_cluster_log_types=list(args.log_types),
            encryption_config_key_arn=key_arn,
            create_oidc_provider=True,
            deletion_protection=args.deletion_protection,
            skip_default_node_group=True,
            # Use the EKS-created cluster SG for every node: it admits the control plane and all
            # members; Karpenter nodes add the EFA SG on top.
            skip_default_security_groups=True,
            # enable_network_policy: the VPC CNI enforces NetworkPolicy objects (the databases and
            # monitors ship their own).
            vpc_cni_options=eks.VpcCniOptionsArgs(
                addon_version=args.addon_versions.get("vpc-cni"), enable_network_policy=True
            ),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(version=args.addon_versions.get("kube-proxy")),
            # CoreDNS needs nodes to become healthy; it is installed below, after the node group.
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            tags=tags,
            # protect propagates to the component's children (the EKS cluster, its role and OIDC provider).
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        if args.deploy_role_arn:
            self._adopt_creator_entry(name, args.cluster_name, args.deploy_role_arn, partition)

        node_role = aws.iam.Role(
            f"{name}-system-node",
            assume_role_policy=iam.assume_role_policy("ec2.amazonaws.com"),
            description=f"System node group of {args.cluster_name}",
            tags=tags,
            opts=child,
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-system-node-{policy}",
                role=node_role.name,
                policy_arn=iam.managed_policy_arn(args.region, policy),
                opts=child,
            )
            for policy in SYSTEM_NODE_POLICIES
        ]
        # Our own launch template so the root volume is encrypted gp3 and IMDSv2 is required
        # (pulumi-eks's generated template sets only the volume size). Hop limit 1: Slurm login pods
        # (root SSH) run on system nodes and must not reach the node role's credentials. hostNetwork
        # pods (aws-node, kube-proxy, pod identity agent) still reach IMDS; the EBS/EFS CSI drivers fall
        # back to Kubernetes node metadata (their pkg/cloud metadata.go); Karpenter and the FSx
        # controller get the region explicitly.
        launch_template = aws.ec2.LaunchTemplate(
            f"{name}-system",
            description=f"System node group of {args.cluster_name}",
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name="/dev/xvda",
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=args.system_disk_size_gib,
                        volume_type="gp3",
                        encrypted="true",
                        delete_on_termination="true",
                    ),
                )
            ],
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1
            ),
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(
                    resource_type=kind, tags={**tags, "Name": f"{args.cluster_name}-system"}
                )
                for kind in ("instance", "volume")
            ],
            tags=tags,
            opts=child,
        )
        self.system_node_group = eks.ManagedNodeGroup(
            f"{name}-system",
            cluster=self.eks_cluster,
            node_role_arn=node_role.arn,
            # A prefix, not a fixed name: subnet or instance-type edits replace the node group (ForceNew), and
            # the replacement is created before the old one is deleted (EKS refuses a second group of one name).
            node_group_name_prefix=f"{args.cluster_name}-system-",
            instance_types=list(args.system_instance_types),
            capacity_type="ON_DEMAND",
            ami_type="AL2023_x86_64_STANDARD",
            # With its own launch template pulumi-eks leaves the version unset (EKS then keeps the version the
            # group was created with): pinned, a kubernetesVersion bump rolls the system nodes too.
            version=args.kubernetes_version,
            subnet_ids=args.private_subnet_ids,
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=launch_template.id, version=launch_template.latest_version.apply(str)
            ),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=args.system_min_size, desired_size=args.system_desired_size, max_size=args.system_max_size
            ),
            labels=dict(SYSTEM_NODE_SELECTOR),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments),
        )

        after_nodes = pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster, self.system_node_group])

        def addon(key: str, addon_name: str, **kwargs: Any) -> aws.eks.Addon:
            return aws.eks.Addon(
                f"{name}-{key}",
                cluster_name=args.cluster_name,
                addon_name=addon_name,
                addon_version=args.addon_versions.get(addon_name),
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                tags=tags,
                opts=after_nodes,
                **kwargs,
            )

        addon("coredns", "coredns")
        addon("pod-identity-agent", "eks-pod-identity-agent")
        ebs_role = aws.iam.Role(
            f"{name}-ebs-csi",
            assume_role_policy=iam.pod_identity_trust(),
            description=f"EBS CSI controller of {args.cluster_name}",
            tags=tags,
            opts=child,
        )
        ebs_policy = aws.iam.RolePolicyAttachment(
            f"{name}-ebs-csi",
            role=ebs_role.name,
            policy_arn=f"arn:{partition}:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
            opts=child,
        )
        ebs = aws.eks.Addon(
            f"{name}-ebs-csi",
            cluster_name=args.cluster_name,
            addon_name="aws-ebs-csi-driver",
            addon_version=args.addon_versions.get("aws-ebs-csi-driver"),
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(role_arn=ebs_role.arn, service_account="ebs-csi-controller-sa")
            ],
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster, self.system_node_group, ebs_policy]),
        )

        # The EKS-created cluster SG (on the private endpoint's ENIs) admits only its members: the deploy
        # runner gets 443 explicitly, and the Kubernetes provider waits for it.
        cluster_sg = self.eks_cluster.cluster_security_group_id
        deploy = [
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-deploy-{i}",
                security_group_id=cluster_sg,
                ip_protocol="tcp",
                from_port=443,
                to_port=443,
                description="Kubernetes API from the deploy runner",
                tags=tags,
                opts=child,
                **({"referenced_security_group_id": src} if src.startswith("sg-") else {"cidr_ipv4": src}),
            )
            for i, src in enumerate([*args.deploy_cidrs, *args.deploy_security_group_ids])
        ]
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.eks_cluster.kubeconfig_json,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(deploy)),
        )
        k8s.storage.v1.StorageClass(
            f"{name}-gp3",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="gp3", annotations={"storageclass.kubernetes.io/is-default-class": "true"}
            ),
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true", "fsType": "ext4"},
            reclaim_policy="Delete",
            volume_binding_mode="WaitForFirstConsumer",
            allow_volume_expansion=True,
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=[ebs]),
        )

        self.cluster_name = pulumi.Output.from_input(args.cluster_name)
        self.kubeconfig = pulumi.Output.secret(self.eks_cluster.kubeconfig_json)
        self.oidc_provider_arn = self.eks_cluster.oidc_provider_arn
        self.oidc_issuer = self.eks_cluster.oidc_issuer
        self.cluster_security_group_id = self.eks_cluster.cluster_security_group_id
        self.system_node_role_arn = node_role.arn
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "kubeconfig": self.kubeconfig,
                "oidcProviderArn": self.oidc_provider_arn,
                "oidcIssuer": self.oidc_issuer,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "systemNodeRoleArn": self.system_node_role_arn,
            }
        )

    def _adopt_creator_entry(self, name: str, cluster_name: str, role_arn: str, partition: str) -> None:
        """Import the access entry and admin association EKS created for the cluster's creator (the deploy role).

        Imported with the exact inputs EKS gives that entry (no tags, type STANDARD): an import whose inputs
        differ from the live resource fails. Import ids: ``cluster:principal`` and ``cluster#principal#policy``.
        """
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster])
        entry = aws.eks.AccessEntry(
            f"{name}-deployer",
            cluster_name=cluster_name,
            principal_arn=role_arn,
            type="STANDARD",
            opts=pulumi.ResourceOptions.merge(
                after_cluster, pulumi.ResourceOptions(import_=f"{cluster_name}:{role_arn}")
            ),
        )
        policy = access_policy_arn(partition, "cluster-admin")
        aws.eks.AccessPolicyAssociation(
            f"{name}-deployer",
            cluster_name=cluster_name,
            principal_arn=role_arn,
            policy_arn=policy,
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[entry], import_=f"{cluster_name}#{role_arn}#{policy}"),
        )
