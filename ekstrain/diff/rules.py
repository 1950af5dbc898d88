"""What each resource type the program registers does on a change: the one table ``ekstrain diff`` reads.

Paths are the program's input names (camelCase, as the engine sees them), dotted, ``[*]`` for any list
item; a changed input at or under a path in ``REPLACE_ON_CHANGE[type]`` means the provider plans a
replacement. Sources (read for the versions the program pins):

- AWS (pulumi-aws 7.51 bridges hashicorp/terraform-provider-aws v6): the ``ForceNew: true`` /
  ``RequiresReplace()`` attributes of each resource's schema, ``internal/service/<svc>/<file>.go``
  as named per row. Fields the program never sets are left out.
- random (pulumi-random 4.21 bridges hashicorp/terraform-provider-random v3): ``internal/provider/
  resource_password.go``: every argument is ``RequiresReplace``.
- eks (pulumi-eks 4.4, a component): what replaces its children, i.e. ``aws_eks_cluster``
  (``internal/service/eks/cluster.go``) and ``aws_eks_node_group`` (``node_group.go``) fields the
  component args map to.
- Kubernetes (pulumi-kubernetes 4.34): ``provider/pkg/provider/forcenew.go``: ``.metadata.name`` and
  ``.metadata.namespace`` for every kind; StorageClass ``.parameters``/``.provisioner``; PVC ``.spec``;
  Service ``.spec.clusterIP``/``.spec.type``; Secret ``.type``; ConfigMap ``.data``/``.binaryData``
  (ConfigMaps are replaced, not patched, unless the provider's ``enableConfigMapMutable`` is set).
  The provider deletes a named object before creating its replacement when the name stays the same
  (``provider.go`` Diff, ``deleteBeforeReplace``), so named Kubernetes objects never collide.
  Helm releases (``helm_release.go``): a new ``name`` or ``namespace`` is a new release.
- Kubernetes API validation (kubernetes/kubernetes v1.35 ``pkg/apis/core/validation/validation.go``
  ``ValidatePersistentVolumeUpdate``: the volume source is immutable; ``pkg/apis/apps/validation``:
  StatefulSet/DaemonSet selectors and StatefulSet ``volumeClaimTemplates``/``serviceName``/
  ``podManagementPolicy`` are immutable): updates there are refused by the API server.
- CRD rules (the pinned CRDs in ``../shared/upstream/crds``): ``x-kubernetes-validations`` whose rule
  compares ``self`` with ``oldSelf``; the API server refuses the update (``REFUSED_ON_CHANGE``).
- Karpenter v1.14.1 drift (``KARPENTER_DRIFT``): aws/karpenter-provider-aws ``pkg/apis/v1/
  ec2nodeclass.go`` (every spec field is hashed except those tagged ``hash:"ignore"``; the ignored
  AMI/subnet/security-group/capacity-reservation selectors drift dynamically when what they resolve
  to changes, ``pkg/cloudprovider/drift.go``); kubernetes-sigs/karpenter ``pkg/apis/v1/
  nodeclaim.go``/``nodepool.go`` (the NodePool hash covers ``spec.template`` except ``requirements``,
  ``expireAfter`` and ``terminationGracePeriod``; nodes no longer matching ``requirements`` drift).
"""

from __future__ import annotations

from ekstrain.workloads import registry as workload_kinds

