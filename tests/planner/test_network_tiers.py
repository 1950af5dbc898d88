"""A group spanning many nodes priced with its EC2 network tier's share of the EFA bandwidth
(ekstrain/layout/topology.py
``ring_bandwidth_fraction``), when the fleet is the stack's own (job render) or ``plan --network-tiers`` asks."""

from __future__ import annotations

import json
import pathlib

import pytest

from ekstrain.cli import main as cli
from ekstrain.layout import topology
from ekstrain.planner import Fleet, ParallelConfig, build_plan, get_model
from ekstrain.planner.training import TrainingSpec

RANKS = 8  # p5.48xlarge: 8 GPUs per node


@pytest.mark.parametrize("nodes", [2, 16, 17, 64, 65, 512])
def test_a_group_over_n_nodes_keeps_its_tiers_share(nodes: int) -> None:
    flat = Fleet.from_instance("p5.48xlarge", 1024)
    tiered = Fleet.from_instance("p5.48xlarge", 1024, network_tiers=True)
    share = tiered.group_bytes_per_s(nodes * RANKS) / flat.group_bytes_per_s(nodes * RANKS)
    tier, fraction = topology.ring_bandwidth_fraction("p5.48xlarge", nodes)
    assert share == pytest.approx(fraction)
    # within one layer-3 network node nothing narrows; past it, each wider tier keeps less
    assert (share == 1.0) == (tier <= 1)
    assert tiered.group_bytes_per_s(RANKS) == flat.group_bytes_per_s(RANKS)  # in-node: NVLink either way


def test_a_data_parallel_ring_past_one_network_node_is_slower_only_when_tiers_are_priced() -> None:
    model = get_model("llama3-8b")
    training = TrainingSpec(global_batch=256, seq_len=8192)

    def step(nodes: int, tiers: bool) -> float:
        fleet = Fleet.from_instance("p5.48xlarge", nodes, network_tiers=tiers)
        cfg = ParallelConfig(tp=1, pp=1, dp=nodes * RANKS, micro_batch=1, zero=1)
        return build_plan(model, fleet, training, cfg).step_time_s

    assert step(16, True) == step(16, False)  # 16 nodes: one layer-3 node under the stated layout
    assert step(32, True) > step(32, False)


def test_network_tiers_needs_an_instance(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = tmp_path / "fleet.json"
    fleet.write_text(
        json.dumps(
            {
                "accelerators_per_node": 8,
                "peak_tflops_bf16": 989,
                "hbm_gib": 80,
                "hbm_gbytes_per_s": 3350,
                "intra_node_gbytes_per_s": 900,
                "inter_node_gbits_per_s": 3200,
                "generation": "h100",
            }
        )
    )
    argv = ["plan", "search", "--model", "llama3-8b", "--fleet-json", str(fleet), "--nodes", "4"]
    code = cli.main([*argv, "--global-batch", "64", "--seq-len", "8192", "--network-tiers"])
    err = capsys.readouterr().err
    assert code == 2 and "--network-tiers needs --instance" in err and "Traceback" not in err
    # and with --instance it prices (a small fleet: one network node, the same plans)
    assert (
        cli.main(
            [
                "plan",
                "search",
                "--model",
                "llama3-8b",
                "--instance",
                "p5.48xlarge",
                "--nodes",
                "2",
                "--global-batch",
                "64",
                "--seq-len",
                "8192",
                "--network-tiers",
            ]
        )
        == 0
    )


def test_job_render_prices_the_stacks_own_network() -> None:
    from ekstrain.assembly.jobs.planning import RealPlanner

    assert RealPlanner()._fleet("p5.48xlarge", 32).network_topology == "p5.48xlarge"
