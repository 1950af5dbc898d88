"""Pinned versions: Kubernetes support calendar, EKS add-ons and Helm charts, in one place.

Stacks may override any chart or add-on version under ``ekstrain:versions`` in their
``Pulumi.<stack>.yaml``; these are the defaults. Chart versions match the upstream files the
offline validation reads from ``shared/upstream`` (see ``scripts/fetch-upstream.sh``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class KubernetesRelease:
    version: str
    standard_support_end: dt.date
    extended_support_end: dt.date


# EKS release calendar. 1.31-1.33 from platform-anchors.md (d)5; 1.34 from the EKS
# Kubernetes version calendar (released 2025-10-02, 14 months of standard support).
KUBERNETES_RELEASES: dict[str, KubernetesRelease] = {
    r.version: r
    for r in (
        KubernetesRelease("1.31", dt.date(2025, 11, 26), dt.date(2026, 11, 26)),
        KubernetesRelease("1.32", dt.date(2026, 3, 23), dt.date(2027, 3, 23)),
        KubernetesRelease("1.33", dt.date(2026, 7, 29), dt.date(2027, 7, 29)),
        KubernetesRelease("1.34", dt.date(2026, 12, 2), dt.date(2027, 12, 2)),
    )
}
SUPPORTED_KUBERNETES_VERSIONS = tuple(KUBERNETES_RELEASES)
DEFAULT_KUBERNETES_VERSION = "1.34"


def support_warning(version: str, today: dt.date) -> str | None:
    """A one-line warning when ``version`` is past EKS standard (or extended) support on ``today``."""
    release = KUBERNETES_RELEASES[version]
    if today > release.extended_support_end:
        return (
            f"Kubernetes {version} left EKS extended support on {release.extended_support_end}; "
            f"EKS upgrades such clusters automatically. Move to {DEFAULT_KUBERNETES_VERSION}."
        )
    if today >= release.standard_support_end:
        return (
            f"Kubernetes {version} is past EKS standard support (ended {release.standard_support_end}); "
            f"extended support costs extra and ends {release.extended_support_end}."
        )
    return None


# vpc-cni must be at least this for Karpenter's `efa-only` interfaces.
MIN_VPC_CNI_FOR_EFA_ONLY = (1, 18, 4)

# EKS managed add-ons. A version of None lets EKS install its default for the cluster version
# (resolved by EKS at create time); pin one per stack to make upgrades explicit.
DEFAULT_ADDON_VERSIONS: dict[str, str | None] = {
    "vpc-cni": "v1.20.1-eksbuild.3",
    "coredns": None,
    "kube-proxy": None,
    "eks-pod-identity-agent": None,
    "aws-ebs-csi-driver": None,
}


@dataclass(frozen=True)
class Chart:
    """A Helm chart: where it is published and the version the platform pins."""

    chart: str
    version: str
    repo: str | None = None
    """Classic Helm repository URL; None when ``chart`` is an ``oci://`` reference."""
    upstream_dir: str | None = None
    """Directory under ``shared/upstream/charts`` holding this chart's values.yaml."""


DEFAULT_CHARTS: dict[str, Chart] = {
    "karpenter-crd": Chart("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1"),
    "karpenter": Chart("oci://public.ecr.aws/karpenter/karpenter", "1.14.1", upstream_dir="karpenter"),
    "nvidia-device-plugin": Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin",
                                  upstream_dir="nvidia-device-plugin"),
    "aws-efa-k8s-device-plugin": Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts",
                                       upstream_dir="aws-efa-k8s-device-plugin"),
    "neuron-helm-chart": Chart("oci://public.ecr.aws/neuron/neuron-helm-chart", "1.0.0",
                               upstream_dir="neuron-helm-chart"),
    # 4.8.1 is the DCGM exporter chart ai-on-eks defaults to in 2026 (platform-anchors.md, (d)5).
    # No upstream values.yaml is pinned in shared/upstream, so its values stay minimal.
    "dcgm-exporter": Chart("dcgm-exporter", "4.8.1", "https://nvidia.github.io/dcgm-exporter/helm-charts"),
    "aws-fsx-csi-driver": Chart("aws-fsx-csi-driver", "1.17.0",
                                "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
                                upstream_dir="aws-fsx-csi-driver"),
    "aws-efs-csi-driver": Chart("aws-efs-csi-driver", "4.4.1",
                                "https://kubernetes-sigs.github.io/aws-efs-csi-driver/",
                                upstream_dir="aws-efs-csi-driver"),
    "cert-manager": Chart("oci://quay.io/jetstack/charts/cert-manager", "v1.19.1"),
    "slurm-operator-crds": Chart("oci://ghcr.io/slinkyproject/charts/slurm-operator-crds", "1.2.1",
                                 upstream_dir="slurm-operator-crds"),
    "slurm-operator": Chart("oci://ghcr.io/slinkyproject/charts/slurm-operator", "1.2.1",
                            upstream_dir="slurm-operator"),
    "slurm": Chart("oci://ghcr.io/slinkyproject/charts/slurm", "1.2.1", upstream_dir="slurm"),
    "volcano": Chart("volcano", "1.15.1", "https://volcano-sh.github.io/helm-charts", upstream_dir="volcano"),
    "kuberay-operator": Chart("kuberay-operator", "1.7.0", "https://ray-project.github.io/kuberay-helm/",
                              upstream_dir="kuberay-operator"),
    "kubeflow-trainer": Chart("oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.3.0",
                              upstream_dir="kubeflow-trainer"),
}