REPLACE_ON_CHANGE: dict[str, tuple[str, ...]] = {
    # internal/service/ec2/vpc_.go
    "aws:ec2/vpc:Vpc": ("cidrBlock", "ipv4IpamPoolId", "ipv4NetmaskLength"),
    # internal/service/ec2/vpc_subnet.go
    "aws:ec2/subnet:Subnet": ("vpcId", "cidrBlock", "availabilityZone", "availabilityZoneId", "outpostArn"),
    # internal/service/ec2/vpc_internet_gateway.go (vpc_id is attach/detach, in place)
    "aws:ec2/internetGateway:InternetGateway": (),
    # internal/service/ec2/vpc_default_security_group.go
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": ("vpcId",),
    # internal/service/ec2/vpc_flow_log.go
    "aws:ec2/flowLog:FlowLog": (
        "vpcId",
        "trafficType",
        "logDestination",
        "logDestinationType",
        "iamRoleArn",
        "logFormat",
        "maxAggregationInterval",
        "destinationOptions",
    ),
    # internal/service/ec2/vpc_route_table.go
    "aws:ec2/routeTable:RouteTable": ("vpcId",),
    # internal/service/ec2/vpc_route.go (targets are ReplaceRoute, in place)
    "aws:ec2/route:Route": ("routeTableId", "destinationCidrBlock", "destinationIpv6CidrBlock"),
    # internal/service/ec2/vpc_route_table_association.go (route_table_id: ReplaceRouteTableAssociation)
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ("subnetId", "gatewayId"),
    # internal/service/ec2/ec2_eip.go
    "aws:ec2/eip:Eip": ("domain", "address", "publicIpv4Pool", "networkBorderGroup"),
    # internal/service/ec2/vpc_nat_gateway.go
    "aws:ec2/natGateway:NatGateway": ("allocationId", "subnetId", "connectivityType", "privateIp"),
    # internal/service/ec2/vpc_endpoint.go (route_table_ids, policy: in place)
    "aws:ec2/vpcEndpoint:VpcEndpoint": ("vpcId", "serviceName", "vpcEndpointType"),
    # internal/service/ec2/vpc_security_group.go
    "aws:ec2/securityGroup:SecurityGroup": ("name", "namePrefix", "description", "vpcId"),
    # internal/service/ec2/vpc_security_group_ingress_rule.go (framework; the rest is ModifySecurityGroupRules)
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ("securityGroupId",),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ("securityGroupId",),
    # internal/service/ec2/ec2_placement_group.go
    "aws:ec2/placementGroup:PlacementGroup": ("name", "strategy", "partitionCount", "spreadLevel"),
    # internal/service/ec2/ec2_launch_template.go (everything else is a new template version)
    "aws:ec2/launchTemplate:LaunchTemplate": ("name", "namePrefix"),
    # internal/service/logs/group.go
    "aws:cloudwatch/logGroup:LogGroup": ("name", "namePrefix", "logGroupClass"),
    # internal/service/events/rule.go, target.go
    "aws:cloudwatch/eventRule:EventRule": ("name", "namePrefix", "eventBusName"),
    "aws:cloudwatch/eventTarget:EventTarget": ("rule", "targetId", "eventBusName"),
    # internal/service/iam/role.go, role_policy.go, policy.go, role_policy_attachment.go
    "aws:iam/role:Role": ("name", "namePrefix", "path"),
    "aws:iam/rolePolicy:RolePolicy": ("name", "namePrefix", "role"),
    "aws:iam/policy:Policy": ("name", "namePrefix", "path", "description"),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("role", "policyArn"),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": ("url",),
    # internal/service/sns/topic.go, topic_policy.go, topic_subscription.go
    "aws:sns/topic:Topic": ("name", "namePrefix", "fifoTopic"),
    "aws:sns/topicPolicy:TopicPolicy": ("arn",),
    "aws:sns/topicSubscription:TopicSubscription": ("topicArn", "protocol", "endpoint"),
    # internal/service/budgets/budget.go
    "aws:budgets/budget:Budget": ("accountId", "name", "namePrefix"),
    # internal/service/ce/cost_allocation_tag.go (no ForceNew: create and update both set the status)
    "aws:costexplorer/costAllocationTag:CostAllocationTag": (),
    # internal/service/kms/key.go, alias.go, key_policy.go
    "aws:kms/key:Key": ("customerMasterKeySpec", "keyUsage", "multiRegion", "customKeyStoreId", "xksKeyId"),
    "aws:kms/alias:Alias": ("name", "namePrefix"),
    "aws:kms/keyPolicy:KeyPolicy": ("keyId",),
    # internal/service/s3/bucket.go and the bucket_* configuration resources (bucket, expected_bucket_owner)
    "aws:s3/bucket:Bucket": ("bucket", "bucketPrefix", "objectLockEnabled"),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": ("bucket", "expectedBucketOwner"),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": ("bucket",),
    "aws:s3/bucketPolicy:BucketPolicy": ("bucket",),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": ("bucket",),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": (
        "bucket",
        "expectedBucketOwner",
    ),
    "aws:s3/bucketVersioning:BucketVersioning": ("bucket", "expectedBucketOwner"),
    # internal/service/sqs/queue.go, queue_policy.go
    "aws:sqs/queue:Queue": ("name", "namePrefix", "fifoQueue"),
    "aws:sqs/queuePolicy:QueuePolicy": ("queueUrl",),
    # internal/service/efs/file_system.go, mount_target.go, access_point.go
    "aws:efs/fileSystem:FileSystem": (
        "creationToken",
        "encrypted",
        "kmsKeyId",
        "performanceMode",
        "availabilityZoneName",
    ),
    "aws:efs/mountTarget:MountTarget": ("fileSystemId", "subnetId", "ipAddress"),
    "aws:efs/accessPoint:AccessPoint": ("fileSystemId", "posixUser", "rootDirectory"),
    # internal/service/fsx/lustre_file_system.go (storage_capacity only grows in place; a decrease replaces)
    "aws:fsx/lustreFileSystem:LustreFileSystem": (
        "deploymentType",
        "subnetIds",
        "securityGroupIds",
        "kmsKeyId",
        "storageType",
        "fileSystemTypeVersion",
        "driveCacheType",
        "efaEnabled",
        "importPath",
        "exportPath",
    ),
    # internal/service/fsx/data_repository_association.go
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": (
        "fileSystemId",
        "fileSystemPath",
        "dataRepositoryPath",
        "batchImportMetaDataOnCreate",
    ),
    # internal/service/eks/access_entry.go, addon.go, pod_identity_association.go, cluster.go
    "aws:eks/accessEntry:AccessEntry": ("clusterName", "principalArn", "type"),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": ("clusterName", "principalArn", "policyArn"),
    "aws:eks/addon:Addon": ("clusterName", "addonName"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("clusterName", "namespace", "serviceAccount"),
    # internal/service/eks/node_group.go (the node group pulumi-eks's ManagedNodeGroup registers; version,
    # releaseVersion, scalingConfig, labels, taints and the launch template's version update in place)
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    ),
    "aws:eks/cluster:Cluster": (
        "name",
        "roleArn",
        "encryptionConfig",
        "kubernetesNetworkConfig",
        "bootstrapSelfManagedAddons",
    ),
    # internal/service/amp/workspace.go
    "aws:amp/workspace:Workspace": ("kmsKeyArn",),
    # terraform-provider-random internal/provider/resource_password.go: all arguments RequiresReplace
    "random:index/randomPassword:RandomPassword": (
        "length",
        "special",
        "upper",
        "lower",
        "numeric",
        "overrideSpecial",
        "minSpecial",
        "minUpper",
        "minLower",
        "minNumeric",
        "keepers",
    ),
    # pulumi-eks components: the aws_eks_cluster / aws_eks_node_group fields their args map to
    "eks:index:Cluster": (
        "name",
        "encryptionConfigKeyArn",
        "kubernetesServiceIpAddressRange",
        "ipFamily",
    ),
    "eks:index:ManagedNodeGroup": (
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "subnetIds",
        "instanceTypes",
        "amiType",
        "capacityType",
        "diskSize",
        "nodeRole",
        "nodeRoleArn",
        "remoteAccess",
    ),
    "pulumi:providers:kubernetes": (),
    # pulumi-kubernetes forcenew.go (metadata.name/namespace are added for every kind below)
    "kubernetes:helm.sh/v3:Release": ("name", "namespace"),
    "kubernetes:yaml/v2:ConfigGroup": (),  # a component: its inline objects are the provider's children
    "kubernetes:core/v1:ServiceAccount": (),
    # the workload kinds the platform applies itself (a Deployment's selector: forcenew.go `deployment`)
    **workload_kinds.replace_on_change(),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": (),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),  # forcenew.go `roleBinding`
    "kubernetes:rbac.authorization.k8s.io/v1:Role": (),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),  # forcenew.go `roleBinding`
    "kubernetes:core/v1:Namespace": (),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:Secret": ("type",),
    "kubernetes:core/v1:Service": ("spec.clusterIP", "spec.type"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("spec",),
    "kubernetes:core/v1:PersistentVolume": (),
    "kubernetes:core/v1:LimitRange": (),
    "kubernetes:storage.k8s.io/v1:StorageClass": ("parameters", "provisioner"),
    "kubernetes:apps/v1:DaemonSet": (),
    "kubernetes:apps/v1:StatefulSet": (),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": (),
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": (),
    "kubernetes:karpenter.sh/v1:NodePool": (),
    "kubernetes:scheduling.volcano.sh/v1beta1:Queue": (),
    "kubernetes:scheduling.volcano.sh/v1beta1:PodGroup": (),
    "kubernetes:batch/v1:CronJob": (),  # forcenew.go lists Job's template, not CronJob's: updated in place
    # forcenew.go lists no field of the admission kinds: a changed policy or binding is updated in place
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": (),
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": (),
    "kubernetes:keda.sh/v1alpha1:ScaledObject": (),
    "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime": (),
    "kubernetes:argoproj.io/v1alpha1:AppProject": (),
}
REPLACE_ON_DECREASE: dict[str, tuple[str, ...]] = {
    # internal/service/fsx/lustre_file_system.go CustomizeDiff: ForceNewIfChange("storage_capacity", new < old)
    "aws:fsx/lustreFileSystem:LustreFileSystem": ("storageCapacity",),
}
"""Numeric inputs that change in place upwards and replace downwards."""

