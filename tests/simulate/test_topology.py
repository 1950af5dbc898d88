"""One network topology: EKS network-node layers -> Volcano HyperNode discovery -> the gangs' networkTopology.

GIVEN the EC2 instance-topology table and prod
WHEN Volcano's values and a 64-GPU Volcano Job are rendered
THEN the controller discovers HyperNodes from topology.k8s.aws/network-node-layer-1..3 (tier 1 = layer 3), a
pipeline-parallel gang asks for tier 2 hard, a data-parallel one soft, a type without layers asks nothing, and the
Job validates against the pinned Volcano v1.15.1 CRD.
"""

from __future__ import annotations

import pathlib

import pytest
import yaml
from conftest import stack_config
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for
from test_simulate_timeline import _arrival, _job, _mix

from ekstrain.assembly.jobs import render
from ekstrain.assembly.schedulers.volcano import volcano_values
from ekstrain.layout import topology
from ekstrain.simulate import engine
from ekstrain.simulate.timeline import simulate_timeline
from ekstrain.tooling import validation

PROD = stack_config("prod")
needs_build = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


def test_discovery_lists_the_eks_layers_top_down_then_the_hostname() -> None:
    config = volcano_values(PROD)["custom"]["controller_config_override"]
    (source,) = config["networkTopologyDiscovery"]
    assert source["source"] == "label" and source["enabled"] is True
    assert source["config"]["networkTopologyTypes"]["eks"] == [
        {"nodeLabel": "topology.k8s.aws/network-node-layer-1"},
        {"nodeLabel": "topology.k8s.aws/network-node-layer-2"},
        {"nodeLabel": "topology.k8s.aws/network-node-layer-3"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]


def test_the_constraint_follows_the_plan_traffic() -> None:
    assert topology.network_topology("p5.48xlarge", 8, {"pp": 4, "tp": 8}) == {"mode": "hard", "highestTierAllowed": 2}
    assert topology.network_topology("p5.48xlarge", 8, {"pp": 1, "cp": 2}) == {"mode": "hard", "highestTierAllowed": 2}
    assert topology.network_topology("p5.48xlarge", 8, {"pp": 1, "dp": 64}) == {"mode": "soft"}
    assert topology.network_topology("p5.48xlarge", 1, {"pp": 1}) is None  # one node: nothing to place
    assert topology.network_topology("g5.48xlarge", 8, {"pp": 4}) is None  # no layer labels, no HyperNodes


def test_tiers_spanned_counts_from_the_bottom_layer() -> None:
    a, b = ("nn-1", "nn-2-0", "nn-3-0"), ("nn-1", "nn-2-0", "nn-3-1")
    c = ("nn-1", "nn-2-1", "nn-3-4")
    assert topology.tiers_spanned([a]) == 0
    assert topology.tiers_spanned([a, a]) == 1  # two instances under one layer-3 network node
    assert topology.tiers_spanned([a, b]) == 2
    assert topology.tiers_spanned([a, c]) == 3
    # the stated layout: 16 instances per layer-3 node, 4 layer-3 nodes per layer-2 node
    assert topology.tiers_spanned([topology.layout(i) for i in range(8)]) == 1
    assert topology.tiers_spanned([topology.layout(i) for i in range(12, 20)]) == 2
    assert topology.tiers_spanned([topology.layout(i) for i in range(60, 68)]) == 3


def test_a_four_layer_type_counts_its_fourth_layer_as_tier_one() -> None:
    same = [("t", "m", "low", "l4")] * 3
    assert topology.tiers_spanned(same) == 1
    apart = [("t", "m", "low", f"l4-{i}") for i in range(3)]
    assert topology.tiers_spanned(apart) == 2


@pytest.mark.skipif(validation.upstream_dir() is None, reason="needs the pinned upstream CRDs")
def test_a_64_gpu_pipeline_gang_carries_a_hard_tier_and_validates() -> None:
    spec = spec_for("gpu-h100", nodes=8, name="llama", model="llama3-70b", global_batch=512, pp=4, tp=8, micro_batch=1)
    objects = render(spec, PROD, "volcano", FakePlanner())
    job = next(o for o in objects if o["kind"] == "Job")
    assert job["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert [p for o in objects for p in validation.validate_object(o, PROD.cluster.kubernetes_version)] == []


@needs_build
def test_the_chart_writes_the_discovery_as_a_mapping(prod_build: pathlib.Path) -> None:
    """templates/controllers.yaml writes the value with toYaml: a string value would reach volcano-controller.conf as
    one YAML block scalar, which the controller cannot read as its config."""
    path = prod_build / "charts" / "volcano--volcano" / "ConfigMap-volcano-system-volcano-controller-configmap.yaml"
    conf = yaml.safe_load(yaml.safe_load(path.read_text())["data"]["volcano-controller.conf"])
    assert conf == topology.discovery_config()


@pytest.mark.skipif(validation.upstream_dir() is None, reason="needs the pinned upstream CRDs")
def test_a_trainjob_runtime_gives_its_podgroup_the_same_tier() -> None:
    spec = spec_for("gpu-h100", nodes=8, name="llama", model="llama3-70b", global_batch=512, pp=4, tp=8, micro_batch=1)
    objects = render(spec, PROD, "trainjob", FakePlanner())
    runtime = next(o for o in objects if o["kind"] == "TrainingRuntime")
    assert runtime["spec"]["podGroupPolicy"]["volcano"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert [p for o in objects for p in validation.validate_object(o, PROD.cluster.kubernetes_version)] == []


@needs_build
def test_two_64_gpu_gangs_on_one_partition_each_span_one_tier(cluster: engine.Cluster) -> None:
    """GIVEN two 8-node (64-GPU) gangs on prod's gpu-a100 (16 x p4d) and the stated layout (16 instances under one
    layer-3 network node) WHEN played THEN each runs within tier 1 and the report says so."""
    one = _arrival(_job("gpu-a100", "volcano", 8, "gang-a"), 0, 3)
    two = _arrival(_job("gpu-a100", "volcano", 8, "gang-b"), 0, 3)
    report = simulate_timeline(cluster, _mix(one, two, hours=6))
    lines = [w for w in report.waits if w.startswith("TOPOLOGY")]
    assert sorted(lines) == [
        "TOPOLOGY Job/gang-a: 8 nodes span tier 1 (soft)",
        "TOPOLOGY Job/gang-b: 8 nodes span tier 1 (soft)",
    ], report.lines()
    assert report.problems == []
