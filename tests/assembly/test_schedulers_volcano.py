"""Volcano: one Queue per partition with the partition's limits, after the chart."""

from __future__ import annotations

import pytest
import yaml
from conftest import stack_config
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.assembly.schedulers import slurm, volcano
from ekstrain.facts import catalog
from ekstrain.infra.offline import Recording
from ekstrain.tooling import validation

QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"

# prod: p4d/p4de 96 vCPU 1152 GiB x16 (no node held by slurmd); p5 192 vCPU 2048 GiB x8; trn1/trn1n 128 vCPU
# 512 GiB x32 (16 trn1 nodes with 8 EFA + 16 trn1n nodes with 16 EFA = 384 EFA interfaces).
EXPECTED = {
    "gpu-a100": (2, {"cpu": "1536", "memory": "18432Gi", "nvidia.com/gpu": "128", "vpc.amazonaws.com/efa": "64"}),
    "gpu-h100": (4, {"cpu": "1536", "memory": "16384Gi", "nvidia.com/gpu": "64", "vpc.amazonaws.com/efa": "256"}),
    "trainium": (
        2,
        {"cpu": "4096", "memory": "16384Gi", "aws.amazon.com/neuron": "512", "vpc.amazonaws.com/efa": "384"},
    ),
}


def test_prod_queue_per_partition_with_partition_limits(prod_recording: Recording) -> None:
    recorded = {r.inputs["metadata"]["name"]: r for r in prod_recording.of_type(QUEUE)}
    assert sorted(recorded) == sorted(EXPECTED)
    for name, (weight, capability) in EXPECTED.items():
        spec = recorded[name].inputs["spec"]
        assert spec == {
            "weight": weight,
            "reclaimable": False,
            "capability": capability,
            "deserved": capability,
            "guarantee": {"resource": capability},
        }, name
        assert recorded[name].inputs["metadata"]["labels"] == {"ekstrain.io/partition": name}


def test_queues_follow_the_volcano_release(prod_recording: Recording) -> None:
    rel = next(r for r in prod_recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "volcano")
    assert (rel.inputs["namespace"], rel.inputs["version"]) == ("volcano-system", "1.15.1")
    assert rel.inputs["repositoryOpts"] == {"repo": "https://volcano-sh.github.io/helm-charts"}
    custom = rel.inputs["values"]["custom"]
    assert custom["default_ns"] == {"ekstrain.io/node-role": "system"}
    config = yaml.safe_load(custom["scheduler_config_override"])
    actions = [a.strip() for a in config["actions"].split(",")]
    plugins = [p["name"] for tier in config["tiers"] for p in tier["plugins"]]
    # Admission by queue capacity (guarantee = capability: no dependence on existing nodes); no proportion
    # (weight shares of shared cpu/memory/nvidia.com/gpu starved one partition's gang on another's jobs),
    # no overcommit (votes on idle resources, zero before Karpenter launches a node).
    assert actions == ["enqueue", "allocate", "backfill"]
    assert "capacity" in plugins and "proportion" not in plugins and "overcommit" not in plugins
    for component in ("admission", "scheduler", "controller"):  # not BestEffort on the system nodes
        assert custom[f"{component}_resources"]["requests"]["memory"], component
    for q in prod_recording.of_type(QUEUE):
        assert q.dependencies == [rel.urn]


def test_default_weight_is_one_and_non_efa_partitions_have_no_efa_capability() -> None:
    cfg = stack_config("dev")
    (q,) = volcano.queues(cfg)
    # dev: g5.8xlarge (1 A10G, 32 vCPU, 128 GiB, 1 EFA) x2
    dev = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "2", "vpc.amazonaws.com/efa": "2"}
    assert q["spec"] == {
        "weight": 1,
        "reclaimable": False,
        "capability": dev,
        "deserved": dev,
        "guarantee": {"resource": dev},
    }
    no_efa = cfg.model_copy(update={"partitions": [cfg.partitions[0].model_copy(update={"efa": False})]})
    assert "vpc.amazonaws.com/efa" not in volcano.queues(no_efa)[0]["spec"]["capability"]


@pytest.mark.skipif(validation.upstream_dir() is None, reason="upstream schemas absent")
@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_queues_and_values_validate(stack: str) -> None:
    for q in volcano.queues(stack_config(stack)):
        assert validation.validate_object(q, "1.34") == []
    assert validation.unknown_value_keys(volcano.volcano_values(), validation.chart_defaults("volcano")) == []


# ---- property: for any catalog partition, NodeSet and Queue agree on one node's resources ---------

EFA_TYPES = sorted(t.name for t in catalog.CATALOG.values() if t.efa_capable)


@settings(max_examples=40, deadline=None)
@given(instance=st.sampled_from(EFA_TYPES), max_nodes=st.integers(1, 64), efa=st.booleans(), weight=st.integers(1, 100))
def test_queue_capability_is_max_nodes_times_one_slurmd_pod(
    instance: str, max_nodes: int, efa: bool, weight: int
) -> None:
    base = stack_config("dev")
    it = catalog.get(instance)
    part = base.partitions[0].model_copy(
        update={
            "name": "p",
            "accelerator": it.family,
            "instance_types": [instance],
            "max_nodes": max_nodes,
            "efa": efa,
            "min_nodes": 0,
        }
    )
    cfg = base.model_copy(
        update={
            "partitions": [part],
            "schedulers": base.schedulers.model_copy(
                update={"volcano": base.schedulers.volcano.model_copy(update={"queue_weights": {"p": weight}})}
            ),
        }
    )
    (q,) = volcano.queues(cfg)
    pod = slurm.slurm_values(cfg)["nodesets"]["p"]["slurmd"]["resources"]
    assert pod["requests"] == pod["limits"]
    assert pod["limits"][it.accelerator_resource] == it.accelerator_count
    assert ("vpc.amazonaws.com/efa" in pod["limits"]) == efa
    devices = {k: v for k, v in pod["limits"].items() if k not in ("cpu", "memory")}
    assert {k: int(q["spec"]["capability"][k]) for k in devices} == {k: v * max_nodes for k, v in devices.items()}
    assert int(pod["limits"]["cpu"]) * max_nodes <= int(q["spec"]["capability"]["cpu"])  # allocatable < vCPUs
    assert q["spec"]["capability"]["cpu"] == str(it.vcpus * max_nodes)
    assert q["spec"]["weight"] == weight
