"""The compatibility table (ekstrain/facts/compat.py): each seeded incompatible pair is refused with both versions, its
source and the fix; the pinned stack at 1.35 and 1.36 has none."""

from __future__ import annotations

import datetime as dt
import io
import tarfile

import pytest
from conftest import stack_sections

from ekstrain.facts import compat, versions
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

TODAY = dt.date(2026, 12, 6)


@pytest.mark.parametrize("k8s", ["1.35", "1.36"])
def test_pinned_versions_are_compatible(k8s: str) -> None:
    assert compat.problems(compat.Pins(k8s)) == []


def _one(p: compat.Pins) -> tuple[str, str, str]:
    found = compat.problems(p)
    assert len(found) == 1, found
    return found[0]


def test_karpenter_older_than_the_matrix_is_refused() -> None:
    key, problem, fix = _one(compat.Pins("1.36", {"karpenter": "1.12.3", "karpenter-crd": "1.12.3"}))
    assert key == "ekstrain:versions.charts.karpenter"
    assert "karpenter 1.12.3" in problem and "Kubernetes 1.36" in problem and ">= 1.13" in problem
    assert "compatibility.md" in problem and "1.13.0 or later" in fix


def test_chart_kube_version_floor_is_refused() -> None:
    # slurm 1.2.1's Chart.yaml: kubeVersion >= 1.29.0-0, so a 1.28 cluster is refused for both Slinky charts.
    found = {k: p for k, p, _ in compat.problems(compat.Pins("1.28"))}
    assert "ekstrain:versions.charts.slurm" in found and "slurm 1.2.1" in found["ekstrain:versions.charts.slurm"]
    rows = {r.component: r for r in compat.table(compat.Pins("1.28"))}
    assert rows["slurm"].ok is False and "1.29" in rows["slurm"].bound and "Chart.yaml" in rows["slurm"].source


def test_cuda_newer_than_the_ami_driver_is_refused() -> None:
    ami = compat.AmiContents("v20250101", "6.12", "570.86.15", "2.29.0.0", "1.19.1")
    found = compat.problems(compat.Pins("1.35", ami=ami))
    # cu129 needs 575.51.03; cuda12.8.1 needs 570.124.06: both above 570.86.15.
    labels = [p for _, p, _ in found]
    assert any("GPU_TRAINING_IMAGE CUDA 12.9" in p and "570.86.15" in p and "575.51.03" in p for p in labels)
    assert any("NCCL_TESTS_IMAGE CUDA 12.8" in p for p in labels)
    assert all("CUDA Toolkit release notes" in p for p in labels)
    assert {k for k, _, _ in found} == {"ekstrain:versions.amiAliasVersion"}


def test_dcgm_and_device_plugin_on_an_old_driver_are_refused() -> None:
    ami = compat.AmiContents("v20200101", "6.1", "418.87.01", "2.29.0.0", "1.6.0")
    problems = [p for _, p, _ in compat.problems(compat.Pins("1.35", ami=ami))]
    assert any(p.startswith("DCGM 4.5.2") and "450.80.02" in p and "DCGM user guide" in p for p in problems)
    assert any("nvidia-container-toolkit 1.6.0" in p and ">= 1.7.0" in p for p in problems)


def test_nccl_outside_aws_ofi_nccl_range_is_refused() -> None:
    image = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.28.3-1-testsv2.16.9"
    key, problem, fix = _one(compat.Pins("1.35", nccl_tests_image=image))
    assert "NCCL 2.28.3" in problem and "aws-ofi-nccl 1.16.3" in problem and "2.17.1 to 2.27.7" in problem
    assert "RELEASENOTES" in problem


def test_neuron_driver_too_old_for_the_1_36_kernel_is_refused() -> None:
    ami = compat.AmiContents("v20260301", "6.18", "580.159.03", "2.26.5.0", "1.19.1")
    key, problem, fix = _one(compat.Pins("1.36", ami=ami))
    assert "Neuron driver 2.26.5.0" in problem and "kernel 6.18" in problem and "2.28.1" in problem
    assert "aws-neuronx-dkms 2.28.0" in fix