# Container images the platform itself names (never `:latest`: a moving tag changes NCCL/EFA under a
# running fleet). Users pass their own training images to `ekstrain job render --image`.
NCCL_TESTS_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
"""AWS's nccl-tests build: CUDA, EFA installer, aws-ofi-nccl, NCCL, Open MPI and all_reduce_perf."""
GPU_TRAINING_IMAGE = ("public.ecr.aws/deep-learning-containers/pytorch-training:"
                      "2.8.0-gpu-py312-cu129-ubuntu22.04-ec2-v1.0")
"""AWS Deep Learning Container (EC2 flavour): PyTorch with the EFA installer, libfabric and aws-ofi-nccl,
unlike ``pytorch/pytorch:*-runtime`` (no libfabric: NCCL would fall back to TCP sockets)."""
NEURON_TRAINING_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04"
"""Neuron SDK training image (torch-neuronx, neuronx-distributed, nccom-test, neuron-ls, EFA)."""

# Slinky images: slurmd with pyxis + enroot (``srun --container-image``), same Slurm build as the chart's
# slurmctld (26.05-ubuntu26.04); alpine for the chart's logfile/initconf helpers (chart default: latest).
SLURMD_PYXIS_IMAGE = {"repository": "ghcr.io/slinkyproject/slurmd-pyxis", "tag": "26.05-ubuntu26.04"}
ALPINE_IMAGE = {"repository": "docker.io/library/alpine", "tag": "3.22"}

# neuron-monitor has no chart: it runs as a plain DaemonSet (image from the AWS Neuron samples).
NEURON_MONITOR_IMAGE = "public.ecr.aws/neuron/neuron-monitor:1.1.0"

# kube-scheduler image the Neuron scheduler extension runs beside (the neuron chart 1.0.0 default is
# v1.28, outside the version-skew policy). EKS Distro tags seen in public Neuron deployments; 1.34
# uses the 1.33 build (a scheduler may be one minor older than the API server).
NEURON_CUSTOM_SCHEDULER_TAGS: dict[str, str] = {
    "1.31": "v1.31.12-eks-1-31-30",
    "1.32": "v1.32.9-eks-1-32-24",
    "1.33": "v1.33.3-eks-1-33-10",
    "1.34": "v1.33.3-eks-1-33-10",
}

# Operators published as plain manifests, not charts (installed with yaml/kustomize components).
MPI_OPERATOR_VERSION = "v0.8.0"
"""kubeflow/mpi-operator tag; MPIJob kubeflow.org/v2beta1 (matches shared/upstream/crds/kubeflow.org/mpijob.yaml)."""
MPI_OPERATOR_MANIFEST = (
    f"https://raw.githubusercontent.com/kubeflow/mpi-operator/{MPI_OPERATOR_VERSION}/deploy/v2beta1/mpi-operator.yaml")
TRAINING_OPERATOR_VERSION = "v1.9.4"
"""Legacy Kubeflow training operator (release-1.9 line of kubeflow/trainer); PyTorchJob kubeflow.org/v1."""
TRAINING_OPERATOR_KUSTOMIZE = (
    # kustomize remote-target form: repo URL, `//` subdirectory, ?ref=tag
    f"https://github.com/kubeflow/trainer//manifests/overlays/standalone?ref={TRAINING_OPERATOR_VERSION}")

# Karpenter AMI alias versions: `latest` follows new AMIs (and drifts nodes); pin per stack in prod.
DEFAULT_AMI_ALIAS_VERSION = "latest"
DEFAULT_AMI_ALIAS_MAX_AGE_DAYS = 60
"""EKS publishes AL2023 AMIs (kernel, NVIDIA/Neuron driver, EFA fixes) every one to two weeks; a pin older
than two months misses security fixes. The runbook (docs/runbook-ami.md) rolls nodes between jobs."""


def ami_alias_date(version: str) -> dt.date | None:
    """``v20251120`` -> 2025-11-20; None for ``latest`` or another form."""
    core = version.removeprefix("v")
    if len(core) != 8 or not core.isdigit():
        return None
    try:
        return dt.date(int(core[:4]), int(core[4:6]), int(core[6:]))
    except ValueError:
        return None


def ami_alias_warning(version: str, max_age_days: int, today: dt.date) -> str | None:
    released = ami_alias_date(version)
    if released is None:
        return None
    age = (today - released).days
    if age <= max_age_days:
        return None
    return (f"AMI alias {version} is {age} days old, over amiAliasMaxAgeDays {max_age_days}: bump it to the newest "
            "AL2023 release and roll nodes between jobs (docs/runbook-ami.md)")


def parse_semver(version: str) -> tuple[int, int, int]:
    """'v1.20.1-eksbuild.3' -> (1, 20, 1)."""
    core = version.lstrip("v").split("-", 1)[0]
    parts = [int(p) for p in core.split(".")[:3]]
    return (parts + [0, 0, 0])[0], (parts + [0, 0, 0])[1], (parts + [0, 0, 0])[2]
