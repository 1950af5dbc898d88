"""Pinned versions: Kubernetes support calendar, EKS add-ons and Helm charts, in one place.

Stacks may override any chart or add-on version under ``ekstrain:versions`` in their
``Pulumi.<stack>.yaml``; these are the defaults. Chart versions match the upstream files the
offline validation reads from ``shared/upstream`` (``make fetch-upstream`` pulls them: ``scripts/fetch_upstream.py``,
the archives' sha256 in ``scripts/chart-pins.tsv``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class KubernetesRelease:
    version: str
    released: dt.date
    """Available on EKS from this date (no EKS-optimized AMI for it exists before)."""
    standard_support_end: dt.date
    extended_support_end: dt.date


# The EKS Kubernetes release calendar (docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html;
# 14 months of standard support, then 12 of extended). 1.31-1.33 from platform-anchors.md (d)5; 1.34
# released 2025-10-02; 1.35 released 2026-01-27 (standard to 2027-03-27, extended to 2028-03-27). 1.36: on EKS
# 2026-06-02, standard support to 2027-08-02 (EKS user guide kubernetes-versions-standard.html lists "Kubernetes
# 1.36 is now available in Amazon EKS"; the dates as quoted from the EKS calendar in devopsdreams.blogspot.com
# 2026/08 "Kubernetes 1.36 on Amazon EKS"), extended to 2028-08-02 (the calendar's 12 months after standard; the
# first 1.36 AL2023 AMIs are amazon-eks-ami v20260610).
# Which versions a stack may use follows from these dates and the day it is validated: see
# :func:`window`. Add a row here when EKS publishes a new version (and its Neuron scheduler tag below).
KUBERNETES_RELEASES: dict[str, KubernetesRelease] = {
    r.version: r
    for r in (
        KubernetesRelease("1.31", dt.date(2024, 9, 26), dt.date(2025, 11, 26), dt.date(2026, 11, 26)),
        KubernetesRelease("1.32", dt.date(2025, 1, 23), dt.date(2026, 3, 23), dt.date(2027, 3, 23)),
        KubernetesRelease("1.33", dt.date(2025, 5, 29), dt.date(2026, 7, 29), dt.date(2027, 7, 29)),
        KubernetesRelease("1.34", dt.date(2025, 10, 2), dt.date(2026, 12, 2), dt.date(2027, 12, 2)),
        KubernetesRelease("1.35", dt.date(2026, 1, 27), dt.date(2027, 3, 27), dt.date(2028, 3, 27)),
        KubernetesRelease("1.36", dt.date(2026, 6, 2), dt.date(2027, 8, 2), dt.date(2028, 8, 2)),
    )
}
KNOWN_KUBERNETES_VERSIONS = tuple(KUBERNETES_RELEASES)
SUPPORTED_KUBERNETES_VERSIONS = KNOWN_KUBERNETES_VERSIONS
"""Versions the program has facts for (add-ons, scheduler tags); :func:`window` decides which a stack may use."""
DEFAULT_KUBERNETES_VERSION = "1.36"
"""For new stacks and prod: the newest version in EKS standard support."""


def window(today: dt.date) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(versions in standard support, versions in extended support) on ``today``; anything else is
    either not released yet or past extended support (EKS has upgraded such clusters)."""
    standard = tuple(v for v, r in KUBERNETES_RELEASES.items() if r.released <= today < r.standard_support_end)
    extended = tuple(
        v for v, r in KUBERNETES_RELEASES.items() if r.standard_support_end <= today < r.extended_support_end
    )
    return standard, extended


def unsupported_reason(version: str, today: dt.date) -> str | None:
    """Why ``version`` cannot be used on ``today`` (None when it can)."""
    release = KUBERNETES_RELEASES[version]
    if today < release.released:
        return f"Kubernetes {version} is not available on EKS before {release.released}"
    if today >= release.extended_support_end:
        return (
            f"Kubernetes {version} left EKS extended support on {release.extended_support_end}; "
            "EKS upgrades such clusters automatically"
        )
    return None


STANDARD_SUPPORT_WARNING_DAYS = 60
"""EKS announces the end of standard support at least 60 days ahead (kubernetes-versions.html, "Am I notified when
standard support is ending"): the render warns from the same day on, so the upgrade is planned, not forced."""


