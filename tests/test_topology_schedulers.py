"""The one network topology reaches every scheduler: MPIJob and PyTorchJob workers, Volcano's scheduler, Slurm.

GIVEN a 64-GPU pipeline-parallel plan on prod's gpu-a100 (8 x p4d)
WHEN it is rendered as an MPIJob or a PyTorchJob
THEN its GPU pods prefer one network node, tier 1 first, then tier 2 (the operators build their own PodGroups, which
cannot carry networkTopology), and the objects validate against the pinned CRDs;
AND Volcano's scheduler runs the network-topology-aware plugin (without it a hard networkTopology is inert);
AND the Slurm chart values carry topology.conf with a switch for every NodeSet, TopologyPlugin=topology/tree, and each
NodeSet's slurmd registers under its switch.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import render
from ekstrain.assembly.schedulers import slurm, volcano
from ekstrain.layout import topology
from ekstrain.tooling import validation

PROD = stack_config("prod")
needs_crds = pytest.mark.skipif(validation.upstream_dir() is None, reason="needs the pinned upstream CRDs")
LAYER3 = "topology.k8s.aws/network-node-layer-3"
LAYER2 = "topology.k8s.aws/network-node-layer-2"


def _pipeline(name: str = "llama") -> Any:
    return spec_for("gpu-a100", nodes=8, name=name, model="llama3-70b", global_batch=512, pp=4, tp=8, micro_batch=1)


def _terms(pod_spec: dict[str, Any]) -> list[tuple[int, str, dict[str, str]]]:
    preferred = pod_spec["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    return [
        (t["weight"], t["podAffinityTerm"]["topologyKey"], t["podAffinityTerm"]["labelSelector"]["matchLabels"])
        for t in preferred
    ]


@needs_crds
def test_a_64_gpu_mpijob_prefers_one_network_node_for_its_workers() -> None:
    objects = render(_pipeline(), PROD, "mpijob", FakePlanner())
    job = next(o for o in objects if o["kind"] == "MPIJob")
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    selector = {"ekstrain.io/job": "llama", "training.kubeflow.org/job-role": "worker"}
    assert _terms(worker) == [(100, LAYER3, selector), (50, LAYER2, selector)]
    # the launcher runs mpirun on a CPU node: it has no network position to share
    assert "affinity" not in job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert [p for o in objects for p in validation.validate_object(o, PROD.cluster.kubernetes_version)] == []


@needs_crds
def test_a_64_gpu_pytorchjob_prefers_one_network_node_for_every_replica() -> None:
    objects = render(_pipeline(), PROD, "pytorchjob", FakePlanner())
    job = next(o for o in objects if o["kind"] == "PyTorchJob")
    for role in ("Master", "Worker"):
        spec = job["spec"]["pytorchReplicaSpecs"][role]["template"]["spec"]
        assert _terms(spec) == [(100, LAYER3, {"ekstrain.io/job": "llama"}), (50, LAYER2, {"ekstrain.io/job": "llama"})]
    assert [p for o in objects for p in validation.validate_object(o, PROD.cluster.kubernetes_version)] == []


def test_the_preference_is_never_required_and_stops_at_the_plans_tier() -> None:
    """Karpenter v1.14.1 cannot launch a node for a required pod-affinity term on a key no NodePool offers."""
    hard1 = topology.preferred_pod_affinity({"a": "b"}, {"mode": "hard", "highestTierAllowed": 1})
    assert hard1 is not None
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in hard1["podAffinity"]
    assert [
        t["podAffinityTerm"]["topologyKey"]
        for t in hard1["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    ] == [LAYER3]
    assert topology.preferred_pod_affinity({"a": "b"}, None) is None


def test_a_single_node_or_unlabelled_type_gets_no_affinity() -> None:
    one = render(spec_for("gpu-a100", nodes=1, name="one"), PROD, "mpijob", FakePlanner())
    job = next(o for o in one if o["kind"] == "MPIJob")
    assert "affinity" not in job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]


def test_volcano_runs_the_network_topology_plugin() -> None:
    """Regression: the scheduler config lacked it, so hard networkTopology gangs were placed on any nodes
    (volcano v1.15.1 session_plugins.go HyperNodeGradientForJobFn falls back to the cluster's top HyperNode)."""
    plugins = {p["name"]: p for tier in volcano.scheduler_config()["tiers"] for p in tier["plugins"]}
    nta = plugins["network-topology-aware"]
    assert nta["arguments"]["hypernode.binpack.normal-pod.enable"] is True
    assert "nvidia.com/gpu" in nta["arguments"]["hypernode.binpack.resources"]
    assert {"predicates", "nodeorder"} <= set(plugins)  # pod affinity filter and score


def test_slurm_values_carry_a_topology_for_every_nodeset() -> None:
    values = slurm.slurm_values(PROD)
    conf = values["configFiles"]["topology.conf"]
    assert values["controller"]["extraConfMap"]["TopologyPlugin"] == ["topology/tree"]
    switches = {}
    for line in conf.splitlines():
        if line.startswith("SwitchName="):
            fields = dict(f.split("=", 1) for f in line.split())
            switches[fields["SwitchName"]] = fields
    for part in PROD.partitions:
        sw = switches[f"eks-{part.name}"]
        assert sw["Nodes"] == f"{part.name}-[0-{part.max_nodes - 1}]"
        assert values["nodesets"][part.name]["extraConfMap"]["Topology"] == [f"default:eks-{part.name}"]
    assert switches["eks"]["Switches"].split(",") == [
        f"eks-{p.name}" for p in sorted(PROD.partitions, key=lambda p: p.name)
    ]
