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

from ekstrain.components import args as ac
from ekstrain.components import iam
from ekstrain.facts import catalog
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR

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


LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")
"""Every EKS control-plane log type."""


@dataclass(frozen=True, kw_only=True)
class AdminPrincipal:
    principal_arn: str
    """Required. IAM role or user ARN that gets an EKS access entry."""
    access_policy: str = "cluster-admin"
    """@default cluster-admin; one of cluster-admin, admin, edit, view (the EKS access policies)."""


@dataclass(frozen=True, kw_only=True)
class ClusterArgs:
    cluster_name: str
    """Required. The EKS cluster's physical name (1-100 letters, digits, ``-``, ``_``)."""
    region: str
    """Required. AWS region code; decides the ARN partition of managed policies."""
    kubernetes_version: str
    """Required. EKS Kubernetes version (``1.33``) of the control plane and the system node group."""
    vpc_id: pulumi.Input[str]
    """Required. The VPC (``Network.vpc_id``, or an existing VPC's id)."""
    private_subnet_ids: pulumi.Input[Sequence[str]]
    """Required. Control-plane ENIs and the system node group (``Network.private_subnet_ids``)."""
    public_subnet_ids: pulumi.Input[Sequence[str]] = ()
    """@default none. For internet-facing load balancers only; no node runs there."""
    endpoint_public_access: bool = False
    """@default false (private endpoint only)."""
    public_access_cidrs: Sequence[str] = ()
    """@default none. With ``endpoint_public_access``: the CIDRs allowed to reach the public endpoint."""
    deploy_cidrs: Sequence[str] = ()
    """@default none. Where `pulumi up` runs (in-VPC or peered runner): HTTPS to the API server's private
    endpoint."""
    deploy_security_group_ids: Sequence[str] = ()
    """@default none. Security groups of the deploy runners: HTTPS to the private endpoint."""
    admin_principals: Sequence[AdminPrincipal] = ()
    """@default none. Access entries with an EKS access policy each (:class:`AdminPrincipal`)."""
    deploy_role_arn: str | None = None
    """The role that runs `pulumi up`: an access entry with AmazonEKSClusterAdminPolicy that the program creates.
    pulumi-eks always asks EKS to make the cluster's creator an admin through an entry of its own
    (nodejs/eks/cluster/cluster.ts createCore: ``accessConfig.bootstrapClusterCreatorAdminPermissions: true``,
    ignoreChanges on it), and EKS allows one entry per principal; so with a deploy role the program turns that
    bootstrap off on pulumi-eks's EKS cluster (a transform: :func:`creator_bootstrap_off`) and creates the entry
    itself, never importing one. @default none: EKS's bootstrap entry for the creator stays (unmanaged)."""
    preview_role_arn: str | None = None
    """The role of pull-request previews: an access entry with ``preview_access_policy``. @default none."""
    preview_access_policy: str = "view"
    """@default view (AmazonEKSViewPolicy)."""
    protect: bool = False
    """@default false. True: the cluster and its Secrets KMS key are protected (``pulumi destroy`` and a
    replacing edit stop with an error) and the key is retained if the resource is ever deleted."""
    log_types: Sequence[str] = LOG_TYPES
    """@default all five control-plane logs (api, audit, authenticator, controllerManager, scheduler)."""
    secrets_encryption: bool = True
    """@default true: a dedicated, rotated KMS key envelope-encrypts Secrets."""
    deletion_protection: bool = True
    """@default true: EKS refuses to delete the cluster until this is turned off."""
    system_instance_types: Sequence[str] = ("m7i.xlarge",)
    """@default m7i.xlarge. The system node group's types (never an accelerated type)."""
    system_min_size: int = 2
    """@default 2 system nodes at least."""
    system_desired_size: int = 2
    """@default 2 system nodes to start with."""
    system_max_size: int = 4
    """@default 4 system nodes at most."""
    system_disk_size_gib: int = 100
    """@default 100 GiB encrypted gp3 root volume per system node."""
    addon_versions: Mapping[str, str | None] = field(default_factory=dict)
    """@default none: EKS's default version of every add-on. EKS add-on name -> version; None lets EKS
    choose its default for the Kubernetes version (the render refuses it: infra/verify/pins.py)."""
    system_release_version: str | None = None
    """@default none: EKS picks the newest AMI release when the group is created. The system node group's AMI
    release (``<kubelet>-<date>``, ekstrain/facts/versions.py SYSTEM_NODE_RELEASE_VERSIONS); the render refuses none."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on every AWS resource the cluster creates."""

    def __post_init__(self) -> None:
        a = "ClusterArgs"
        ac.cluster_name(f"{a}.cluster_name", self.cluster_name)
        ac.region(f"{a}.region", self.region)
        ac.check(
            isinstance(self.kubernetes_version, str) and bool(re.fullmatch(r"1\.[0-9]{2}", self.kubernetes_version)),
            f"{a}.kubernetes_version",
            self.kubernetes_version,
            "not an EKS Kubernetes version",
            "give major.minor, such as 1.33",
        )
        if ac.is_plain(self.private_subnet_ids):
            ac.aws_ids(f"{a}.private_subnet_ids", self.private_subnet_ids, "subnet", allow_empty=False)
        for i, cidr in enumerate([*self.public_access_cidrs, *self.deploy_cidrs]):
            ac.ipv4_network(
                f"{a}.{'public_access_cidrs' if i < len(self.public_access_cidrs) else 'deploy_cidrs'}", cidr
            )
        ac.aws_ids(f"{a}.deploy_security_group_ids", self.deploy_security_group_ids, "sg")
        for i, principal in enumerate(self.admin_principals):
            ac.check(
                str(principal.principal_arn).startswith("arn:"),
                f"{a}.admin_principals[{i}].principal_arn",
                principal.principal_arn,
                "not an ARN",
                "give the IAM role or user ARN (arn:aws:iam::111122223333:role/Admin)",
            )
            ac.one_of(f"{a}.admin_principals[{i}].access_policy", principal.access_policy, ACCESS_POLICIES)
        ac.one_of(f"{a}.preview_access_policy", self.preview_access_policy, ACCESS_POLICIES)
        unknown = [t for t in self.log_types if t not in LOG_TYPES]
        ac.check(not unknown, f"{a}.log_types", list(self.log_types), f"unknown {unknown}", f"use of {LOG_TYPES}")
        ac.check(
            bool(self.system_instance_types) and not any(map(catalog.is_accelerated, self.system_instance_types)),
            f"{a}.system_instance_types",
            list(self.system_instance_types),
            "empty or an accelerated type (system nodes run controllers, never training)",
            "use general-purpose types such as m7i.xlarge",
        )
        ac.positive_int(f"{a}.system_max_size", self.system_max_size, "give the most system nodes (4 is the default)")
        ac.check(
            0 <= self.system_min_size <= self.system_desired_size <= self.system_max_size,
            f"{a}.system_desired_size",
            (self.system_min_size, self.system_desired_size, self.system_max_size),
            "needs 0 <= system_min_size <= system_desired_size <= system_max_size",
            "order the three sizes (2, 2, 4 are the defaults)",
        )
        ac.positive_int(
            f"{a}.system_disk_size_gib",
            self.system_disk_size_gib,
            "give 20 to 16384 GiB (100 is the default)",
            20,
            16384,
        )


