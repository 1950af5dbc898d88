"""ekstrain's CrossGuard rules as plain functions over engine-shaped resources.

Nothing here imports ``pulumi_policy``: the rules run unchanged in three places,
- in the policy pack (``pack.py`` adapts ``ResourceValidationArgs`` / ``StackValidationArgs``),
- in unit tests with synthetic inputs, good and bad,
- over the offline recording of a stack (``ekstrain.infra.offline.Recording``), through the same adapter.

Conventions:
- props use the engine's camelCase input keys (``endpointPublicAccess``, ``blockDeviceMappings``);
  Kubernetes objects keep their manifest keys (``spec.template.spec.expireAfter``).
- A rule must be silent on resource types it does not know, and on resources that do not
  exist in the stack yet (a stack without buckets passes the bucket rules).
- Reading an unknown value raises through the policy SDK's proxy (``UnknownValueError``), which
  the policy runtime reports as "cannot run during preview" instead of a false violation; rules
  therefore read only what they need, so one unknown field does not blind the whole rule.
- Resource rules yield messages; stack rules yield ``(urn, message)``.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ekstrain.facts import names  # stdlib-only: loads in the pack's own virtualenv (ekstrain_policy/__init__.py)

# -- resource type tokens ---------------------------------------------------------------------------------------------
EKS_CLUSTER = "eks:index:Cluster"
EKS_MNG = "eks:index:ManagedNodeGroup"
EKS_NODEGROUP_V2 = "eks:index:NodeGroupV2"
AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
VOLUME = "aws:ebs/volume:Volume"
EBS_DEFAULT_ENCRYPTION = "aws:ebs/encryptionByDefault:EncryptionByDefault"
SUBNET = "aws:ec2/subnet:Subnet"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
S3_BUCKET = "aws:s3/bucket:Bucket"
S3_BUCKET_V2 = "aws:s3/bucketV2:BucketV2"
S3_SSE = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
S3_PAB = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
K8S_SECRET = "kubernetes:core/v1:Secret"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
IAM_POLICY_DOCS: dict[str, str] = {
    "aws:iam/policy:Policy": "policy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/userPolicy:UserPolicy": "policy",
    "aws:iam/groupPolicy:GroupPolicy": "policy",
}
IAM_ROLE = "aws:iam/role:Role"
IAM_ATTACHMENTS = (
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
)
STATEFUL_TYPES = (FSX_LUSTRE, EFS, S3_BUCKET, S3_BUCKET_V2)
"""Resources whose deletion loses data: protected in prod."""

ACCELERATOR_TAINTS = (names.GPU_RESOURCE, names.NEURON_RESOURCE, names.EFA_RESOURCE)
EFA_INTERFACE_TYPES = ("efa", "efa-only")

DEFAULT_PROD_ENVIRONMENTS = ("prod",)
DEFAULT_PRIVILEGED_ALLOW_LIST: tuple[dict[str, str], ...] = (
    # Device plugins register devices with the kubelet and open /dev entries: upstream charts
    # run them privileged (or with escalation) on purpose.
    {"match": "*/nvidia-device-plugin*", "reason": "NVIDIA device plugin needs /dev/nvidia* and the kubelet socket"},
    {"match": "*/aws-efa-k8s-device-plugin*", "reason": "EFA device plugin needs /dev/infiniband"},
    {"match": "*/neuron-device-plugin*", "reason": "Neuron device plugin needs /dev/neuron*"},
    {"match": "*/neuron-monitor", "reason": "reads the Neuron driver's sysfs and /dev/neuron* (no chart)"},
    {
        "match": "kube-system/health-gate-*",
        "reason": "the health gate's pre-flight (ekstrain/payloads/health_gate.py) runs DCGM diagnostics, "
        "opens the EFA and "
        "Neuron devices of its node without holding them (init containers only; its guard is unprivileged)",
    },
)
DEFAULT_SECRET_SOURCE_TYPES = (
    "random:index/randomPassword:RandomPassword",
    "random:index/randomBytes:RandomBytes",
    "random:index/randomString:RandomString",
    "aws:secretsmanager/secretVersion:SecretVersion",
    "tls:index/privateKey:PrivateKey",
)
DEFAULT_LITERAL_SECRET_ALLOW_LIST = ("jupyterhub-oauth",)
"""Secrets the program fills from a stack config secret (never a literal in code): the hub's OAuth client secret
from ``ekstrain:jupyterhubClientSecret`` (components/jupyterhub.py). A Kubernetes Secret cannot prove that on the
wire: pulumi-kubernetes marks every Secret's data/stringData secret itself, literal or not."""
SENSITIVE_KEY = re.compile(r"(passw(or)?d|secret|token|api[-_]?key|private[-_]?key|credential)s?$", re.I)
"""Helm values keys whose string value is a credential (``rootPassword``, ``apiKey``; not ``existingSecret``)."""
NON_CREDENTIAL_KEY = re.compile(
    r"^(existing|use|create)|^secret$|(Name|Ref|Enabled|File|Path|(Password|Secret|Token)Key)$", re.I
)
"""Keys that name a credential rather than hold it (``existingSecret``, ``passwordSecretName``, ``tokenFile``)."""