def standard_support_days_left(version: str, today: dt.date) -> int:
    """Days from ``today`` to the end of EKS standard support of ``version`` (negative once past it)."""
    return (KUBERNETES_RELEASES[version].standard_support_end - today).days


def newest_standard(today: dt.date) -> str:
    """The newest version in EKS standard support on ``today`` (the default when none is)."""
    standard, _ = window(today)
    return standard[-1] if standard else DEFAULT_KUBERNETES_VERSION


def support_warning(version: str, today: dt.date) -> str | None:
    """A one-line warning when ``version`` is past EKS standard support on ``today``, or within
    :data:`STANDARD_SUPPORT_WARNING_DAYS` of its end."""
    release = KUBERNETES_RELEASES[version]
    left = standard_support_days_left(version, today)
    if 0 < left <= STANDARD_SUPPORT_WARNING_DAYS:
        return (
            f"Kubernetes {version} leaves EKS standard support on {release.standard_support_end} ({left} days); "
            f"extended support then costs extra until {release.extended_support_end}. Plan the upgrade to "
            + (
                f"{newest_standard(today)} (docs/runbook-upgrade.md)."
                if newest_standard(today) != version
                else "the next minor: add its row to ekstrain/facts/versions.py KUBERNETES_RELEASES with its pins "
                "(docs/runbook-upgrade.md)."
            )
        )
    if today >= release.extended_support_end:
        return (
            f"Kubernetes {version} left EKS extended support on {release.extended_support_end}; "
            f"EKS upgrades such clusters automatically. Move to {newest_standard(today)}."
        )
    if today >= release.standard_support_end:
        return (
            f"Kubernetes {version} is past EKS standard support (ended {release.standard_support_end}); "
            f"extended support costs extra and ends {release.extended_support_end}. "
            f"Move to {newest_standard(today)}."
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
    # aws/eks-hybrid#763 and public 1.36 Terraform defaults pin v1.3.x builds; v1.3.10-eksbuild.3 is the newest
    # such build found pinned for a 1.36 cluster (its module README: "latest compatible" for 1.36).
    "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
    # mitodl/ol-infrastructure#5959 (2026-09-21): "v1.66.0-eksbuild.1, the version AWS currently marks
    # defaultVersion for Kubernetes 1.36"; EBS CSI builds run on every supported minor (EKS checks at CreateAddon).
    "aws-ebs-csi-driver": "v1.66.0-eksbuild.1",
    # components/node_health.py: node conditions for Karpenter NodeRepair. The agent's chart 1.7.0
    # (shared/upstream/chart-src) ships image eks-node-monitoring-agent:v1.7.0-eksbuild.1 (shared/upstream/SOURCES.md).
    "eks-node-monitoring-agent": "v1.7.0-eksbuild.1",
}
"""Every add-on carries a version at apply time: with none, EKS installs its default of the day of the first
``pulumi up`` and a later ``up`` changes nothing while new clusters differ (infra/verify/pins.py refuses one)."""

# Per-Kubernetes-version add-on pins where EKS's add-on table gives one (coredns and kube-proxy are built per
# minor version; the EKS CoreDNS page lists v1.14.2-eksbuild.4 as the 1.35 build, the kube-proxy page
# (docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html, "kube-proxy versions") v1.35.3-eksbuild.2).
# kube-proxy must be pinned: unpinned, pulumi-eks resolves getAddonVersion(mostRecent) on every run (its
# cluster.ts), so an unchanged `pulumi up` updates it whenever EKS ships a build. Missing entries fall
# back to DEFAULT_ADDON_VERSIONS; a stack's ekstrain:versions.addons wins over both.
# 1.31/1.32 CoreDNS: v1.11.4-eksbuild.2 (the EKS CoreDNS table's 1.31/1.32 line v1.11.4, as clusters pin it).
# 1.36: coredns v1.14.3 and kube-proxy v1.36 are EKS Distro v1-36-eks-6's builds (github.com/aws/eks-distro/
# releases/tag/v1-36-eks-6); the eksbuild suffixes and vpc-cni v1.22.3-eksbuild.1 are what public 1.36 clusters pin
# ("latest compatible with 1.36" in their module defaults). Confirm with `aws eks describe-addon-versions
# --kubernetes-version 1.36` before the first apply: EKS refuses an unknown build at CreateAddon/UpdateAddon.
ADDON_VERSIONS_BY_KUBERNETES: dict[str, dict[str, str]] = {
    "1.31": {"coredns": "v1.11.4-eksbuild.2", "kube-proxy": "v1.31.14-eksbuild.9"},
    "1.32": {"coredns": "v1.11.4-eksbuild.2", "kube-proxy": "v1.32.13-eksbuild.5"},
    "1.33": {"coredns": "v1.12.4-eksbuild.1", "kube-proxy": "v1.33.10-eksbuild.2"},
    "1.34": {"coredns": "v1.13.2-eksbuild.7", "kube-proxy": "v1.34.6-eksbuild.2"},
    "1.35": {"coredns": "v1.14.2-eksbuild.4", "kube-proxy": "v1.35.3-eksbuild.2"},
    "1.36": {"coredns": "v1.14.3-eksbuild.3", "kube-proxy": "v1.36.0-eksbuild.9", "vpc-cni": "v1.22.3-eksbuild.1"},
}