KUBERNETES_REPLACE_ON_CHANGE = ("metadata.name", "metadata.namespace")
"""pulumi-kubernetes forcenew.go ``metadataForceNewProperties``: every Kubernetes object (not Helm releases)."""

REFUSED_ON_CHANGE: dict[str, tuple[str, ...]] = {
    # kubernetes v1.35 pkg/apis/core/validation/validation.go ValidatePersistentVolumeUpdate
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.nfs", "spec.storageClassName", "spec.volumeMode"),
    # pkg/apis/apps/validation/validation.go ValidateStatefulSetUpdate / ValidateDaemonSetUpdate
    "kubernetes:apps/v1:StatefulSet": (
        "spec.selector",
        "spec.serviceName",
        "spec.volumeClaimTemplates",
        "spec.podManagementPolicy",
    ),
    "kubernetes:apps/v1:DaemonSet": ("spec.selector",),
    # ../shared/upstream/crds/karpenter.sh/nodepool.yaml (v1.14.1): self.group/kind == oldSelf.group/kind
    "kubernetes:karpenter.sh/v1:NodePool": (
        "spec.template.spec.nodeClassRef.group",
        "spec.template.spec.nodeClassRef.kind",
    ),
    # ../shared/upstream/crds/trainer.kubeflow.org/clustertrainingruntime.yaml (v2.3.0): self == oldSelf
    "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime": (
        "spec.template.spec.failurePolicy",
        "spec.template.spec.network",
        "spec.template.spec.replicatedJobs[*].dependsOn",
        "spec.template.spec.startupPolicy",
        "spec.template.spec.successPolicy",
        "spec.template.spec.volumeClaimPolicies",
    ),
}
"""Inputs the API server refuses to change (the provider updates in place and the update fails)."""

