"""How long the engine waits on each resource type: creation and deletion, in seconds, with the figure's source.

Figures are documented or reported typical durations (not the provider's timeouts, which are upper bounds and are
cited beside them where they matter); where no one publishes a figure the entry says ``estimate`` and why. The
first training step adds a node launch, the health gate's pre-flight and the image pull: the first two are the
scheduling simulator's own figures (:data:`ekstrain.simulate.timeline.Mix` ``launch_minutes``,
:func:`ekstrain.payloads.health_gate.gate_seconds`), read from there, never copied.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.layout import cold_start

PULUMI_PARALLEL = None
"""``pulumi up --parallel``: "Allow P resource operations to run in parallel at once (1 for no parallelism).
Defaults to unbounded." (https://www.pulumi.com/docs/iac/cli/commands/pulumi_up/, default 2147483647): every
resource whose dependencies are done starts at once."""

_TF = "hashicorp/terraform-provider-aws v6 website/docs/r/{}.html.markdown (Timeouts)"


@dataclass(frozen=True)
class Duration:
    create_s: int
    delete_s: int
    source: str


API_CALL = Duration(2, 2, "estimate: one synchronous API call and the provider's read-back")
KUBERNETES_OBJECT = Duration(
    2, 2, "estimate: one API-server request; the provider waits only for Deployments/Services/Jobs readiness"
)

DURATIONS: dict[str, Duration] = {
    "aws:eks/cluster:Cluster": Duration(
        15 * 60,
        8 * 60,
        "aws/containers-roadmap #1227 'EKS cluster control plane provisioning time currently averages 15 "
        "minutes'; delete: estimate (control-plane teardown); provider timeouts create 30m, delete 15m "
        + _TF.format("eks_cluster"),
    ),
    "aws:eks/nodeGroup:NodeGroup": Duration(
        5 * 60,
        5 * 60,
        "estimate: instances launched and joined (EKS docs, managed node groups: the group is ACTIVE once its "
        "nodes join); provider timeouts create 60m, delete 60m " + _TF.format("eks_node_group"),
    ),
    "aws:eks/addon:Addon": Duration(
        90,
        60,
        "estimate: the add-on's Deployment/DaemonSet rolling out; provider timeouts create 20m, delete 40m "
        + _TF.format("eks_addon"),
    ),
    "aws:eks/accessEntry:AccessEntry": API_CALL,
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": API_CALL,
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": API_CALL,
    "aws:fsx/lustreFileSystem:LustreFileSystem": Duration(
        15 * 60,
        10 * 60,
        "reported: aws/aws-parallelcluster #4211 (FSx for Lustre create under 20 min with a small import bucket, "
        "over 1 h with millions of objects); 15 min used, no import path here; provider timeouts create 30m, "
        "delete 30m " + _TF.format("fsx_lustre_file_system"),
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": Duration(
        8 * 60,
        5 * 60,
        "reported: aws-samples/amazon-eks-machine-learning-with-terraform-and-kubeflow #112 (the 10-minute default "
        "create timeout runs out in some uses although creation succeeds; raised to 30 min there) and "
        "hashicorp/terraform-provider-aws #24678; 8 min used (the association imports the bucket's metadata "
        "first); provider timeouts create 10m, delete 10m " + _TF.format("fsx_data_repository_association"),
    ),
    "aws:efs/fileSystem:FileSystem": Duration(30, 30, "estimate: EFS file systems are available within seconds"),
    "aws:efs/mountTarget:MountTarget": Duration(
        90, 90, "estimate: the mount target's ENI (provider timeouts create 30m, delete 10m, efs_mount_target)"
    ),
    "aws:ec2/natGateway:NatGateway": Duration(
        2 * 60,
        60,
        "estimate: pending -> available typically 1-2 min; provider timeouts create 10m, delete 30m "
        + _TF.format("nat_gateway"),
    ),
    "aws:ec2/vpc:Vpc": Duration(5, 5, "estimate: synchronous"),
    "aws:ec2/subnet:Subnet": Duration(5, 20, "estimate; delete waits for ENIs to go (provider timeout 20m)"),
    "aws:ec2/vpcEndpoint:VpcEndpoint": Duration(60, 60, "estimate: gateway endpoint pending -> available"),
    "aws:ec2/internetGateway:InternetGateway": Duration(5, 10, "estimate: create and attach"),
    "aws:amp/workspace:Workspace": Duration(60, 30, "estimate: CREATING -> ACTIVE"),
    "aws:kms/key:Key": Duration(5, 2, "estimate; delete only schedules deletion (7-30 days later)"),
    "aws:iam/role:Role": Duration(
        10, 5, "estimate: create plus the provider's wait for IAM's eventual consistency (retries for ~2 min max)"
    ),
    "aws:s3/bucket:Bucket": Duration(5, 5, "estimate: synchronous"),
    "kubernetes:helm.sh/v3:Release": Duration(
        120,
        60,
        "estimate: install and wait for readiness (the Release resource's default is to wait, timeout 300 s: "
        "pulumi-kubernetes Release skipAwait/timeout)",
    ),
    "kubernetes:core/v1:Namespace": Duration(2, 30, "estimate; delete waits for the namespace's finalizers"),
    "kubernetes:apps/v1:Deployment": Duration(60, 20, "estimate: the provider awaits the rollout"),
    "kubernetes:apps/v1:DaemonSet": Duration(60, 20, "estimate: the provider awaits the rollout"),
    "kubernetes:apps/v1:StatefulSet": Duration(60, 20, "estimate: the provider awaits the rollout"),
}

IMAGE_PULL_SECONDS = cold_start.pull_seconds(cold_start.TRAINING_IMAGE_GIB)
"""The first pull of a training image onto a fresh node, at the pull rate the notebooks' start timeout uses
(ekstrain/layout/cold_start.py: an estimate, not a published figure). A pre-pulled image (an AMI or a data volume
snapshot
that holds it) takes this to zero."""


def duration(type_token: str, custom: bool = True) -> Duration:
    """The type's durations: components take none; unlisted types one API call (AWS) or one request (Kubernetes)."""
    if not custom:
        return Duration(0, 0, "a component: no API call")
    if type_token in DURATIONS:
        return DURATIONS[type_token]
    if type_token.startswith("kubernetes:"):
        return KUBERNETES_OBJECT
    if type_token.startswith(("ekstrain:", "eks:index:")) or type_token == "kubernetes:yaml/v2:ConfigGroup":
        return Duration(0, 0, "a component: no API call")
    if type_token.startswith(("random:", "pulumi:providers:")):
        return Duration(0, 0, "local: no API call")
    return API_CALL


def node_launch_seconds(family: str) -> int:
    """A node launch for an accelerator family, from the simulator's figure (``Mix.launch_minutes``)."""
    from ekstrain.simulate.timeline import Mix

    minutes = Mix(arrivals=[]).launch_minutes
    return 60 * minutes.get(family, minutes.get("cpu", 5))


def health_gate_seconds(family: str) -> int:
    """The health gate's pre-flight on a new node (:func:`ekstrain.payloads.health_gate.gate_seconds`)."""
    from ekstrain.payloads import health_gate

    return health_gate.gate_seconds(family)


__all__ = [
    "DURATIONS",
    "IMAGE_PULL_SECONDS",
    "PULUMI_PARALLEL",
    "Duration",
    "duration",
    "health_gate_seconds",
    "node_launch_seconds",
]