def addon_version(name: str, kubernetes_version: str) -> str | None:
    """The default pin of add-on ``name`` for a cluster of ``kubernetes_version``."""
    return ADDON_VERSIONS_BY_KUBERNETES.get(kubernetes_version, {}).get(name, DEFAULT_ADDON_VERSIONS[name])


@dataclass(frozen=True)
class AddonRange:
    """The add-on minor versions that run with one Kubernetes version, as far as the cited source says:
    ``oldest``/``newest`` are (major, minor) bounds, None where the source gives none."""

    oldest: tuple[int, int] | None
    newest: tuple[int, int] | None


KUBE_PROXY_MAX_SKEW = 3
"""Kubernetes version skew policy (kubernetes.io/releases/version-skew-policy, "kube-proxy"): kube-proxy must
not be newer than kube-apiserver and may be up to three minor versions older."""

# Per Kubernetes version, the add-on versions a stack may pin (ekstrain:versions.addons), with their source.
# Only what a source gives is checked; EKS itself refuses any other incompatible pin at CreateAddon/UpdateAddon
# (`aws eks describe-addon-versions --addon-name <name> --kubernetes-version <version>` lists the compatible ones).
ADDON_SOURCES: dict[str, str] = {
    "kube-proxy": (
        "Kubernetes version skew policy (kubernetes.io/releases/version-skew-policy: kube-proxy not newer than "
        "the API server, at most 3 minors older); EKS builds kube-proxy per minor (docs.aws.amazon.com/eks/latest/"
        'userguide/managing-kube-proxy.html, "kube-proxy versions")'
    ),
    "coredns": (
        'EKS user guide, managing-coredns.html "CoreDNS versions": the newest EKS CoreDNS build per Kubernetes '
        "version (1.31/1.32 v1.11.4, 1.33 v1.12; platform-anchors.md (d)5; 1.34 v1.13.2, 1.35 v1.14.2, "
        "1.36 v1.14.3 (EKS Distro v1-36-eks-6) as pinned above); a newer CoreDNS minor than the table's is not "
        "published for that version. The page gives no oldest build: none is checked"
    ),
    "vpc-cni": (
        'EKS user guide, managing-vpc-cni.html "Amazon VPC CNI versions": one version line for every Kubernetes '
        "version (v1.20.1-eksbuild.3 for 1.27-1.33 in the copy read; the copy has no 1.34/1.35 rows), so no "
        "per-version bound is checked; efa-only interfaces need v1.18.4 or later (MIN_VPC_CNI_FOR_EFA_ONLY)"
    ),
    "eks-pod-identity-agent": "no citable per-Kubernetes-version table found: not checked offline (EKS checks it)",
    "aws-ebs-csi-driver": "no citable per-Kubernetes-version table found: not checked offline (EKS checks it)",
    "eks-node-monitoring-agent": "no citable per-Kubernetes-version table found: not checked offline (EKS checks it)",
}
"""The EFS and FSx CSI drivers are Helm charts here (DEFAULT_CHARTS), not EKS add-ons: their bound is the chart's
``kubeVersion`` (aws-efs-csi-driver 4.4.1: >=1.17.0-0, aws-fsx-csi-driver 1.17.0: >=1.20.0-0, shared/upstream
Chart.yaml), which every supported Kubernetes version meets and ``helm template --kube-version`` enforces."""
ADDON_SOURCE_NAMES = {"kube-proxy": "Kubernetes version skew policy", "coredns": "EKS user guide, CoreDNS versions"}
"""The short name of each bound's source, for messages."""
_COREDNS_NEWEST = {"1.31": (1, 11), "1.32": (1, 11), "1.33": (1, 12), "1.34": (1, 13), "1.35": (1, 14), "1.36": (1, 14)}


