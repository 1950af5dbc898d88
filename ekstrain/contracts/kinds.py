"""Deploy contract of every kind the program creates: preconditions, parallelism, the timeouts the program sets.

One entry per type token as the engine records it (``type`` in resources.yaml). A precondition is one of:

- :data:`NAMESPACE`: a namespaced Kubernetes object's namespace exists first (the NamespaceLifecycle admission
  plugin refuses an object in a namespace that does not exist: ``namespaces "x" not found``);
- :data:`ACCESS`: the deploy role can talk to the API server: its EKS access policy association is active (with
  ``bootstrapClusterCreatorAdminPermissions: false`` nothing else grants it any Kubernetes permission);
- :data:`CRD`: the CustomResourceDefinition that serves the kind is installed (and its admission webhook is up);
- :data:`CLUSTER`: the EKS cluster exists (the resource names it by a plain string, so no input orders it);
- :data:`NODES`: a release or manifest whose wait needs running pods comes after the system node group;
- ``after:<type>`` (:func:`after`): a resource of that type of the stack is created first;
- ``step:<name>`` (:func:`step`): a one-time account step outside the stack, documented in docs/delivery.md
  (``<!-- step:<name> -->``, listed in :data:`STEPS`);
- ``flag:<key>`` (:func:`flag`): the stack declares, with this config key set to true, that a later step has
  happened (the resource exists only in a stack that sets it).

infra/verify/order.py checks every precondition against the recorded dependency graph; the render refuses a
recorded kind that has no entry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ekstrain.facts.spend import HOURS_PER_MONTH

NAMESPACE = "namespace"
ACCESS = "access"
CRD = "crd"
CLUSTER = "cluster"
NODES = "nodes"


def after(type_token: str) -> str:
    return f"after:{type_token}"


def step(name: str) -> str:
    return f"step:{name}"


def flag(key: str) -> str:
    return f"flag:{key}"


COST_TAGS_FLAG = "ekstrain:cost.activateCostAllocationTags"
"""Stack key that declares the cost-allocation tag keys billed (docs/delivery.md "First deploy", step 4)."""

STEPS: Mapping[str, str] = {
    "service-linked-roles": (
        "EKS, EKS node groups and FSx create their service-linked roles on first use; the deploy role needs "
        "iam:CreateServiceLinkedRole for them (or an administrator creates them once per account)"
    ),
    "spot-service-linked-role": (
        "Karpenter launches Spot capacity only when AWSServiceRoleForEC2Spot exists: "
        "`aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once per account"
    ),
    "ec2-quotas": (
        "the account's EC2 vCPU quotas per instance-family group cover every node pool at its maximum (Service "
        "Quotas; docs/delivery.md lists each stack's figures, ekstrain/contracts/quotas.py computes them)"
    ),
    "cost-allocation-tags-billed": (
        "the ekstrain.io tag keys have appeared on a bill (up to 24 h after the first tagged resource) and are "
        "activated in the payer account: `aws ce update-cost-allocation-tags-status`"
    ),
}
"""Out-of-stack steps a precondition may name, each a marked section of docs/delivery.md."""

PULUMI_AWS = "https://www.pulumi.com/registry/packages/aws/api-docs/"
TF_AWS = "https://registry.terraform.io/providers/hashicorp/aws/latest/docs/resources/"
K8S_API = "https://kubernetes.io/docs/reference/kubernetes-api/"
NAMESPACES_DOC = "https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle"
EKS_ACCESS = "https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html"
EKS_SLR = "https://docs.aws.amazon.com/eks/latest/userguide/using-service-linked-roles.html"


@dataclass(frozen=True, kw_only=True)
class Contract:
    type: str
    """The type token as recorded (resources.yaml ``type``)."""
    source: str
    """Where the contract's facts come from (provider docs, AWS API reference, upstream issue)."""
    preconditions: tuple[str, ...] = ()
    parallel: bool = True
    """False: instances must not be created at the same time (the graph must order every pair)."""
    timeouts: Mapping[str, str] = field(default_factory=dict)
    """``customTimeouts`` the program must set (create/update/delete): the provider's default is known to be too
    short. Each instance's recorded timeouts must be at least these."""
    timeouts_source: str = ""
    note: str = ""