KARPENTER_DRIFT: dict[str, tuple[str, ...]] = {
    # ec2nodeclass.go: hashed fields + the dynamically drifted selectors; ipPrefixCount is hash:"ignore" and not drift
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": (
        "spec.amiSelectorTerms",
        "spec.amiFamily",
        "spec.subnetSelectorTerms",
        "spec.securityGroupSelectorTerms",
        "spec.capacityReservationSelectorTerms",
        "spec.associatePublicIPAddress",
        "spec.userData",
        "spec.role",
        "spec.instanceProfile",
        "spec.tags",
        "spec.kubelet",
        "spec.blockDeviceMappings",
        "spec.instanceStorePolicy",
        "spec.detailedMonitoring",
        "spec.metadataOptions",
        "spec.enclaveOptions",
        "spec.context",
    ),
    # nodepool.go / nodeclaim.go: spec.template (labels, annotations, taints, startupTaints, nodeClassRef) is
    # hashed; requirements drift the nodes that no longer satisfy them.
    "kubernetes:karpenter.sh/v1:NodePool": (
        "spec.template.metadata",
        "spec.template.spec.taints",
        "spec.template.spec.startupTaints",
        "spec.template.spec.nodeClassRef",
        "spec.template.spec.requirements",
    ),
}

SET_INPUTS: dict[str, tuple[str, ...]] = {
    # Terraform ``schema.TypeSet`` attributes (same files as above): their order is no change.
    "aws:ec2/vpcEndpoint:VpcEndpoint": ("routeTableIds", "subnetIds", "securityGroupIds"),
    "aws:efs/mountTarget:MountTarget": ("securityGroups",),
    "aws:fsx/lustreFileSystem:LustreFileSystem": ("securityGroupIds",),
    "aws:eks/accessEntry:AccessEntry": ("kubernetesGroups",),
    "eks:index:ManagedNodeGroup": ("subnetIds", "instanceTypes"),
    # pulumi-eks passes both lists to aws_eks_cluster vpc_config.subnet_ids (a set)
    "eks:index:Cluster": ("privateSubnetIds", "publicSubnetIds", "publicAccessCidrs"),
    # internal/service/eks/cluster.go vpc_config subnet_ids/security_group_ids/public_access_cidrs and
    # node_group.go subnet_ids/instance_types: TypeSet (the children pulumi-eks registers)
    "aws:eks/cluster:Cluster": ("vpcConfig.subnetIds", "vpcConfig.securityGroupIds", "vpcConfig.publicAccessCidrs"),
    "aws:eks/nodeGroup:NodeGroup": ("subnetIds", "instanceTypes"),
}