def _minor(version: str) -> tuple[int, int]:
    """'1.35' -> (1, 35)."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


ADDON_COMPATIBILITY: dict[str, dict[str, AddonRange]] = {
    "kube-proxy": {
        k: AddonRange((_minor(k)[0], _minor(k)[1] - KUBE_PROXY_MAX_SKEW), _minor(k)) for k in KUBERNETES_RELEASES
    },
    "coredns": {k: AddonRange(None, newest) for k, newest in _COREDNS_NEWEST.items()},
}
"""Add-on -> Kubernetes version -> the minor versions a pin may have (ADDON_SOURCES says where each comes from;
add-ons without an entry have no citable bound and are left to EKS)."""


def addon_problem(name: str, version: str, kubernetes_version: str) -> tuple[str, str] | None:
    """(problem, fix) when add-on ``name`` at ``version`` does not run with ``kubernetes_version`` per
    ADDON_COMPATIBILITY; None when it does or no source bounds it."""
    bounds = ADDON_COMPATIBILITY.get(name, {}).get(kubernetes_version)
    if bounds is None:
        return None
    major, minor, _ = parse_semver(version)
    too_old = bounds.oldest is not None and (major, minor) < bounds.oldest
    too_new = bounds.newest is not None and (major, minor) > bounds.newest
    if not (too_old or too_new):
        return None
    lo = f"v{bounds.oldest[0]}.{bounds.oldest[1]}" if bounds.oldest else None
    hi = f"v{bounds.newest[0]}.{bounds.newest[1]}" if bounds.newest else None
    span = f"{lo} to {hi}" if lo and hi else f"{hi} or older" if hi else f"{lo} or newer"
    pin = addon_version(name, kubernetes_version)
    return (
        f"{name} {version} does not run with Kubernetes {kubernetes_version}, which takes {span} builds "
        f"({ADDON_SOURCE_NAMES[name]})",
        (f"use {pin} (the program's pin for {kubernetes_version}), " if pin else "")
        + f"pick one from `aws eks describe-addon-versions --addon-name {name} --kubernetes-version "
        f"{kubernetes_version}`, or remove the pin",
    )


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
    "nvidia-device-plugin": Chart(
        "nvidia-device-plugin",
        "0.20.0",
        "https://nvidia.github.io/k8s-device-plugin",
        upstream_dir="nvidia-device-plugin",
    ),
    "aws-efa-k8s-device-plugin": Chart(
        "aws-efa-k8s-device-plugin",
        "v0.5.30",
        "https://aws.github.io/eks-charts",
        upstream_dir="aws-efa-k8s-device-plugin",
    ),
    "neuron-helm-chart": Chart(
        "oci://public.ecr.aws/neuron/neuron-helm-chart", "1.0.0", upstream_dir="neuron-helm-chart"
    ),
    # 4.8.1 is the DCGM exporter chart ai-on-eks defaults to in 2026 (platform-anchors.md, (d)5).
    # No upstream values.yaml is pinned in shared/upstream, so its values stay minimal.
    "dcgm-exporter": Chart("dcgm-exporter", "4.8.1", "https://nvidia.github.io/dcgm-exporter/helm-charts"),
    "aws-fsx-csi-driver": Chart(
        "aws-fsx-csi-driver",
        "1.17.0",
        "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
        upstream_dir="aws-fsx-csi-driver",
    ),
    "aws-efs-csi-driver": Chart(
        "aws-efs-csi-driver",
        "4.4.1",
        "https://kubernetes-sigs.github.io/aws-efs-csi-driver/",
        upstream_dir="aws-efs-csi-driver",
    ),
    "cert-manager": Chart("oci://quay.io/jetstack/charts/cert-manager", "v1.19.1"),
    "slurm-operator-crds": Chart(
        "oci://ghcr.io/slinkyproject/charts/slurm-operator-crds", "1.2.1", upstream_dir="slurm-operator-crds"
    ),
    "slurm-operator": Chart(
        "oci://ghcr.io/slinkyproject/charts/slurm-operator", "1.2.1", upstream_dir="slurm-operator"
    ),
    "slurm": Chart("oci://ghcr.io/slinkyproject/charts/slurm", "1.2.1", upstream_dir="slurm"),
    "volcano": Chart("volcano", "1.15.1", "https://volcano-sh.github.io/helm-charts", upstream_dir="volcano"),
    "kuberay-operator": Chart(
        "kuberay-operator", "1.7.0", "https://ray-project.github.io/kuberay-helm/", upstream_dir="kuberay-operator"
    ),
    "kubeflow-trainer": Chart(
        "oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.3.0", upstream_dir="kubeflow-trainer"
    ),
    # Platform pieces (shared/upstream/chart-src/SOURCES.md, "Added for the platform pieces").
    "kube-prometheus-stack": Chart(
        "kube-prometheus-stack",
        "88.5.3",
        "https://prometheus-community.github.io/helm-charts",
        upstream_dir="kube-prometheus-stack",
    ),
    "jupyterhub": Chart("jupyterhub", "4.4.0", "https://hub.jupyter.org/helm-chart/", upstream_dir="jupyterhub"),
    "argo-cd": Chart("argo-cd", "10.1.1", "https://argoproj.github.io/argo-helm", upstream_dir="argo-cd"),
    # Event-driven autoscaling (ScaledObject); the chart installs its CRDs from templates (crds.install: true),
    # which the pins turn into crds/keda.sh and crds/eventing.keda.sh (scripts/upstream-pins.tsv, drop-helm-lines).
    "keda": Chart("keda", "2.20.2", "https://kedacore.github.io/charts", upstream_dir="keda"),
    # Logs off every node (docs/observability.md): Fluent Bit's own chart (Fluent Bit 5.1.1: cloudwatch_logs output,
    # EKS Pod Identity credentials since fluent/fluent-bit#10115, filesystem buffering, systemd input).
    "fluent-bit": Chart("fluent-bit", "0.58.1", "https://fluent.github.io/helm-charts", upstream_dir="fluent-bit"),
    # Spend by team, queue and job: OpenCost on the stack's Prometheus, node prices from ekstrain.facts.catalog (CSV
    # provider).
    "opencost": Chart("opencost", "2.5.17", "https://opencost.github.io/opencost-helm-chart", upstream_dir="opencost"),
}

# Container images the platform itself names (never `:latest`: a moving tag changes NCCL/EFA under a
# running fleet). Users pass their own training images to `ekstrain job render --image`.
NCCL_TESTS_IMAGE = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
"""AWS's nccl-tests build: CUDA, EFA installer, aws-ofi-nccl, NCCL, Open MPI and all_reduce_perf."""
DCGM_IMAGE = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
"""NVIDIA's DCGM container (nv-hostengine, dcgmi and the diagnostic plugins) for the health gate's ``dcgmi diag``
(ekstrain/payloads/health_gate.py): DCGM 4.5.2, the DCGM build of the pinned dcgm-exporter chart 4.8.1's image
(``4.5.2-4.8.1-distroless``, which has no shell to run dcgmi from)."""
GPU_TRAINING_IMAGE = (
    "public.ecr.aws/deep-learning-containers/pytorch-training:2.8.0-gpu-py312-cu129-ubuntu22.04-ec2-v1.0"
)
"""AWS Deep Learning Container (EC2 flavour): PyTorch with the EFA installer, libfabric and aws-ofi-nccl,
unlike ``pytorch/pytorch:*-runtime`` (no libfabric: NCCL would fall back to TCP sockets)."""
NEURON_TRAINING_IMAGE = "public.ecr.aws/neuron/pytorch-training-neuronx:2.7.0-neuronx-py310-sdk2.24.1-ubuntu22.04"
"""Neuron SDK training image (torch-neuronx, neuronx-distributed, nccom-test, neuron-ls, EFA)."""