def _aws(
    type_token: str,
    *pre: str,
    source: str = "",
    note: str = "",
    parallel: bool = True,
    timeouts: Mapping[str, str] | None = None,
    timeouts_source: str = "",
) -> Contract:
    """An AWS resource's contract; its source starts with the pulumi-aws registry page of the type."""
    module, _, rest = type_token.removeprefix("aws:").partition("/")
    page = f"{PULUMI_AWS}{module}/{rest.partition(':')[0].lower()}/"
    return Contract(
        type=type_token,
        preconditions=pre,
        source=f"{page}; {source}" if source else page,
        note=note,
        parallel=parallel,
        timeouts=dict(timeouts or {}),
        timeouts_source=timeouts_source,
    )


def _k8s(group_version: str, kind: str, *, namespaced: bool, custom: bool = False, source: str = "") -> Contract:
    pre = (ACCESS, *((NAMESPACE,) if namespaced else ()), *((CRD,) if custom else ()))
    return Contract(
        type=f"kubernetes:{group_version}:{kind}",
        preconditions=pre,
        source="; ".join(s for s in (source or K8S_API, EKS_ACCESS, NAMESPACES_DOC if namespaced else "") if s),
    )


_NAT_IGW = (
    f"{TF_AWS}nat_gateway (a public NAT gateway needs the VPC's internet gateway attached: the example "
    "depends_on the aws_internet_gateway)"
)
_EKS_CLUSTER = "the EKS API names the cluster: ResourceNotFoundException until it is ACTIVE"