@dataclass(frozen=True)
class Resource:
    """The part of a resource a rule reads, from the policy SDK or from the offline recording."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    protect: bool = False
    dependencies: frozenset[str] = frozenset()
    """URNs this resource depends on (all properties)."""
    property_dependencies: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Property name -> URNs its value came from (empty under the offline recording)."""
    secret_paths: frozenset[str] = frozenset()
    """Input paths the engine holds as Pulumi secrets (``stringData``, ``stringData.client-secret``,
    ``values.hub.password``): a value from the stack's config secrets or from a secret output."""

    def is_secret(self, path: str) -> bool:
        """``path`` or a property above it is a Pulumi secret."""
        parts = path.split(".")
        return any(".".join(parts[:n]) in self.secret_paths for n in range(1, len(parts) + 1))

    def deps_of(self, prop: str) -> frozenset[str]:
        return self.property_dependencies.get(prop) or self.dependencies


ResourceRule = Callable[[Resource, Mapping[str, Any]], Iterator[str]]
StackRule = Callable[[Sequence[Resource], Mapping[str, Any]], Iterator[tuple[str, str]]]


def type_of_urn(urn: str) -> str:
    """``urn:pulumi:stack::proj::parent$child::name`` -> ``child``."""
    parts = urn.split("::")
    return parts[2].split("$")[-1] if len(parts) >= 4 else ""


def _get(obj: Any, *path: str | int) -> Any:
    """Nested lookup that tolerates missing keys and non-dict values (reading an unknown raises)."""
    for key in path:
        if isinstance(obj, Mapping):
            if key not in obj:
                return None
            obj = obj[key]
        elif isinstance(obj, Sequence) and not isinstance(obj, str) and isinstance(key, int):
            if key >= len(obj):
                return None
            obj = obj[key]
        else:
            return None
    return obj


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)


def _truthy(value: Any) -> bool:
    """Booleans as the engine may carry them: ``True`` or the string ``"true"`` (launch templates)."""
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _tags(res: Resource) -> Mapping[str, Any]:
    tags = res.props.get("tags") if isinstance(res.props, Mapping) else None
    return tags if isinstance(tags, Mapping) else {}