# Slinky images: slurmd with pyxis + enroot (``srun --container-image``), same Slurm build as the chart's
# slurmctld (26.05-ubuntu26.04); alpine for the chart's logfile/initconf helpers (chart default: latest).
SLURMD_PYXIS_IMAGE = {"repository": "ghcr.io/slinkyproject/slurmd-pyxis", "tag": "26.05-ubuntu26.04"}
ALPINE_IMAGE = {"repository": "public.ecr.aws/docker/library/alpine", "tag": "3.22"}
"""Slinky's logfile/initconf sidecars (the chart's default is docker.io/library/alpine:latest). Docker Official
Images are mirrored on Amazon ECR Public as ``public.ecr.aws/docker/library/<name>`` (gallery.ecr.aws/docker),
which has no anonymous pull-rate limit from AWS; Docker Hub does (infra/verify/images.py refuses it)."""

# Images the platform pieces run outside any chart's defaults.
EFA_EXPORTER_IMAGE = "public.ecr.aws/docker/library/python:3.12.11-slim-bookworm"
"""Runs the EFA metrics exporter script (standard library only) from a ConfigMap."""
JUPYTER_GPU_IMAGE = "quay.io/jupyter/pytorch-notebook:cuda12-2025-10-20"
"""Jupyter docker-stacks PyTorch + CUDA 12 notebook (ships jupyterhub-singleuser)."""
JUPYTER_NEURON_IMAGE = NEURON_TRAINING_IMAGE
"""The Neuron SDK image the Trainium job templates use; JupyterLab is added at start (it has none)."""
JUPYTER_NEURON_SINGLEUSER = "jupyterhub==5.5.0 jupyterlab==4.4.9"
"""pip requirements installed into the Neuron image at start: the singleuser server JupyterHub 5.x needs."""
BIONEMO_IMAGE = "nvcr.io/nvidia/clara/bionemo-framework:1.5"
"""NVIDIA BioNeMo Framework 1.x container: MolMIM (molecule generation) lives in 1.x, not in 2.x."""

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
    "1.35": "v1.35.6-eks-1-35-12",  # kube-scheduler of EKS Distro release v1-35-eks-12
    "1.36": "v1.36.2-eks-1-36-6",  # kube-scheduler of EKS Distro release v1-36-eks-6 (its release manifest)
}

