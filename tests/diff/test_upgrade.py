"""A Kubernetes minor upgrade under running jobs: the maintenance window's Karpenter budgets
(ekstrain/payloads/karpenter_specs.py DriftWindow, ekstrain:maintenance) and the upgrade played on the timeline
(ekstrain/simulate/upgrade.py)."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from conftest import stack_sections
from support.simulate import HELM
from test_compute_specs import assert_valid, spec_for
from test_simulate_timeline import _arrival, _job, _mix

from ekstrain.payloads import karpenter_specs as specs
from ekstrain.simulate import engine, upgrade
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.mix import read_mix
from ekstrain.simulate.timeline import simulate_timeline
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

DAILY_8_TO_16 = specs.DriftWindow("0 8 * * *", 8 * 60, "100%")


def test_window_budgets_are_the_complement_and_valid_against_the_crd() -> None:
    pool = specs.node_pool(spec_for(["p5.48xlarge"], drift_window=DAILY_8_TO_16))
    budgets = pool["spec"]["disruption"]["budgets"]
    assert {"nodes": "100%", "reasons": ["Drifted"]} in budgets
    assert {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 16 * * *", "duration": "16h"} in budgets
    assert "terminationGracePeriod" not in pool["spec"]["template"]["spec"]
    assert_valid(pool)
    weekly = specs.DriftWindow("0 22 * * 6", 8 * 60, "10%", gang_grace="2h")
    pool = specs.node_pool(spec_for(["p5.48xlarge"], drift_window=weekly))
    assert weekly.closed_budget() == {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 6 * * 0", "duration": "160h"}
    assert pool["spec"]["template"]["spec"]["terminationGracePeriod"] == "2h"
    assert_valid(pool)


def test_read_budgets_open_only_inside_the_window() -> None:
    d = upgrade.read_nodepool(specs.node_pool(spec_for(["p5.48xlarge"], drift_window=DAILY_8_TO_16)))
    assert [d.drift_allowed(8, h * 60) for h in (7, 8, 15, 16, 23, 24 + 9)] == [0, 8, 8, 0, 0, 8]
    closed = upgrade.read_nodepool(specs.node_pool(spec_for(["p5.48xlarge"])))
    assert all(closed.drift_allowed(8, m) == 0 for m in range(0, 7 * 1440, 60))


def test_the_stack_key_sets_every_nodepool_window() -> None:
    sections = stack_sections("prod")
    sections["maintenance"] = {"window": {"schedule": "0 8 * * *", "duration": "8h"}, "driftNodes": "2"}
    cfg, _ = parse(sections, "Pulumi.prod.yaml")
    assert cfg.maintenance.drift_window() == specs.DriftWindow("0 8 * * *", 480, "2", None)
    sections["maintenance"] = {"window": {"schedule": "0 8 1 * *", "duration": "8h"}}
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml")
    assert any(i.key.startswith("ekstrain:maintenance.window.schedule") for i in caught.value.issues)


def _pools(cluster: engine.Cluster, window: specs.DriftWindow | None) -> dict[str, upgrade.PoolDisruption]:
    pools = {n.pool for n in cluster.nodes if n.pool != "system"}
    return {
        p: upgrade.read_nodepool(specs.node_pool(spec_for(["p5.48xlarge"], name=p, drift_window=window))) for p in pools
    }


def _play(cluster: engine.Cluster, window: specs.DriftWindow | None, *jobs: Any, hours: int = 40) -> Any:
    mix = _mix(*jobs, hours=hours)
    mix.upgrade = upgrade.Upgrade(6 * 60, "1.36", _pools(cluster, window))
    return simulate_timeline(cluster, mix), mix.upgrade


def _busy_h100() -> list[Any]:
    # gpu-h100 has 8 nodes: three 8-node gangs back to back keep every node busy; each waits for the last.
    return [_arrival(_job("gpu-h100", "volcano", 8, f"g{i}"), at, 9) for i, at in enumerate((0, 5, 14))]


pytestmark_helm = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


@pytestmark_helm
def test_a_window_rolls_the_busy_fleet_between_gangs(cluster: engine.Cluster) -> None:
    report, up = _play(cluster, DAILY_8_TO_16, *_busy_h100())
    assert up.converged_at is not None and up.control_plane_at == 6 * 60 + 30
    assert up.gangs == [] and up.outside == [] and up.lost_hours == 0
    assert not [p for p in report.problems if "upgrade" in p]
    (line,) = [f for f in report.faults if f.startswith("UPGRADE")]
    assert "0 gangs disrupted" in line and "every node on 1.36 at " in line
    # Every node left before the window closed, between the gangs (no gang lost a minute to the upgrade).
    assert 8 * 60 <= up.converged_at < 16 * 60


@pytestmark_helm
def test_no_window_and_a_zero_budget_never_converges(cluster: engine.Cluster) -> None:
    report, up = _play(cluster, None, *_busy_h100(), hours=26)
    assert up.converged_at is None
    problems = [p for p in report.problems if "never converges" in p]
    assert problems and 'nodes: "0" with no window' in problems[0] and "ekstrain:maintenance.window" in problems[0]


@pytestmark_helm
def test_no_window_converging_only_because_the_pool_emptied_is_a_problem(cluster: engine.Cluster) -> None:
    report, up = _play(cluster, None, *_busy_h100(), hours=40)
    assert up.converged_at is not None and up.drifted == 0
    (problem,) = [p for p in report.problems if "never converges on a busy cluster" in p]
    assert "gpu-h100" in problem and "Job/g1" in problem and "Job/g2" in problem


@pytestmark_helm
def test_opted_in_gangs_are_disrupted_inside_the_window_only(cluster: engine.Cluster) -> None:
    long_gang = _arrival(_job("gpu-h100", "volcano", 8, "long"), 0, 20)
    window = specs.DriftWindow("0 8 * * *", 8 * 60, "100%", gang_grace="30m")
    report, up = _play(cluster, window, long_gang, hours=40)
    assert up.gangs == ["Job/long"] and up.outside == [] and up.lost_hours > 0
    assert up.converged_at is not None and up.converged_at < 16 * 60


@pytestmark_helm
def test_drift_without_a_window_disrupting_a_gang_is_a_problem(cluster: engine.Cluster) -> None:
    long_gang = _arrival(_job("gpu-h100", "volcano", 8, "long"), 0, 20)
    pools = _pools(cluster, None)
    for d in pools.values():  # an operator lifted the Drifted budget and set a grace period: no window at all
        d.budgets = [upgrade.Budget("100%", ("Drifted",))]
        d.grace_minutes = 30
    mix = _mix(long_gang, hours=30)
    mix.upgrade = upgrade.Upgrade(6 * 60, "1.36", pools)
    report = simulate_timeline(cluster, mix)
    assert any("disrupted gang Job/long" in p and "outside a maintenance window" in p for p in report.problems)


def _mix_file(tmp_path: pathlib.Path, entry: str) -> pathlib.Path:
    job = tmp_path / "job.yaml"
    job.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n")
    mix = tmp_path / "mix.yaml"
    mix.write_text(f"hours: 24\njobs:\n  - {{file: {job}, at: 0, hours: 1}}\n{entry}\n")
    return mix


def test_mix_upgrade_entry_is_read_and_bad_ones_name_the_key(tmp_path: pathlib.Path) -> None:
    mix = read_mix(_mix_file(tmp_path, 'upgrade: {at: 6, to: "1.36"}'), tmp_path)
    assert mix.upgrade is not None and (mix.upgrade.at, mix.upgrade.to, mix.upgrade.source) == (360, "1.36", "1.35")
    with pytest.raises(InputError) as caught:
        read_mix(_mix_file(tmp_path, 'upgrade: {at: 6, to: "1.99"}'), tmp_path)
    assert caught.value.where.endswith("upgrade.to") and "not on the EKS calendar" in caught.value.problem
    with pytest.raises(InputError) as caught:
        read_mix(_mix_file(tmp_path, 'upgrade: {at: 99, to: "1.36"}'), tmp_path)
    assert caught.value.where.endswith("upgrade.at")


def _res(type_: str, name: str, **inputs: Any) -> Any:
    from ekstrain.diff.model import Resource

    return Resource(f"urn:{type_}::{name}", type_, name, inputs=inputs)


def test_diff_lists_control_plane_addons_node_group_and_drifting_pools_with_their_window() -> None:
    from ekstrain.diff import compare, report

    windowed = specs.node_pool(spec_for(["p5.48xlarge"], name="gpu-h100", drift_window=DAILY_8_TO_16))
    held = specs.node_pool(spec_for(["p5.48xlarge"], name="gpu-a100"))

    def side(k8s: str, proxy: str, release: str) -> list[Any]:
        return [
            _res("eks:index:Cluster", "cluster", version=k8s),
            _res("aws:eks/addon:Addon", "cluster-kube-proxy", addonName="kube-proxy", addonVersion=proxy),
            _res(
                "aws:eks/addon:Addon",
                "cluster-ebs-csi",
                addonName="aws-ebs-csi-driver",
                addonVersion="v1.66.0-eksbuild.1",
            ),
            _res("aws:eks/nodeGroup:NodeGroup", "cluster-system", version=k8s, releaseVersion=release),
            _res("kubernetes:karpenter.sh/v1:NodePool", "gpu-h100", **windowed),
            _res("kubernetes:karpenter.sh/v1:NodePool", "gpu-a100", **held),
        ]

    old = side("1.35", "v1.35.3-eksbuild.2", "1.35.6-20260714")
    new = side("1.36", "v1.36.0-eksbuild.9", "1.36.2-20260714")
    diff = compare.compare(old, new)
    text = "\n".join(diff.upgrade)
    assert diff.upgrade[0] == "1. control plane: Kubernetes 1.35 -> 1.36 (UpdateClusterVersion, in place)"
    assert "kube-proxy v1.35.3-eksbuild.2 -> v1.36.0-eksbuild.9" in text and "aws-ebs-csi-driver" not in text
    assert "cluster-system: version 1.35 -> 1.36, releaseVersion 1.35.6-20260714 -> 1.36.2-20260714" in text
    assert "2 NodePool(s) drift" in text
    assert "gpu-h100: rolls in the window 08:00-16:00 UTC daily, 100% of its free drifted nodes at a time" in text
    assert 'gpu-a100: held: Drifted budget `nodes: "0"` with no window' in text
    md = report.markdown(diff, "1.35", "1.36", ())
    assert "### Kubernetes upgrade" in md and report.to_json(diff, "a", "b", ())["upgrade"] == diff.upgrade
    assert compare.compare(new, new).upgrade == []
