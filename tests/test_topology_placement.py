"""The simulator places gangs within the network tier their template asks for, or they wait.

GIVEN prod's gpu-a100 (16 x p4d.24xlarge) and the stated layout (ekstrain/layout/topology.py LAYOUTS), or a mix's
networkLayout that leaves fewer instances under each network node
WHEN 64-GPU gangs (8 nodes) are played
THEN each lands within one tier when the layout allows and the report says which tier it spans; a hard gang that no
tier-2 HyperNode can hold waits (Volcano keeps it pending), a soft one spreads and says so; without Volcano's
network-topology-aware plugin a hard constraint is inert and a wider span is a PROBLEM.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import pytest
import yaml
from conftest import REPO
from support.simulate import HELM
from test_simulate_timeline import _arrival, _job, _mix

from ekstrain.layout import topology
from ekstrain.simulate import engine, volcano
from ekstrain.simulate import topology as net_topology
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.mix import read_mix
from ekstrain.simulate.timeline import Report, simulate_timeline
from ekstrain.tooling import validation

pytestmark = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)
NARROW = {"p4d.24xlarge": (4, 1)}
"""4 instances under each layer-3 network node, one layer-3 node per layer-2 node: an 8-node gang needs tier 3."""


def _pipeline(name: str) -> dict[str, Any]:
    """A 64-GPU Megatron-style plan (pp=4): hard, highestTierAllowed 2."""
    return _job("gpu-a100", "volcano", 8, name, model="llama3-70b", pp=4, tp=8, micro_batch=1)


def _topology(report: Report) -> list[str]:
    return sorted(w for w in report.waits if w.startswith("TOPOLOGY"))


def test_two_hard_64_gpu_gangs_each_within_one_tier(cluster: engine.Cluster) -> None:  # noqa: F811
    a, b = _pipeline("gang-a"), _pipeline("gang-b")
    assert a["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    report = simulate_timeline(cluster, _mix(_arrival(a, 0, 3), _arrival(b, 0, 3), hours=6))
    assert _topology(report) == [
        "TOPOLOGY Job/gang-a: 8 nodes span tier 1 (hard: tier <= 2)",
        "TOPOLOGY Job/gang-b: 8 nodes span tier 1 (hard: tier <= 2)",
    ], report.lines()
    assert report.problems == []


def test_a_hard_gang_the_layout_cannot_hold_in_its_tier_waits(cluster: engine.Cluster) -> None:  # noqa: F811
    report = simulate_timeline(cluster, _mix(_arrival(_pipeline("held"), 0, 3), hours=6, network_layout=NARROW))
    [job] = [j for j in report.jobs if j.name == "Job/held"]
    assert job.started_at is None, report.lines()
    assert "networkTopology hard, highestTierAllowed 2: no tier-2 HyperNode has room" in job.last_wait
    assert _topology(report) == []


def test_a_soft_gang_the_layout_cannot_hold_in_one_tier_spreads_and_says_so(cluster: engine.Cluster) -> None:  # noqa: F811
    soft = _job("gpu-a100", "volcano", 8, "spread")
    assert soft["spec"]["networkTopology"] == {"mode": "soft"}
    report = simulate_timeline(cluster, _mix(_arrival(soft, 0, 3), hours=6, network_layout=NARROW))
    assert _topology(report) == [
        "TOPOLOGY Job/spread: 8 nodes span tier 3 (soft; no tier-2 HyperNode had room for all its pods)"
    ], report.lines()
    assert report.problems == []


def test_without_the_plugin_a_hard_constraint_is_inert_and_a_problem(cluster: engine.Cluster) -> None:  # noqa: F811
    """The scheduler config main had before: no network-topology-aware plugin."""
    config = volcano.parse_config(
        "actions: enqueue, allocate, backfill\ntiers:\n"
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}, {name: binpack}]\n"
    )
    old = dataclasses.replace(cluster, scheduler_config=config)
    report = simulate_timeline(old, _mix(_arrival(_pipeline("inert"), 0, 3), hours=6, network_layout=NARROW))
    assert _topology(report) == [
        "TOPOLOGY Job/inert: 8 nodes span tier 3 (hard: tier <= 2; not enforced: the scheduler config has no "
        "network-topology-aware plugin)"
    ], report.lines()
    assert any("wider than its hard networkTopology" in p for p in report.problems)


def test_the_example_mix_places_each_gang_within_one_tier(
    cluster: engine.Cluster,  # noqa: F811
    prod_build: pathlib.Path,  # noqa: F811
    tmp_path: pathlib.Path,
) -> None:
    """GIVEN examples/mix-topology-prod.yaml with its two gangs rendered for prod (as examples/topology/render.sh
    does, with the test planner) WHEN played THEN each runs within tier 1 and its TOPOLOGY line says so; with the
    narrow networkLayout its comment gives, the hard gang waits and the MPIJob spreads over tier 3, saying so."""
    doc = yaml.safe_load((REPO / "examples" / "mix-topology-prod.yaml").read_text())
    script = (REPO / "examples" / "topology" / "render.sh").read_text()
    gangs = {
        "llama3-70b-pipeline-volcano.yaml": _pipeline("llama3-70b-pipeline"),
        "bert-large-dp-mpijob.yaml": _job("gpu-a100", "mpijob", 8, "bert-large-dp", model="bert-large"),
    }
    for entry in doc["jobs"]:
        name = entry["file"].rsplit("/", 1)[1]
        assert f'"$OUT/{name}"' in script, name
        entry["file"] = str(tmp_path / name)
        (tmp_path / name).write_text(yaml.safe_dump(gangs[name]))
    played = tmp_path / "mix.yaml"
    played.write_text(yaml.safe_dump(doc))
    report = simulate_timeline(cluster, read_mix(played, prod_build))
    assert _topology(report) == [
        "TOPOLOGY Job/llama3-70b-pipeline: 8 nodes span tier 1 (hard: tier <= 2)",
        "TOPOLOGY MPIJob/bert-large-dp: 8 nodes span tier 1 (soft)",
    ], report.lines()
    assert report.problems == [], report.lines()
    doc["networkLayout"] = {"p4d.24xlarge": {"nodesPerLayer3": 4, "layer3PerLayer2": 1}}
    played.write_text(yaml.safe_dump(doc))
    report = simulate_timeline(cluster, read_mix(played, prod_build))
    assert _topology(report) == [
        "TOPOLOGY MPIJob/bert-large-dp: 8 nodes span tier 3 (soft; no tier-2 HyperNode had room for all its pods)"
    ], report.lines()
    [held] = [j for j in report.jobs if j.name == "Job/llama3-70b-pipeline"]
    assert held.started_at is None and "no tier-2 HyperNode has room" in held.last_wait


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ({"g5.48xlarge": {"nodesPerLayer3": 4}}, "use one of"),
        ({"p4d.24xlarge": {"nodesPerLayer3": 0}}, "whole number from 1"),
        ({"p4d.24xlarge": {"perL3": 4}}, "nodesPerLayer3"),
        ([], "instance type"),
    ],
)
def test_a_bad_network_layout_names_the_key(value: object, fix: str) -> None:
    with pytest.raises(InputError) as err:
        net_topology.parse_layout("mix.yaml: networkLayout", value)
    assert fix in err.value.report() and "networkLayout" in err.value.report()


def test_the_planner_function_prices_the_tier_a_packed_ring_spans() -> None:
    assert topology.ring_bandwidth_fraction("p5.48xlarge", 1) == (0, 1.0)
    assert topology.ring_bandwidth_fraction("p5.48xlarge", 16) == (1, 1.0)
    assert topology.ring_bandwidth_fraction("p5.48xlarge", 17) == (2, 0.5)
    assert topology.ring_bandwidth_fraction("p5.48xlarge", 65) == (3, 0.25)
    assert topology.ring_bandwidth_fraction("g5.48xlarge", 64) == (1, 1.0)  # no EC2 topology: no tier narrows it


def test_a_trainjob_is_held_to_its_runtimes_tier(cluster: engine.Cluster) -> None:  # noqa: F811
    """Regression: the TrainJob's tier is in its TrainingRuntime (podGroupPolicy.volcano), not in the TrainJob; the
    simulator read only the TrainJob and placed it with no constraint."""
    job = _job("gpu-a100", "trainjob", 8, "tj", model="llama3-70b", pp=4, tp=8, micro_batch=1)
    report = simulate_timeline(cluster, _mix(_arrival(job, 0, 3), hours=6, network_layout=NARROW))
    [played] = [j for j in report.jobs if j.name == "TrainJob/tj"]
    assert played.started_at is None, report.lines()
    assert "networkTopology hard, highestTierAllowed 2" in played.last_wait


def test_mpijob_workers_preferring_one_network_node_land_within_one_tier(cluster: engine.Cluster) -> None:  # noqa: F811
    job = _job("gpu-a100", "mpijob", 8, "mpi", model="llama3-70b", pp=4, tp=8, micro_batch=1)
    report = simulate_timeline(cluster, _mix(_arrival(job, 0, 3), hours=6))
    assert _topology(report) == ["TOPOLOGY MPIJob/mpi: 8 nodes span tier 1 (soft)"], report.lines()


def test_the_slurm_chart_renders_topology_for_every_nodeset(prod_build: pathlib.Path) -> None:  # noqa: F811
    """helm template of the pinned slurm chart: topology.conf in the controller's config files, TopologyPlugin in
    slurm.conf, and every NodeSet's slurmd registering under its switch (validated with the rest of the render)."""
    charts = prod_build / "charts" / "slurm--slurm"
    files = yaml.safe_load((charts / "ConfigMap-slurm-slurm-config-extra.yaml").read_text())["data"]
    controller = yaml.safe_load((charts / "Controller-slurm-slurm.yaml").read_text())
    assert "TopologyPlugin=topology/tree" in controller["spec"]["extraConf"]
    nodesets = {
        yaml.safe_load(p.read_text())["metadata"]["name"]: yaml.safe_load(p.read_text())
        for p in charts.glob("NodeSet-*.yaml")
    }
    assert len(nodesets) == 3
    for name, ns in nodesets.items():
        part = name.removeprefix("slurm-worker-")
        assert f"SwitchName=eks-{part} Nodes={part}-[0-" in files["topology.conf"]
        assert f"Topology=default:eks-{part}" in ns["spec"]["extraConf"]