def test_stack_with_an_incompatible_pin_is_refused_before_any_resource() -> None:
    sections = stack_sections("prod")
    sections["cluster"]["kubernetesVersion"] = "1.36"
    sections["versions"]["charts"] = {"karpenter": "1.12.3", "karpenter-crd": "1.12.3"}
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml", today=TODAY)
    keys = [i.key for i in caught.value.issues]
    assert "ekstrain:versions.charts.karpenter" in keys


def test_blockers_name_the_component_and_the_unblocking_version() -> None:
    lines = compat.blockers(compat.Pins("1.35", {"karpenter": "1.10.0", "karpenter-crd": "1.10.0"}), "1.36")
    assert len(lines) == 1 and "karpenter 1.10.0" in lines[0] and "1.13.0 or later" in lines[0]


def test_chart_table_matches_the_chart_archives() -> None:
    root = validation.upstream_dir()
    assert root is not None, "shared/upstream not found"
    src = root / "chart-src"
    for name, chart in versions.DEFAULT_CHARTS.items():
        archive = src / f"{name}-{chart.version}.tgz"
        if not archive.exists():
            continue
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/Chart.yaml") and m.name.count("/") == 1)
            text = io.TextIOWrapper(tar.extractfile(member)).read()  # type: ignore[arg-type]
        line = next((ln for ln in text.splitlines() if ln.startswith("kubeVersion:")), None)
        declared = line.split(":", 1)[1].strip().strip("'\"") if line else None
        assert compat.CHART_KUBE_VERSION.get(name) == declared, name


def test_libfabric_older_than_aws_ofi_nccl_needs_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {r.component: r for r in compat.table(compat.Pins("1.36"))}
    assert rows["EFA installer 1.43.2 (NCCL_TESTS_IMAGE)"].version == "libfabric 2.1.0amzn5.0"
    assert rows["EFA installer 1.43.2 (NCCL_TESTS_IMAGE)"].ok is True
    # A seeded installer whose libfabric predates what aws-ofi-nccl 1.16.3 needs (1.22.0amzn4.0).
    monkeypatch.setitem(compat.EFA_INSTALLER_LIBFABRIC, "1.39.9", "1.22.0amzn3.0")
    image = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.39.9-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
    key, problem, fix = _one(compat.Pins("1.36", nccl_tests_image=image))
    assert "EFA installer 1.39.9" in problem and "libfabric 1.22.0amzn3.0" in problem and "1.22.0amzn4.0" in problem
    assert "efa-changelog" in problem and "libfabric 1.22.0amzn4.0 or later" in fix


def test_a_neuron_driver_older_than_runtime_2_is_refused() -> None:
    ami = compat.AmiContents("v20200101", "6.1", "580.159.03", "1.12.2.0", "1.19.1")
    key, problem, fix = _one(compat.Pins("1.32", ami=ami))
    assert "Neuron runtime 2.x" in problem and "Neuron driver 1.12.2.0" in problem and "driver >= 2.0" in problem
    assert key == "ekstrain:versions.amiAliasVersion" and "aws-neuronx-dkms 2.0" in fix


def test_the_calendar_names_what_blocks_the_newest_version() -> None:
    old = compat.Pins("1.35", {"karpenter": "1.10.0", "karpenter-crd": "1.10.0"})
    lines = compat.calendar_lines("1.35", TODAY, old)
    assert lines[0].startswith("- Kubernetes 1.35 on 2026-12-06: 111 days left in standard support (until 2027-03-27)")
    assert lines[1].startswith("- Moving to 1.36: ekstrain:versions.charts.karpenter: karpenter 1.10.0")
    assert "1.13.0 or later" in lines[1]
    assert compat.calendar_lines("1.35", TODAY, compat.Pins("1.35"))[1] == (
        "- Moving to 1.36: no pinned component blocks it (ekstrain/facts/compat.py)"
    )
    assert len(compat.calendar_lines("1.36", TODAY, compat.Pins("1.36"))) == 1