def access_entry_key(principal_arn: str) -> str:
    """Stable access-entry key of a principal: ``role-PlatformAdmin`` for ``arn:aws:iam::1:role/PlatformAdmin``."""
    resource = principal_arn.split(":", 5)[-1]
    return re.sub(r"[^A-Za-z0-9-]+", "-", resource).strip("-")


def access_policy_arn(partition: str, policy: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{ACCESS_POLICIES[policy]}"


def without_creator_bootstrap(props: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs of pulumi-eks's ``aws:eks/cluster:Cluster`` child with
    ``accessConfig.bootstrapClusterCreatorAdminPermissions: false``: EKS then creates no access entry for the
    principal that creates the cluster (EKS CreateCluster API, AccessConfigRequest). pulumi-eks sends ``true``
    whenever an authentication mode is set (nodejs/eks/cluster/cluster.ts createCore, "required for this component
    because it deploys charts": with API mode and no default node group it deploys none) and ignores later changes
    of the field, so an existing cluster is never replaced by this."""
    out = dict(props)
    access = dict(out.get("accessConfig") or {})
    access["bootstrapClusterCreatorAdminPermissions"] = False
    out["accessConfig"] = access
    return out


def creator_bootstrap_off(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Transform of ``eks.Cluster``: :func:`without_creator_bootstrap` on its EKS cluster child (transforms reach
    the children a packaged component's provider registers)."""
    if args.type_ != "aws:eks/cluster:Cluster":
        return None
    return pulumi.ResourceTransformResult(props=without_creator_bootstrap(args.props), opts=args.opts)


class Cluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    """The EKS cluster's name (``ClusterArgs.cluster_name``)."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig JSON for the cluster (secret)."""
    oidc_provider_arn: pulumi.Output[str]
    """ARN of the cluster's IAM OIDC provider (IRSA)."""
    oidc_issuer: pulumi.Output[str]
    """The OIDC issuer host/path, without ``https://``."""
    cluster_security_group_id: pulumi.Output[str]
    """The EKS-created cluster security group every node carries."""
    system_node_role_arn: pulumi.Output[str]
    """IAM role ARN of the system node group."""
    provider: k8s.Provider
    """Kubernetes provider for the cluster (server-side apply): pass it to Kubernetes children."""
    eks_cluster: eks.Cluster
    """The pulumi-eks ``Cluster`` (remote component)."""
    system_node_group: eks.ManagedNodeGroup
    """The system ``ManagedNodeGroup``: add-ons and controllers run there."""

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:cluster:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        partition = iam.partition_of(args.region)

        key_arn = None
        keep = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        if args.secrets_encryption:
            # Protected with the cluster: a scheduled key deletion makes every Secret of the cluster unreadable.
            key, _ = iam.customer_key(
                f"{name}-secrets",
                f"EKS Secrets envelope encryption for {args.cluster_name}",
                tags,
                child,
                alias=f"{args.cluster_name}-eks-secrets",
                key_opts=keep,
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
            public_subnet_ids=args.public_subnet_ids or None,
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
            # With a deploy role, its admin entry is the program's own (_deployer_entry): EKS must not bootstrap one.
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                transforms=[creator_bootstrap_off] if args.deploy_role_arn else None,
            ),
        )
        access = (
            self._deployer_entry(name, args.cluster_name, args.deploy_role_arn, partition)
            if args.deploy_role_arn
            else None
        )

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
            # Pinned: unset, EKS picks the newest AMI release on the day the group is created (EKS NodeGroup
            # releaseVersion, "Defaults to latest version for Kubernetes version").
            release_version=args.system_release_version,
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
        # runner gets 443 explicitly, and the Kubernetes provider waits for it. The provider also waits for the
        # deploy role's access policy association (without it the role has no Kubernetes permission: EKS access
        # entries, https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html) and for the system node
        # group: an association takes effect asynchronously (gravitational/teleport#37958 retries for it;
        # terraform-aws-eks main.tf waits a `time_sleep` of dataplane_wait_duration, 30s, before its data plane),
        # and the node group's minutes of creation, started with the association, cover that; every release waits
        # for nodes anyway.
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
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*deploy, *([access] if access is not None else []), self.system_node_group],
            ),
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

    def _deployer_entry(
        self, name: str, cluster_name: str, role_arn: str, partition: str
    ) -> aws.eks.AccessPolicyAssociation:
        """The deploy role's access entry and its cluster-admin association, created by the program (EKS created
        none: :func:`creator_bootstrap_off`). Named as the entry this program used to adopt, so a stack that
        imported it keeps the same resources, unchanged."""
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[self.eks_cluster])
        entry = aws.eks.AccessEntry(
            f"{name}-deployer",
            cluster_name=cluster_name,
            principal_arn=role_arn,
            type="STANDARD",
            opts=after_cluster,
        )
        return aws.eks.AccessPolicyAssociation(
            f"{name}-deployer",
            cluster_name=cluster_name,
            principal_arn=role_arn,
            policy_arn=access_policy_arn(partition, "cluster-admin"),
            access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[entry]),
        )