# Operators published as plain manifests, not charts.
MPI_OPERATOR_VERSION = "v0.8.0"
"""kubeflow/mpi-operator tag; MPIJob kubeflow.org/v2beta1 (matches shared/upstream/crds/kubeflow.org/mpijob.yaml)."""
MPI_OPERATOR_COMMIT = "101db144e019e1de65aaded07745e9d805c2852a"
"""The commit the v0.8.0 tag names (shared/upstream/SOURCES.md)."""
MPI_OPERATOR_SOURCE = (
    f"https://raw.githubusercontent.com/kubeflow/mpi-operator/{MPI_OPERATOR_COMMIT}/deploy/v2beta1/mpi-operator.yaml"
)
"""Upstream's install file at the tag's commit (its README: ``kubectl apply --server-side -f
.../deploy/v2beta1/mpi-operator.yaml``). Not shipped and not fetched: the program writes its non-CRD objects itself
(``ekstrain.assembly.schedulers.mpi_operator``) and reads the CRD from the upstream directory (:data:`MPIJOB_CRD`)."""
MPI_OPERATOR_IMAGE = f"mpioperator/mpi-operator:{MPI_OPERATOR_VERSION.removeprefix('v')}"
"""The operator's image, as that file's Deployment names it."""
MPIJOB_CRD = "crds/kubeflow.org/mpijob.yaml"
"""The MPIJob CRD the program applies, relative to the upstream directory (``ekstrain.tooling.validation.upstream_dir``;
``make fetch-upstream`` or ``--upstream-dir``): mpi-operator's ``manifests/base/kubeflow.org_mpijobs.yaml`` at
:data:`MPI_OPERATOR_COMMIT`, the CRD the render validates MPIJobs with."""
MPIJOB_CRD_SHA256 = "78b0131f931fcc8d99f6ce0407281f41b62527e443ec691d26d9634b390ad3bb"
"""sha256 of :data:`MPIJOB_CRD`: its row of scripts/upstream-pins.tsv (a test keeps the two equal); the program
refuses any other file, since it applies this one to the cluster."""
TRAINING_OPERATOR_VERSION = "v1.9.4"
"""Legacy Kubeflow training operator (release-1.9 line of kubeflow/trainer); PyTorchJob kubeflow.org/v1."""
TRAINING_OPERATOR_KUSTOMIZE = (
    # kustomize remote-target form: repo URL, `//` subdirectory, ?ref=tag
    f"https://github.com/kubeflow/trainer//manifests/overlays/standalone?ref={TRAINING_OPERATOR_VERSION}"
)