STATEFUL_TYPES: dict[str, str] = {
    "aws:fsx/lustreFileSystem:LustreFileSystem": "FSx for Lustre file system (training data and checkpoints)",
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": "FSx data repository association (S3 link)",
    "aws:efs/fileSystem:FileSystem": "EFS file system (model weights, notebook homes)",
    "aws:efs/accessPoint:AccessPoint": "EFS access point (its root directory's files)",
    "aws:s3/bucket:Bucket": "S3 bucket (datasets, checkpoints)",
    "aws:kms/key:Key": "KMS key (what it encrypted is unreadable once the key is deleted)",
    "eks:index:Cluster": "EKS cluster (every workload and Kubernetes object)",
    "aws:eks/cluster:Cluster": "EKS cluster (every workload and Kubernetes object)",
    # Deleting a namespace deletes every object in it, PVCs included (Slurm's accounting database volume,
    # notebook homes): their volumes go with them under a Delete reclaim policy.
    "kubernetes:core/v1:Namespace": "namespace (every object in it, PVCs and their volumes included)",
}

TRAINING_NODE_TYPES = ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "kubernetes:karpenter.sh/v1:NodePool")

UNIQUE_IDENTITY: dict[str, tuple[str, ...]] = {
    # What AWS keeps unique: a replacement created before the old one is deleted fails on it
    # (InvalidGroup.Duplicate, ResourceAlreadyExistsException, AlreadyExistsException, MountTargetConflict, ...).
    "aws:ec2/securityGroup:SecurityGroup": ("vpcId", "name"),
    "aws:ec2/placementGroup:PlacementGroup": ("name",),
    "aws:ec2/launchTemplate:LaunchTemplate": ("name",),
    "aws:cloudwatch/logGroup:LogGroup": ("name",),
    "aws:cloudwatch/eventRule:EventRule": ("name",),
    "aws:iam/role:Role": ("name",),
    "aws:iam/policy:Policy": ("name",),
    "aws:kms/alias:Alias": ("name",),
    "aws:sqs/queue:Queue": ("name",),
    "aws:sns/topic:Topic": ("name",),
    "aws:budgets/budget:Budget": ("name",),
    "aws:s3/bucket:Bucket": ("bucket",),
    "aws:efs/mountTarget:MountTarget": ("fileSystemId", "subnetId"),
    "aws:eks/accessEntry:AccessEntry": ("clusterName", "principalArn"),
    "aws:eks/addon:Addon": ("clusterName", "addonName"),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ("clusterName", "namespace", "serviceAccount"),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": ("fileSystemId", "fileSystemPath"),
    "eks:index:Cluster": ("name",),
    "eks:index:ManagedNodeGroup": ("clusterName", "nodeGroupName"),
    # the children pulumi-eks registers (infra/eks_children.py)
    "aws:eks/nodeGroup:NodeGroup": ("clusterName", "nodeGroupName"),
    "aws:eks/cluster:Cluster": ("name",),
    # A chart's cluster-scoped objects (CRDs, ClusterRoles, webhooks) keep their names whatever the release is
    # called: Helm refuses to install them while the old release owns them ("invalid ownership metadata").
    "kubernetes:helm.sh/v3:Release": (),
}