# -- encryption at rest -----------------------------------------------------------------------------------------------
def ebs_encrypted(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """EBS volumes, launch-template and EC2NodeClass block devices, and the EBS CSI StorageClasses."""
    if res.type == VOLUME and not _truthy(res.props.get("encrypted")):
        yield "EBS volume is not encrypted: set encrypted=True"
    elif res.type in (LAUNCH_TEMPLATE, INSTANCE):
        key = "blockDeviceMappings" if res.type == LAUNCH_TEMPLATE else "ebsBlockDevices"
        for i, bdm in enumerate(_list(res.props.get(key))):
            ebs = bdm.get("ebs") if res.type == LAUNCH_TEMPLATE else bdm
            if isinstance(ebs, Mapping) and not _truthy(ebs.get("encrypted")):
                yield f"{key}[{i}] is not encrypted: set ebs.encrypted=true"
        if res.type == INSTANCE:
            root = res.props.get("rootBlockDevice")
            if isinstance(root, Mapping) and not _truthy(root.get("encrypted")):
                yield "rootBlockDevice is not encrypted: set encrypted=True"
    elif res.type == EC2_NODE_CLASS:
        # Without blockDeviceMappings Karpenter uses its default root volume, which is encrypted.
        for i, bdm in enumerate(_list(_get(res.props, "spec", "blockDeviceMappings"))):
            if not _truthy(_get(bdm, "ebs", "encrypted")):
                yield (
                    f"spec.blockDeviceMappings[{i}] ({_get(bdm, 'deviceName')}) is not encrypted: "
                    "set ebs.encrypted: true (a custom mapping does not inherit Karpenter's encrypted default)"
                )
    elif (
        res.type == STORAGE_CLASS
        and res.props.get("provisioner") == "ebs.csi.aws.com"
        and str(_get(res.props, "parameters", "encrypted")).lower() != "true"
    ):
        yield 'EBS CSI StorageClass does not set parameters.encrypted: "true"'


def s3_encrypted(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Every bucket has default server-side encryption configured (SSE-S3, SSE-KMS or DSSE-KMS)."""
    configs = [r for r in resources if r.type in S3_SSE]
    for bucket in _buckets(resources):
        if _get(bucket.props, "serverSideEncryptionConfiguration", "rule"):
            continue  # legacy inline configuration
        mine = [c for c in configs if _refers_to(c, "bucket", bucket)]
        algorithms = [
            _get(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm")
            for c in mine
            for rule in _list(c.props.get("rules"))
        ]
        if not any(a in ("AES256", "aws:kms", "aws:kms:dsse") for a in algorithms):
            yield (
                bucket.urn,
                (
                    f"bucket {bucket.name} has no BucketServerSideEncryptionConfiguration with an "
                    "sseAlgorithm (AES256 or aws:kms)"
                ),
            )


def efs_encrypted(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    if res.type == EFS and not _truthy(res.props.get("encrypted")):
        yield "EFS file system is not encrypted at rest: set encrypted=True (cannot be changed after creation)"


def fsx_encrypted(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """FSx for Lustre always encrypts at rest; persistent file systems must use our own KMS key."""
    if res.type != FSX_LUSTRE:
        return
    deployment = str(res.props.get("deploymentType") or "SCRATCH_1")
    if deployment.startswith("PERSISTENT") and not res.props.get("kmsKeyId"):
        yield f"{deployment} Lustre file system has no kmsKeyId: use a customer-managed KMS key"
    if deployment == "SCRATCH_1":
        yield "SCRATCH_1 is the legacy deployment type: use SCRATCH_2 or PERSISTENT_2"


def eks_secrets_encrypted(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    if res.type == EKS_CLUSTER and not res.props.get("encryptionConfigKeyArn"):
        yield "EKS cluster has no encryptionConfigKeyArn: Kubernetes Secrets are not envelope-encrypted with KMS"
    elif res.type == AWS_EKS_CLUSTER and not _get(res.props, "encryptionConfig", "provider", "keyArn"):
        yield "EKS cluster has no encryptionConfig.provider.keyArn"


def node_groups_disk_encrypted(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Managed node groups without a launch template of their own get pulumi-eks's generated one when
    ``enableIMDSv2``/``diskSize`` are set: its root ``ebs`` block has a size and no ``encrypted``. Their disks
    are then encrypted only by the account's EBS encryption by default, which this stack should own."""
    if any(r.type == EBS_DEFAULT_ENCRYPTION and r.props.get("enabled") is not False for r in resources):
        return
    for r in resources:
        if r.type in (EKS_MNG, EKS_NODEGROUP_V2) and not r.props.get("launchTemplate"):
            yield (
                r.urn,
                (
                    f"node group {r.name}: the launch template pulumi-eks generates does not encrypt the root "
                    "volume; add aws.ebs.EncryptionByDefault(enabled=True) to the stack or pass a launch "
                    "template with an encrypted root volume"
                ),
            )


# -- S3 access --------------------------------------------------------------------------------------------------------
PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def s3_public_access_blocked(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    blocks = [r for r in resources if r.type == S3_PAB]
    for bucket in _buckets(resources):
        mine = [b for b in blocks if _refers_to(b, "bucket", bucket)]
        if not any(all(_truthy(b.props.get(f)) for f in PAB_FLAGS) for b in mine):
            yield (
                bucket.urn,
                (f"bucket {bucket.name} has no BucketPublicAccessBlock with all of {', '.join(PAB_FLAGS)} true"),
            )


def s3_tls_only(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    policies = [r for r in resources if r.type == S3_POLICY]
    for bucket in _buckets(resources):
        mine = [p for p in policies if _refers_to(p, "bucket", bucket)]
        if not any(_denies_insecure_transport(p.props.get("policy")) for p in mine):
            yield (
                bucket.urn,
                (f"bucket {bucket.name} has no BucketPolicy denying requests with aws:SecureTransport=false"),
            )


def _denies_insecure_transport(policy: Any) -> bool:
    for st in _statements(policy):
        cond = _get(st, "Condition", "Bool", "aws:SecureTransport")
        if st.get("Effect") == "Deny" and str(_list(cond)[0] if cond is not None else "").lower() == "false":
            principal = st.get("Principal")
            if principal == "*" or _get(principal, "AWS") == "*":
                return True
    return False


def _buckets(resources: Sequence[Resource]) -> list[Resource]:
    return [r for r in resources if r.type in (S3_BUCKET, S3_BUCKET_V2)]


def _refers_to(child: Resource, prop: str, target: Resource) -> bool:
    """``child.<prop>`` names ``target``: by dependency (known at preview) or by value (id / bucket name).

    When the engine says which resources the property came from, that decides, without reading the value
    (unknown at preview for resources being created)."""
    from_resources = child.property_dependencies.get(prop)
    if from_resources:
        return target.urn in from_resources
    if target.urn and target.urn in child.dependencies:
        return True
    value = child.props.get(prop)
    return value is not None and value in (target.props.get("id"), target.props.get("bucket"))


# -- instance metadata ------------------------------------------------------------------------------------------------
def imdsv2_required(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """Every way this program can start a node: Karpenter classes, EKS node groups, templates, instances."""
    if res.type == EC2_NODE_CLASS:
        if _get(res.props, "spec", "metadataOptions", "httpTokens") != "required":
            yield 'EC2NodeClass spec.metadataOptions.httpTokens must be "required" (IMDSv2)'
    elif res.type in (EKS_MNG, EKS_NODEGROUP_V2):
        if res.props.get("launchTemplate"):
            return  # the template itself is checked as a LaunchTemplate
        if res.props.get("enableIMDSv2") is not True:
            yield "node group must set enableIMDSv2=True"
    elif res.type in (LAUNCH_TEMPLATE, INSTANCE) and _get(res.props, "metadataOptions", "httpTokens") != "required":
        yield 'metadataOptions.httpTokens must be "required" (IMDSv2)'


# -- EKS endpoint -----------------------------------------------------------------------------------------------------
OPEN_CIDRS = ("0.0.0.0/0", "::/0")


def eks_endpoint_restricted(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """A public API endpoint only with a CIDR allow-list that is not the whole internet."""
    if res.type == EKS_CLUSTER:
        public, cidrs = res.props.get("endpointPublicAccess"), res.props.get("publicAccessCidrs")
        public = True if public is None else public  # pulumi-eks defaults endpointPublicAccess to true
    elif res.type == AWS_EKS_CLUSTER:
        vpc = res.props.get("vpcConfig") or {}
        public, cidrs = vpc.get("endpointPublicAccess"), vpc.get("publicAccessCidrs")
        public = True if public is None else public  # the EKS API default
    else:
        return
    if not _truthy(public):
        return
    cidrs = _list(cidrs)
    if not cidrs:
        yield "public API endpoint without publicAccessCidrs: EKS then allows 0.0.0.0/0"
    for cidr in cidrs:
        try:
            net = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            yield f"publicAccessCidrs entry {cidr!r} is not a CIDR"
            continue
        if net.prefixlen == 0:
            yield f"publicAccessCidrs contains {cidr}: the endpoint is open to the internet"


def eks_control_plane_logs(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    if res.type != EKS_CLUSTER:
        return
    wanted = set(cfg.get("requiredLogTypes") or ("api", "audit", "authenticator"))
    missing = wanted - set(_list(res.props.get("enabledClusterLogTypes")))
    if missing:
        yield f"enabledClusterLogTypes lacks {sorted(missing)}"


# -- Karpenter training pools and EFA ---------------------------------------------------------------------------------
def is_training_pool(res: Resource) -> bool:
    """A NodePool of a training partition: partition label, or accelerator/EFA taints."""
    labels = {
        **(_get(res.props, "metadata", "labels") or {}),
        **(_get(res.props, "spec", "template", "metadata", "labels") or {}),
    }
    if names.PARTITION_LABEL in labels:
        return True
    taints = _list(_get(res.props, "spec", "template", "spec", "taints"))
    return any(_get(t, "key") in ACCELERATOR_TAINTS for t in taints)


def training_pools_never_disrupt_running(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """Consolidation of a busy node or expiry kills a multi-node job (expiry ignores do-not-disrupt)."""
    if res.type != NODE_POOL or not is_training_pool(res):
        return
    policy = _get(res.props, "spec", "disruption", "consolidationPolicy")
    if policy != "WhenEmpty":
        yield (
            f'training NodePool spec.disruption.consolidationPolicy is {policy!r}: must be "WhenEmpty" '
            "(WhenEmptyOrUnderutilized evicts running ranks)"
        )
    expire = _get(res.props, "spec", "template", "spec", "expireAfter")
    if expire != "Never":
        yield (
            f'training NodePool spec.template.spec.expireAfter is {expire!r}: must be "Never" '
            "(the Karpenter default 720h forcibly drains nodes mid-job)"
        )


def is_efa_node_class(res: Resource) -> bool:
    return res.type == EC2_NODE_CLASS and any(
        _get(i, "interfaceType") in EFA_INTERFACE_TYPES for i in _list(_get(res.props, "spec", "networkInterfaces"))
    )


def efa_single_subnet_and_sg(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """EFA traffic cannot leave a subnet: every EFA class selects exactly the one EFA subnet (one AZ),
    plus the EFA security group, which admits all traffic from and to itself."""
    classes = [r for r in resources if is_efa_node_class(r)]
    if not classes:
        return
    subnets = [r for r in resources if r.type == SUBNET]
    sgs = [r for r in resources if r.type == SECURITY_GROUP]
    efa_subnets = [s for s in subnets if _tags(s).get(names.SUBNET_ROLE_TAG) == "efa"]
    efa_sgs = [g for g in sgs if _tags(g).get(names.SG_ROLE_TAG) == "efa"]
    if not subnets:
        # An existing VPC (ekstrain:network.existingVpc): no subnet in the stack, the classes name them by id.
        yield from _efa_classes_by_id(classes, efa_sgs)
        yield from _efa_self_rules(resources, efa_sgs)
        return
    if len(efa_subnets) != 1:
        yield (
            classes[0].urn,
            (f"{len(efa_subnets)} subnets are tagged {names.SUBNET_ROLE_TAG}=efa: EFA partitions need exactly one"),
        )
        return
    efa_subnet = efa_subnets[0]
    if not efa_subnet.props.get("availabilityZone"):
        yield efa_subnet.urn, "the EFA subnet has no explicit availabilityZone"
    for nc in classes:
        terms = _list(_get(nc.props, "spec", "subnetSelectorTerms"))
        selected = {s.urn for t in terms for s in subnets if _selects(t, s)}
        if selected != {efa_subnet.urn}:
            chosen = sorted(s.name for s in subnets if s.urn in selected)
            yield (
                nc.urn,
                (
                    f"EFA EC2NodeClass {nc.name} subnetSelectorTerms select {chosen or 'no subnet'}: must "
                    f"select only the EFA subnet {efa_subnet.name}"
                ),
            )
        sg_terms = _list(_get(nc.props, "spec", "securityGroupSelectorTerms"))
        if not efa_sgs or not any(_selects(t, g) for t in sg_terms for g in efa_sgs):
            yield nc.urn, f"EFA EC2NodeClass {nc.name} securityGroupSelectorTerms do not include the EFA security group"
    yield from _efa_self_rules(resources, efa_sgs)


def _efa_classes_by_id(classes: Sequence[Resource], efa_sgs: Sequence[Resource]) -> Iterator[tuple[str, str]]:
    """Subnets outside the stack: each EFA class names exactly one subnet by id, the same one for all; its
    security groups are ids too, the EFA group's among them (the stack's own, or a second id for a given one)."""
    chosen: dict[str, str] = {}
    for nc in classes:
        terms = _list(_get(nc.props, "spec", "subnetSelectorTerms"))
        ids = [t.get("id") for t in terms if isinstance(t, Mapping)]
        if len(terms) != 1 or len(ids) != 1 or not ids[0]:
            yield (
                nc.urn,
                f"EFA EC2NodeClass {nc.name} subnetSelectorTerms {terms}: with no subnet in the stack (an existing "
                "VPC) it must name the one EFA subnet by id",
            )
        else:
            chosen[nc.name] = str(ids[0])
    if len(set(chosen.values())) > 1:
        yield classes[0].urn, f"EFA classes select different subnets {chosen}: EFA partitions share one EFA subnet"
    for nc in classes:
        sg_terms = _list(_get(nc.props, "spec", "securityGroupSelectorTerms"))
        ids = [t.get("id") for t in sg_terms if isinstance(t, Mapping) and t.get("id")]
        # The stack's own EFA group, or (efaSecurityGroupId) a second id next to the cluster SG.
        ok = any(_selects(t, g) for t in sg_terms for g in efa_sgs) if efa_sgs else len(ids) >= 2
        if not ok:
            yield nc.urn, f"EFA EC2NodeClass {nc.name} securityGroupSelectorTerms do not include the EFA security group"


def _efa_self_rules(resources: Sequence[Resource], efa_sgs: Sequence[Resource]) -> Iterator[tuple[str, str]]:
    for g in efa_sgs:
        for rule_type, what in ((SG_INGRESS, "ingress"), (SG_EGRESS, "egress")):
            rules = [r for r in resources if r.type == rule_type and _refers_to(r, "securityGroupId", g)]
            if not any(
                str(r.props.get("ipProtocol")) == "-1" and _refers_to(r, "referencedSecurityGroupId", g) for r in rules
            ):
                yield g.urn, f"EFA security group {g.name} lacks an all-traffic self-referencing {what} rule"


def _selects(term: Any, res: Resource) -> bool:
    """A Karpenter selector term (id / tags / name) matches a subnet or security group."""
    if not isinstance(term, Mapping):
        return False
    if term.get("id") is not None:
        return term["id"] == res.props.get("id")
    tags = term.get("tags")
    if isinstance(tags, Mapping) and tags:
        have = _tags(res)
        return all(k in have and (v == "*" or have[k] == v) for k, v in tags.items())
    name = term.get("name")
    return name is not None and name in (res.props.get("name"), _tags(res).get("Name"))


# -- protection of state ----------------------------------------------------------------------------------------------
def environment_of(res: Resource, cfg: Mapping[str, Any]) -> str:
    """The pack config's ``environment`` (per stack), else the resource's ``Environment`` tag."""
    return str(cfg.get("environment") or _tags(res).get("Environment") or "")


def stateful_protected_in_prod(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    if res.type not in STATEFUL_TYPES:
        return
    prod = tuple(cfg.get("prodEnvironments") or DEFAULT_PROD_ENVIRONMENTS)
    env = environment_of(res, cfg)
    if env in prod and not res.protect:
        yield f"{res.type.split(':')[-1]} in environment {env!r} must be protect=True (and retain_on_delete)"


# -- IAM --------------------------------------------------------------------------------------------------------------
ADMIN_POLICY_SUFFIX = ":iam::aws:policy/AdministratorAccess"


def no_iam_admin_wildcard(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    """No statement allows every action on every resource; no AdministratorAccess attachment."""
    docs: list[tuple[str, Any]] = []
    if res.type in IAM_POLICY_DOCS:
        docs.append((IAM_POLICY_DOCS[res.type], res.props.get(IAM_POLICY_DOCS[res.type])))
    elif res.type == IAM_ROLE:
        docs.append(("assumeRolePolicy", None))  # trust policies have no Resource
        for i, inline in enumerate(_list(res.props.get("inlinePolicies"))):
            docs.append((f"inlinePolicies[{i}]", _get(inline, "policy")))
    elif res.type in IAM_ATTACHMENTS:
        if str(res.props.get("policyArn") or "").endswith(ADMIN_POLICY_SUFFIX):
            yield "attaches AdministratorAccess"
        return
    for where, doc in docs:
        for i, st in enumerate(_statements(doc)):
            if st.get("Effect", "Allow") != "Allow":
                continue
            actions = [str(a) for a in _list(st.get("Action"))]
            resources = [str(r) for r in _list(st.get("Resource"))]
            if any(a in ("*", "*:*") for a in actions) and "*" in resources:
                yield f'{where} statement {i} allows Action "*" on Resource "*"'
            elif st.get("NotAction") is not None and "*" in resources:
                yield f'{where} statement {i} allows NotAction on Resource "*" (everything but a few actions)'


def _statements(policy: Any) -> list[Mapping[str, Any]]:
    """Statements of a policy given as a JSON string or as data; unparseable or absent -> none."""
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except ValueError:
            return []
    if not isinstance(policy, Mapping):
        return []
    return [s for s in _list(policy.get("Statement")) if isinstance(s, Mapping)]


# -- secrets ----------------------------------------------------------------------------------------------------------
def credentials_from_secret_sources(resources: Sequence[Resource], cfg: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Credentials in Kubernetes Secrets and Helm values must come from a secret source, never from a literal:
    a resource whose output is a Pulumi secret (RandomPassword, a Secrets Manager version...), or a value
    the engine holds as a Pulumi secret (``pulumi config set --secret``, ``Output.secret``).

    Provenance is judged by the property's dependencies on a secret-source resource; for Helm values also by
    the engine's secret marking of every credential in them (``Resource.secret_paths``: from the recording's
    wire inputs, and in the pack from the analyzer request before the SDK unwraps secrets, see pack.py).
    Kubernetes Secrets are marked secret by their SDK whatever they hold, so for them the marking proves
    nothing: the program's config-sourced Secrets are named in ``DEFAULT_LITERAL_SECRET_ALLOW_LIST``, and a
    stack may add reviewed names in ``literalSecretAllowList``.
    """
    sources = set(cfg.get("secretSourceTypes") or DEFAULT_SECRET_SOURCE_TYPES)
    allowed = [*DEFAULT_LITERAL_SECRET_ALLOW_LIST, *(cfg.get("literalSecretAllowList") or ())]

    def from_source(res: Resource, prop: str, secret_paths: Iterable[str] = ()) -> bool:
        """Depends on a secret source, or (``secret_paths`` given) every credential there is a Pulumi secret."""
        if any(type_of_urn(u) in sources for u in res.deps_of(prop)):
            return True
        paths = list(secret_paths)
        return bool(paths) and all(res.is_secret(f"{prop}.{p}") for p in paths)

    for res in resources:
        if any(fnmatch.fnmatchcase(res.name, pattern) for pattern in allowed):
            continue
        if res.type == K8S_SECRET:
            for prop in ("stringData", "data"):
                values = res.props.get(prop)
                if (
                    isinstance(values, Mapping)
                    and any(v not in (None, "") for v in values.values())
                    and not from_source(res, prop)
                ):
                    yield (
                        res.urn,
                        (
                            f"Secret {res.name} {prop} ({', '.join(sorted(values))}) is a literal: derive it "
                            "from a secret-source resource (e.g. random.RandomPassword)"
                        ),
                    )
        elif res.type == HELM_RELEASE:
            keys = list(sensitive_values(res.props.get("values")))
            if keys and not from_source(res, "values", keys):
                yield (
                    res.urn,
                    (
                        f"Helm release {res.name} values {keys} hold literal credentials: reference an "
                        "existing Secret or pass a RandomPassword output"
                    ),
                )


def sensitive_values(values: Any, path: str = "") -> Iterator[str]:
    """Paths of non-empty string values under credential-looking keys (``auth.rootPassword``)."""
    if isinstance(values, Mapping):
        for key, value in values.items():
            here = f"{path}.{key}" if path else str(key)
            if (
                isinstance(value, str)
                and value
                and SENSITIVE_KEY.search(str(key))
                and not NON_CREDENTIAL_KEY.search(str(key))
            ):
                yield here
            else:
                yield from sensitive_values(value, here)
    elif isinstance(values, Sequence) and not isinstance(values, str):
        for i, value in enumerate(values):
            yield from sensitive_values(value, f"{path}[{i}]")


# -- containers -------------------------------------------------------------------------------------------------------
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def pod_specs(obj: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every pod spec inside a Kubernetes object or custom resource: any mapping with a ``containers``
    list (Deployment/DaemonSet/StatefulSet/Job templates, CronJob, Ray/MPI/Trainer/Slurm CRs alike)."""
    if isinstance(obj, Mapping):
        if isinstance(obj.get("containers"), Sequence) and not isinstance(obj.get("containers"), str):
            yield path or ".", obj
        for key, value in obj.items():
            if key not in CONTAINER_LISTS:
                yield from pod_specs(value, f"{path}.{key}")
    elif isinstance(obj, Sequence) and not isinstance(obj, str):
        for i, value in enumerate(obj):
            yield from pod_specs(value, f"{path}[{i}]")


def containers_unprivileged(res: Resource, cfg: Mapping[str, Any]) -> Iterator[str]:
    if not res.type.startswith("kubernetes:") or res.type.startswith(("kubernetes:helm.sh/", "kubernetes:yaml/")):
        return
    ident = f"{_get(res.props, 'metadata', 'namespace') or 'default'}/{_get(res.props, 'metadata', 'name') or res.name}"
    allow = cfg.get("privilegedAllowList")
    entries: Iterable[Any] = DEFAULT_PRIVILEGED_ALLOW_LIST if allow is None else allow
    if any(fnmatch.fnmatchcase(ident, str(_get(e, "match") or e)) for e in entries):
        return
    for where, spec in pod_specs(res.props.get("spec"), ".spec"):
        for key in CONTAINER_LISTS:
            for c in _list(spec.get(key)):
                sc = _get(c, "securityContext") or {}
                if sc.get("privileged") is True:
                    yield f"{ident}: {where}.{key}[{_get(c, 'name')}] is privileged"
                if sc.get("allowPrivilegeEscalation") is True:
                    yield f"{ident}: {where}.{key}[{_get(c, 'name')}] sets allowPrivilegeEscalation: true"


# -- the catalogue the pack and the tests share -----------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    mandatory: bool
    resource: ResourceRule | None = None
    stack: StackRule | None = None


RULES: tuple[Rule, ...] = (
    Rule(
        "ebs-encrypted",
        "EBS volumes, launch templates, EC2NodeClass block devices and EBS StorageClasses are encrypted",
        True,
        resource=ebs_encrypted,
    ),
    Rule(
        "node-group-disk-encryption",
        "EKS node groups without their own launch template have encrypted disks "
        "only through account-level EBS encryption by default",
        False,
        stack=node_groups_disk_encrypted,
    ),
    Rule("efs-encrypted", "EFS file systems are encrypted at rest", True, resource=efs_encrypted),
    Rule(
        "fsx-encrypted",
        "Persistent FSx for Lustre uses a customer-managed KMS key; no SCRATCH_1",
        True,
        resource=fsx_encrypted,
    ),
    Rule(
        "eks-secrets-encrypted",
        "EKS envelope-encrypts Kubernetes Secrets with KMS",
        True,
        resource=eks_secrets_encrypted,
    ),
    Rule("s3-encrypted", "Every S3 bucket has default server-side encryption", True, stack=s3_encrypted),
    Rule("s3-public-access-blocked", "Every S3 bucket blocks all public access", True, stack=s3_public_access_blocked),
    Rule("s3-tls-only", "Every S3 bucket policy denies non-TLS requests", True, stack=s3_tls_only),
    Rule(
        "imdsv2-required",
        "IMDSv2 required on every node class, node group, template and instance",
        True,
        resource=imdsv2_required,
    ),
    Rule(
        "eks-endpoint-restricted",
        "No public EKS endpoint without a CIDR allow-list",
        True,
        resource=eks_endpoint_restricted,
    ),
    Rule(
        "eks-control-plane-logs",
        "EKS control-plane logs include api, audit and authenticator",
        False,
        resource=eks_control_plane_logs,
    ),
    Rule(
        "training-nodepool-disruption",
        "Training NodePools consolidate only empty nodes and never expire them",
        True,
        resource=training_pools_never_disrupt_running,
    ),
    Rule(
        "efa-single-subnet",
        "EFA node classes select exactly the one EFA subnet and the EFA security group",
        True,
        stack=efa_single_subnet_and_sg,
    ),
    Rule(
        "stateful-protected-in-prod", "FSx, EFS and S3 are protected in prod", True, resource=stateful_protected_in_prod
    ),
    Rule(
        "no-iam-admin-wildcard",
        "No IAM statement allows * on *; no AdministratorAccess attachment",
        True,
        resource=no_iam_admin_wildcard,
    ),
    Rule(
        "credentials-from-secret-sources",
        "Credentials in Secrets and Helm values come from Pulumi secret sources, never literals",
        True,
        stack=credentials_from_secret_sources,
    ),
    Rule(
        "containers-unprivileged",
        "No privileged container or privilege escalation outside allow-listed device plugins",
        True,
        resource=containers_unprivileged,
    ),
)


def evaluate(
    resources: Sequence[Resource], config: Mapping[str, Mapping[str, Any]] | None = None, rules: Sequence[Rule] = RULES
) -> list[tuple[str, str, str]]:
    """Run every rule over ``resources``: ``(rule name, urn, message)`` for each violation."""
    out: list[tuple[str, str, str]] = []
    for rule in rules:
        cfg = (config or {}).get(rule.name, {})
        if rule.resource is not None:
            for res in resources:
                out += [(rule.name, res.urn, msg) for msg in rule.resource(res, cfg)]
        if rule.stack is not None:
            out += [(rule.name, urn, msg) for urn, msg in rule.stack(resources, cfg)]
    return out