_CONTRACTS: tuple[Contract, ...] = (
    # -- network ---------------------------------------------------------------------------------------------------
    _aws("aws:ec2/vpc:Vpc"),
    _aws("aws:ec2/subnet:Subnet"),
    _aws("aws:ec2/internetGateway:InternetGateway"),
    _aws("aws:ec2/eip:Eip"),
    _aws("aws:ec2/natGateway:NatGateway", after("aws:ec2/internetGateway:InternetGateway"), source=_NAT_IGW),
    _aws("aws:ec2/routeTable:RouteTable"),
    _aws("aws:ec2/route:Route"),
    _aws("aws:ec2/routeTableAssociation:RouteTableAssociation"),
    _aws("aws:ec2/securityGroup:SecurityGroup"),
    _aws("aws:ec2/defaultSecurityGroup:DefaultSecurityGroup"),
    _aws("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
    _aws("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"),
    _aws("aws:ec2/vpcEndpoint:VpcEndpoint"),
    _aws("aws:ec2/flowLog:FlowLog"),
    _aws("aws:ec2/placementGroup:PlacementGroup"),
    _aws("aws:ec2/launchTemplate:LaunchTemplate"),
    # -- IAM, KMS --------------------------------------------------------------------------------------------------
    _aws("aws:iam/role:Role"),
    _aws("aws:iam/policy:Policy"),
    _aws("aws:iam/rolePolicy:RolePolicy"),
    _aws("aws:iam/rolePolicyAttachment:RolePolicyAttachment"),
    _aws("aws:iam/openIdConnectProvider:OpenIdConnectProvider"),
    _aws("aws:kms/key:Key"),
    _aws("aws:kms/alias:Alias"),
    _aws("aws:kms/keyPolicy:KeyPolicy"),
    # -- EKS -------------------------------------------------------------------------------------------------------
    _aws(
        "aws:eks/cluster:Cluster",
        step("service-linked-roles"),
        source=f"{EKS_SLR} (AWSServiceRoleForAmazonEKS is created on the first CreateCluster)",
    ),
    _aws(
        "aws:eks/nodeGroup:NodeGroup",
        CLUSTER,
        step("service-linked-roles"),
        step("ec2-quotas"),
        source=f"{EKS_SLR} (AWSServiceRoleForAmazonEKSNodegroup); {_EKS_CLUSTER}",
    ),
    _aws("aws:eks/accessEntry:AccessEntry", CLUSTER, source=f"{EKS_ACCESS}; {_EKS_CLUSTER}"),
    _aws(
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        CLUSTER,
        after("aws:eks/accessEntry:AccessEntry"),
        source=f"{EKS_ACCESS} (a policy is associated with an existing access entry: AssociateAccessPolicy)",
    ),
    _aws(
        "aws:eks/addon:Addon",
        CLUSTER,
        source=f"https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html; {_EKS_CLUSTER}",
    ),
    _aws(
        "aws:eks/podIdentityAssociation:PodIdentityAssociation",
        CLUSTER,
        source="https://docs.aws.amazon.com/eks/latest/APIReference/API_CreatePodIdentityAssociation.html",
    ),
    # -- storage ---------------------------------------------------------------------------------------------------
    _aws("aws:s3/bucket:Bucket"),
    _aws("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"),
    _aws("aws:s3/bucketOwnershipControls:BucketOwnershipControls"),
    _aws("aws:s3/bucketPolicy:BucketPolicy"),
    _aws("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"),
    _aws("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"),
    _aws("aws:s3/bucketVersioning:BucketVersioning"),
    _aws(
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        step("service-linked-roles"),
        source="https://docs.aws.amazon.com/fsx/latest/LustreGuide/using-service-linked-roles.html",
    ),
    _aws(
        "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation",
        after("aws:fsx/lustreFileSystem:LustreFileSystem"),
        after("aws:s3/bucket:Bucket"),
        parallel=False,
        # Two DRAs created at once on one file system end FAILED ("does not have the required permissions for the
        # S3 bucket"); the workaround is to serialise them.
        source="https://github.com/hashicorp/terraform-provider-aws/issues/24678",
        timeouts={"create": "30m", "delete": "30m"},
        # The provider's default is 10m for create, update and delete; creation with a metadata import of a
        # populated bucket takes longer than that.
        timeouts_source=f"{TF_AWS}fsx_data_repository_association#timeouts",
    ),
    _aws("aws:efs/fileSystem:FileSystem"),
    _aws("aws:efs/mountTarget:MountTarget", after("aws:efs/fileSystem:FileSystem")),
    _aws("aws:efs/accessPoint:AccessPoint", after("aws:efs/fileSystem:FileSystem")),
    # -- events, logs, monitoring, spend ---------------------------------------------------------------------------
    _aws("aws:sqs/queue:Queue"),
    _aws("aws:sqs/queuePolicy:QueuePolicy"),
    _aws("aws:cloudwatch/eventRule:EventRule"),
    _aws("aws:cloudwatch/eventTarget:EventTarget"),
    _aws("aws:cloudwatch/logGroup:LogGroup"),
    _aws("aws:sns/topic:Topic"),
    _aws("aws:sns/topicPolicy:TopicPolicy"),
    _aws("aws:sns/topicSubscription:TopicSubscription"),
    _aws("aws:amp/workspace:Workspace"),
    _aws(
        "aws:budgets/budget:Budget",
        note="the TagKeyValue filter matches spend only once the tag key is active (cost-allocation-tags-billed)",
        source="https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_budgets_CreateBudget.html",
    ),
    _aws(
        "aws:costexplorer/costAllocationTag:CostAllocationTag",
        flag(COST_TAGS_FLAG),
        step("cost-allocation-tags-billed"),
        # Cost Explorer refuses a key it has not seen on a bill yet (up to 24 h after a tagged resource exists), and
        # refuses member accounts of an Organization ("Linked account doesn't have access to cost allocation tags").
        source=(
            "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/activating-tags.html; "
            "https://github.com/hashicorp/terraform-provider-aws/issues/29068; "
            "https://github.com/hashicorp/terraform-provider-aws/issues/31442"
        ),
    ),
    # -- pulumi-eks (remote components and what their provider registers), random ----------------------------------
    Contract(
        type="eks:index:Cluster",
        preconditions=(step("service-linked-roles"),),
        source="https://www.pulumi.com/registry/packages/eks/api-docs/cluster/",
    ),
    Contract(
        type="eks:index:ManagedNodeGroup",
        preconditions=(CLUSTER,),
        source="https://www.pulumi.com/registry/packages/eks/api-docs/managednodegroup/",
    ),
    Contract(type="eks:index:ServiceRole", source="https://github.com/pulumi/pulumi-eks (nodejs/eks/servicerole.ts)"),
    Contract(
        type="eks:index:VpcCniAddon",
        preconditions=(CLUSTER,),
        source="https://www.pulumi.com/registry/packages/eks/api-docs/vpccniaddon/",
    ),
    Contract(
        type="random:index/randomPassword:RandomPassword",
        source="https://www.pulumi.com/registry/packages/random/api-docs/randompassword/ (local, no cloud call)",
    ),
    # -- Kubernetes ------------------------------------------------------------------------------------------------
    Contract(
        type="pulumi:providers:kubernetes",
        preconditions=(ACCESS,),
        # Every object it creates authenticates as the deploy role: the provider waits for the role's association.
        source=f"https://www.pulumi.com/registry/packages/kubernetes/api-docs/provider/; {EKS_ACCESS}",
    ),
    Contract(
        type="kubernetes:helm.sh/v3:Release",
        preconditions=(ACCESS, NAMESPACE, NODES),
        source=(
            "https://www.pulumi.com/registry/packages/kubernetes/api-docs/helm/v3/release/ (createNamespace; "
            f"the wait needs running pods); {EKS_ACCESS}"
        ),
    ),
    Contract(
        type="kubernetes:yaml/v2:ConfigGroup",
        preconditions=(ACCESS, NAMESPACE),
        source=f"https://www.pulumi.com/registry/packages/kubernetes/api-docs/yaml/v2/configgroup/; {EKS_ACCESS}",
    ),
    Contract(
        type="kubernetes:kustomize/v2:Directory",
        preconditions=(ACCESS, NAMESPACE),
        source=f"https://www.pulumi.com/registry/packages/kubernetes/api-docs/kustomize/v2/directory/; {EKS_ACCESS}",
    ),
    _k8s("core/v1", "Namespace", namespaced=False),
    _k8s("core/v1", "ConfigMap", namespaced=True),
    _k8s("core/v1", "Secret", namespaced=True),
    _k8s("core/v1", "Service", namespaced=True),
    _k8s("core/v1", "ServiceAccount", namespaced=True),
    _k8s("core/v1", "LimitRange", namespaced=True),
    _k8s("core/v1", "PersistentVolume", namespaced=False),
    _k8s("core/v1", "PersistentVolumeClaim", namespaced=True),
    _k8s("apps/v1", "DaemonSet", namespaced=True),
    _k8s("apps/v1", "Deployment", namespaced=True),
    _k8s("apps/v1", "StatefulSet", namespaced=True),
    _k8s("batch/v1", "Job", namespaced=True),
    _k8s("batch/v1", "CronJob", namespaced=True),
    _k8s("networking.k8s.io/v1", "NetworkPolicy", namespaced=True),
    _k8s("rbac.authorization.k8s.io/v1", "ClusterRole", namespaced=False),
    _k8s("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", namespaced=False),
    _k8s("rbac.authorization.k8s.io/v1", "Role", namespaced=True),
    _k8s("rbac.authorization.k8s.io/v1", "RoleBinding", namespaced=True),
    _k8s("storage.k8s.io/v1", "StorageClass", namespaced=False),
    _k8s("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", namespaced=False),
    _k8s("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", namespaced=False),
    _k8s("scheduling.k8s.io/v1", "PriorityClass", namespaced=False),
    _k8s(
        "karpenter.sh/v1",
        "NodePool",
        namespaced=False,
        custom=True,
        source="https://karpenter.sh/docs/concepts/nodepools/",
    ),
    _k8s(
        "karpenter.k8s.aws/v1",
        "EC2NodeClass",
        namespaced=False,
        custom=True,
        source="https://karpenter.sh/docs/concepts/nodeclasses/",
    ),
    _k8s(
        "scheduling.volcano.sh/v1beta1",
        "Queue",
        namespaced=False,
        custom=True,
        source="https://volcano.sh/en/docs/queue/",
    ),
    _k8s(
        "scheduling.volcano.sh/v1beta1",
        "PodGroup",
        namespaced=True,
        custom=True,
        source="https://volcano.sh/en/docs/podgroup/",
    ),
    _k8s(
        "keda.sh/v1alpha1",
        "ScaledObject",
        namespaced=True,
        custom=True,
        source="https://keda.sh/docs/latest/reference/scaledobject-spec/",
    ),
    _k8s(
        "argoproj.io/v1alpha1",
        "AppProject",
        namespaced=True,
        custom=True,
        source="https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/#projects",
    ),
    _k8s(
        "trainer.kubeflow.org/v1alpha1",
        "ClusterTrainingRuntime",
        namespaced=False,
        custom=True,
        source="https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/",
    ),
    _k8s(
        "trainer.kubeflow.org/v1alpha1",
        "TrainingRuntime",
        namespaced=True,
        custom=True,
        source="https://www.kubeflow.org/docs/components/trainer/operator-guides/runtime/",
    ),
)

CONTRACTS: Mapping[str, Contract] = {c.type: c for c in _CONTRACTS}
"""Type token -> its contract."""

BUILT_IN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
"""Namespaces every EKS cluster has from its creation (Kubernetes creates them at API server start)."""


def contract(type_token: str) -> Contract | None:
    return CONTRACTS.get(type_token)


def namespaced(type_token: str) -> bool:
    c = CONTRACTS.get(type_token)
    return c is not None and NAMESPACE in c.preconditions


def minutes(duration: str) -> float:
    """``30m``, ``1h30m``, ``90s`` (Go durations, as customTimeouts are written) -> minutes; 0 for nonsense."""
    total, number = 0.0, ""
    units = {"h": 60.0, "m": 1.0, "s": 1 / 60}
    for ch in duration.strip():
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            return 0.0
    return total if not number else 0.0


EKS_CLUSTER_USD_PER_HOUR = 0.10
"""aws.amazon.com/eks/pricing: $0.10 per cluster-hour (standard support)."""
KMS_KEY_USD_PER_MONTH = 1.0
"""aws.amazon.com/kms/pricing: $1 per customer managed key-month."""
MONTHLY_USD: Mapping[str, tuple[float, str]] = {
    # type -> (USD per month, source); list prices, us-east-1/us-west-2, as of 2025.
    "aws:eks/cluster:Cluster": (
        EKS_CLUSTER_USD_PER_HOUR * HOURS_PER_MONTH,
        f"aws.amazon.com/eks/pricing: ${EKS_CLUSTER_USD_PER_HOUR:.2f} per cluster-hour",
    ),
    "aws:ec2/natGateway:NatGateway": (
        0.045 * HOURS_PER_MONTH,
        "aws.amazon.com/vpc/pricing: $0.045 per NAT gateway-hour, plus $0.045/GB processed",
    ),
    "aws:ec2/eip:Eip": (0.005 * HOURS_PER_MONTH, "aws.amazon.com/vpc/pricing: public IPv4 $0.005 per IP-hour"),
    "aws:kms/key:Key": (
        KMS_KEY_USD_PER_MONTH,
        f"aws.amazon.com/kms/pricing: ${KMS_KEY_USD_PER_MONTH:g} per customer managed key-month",
    ),
}
"""What the kinds billed by the hour or the month cost while they exist (the deploy simulator's monthly bill);
:data:`BILLED_WHILE_KEPT` says the same prices of the kinds a destroy leaves behind."""
FSX_PERSISTENT2_USD_PER_GB_MONTH = {125: 0.145, 250: 0.21, 500: 0.29, 1000: 0.42}
"""FSx for Lustre PERSISTENT_2 SSD per GB-month by MB/s/TiB (aws.amazon.com/fsx/lustre/pricing, us-east-1)."""

BILLED_WHILE_KEPT: Mapping[str, str] = {
    "aws:eks/cluster:Cluster": (
        f"${EKS_CLUSTER_USD_PER_HOUR:.2f} per cluster-hour (https://aws.amazon.com/eks/pricing/)"
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "storage per GiB-month at its throughput tier (https://aws.amazon.com/fsx/lustre/pricing/)"
    ),
    "aws:s3/bucket:Bucket": "objects per GB-month, every version kept (https://aws.amazon.com/s3/pricing/)",
    "aws:efs/fileSystem:FileSystem": "storage per GB-month (https://aws.amazon.com/efs/pricing/)",
    "aws:kms/key:Key": (
        f"${KMS_KEY_USD_PER_MONTH:g} per key-month until its scheduled deletion ends (https://aws.amazon.com/kms/pricing/)"
    ),
    "aws:cloudwatch/logGroup:LogGroup": "log data stored per GB-month (https://aws.amazon.com/cloudwatch/pricing/)",
}
"""What a resource left behind by `pulumi destroy` (protected or retained) keeps costing; kinds not listed cost
nothing while they exist (a VPC, subnet, security group, DRA, access point, IAM role or policy)."""
