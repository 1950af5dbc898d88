"""CSI drivers for FSx for Lustre and EFS: Helm releases plus EKS Pod Identity roles.

Helm charts rather than EKS add-ons: the chart's upstream values.yaml is a schema the offline tests
validate every value key against, and node placement (system nodes for controllers, every node for
the DaemonSets) is set explicitly. Credentials come from EKS Pod Identity associations on the
chart's service accounts (the pod-identity agent add-on is installed by the cluster component).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ekstrain.components import iam
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.facts.names import CRITICAL_ADDONS_TOLERATION, SYSTEM_NODE_SELECTOR
from ekstrain.facts.versions import Chart
from ekstrain.layout.controller_resources import SMALL, sized

NAMESPACE = "kube-system"
FSX_CONTROLLER_SA = "fsx-csi-controller-sa"
FSX_NODE_SA = "fsx-csi-node-sa"
EFS_CONTROLLER_SA = "efs-csi-controller-sa"
EFS_NODE_SA = "efs-csi-node-sa"
CONTROLLER_TOLERATIONS = [CRITICAL_ADDONS_TOLERATION]
# Node plugins must run wherever a pod may mount a volume: accelerator nodes carry
# nvidia.com/gpu=true:NoSchedule or aws.amazon.com/neuron=true:NoSchedule, and other components
# may add taints of their own, so the DaemonSets tolerate every taint.
NODE_TOLERATIONS = [{"operator": "Exists"}]


def fsx_values(region: str) -> dict[str, Any]:
    return {
        "controller": {
            "nodeSelector": SYSTEM_NODE_SELECTOR,
            "tolerations": CONTROLLER_TOLERATIONS,
            # Explicit region: IMDS is not reachable from pods with IMDSv2 hop limit 1.
            "region": region,
            "serviceAccount": {"create": True, "name": FSX_CONTROLLER_SA},
        },
        "node": {
            "tolerateAllTaints": False,
            "tolerations": NODE_TOLERATIONS,
            "serviceAccount": {"create": True, "name": FSX_NODE_SA},
        },
    }


def efs_values() -> dict[str, Any]:
    return {
        "controller": {
            "nodeSelector": SYSTEM_NODE_SELECTOR,
            "tolerations": CONTROLLER_TOLERATIONS,
            "serviceAccount": {"create": True, "name": EFS_CONTROLLER_SA},
            # Keep the data of dynamic PVCs when their access point is deleted.
            "deleteAccessPointRootDir": False,
            "resources": sized("20m", "64Mi", "256Mi"),
        },
        "node": {
            "tolerations": NODE_TOLERATIONS,
            "serviceAccount": {"create": True, "name": EFS_NODE_SA},
            "resources": sized("20m", "64Mi", "256Mi"),
        },
        # Shared by the controller's and the nodes' sidecars (aws-efs-csi-driver 4.4.1 templates).
        "sidecars": {
            "livenessProbe": {"resources": sized("10m", "16Mi", "64Mi")},
            "nodeDriverRegistrar": {"resources": sized("10m", "16Mi", "64Mi")},
            "csiProvisioner": {"resources": SMALL},
        },
    }


PROTECTED_FSX_ACTIONS = (
    "fsx:DeleteFileSystem",
    "fsx:UpdateFileSystem",
    "fsx:TagResource",
    "fsx:UntagResource",
)
"""What the FSx controller may never do to the statically provisioned (protected) file system."""


EXISTING_FILE_SYSTEM_TAGS = (
    "Name",
    "Project",
    "ManagedBy",
    "Environment",
    "ekstrain.io/stack",
    "aws:cloudformation:stack-name",
)
"""Tags the FSx CSI driver's CreateFileSystem never sends (it sends the StorageClass's extraTags and CSIVolumeName):
a file system carrying one already existed, so the driver may not tag it (and then delete it as scratch)."""


def fsx_controller_policy(
    file_system_arn: pulumi.Input[str], scratch_tag: tuple[str, str] | None = None
) -> list[dict[str, Any]]:
    """Least privilege for a statically provisioned file system: describe it, nothing else (its size is the
    program's: ``storage.fsx.storageCapacityGiB``; a CSI resize would drift from it). With ``scratch_tag``
    (key, value) also create file systems carrying that tag, resize and delete only those (dynamic per-PVC
    scratch), plus the FSx service-linked role EC2 needs the first time.

    Tagging is needed only at creation (CreateFileSystem with tags is authorized on fsx:TagResource too: FSx for
    Lustre user guide, "Grant permission to tag resources during creation"), so fsx:TagResource requires the
    scratch tag in the request. FSx has no ``fsx:CreateAction`` condition key to tell a create from a later
    TagResource call (Service Authorization Reference, Amazon FSx condition keys), so the last statement denies
    tagging, untagging, updating and deleting the protected file system outright: the role cannot put the
    scratch tag on it and then delete it (infra/verify/protected.py checks every role for that)."""
    statements: list[dict[str, Any]] = [
        {"Sid": "Describe", "Effect": "Allow", "Action": ["fsx:DescribeFileSystems"], "Resource": "*"},
    ]
    if scratch_tag is not None:
        key, value = scratch_tag
        statements += [
            {
                "Sid": "CreateTaggedScratch",
                "Effect": "Allow",
                "Action": ["fsx:CreateFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:RequestTag/{key}": value}},
            },
            {
                "Sid": "TagScratchOnCreate",
                "Effect": "Allow",
                "Action": ["fsx:TagResource"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:RequestTag/{key}": value}},
            },
            {
                "Sid": "ResizeAndDeleteOnlyTaggedScratch",
                "Effect": "Allow",
                "Action": ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"],
                "Resource": "*",
                "Condition": {"StringEquals": {f"aws:ResourceTag/{key}": value}},
            },
            # No FSx condition key tells the tagging CreateFileSystem authorizes from a later TagResource call on an
            # existing file system (no fsx:CreateAction; Service Authorization Reference, "Actions, resources, and
            # condition keys for Amazon FSx": TagResource takes aws:RequestTag, aws:ResourceTag, aws:TagKeys). A
            # file system being created has no tags yet, and the driver's request carries only the scratch tag and
            # CSIVolumeName; so TagResource is denied on every file system that already carries a tag the driver
            # never sets: a named one (the console's "File system name" is the Name tag), ours, CloudFormation's.
            # Residual risk: an existing file system with none of these tags can still be given
            # the scratch tag and then be deleted by this role.
            *(
                {
                    "Sid": f"NeverTagAnExistingFileSystem{i}",
                    "Effect": "Deny",
                    "Action": ["fsx:TagResource", "fsx:UntagResource"],
                    "Resource": "*",
                    "Condition": {"Null": {f"aws:ResourceTag/{existing}": "false"}},
                }
                for i, existing in enumerate(EXISTING_FILE_SYSTEM_TAGS)
            ),
            {
                "Sid": "DescribeNetwork",
                "Effect": "Allow",
                "Action": ["ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeVpcs"],
                "Resource": "*",
            },
            {
                "Sid": "FsxServiceLinkedRole",
                "Effect": "Allow",
                "Action": ["iam:CreateServiceLinkedRole"],
                "Resource": "*",
                "Condition": {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}},
            },
        ]
    statements.append(
        {
            "Sid": "NeverTheProtectedFileSystem",
            "Effect": "Deny",
            "Action": list(PROTECTED_FSX_ACTIONS),
            "Resource": file_system_arn,
        }
    )
    return statements


@dataclass(frozen=True, kw_only=True)
class CsiArgs:
    cluster_name: str
    """Required. The EKS cluster's name (Pod Identity associations, IAM conditions)."""
    region: str
    """Required. AWS region code (ARN partition, the controllers' region)."""
    fsx_chart: Chart | None = None
    """@default none: no FSx driver. Set with ``cfg.versions.chart("aws-fsx-csi-driver")``."""
    fsx_file_system_arn: pulumi.Input[str] | None = None
    """@default none; required with fsx_chart. ARN of the statically provisioned file system, which the FSx
    controller may describe but never tag, update or delete."""
    fsx_scratch_tag: tuple[str, str] | None = None
    """@default none; (tag key, value) of dynamically provisioned scratch file systems the controller
    may create and delete."""
    efs_chart: Chart | None = None
    """@default none: no EFS driver."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the drivers' IAM roles."""


class CsiDrivers(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster>])`` (the provider is
    used for the Helm releases)."""

    releases: dict[str, k8s.helm.v3.Release]
    """Helm release per driver, keyed ``fsx`` / ``efs``; only the enabled ones."""

    def __init__(self, name: str, args: CsiArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:CsiDrivers", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        self.releases = {}
        after = dependencies(opts)  # the Cluster component

        def driver(
            key: str,
            chart: Chart,
            values: dict[str, Any],
            service_accounts: Sequence[str],
            role: aws.iam.Role,
            policy: pulumi.Resource,
        ) -> None:
            associations = [
                aws.eks.PodIdentityAssociation(
                    f"{name}-{key}-{sa}",
                    cluster_name=args.cluster_name,
                    namespace=NAMESPACE,
                    service_account=sa,
                    role_arn=role.arn,
                    tags=tags,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[*after, policy]),
                )
                for sa in service_accounts
            ]
            # Pods read credentials at start: install after the associations exist.
            self.releases[key] = release(
                f"{name}-{key}",
                release_name=chart.chart.rsplit("/", 1)[-1],
                chart=chart,
                namespace=NAMESPACE,
                values=values,
                parent=self,
                depends_on=[*after, *associations],
            )

        if args.fsx_chart is not None:
            if args.fsx_file_system_arn is None:
                raise ValueError("CsiArgs.fsx_file_system_arn is required with fsx_chart")
            role = aws.iam.Role(
                f"{name}-fsx",
                assume_role_policy=iam.pod_identity_trust(),
                description=f"FSx CSI controller of {args.cluster_name}",
                tags=tags,
                opts=child,
            )
            policy: pulumi.CustomResource = aws.iam.RolePolicy(
                f"{name}-fsx",
                role=role.id,
                policy=iam.policy_document(fsx_controller_policy(args.fsx_file_system_arn, args.fsx_scratch_tag)),
                opts=child,
            )
            # The node plugin only mounts (kernel Lustre client): no AWS credentials.
            driver("fsx", args.fsx_chart, fsx_values(args.region), [FSX_CONTROLLER_SA], role, policy)
        if args.efs_chart is not None:
            role = aws.iam.Role(
                f"{name}-efs",
                assume_role_policy=iam.pod_identity_trust(),
                description=f"EFS CSI driver of {args.cluster_name}",
                tags=tags,
                opts=child,
            )
            policy = aws.iam.RolePolicyAttachment(
                f"{name}-efs",
                role=role.name,
                policy_arn=iam.managed_policy_arn(args.region, "service-role/AmazonEFSCSIDriverPolicy"),
                opts=child,
            )
            # The node plugin (efs-utils) describes mount targets and AZs to resolve the mount address.
            driver("efs", args.efs_chart, efs_values(), [EFS_CONTROLLER_SA, EFS_NODE_SA], role, policy)

        self.register_outputs({"releases": list(self.releases)})