CRDS_DIR, TEMPLATED, TEMPLATED_KEPT = "crds/", "templates", "templates, kept"
CHART_CRDS: dict[str, tuple[str, tuple[str, ...]]] = {
    # chart: (where its CRDs are, their API groups), from the pinned archives in ../shared/upstream/chart-src
    # (tests/diff/test_diff.py checks where). CRDS_DIR: installed once, never upgraded nor deleted by Helm.
    # TEMPLATED: upgraded with the release and deleted with it, and with them every custom resource of their
    # kinds (components/helm.py protects these releases). TEMPLATED_KEPT: annotated helm.sh/resource-policy: keep
    # by the chart's defaults (cert-manager crds.keep, argo-cd crds.keep), so an uninstall leaves them.
    "kube-prometheus-stack": (CRDS_DIR, ("monitoring.coreos.com",)),
    "kuberay-operator": (CRDS_DIR, ("ray.io",)),
    "karpenter": (CRDS_DIR, ("karpenter.sh", "karpenter.k8s.aws")),
    "nvidia-device-plugin": (CRDS_DIR, ("nfd.k8s-sigs.io",)),
    "kubeflow-trainer": (TEMPLATED, ("trainer.kubeflow.org",)),  # + jobset, lws subcharts in crds/
    "karpenter-crd": (TEMPLATED, ("karpenter.sh", "karpenter.k8s.aws")),
    "volcano": (TEMPLATED, ("batch.volcano.sh", "scheduling.volcano.sh", "bus.volcano.sh", "topology.volcano.sh")),
    "slurm-operator-crds": (TEMPLATED, ("slinky.slurm.net",)),
    "cert-manager": (TEMPLATED_KEPT, ("cert-manager.io", "acme.cert-manager.io")),
    "argo-cd": (TEMPLATED_KEPT, ("argoproj.io",)),
}


def deletes_crds_with_release(chart: str) -> bool:
    """Uninstalling ``chart`` deletes its CRDs and so every custom resource of them."""
    return CHART_CRDS.get(chart, ("", ()))[0] == TEMPLATED


def replace_paths(type_: str, custom: bool = True) -> tuple[str, ...]:
    """Replace-on-change inputs of ``type_``; our own components (not custom) have none. KeyError for a provider
    type nobody has looked up (tests/diff/test_diff.py keeps the table whole)."""
    if not custom and type_ not in REPLACE_ON_CHANGE:
        return ()
    own = REPLACE_ON_CHANGE[type_]
    if type_.startswith("kubernetes:") and type_ != "kubernetes:helm.sh/v3:Release" and "/yaml/" not in type_:
        return KUBERNETES_REPLACE_ON_CHANGE + own
    return own


def chart_name(chart: str) -> str:
    """``oci://public.ecr.aws/karpenter/karpenter`` or ``karpenter`` -> ``karpenter``."""
    return chart.rstrip("/").rsplit("/", 1)[-1]


# A Kubernetes minor upgrade (ekstrain/diff/upgrade.py lists it in the documented order: EKS user guide
# update-cluster.html, control plane, then add-ons, then nodes). terraform-provider-aws internal/service/eks/cluster.go:
# ``version`` is UpdateClusterVersion in place (one minor at a time); addon.go ``addon_version`` is UpdateAddon in
# place; node_group.go ``version``/``release_version`` are UpdateNodegroupVersion (a rolling replacement of the
# group's nodes). Karpenter nodes: an EC2NodeClass ``alias: al2023@<version>`` resolves the AMI of the control
# plane's Kubernetes version (aws/karpenter-provider-aws pkg/providers/amifamily/al2023.go, the SSM parameter
# /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/...), so once the control plane runs the new version every
# node's AMI differs from what the class resolves and it drifts (pkg/cloudprovider/drift.go, AMIDrift) even though no
# NodePool or EC2NodeClass input changed; the NodePool's Drifted budgets decide when it rolls.
KUBERNETES_VERSION_INPUT: dict[str, str] = {"eks:index:Cluster": "version", "aws:eks/cluster:Cluster": "version"}
ADDON_VERSION_INPUT: dict[str, str] = {"aws:eks/addon:Addon": "addonVersion"}
NODE_GROUP_VERSION_INPUTS: dict[str, tuple[str, ...]] = {"aws:eks/nodeGroup:NodeGroup": ("version", "releaseVersion")}
AMI_ALIAS_FOLLOWS_CLUSTER_VERSION = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