# Karpenter AMI alias versions: `latest` follows new AMIs (and drifts nodes); pin per stack in prod.
DEFAULT_AMI_ALIAS_VERSION = "latest"
DEFAULT_AMI_ALIAS_MAX_AGE_DAYS = 60
"""EKS publishes AL2023 AMIs (kernel, NVIDIA/Neuron driver, EFA fixes) every one to two weeks; a pin older
than two months misses security fixes. The runbook (docs/runbook-ami.md) rolls nodes between jobs."""


def ami_alias_warning(version: str, max_age_days: int, today: dt.date) -> str | None:
    released = ami_release_date(version)
    if released is None:
        return None
    age = (today - released).days
    if age <= max_age_days:
        return None
    return (
        f"AMI alias {version} is {age} days old, over amiAliasMaxAgeDays {max_age_days}: bump it to the newest "
        "AL2023 release and roll nodes between jobs (docs/runbook-ami.md)"
    )


# A known amazon-eks-ami release (weekly, one tag for every supported Kubernetes version) per
# Kubernetes version, recommended as the prod pin. A pin dated before the version's EKS release
# cannot resolve (no AL2023 AMI of that version existed): the stack rules refuse it.
# v20261119 (github.com/awslabs/amazon-eks-ami/releases/tag/v20261119): AL2023 source AMIs for Kubernetes
# 1.31-1.32, 1.33-1.35 and 1.36-1.37, "no changes to the AMI template"; after v20261012's fix of the kernel
# 6.12.110 panic that v20260930/v20261003 carried for 1.31-1.35 (amazon-eks-ami #2845): never pin those two.
AMI_ALIAS_VERSIONS: dict[str, str] = {
    "1.31": "v20261119",
    "1.32": "v20261119",
    "1.33": "v20261119",
    "1.34": "v20261119",
    "1.35": "v20261119",
    "1.36": "v20261119",
}

# The system managed node group's AMI release (EKS NodeGroup releaseVersion, "<kubelet>-<date>"): unpinned, EKS
# picks the newest release on the day the group is created, so two stacks created a week apart run different
# kernels and drivers. The release versions of amazon-eks-ami v20260714 (CHANGELOG.md, "Kubernetes 1.3x" tables,
# AL2023_x86_64_STANDARD), the newest release notes stored with their release versions: v20261119's notes (the
# Karpenter pin above) were not available with their kubelet patch versions.
SYSTEM_NODE_RELEASE_VERSIONS: dict[str, str] = {
    "1.31": "1.31.14-20260714",
    "1.32": "1.32.13-20260714",
    "1.33": "1.33.13-20260714",
    "1.34": "1.34.9-20260714",
    "1.35": "1.35.6-20260714",
    "1.36": "1.36.2-20260714",
}


def system_node_release_version(kubernetes_version: str) -> str | None:
    """The pinned AMI release of the system node group for ``kubernetes_version`` (None: no pin known)."""
    return SYSTEM_NODE_RELEASE_VERSIONS.get(kubernetes_version)


AMI_RELEASES_WITH_KNOWN_DEFECTS: dict[str, str] = {
    "v20260930": "kernel 6.12.110 may panic on Kubernetes 1.31-1.35 (amazon-eks-ami #2845; fixed in v20261012)",
    "v20261003": "kernel 6.12.110 may panic on Kubernetes 1.31-1.35 (amazon-eks-ami #2845; fixed in v20261012)",
}


def ami_release_date(alias_version: str) -> dt.date | None:
    """'v20260818' -> 2026-08-18; None for 'latest' or a malformed value."""
    if not (alias_version.startswith("v") and len(alias_version) == 9 and alias_version[1:].isdigit()):
        return None
    try:
        return dt.datetime.strptime(alias_version[1:], "%Y%m%d").date()
    except ValueError:
        return None


def parse_semver(version: str) -> tuple[int, int, int]:
    """'v1.20.1-eksbuild.3' -> (1, 20, 1)."""
    core = version.lstrip("v").split("-", 1)[0]
    parts = [int(p) for p in core.split(".")[:3]]
    return (parts + [0, 0, 0])[0], (parts + [0, 0, 0])[1], (parts + [0, 0, 0])[2]
