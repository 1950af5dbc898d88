"""What practitioners run is searched: Megatron's ZeRO-2 (Megatron-FSDP optim_grads, Meta's sharding for Llama 3
405B) and one 90 % headroom rule for search and evaluate, so Meta's 405B layout comes out of `plan search`."""

import importlib
import json

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import Fleet, PlanError, evaluate, get_model, memory, plan, ranking, search
from ekstrain.planner.search import FRAMEWORK_ZERO_STAGES
from ekstrain.planner.training import MEGATRON

search_module = importlib.import_module("ekstrain.planner.search")  # the package exports the function as search
LLAMA_405B = get_model("llama3-405b")
FLEET_16K = Fleet.from_instance("p5.48xlarge", 2048)  # Meta's 16,384 H100 (Llama 3 paper Table 4)


def _is_metas(p) -> bool:
    # Llama 3 paper (arXiv 2407.21783) Table 4 at 16,384 GPUs and 8k: TP8 CP1 PP16 DP128, interleaved;
    # section 3.3.1: optimizer states and gradients sharded over DP (ZeRO-2)
    return (p.tp, p.pp, p.cp, p.dp, p.zero, p.recompute) == (8, 16, 1, 128, 2, "none") and p.vpp > 1


@pytest.fixture(scope="module")
def top5():
    return search(LLAMA_405B, FLEET_16K, 2048, 8192, top=5)


def test_metas_405b_layout_is_in_the_top_5_and_within_the_headroom(top5):
    metas = [p for p in top5 if _is_metas(p)]
    assert metas, [p.summary() for p in top5]
    assert metas[0].within_headroom and metas[0].memory.total <= memory.HEADROOM * FLEET_16K.rank_memory_bytes


def test_megatron_search_tries_zero_2():
    assert 2 in FRAMEWORK_ZERO_STAGES[MEGATRON]


def test_megatron_zero2_memory_shards_gradients_and_holds_one_layers_gradient_whole():
    # GIVEN Meta's layout WHEN evaluated at ZeRO-1 and ZeRO-2 THEN ZeRO-2's fp32 gradients are 4/d bytes per
    # parameter instead of 4, and a buffer of one layer's bf16 gradient (tp 8) is added until its reduce-scatter
    layout = dict(tp=8, pp=16, dp=128, cp=1, vpp=8, micro_batch=1, recompute="none", sequence_parallel=True)
    one = evaluate(LLAMA_405B, FLEET_16K, 2048, 8192, zero=1, **layout)
    two = evaluate(LLAMA_405B, FLEET_16K, 2048, 8192, zero=2, **layout)
    assert two.memory.grads == pytest.approx(one.memory.grads / 128)
    assert two.memory.buffers - one.memory.buffers == pytest.approx(2 * LLAMA_405B.layer_params / 8)
    assert not one.within_headroom and two.within_headroom


def test_zero2_is_tried_only_where_the_distributed_optimizer_does_not_fit_the_headroom():
    # Llama 3 8B on 4 p5: ZeRO-1 fits everything within the headroom, so no ZeRO-2 plan is built (it would only
    # add a reduce-scatter per micro-batch)
    plans = search(get_model("llama3-8b"), Fleet.from_instance("p5.48xlarge", 4), 128, 4096, zero_stages=(1, 2))
    fitting_at_1 = {
        (p.tp, p.pp, p.cp, p.vpp, p.micro_batch, p.recompute) for p in plans if p.zero == 1 and p.within_headroom
    }
    at_2 = {(p.tp, p.pp, p.cp, p.vpp, p.micro_batch, p.recompute) for p in plans if p.zero == 2}
    assert not fitting_at_1 & at_2


def test_one_headroom_constant_for_search_ranking_and_evaluate():
    assert ranking.HEADROOM is memory.HEADROOM and plan.MEMORY_LIMIT == memory.HEADROOM == 0.90


def test_evaluate_reports_a_plan_over_the_headroom(capsys):
    # Meta's layout with Megatron's distributed optimizer (ZeRO-1) and vpp 1 fits in 80 GB at 98 % of HBM:
    # evaluate says it fits but not within the headroom search ranks by
    argv = ["plan", "evaluate", "--model", "llama3-405b", "--instance", "p5.48xlarge", "--nodes", "2048"]
    argv += ["--global-batch", "2048", "--seq-len", "8192", "--tp", "8", "--pp", "16", "--dp", "128"]
    argv += ["--micro-batch", "1", "--recompute", "none", "--sequence-parallel", "--zero", "1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    row = out[0] if isinstance(out, list) else out
    assert row["fits"] is True and row["within_headroom"] is False and row["memory_used_fraction"] > 0.9
    assert any("above the 90% headroom" in limit for limit in row["limits"])


@pytest.mark.parametrize(
    ("name", "nodes", "batch", "seq"),
    [
        ("mixtral-8x7b", 64, 1024, 4096),
        ("llama3-405b", 2048, 128, 131072),
        ("llama3-8b", 8, 512, 8192),
        ("llama3-405b", 2048, 2048, 8192),
        ("mixtral-8x7b", 2048, 2048, 4096),
        ("deepseek-v3", 2048, 4096, 4096),
        ("qwen3-235b-a22b", 32, 8192, 4096),
    ],
)
def test_cp_pruning_keeps_the_top_ten(monkeypatch, name, nodes, batch, seq):
    # the search stops raising CP for a TP degree once it got slower and is 2x off the best, or (with top) 10 %
    # past the top-th, and a layout's micro-batch once it got slower and is that far behind: the ten best plans are
    # those of the unpruned search
    fleet = Fleet.from_instance("p5.48xlarge", nodes)
    pruned = [p.summary() for p in search(get_model(name), fleet, batch, seq, top=10)]
    monkeypatch.setattr(search_module, "CP_HOPELESS", float("inf"))
    monkeypatch.setattr(search_module, "PRUNE_OFF", True)
    full = [p.summary() for p in search(get_model(name), fleet, batch, seq, top=10)]
    assert pruned == full


def test_tp_across_whole_nodes_is_priced_over_the_network_and_a_partial_node_refused():
    # Llama 3 405B at TP16 over two p5 nodes (evaluate only; the search keeps TP inside a node)
    fleet = Fleet.from_instance("p5.48xlarge", 128)
    layout = dict(pp=8, cp=1, micro_batch=1, recompute="none", sequence_parallel=True, zero=1)
    wide = evaluate(LLAMA_405B, fleet, 512, 8192, tp=16, dp=8, **layout)
    inside = evaluate(LLAMA_405B, fleet, 512, 8192, tp=8, dp=16, **layout)
    assert wide.time.tp_comm > 2 * inside.time.tp_comm  # 50 GB/s of EFA a GPU against NVLink
    assert wide.memory.params < inside.memory.params
    with pytest.raises(PlanError, match="does not span whole nodes"):
        evaluate(LLAMA_405B, Fleet.from_instance("p5.48xlarge", 3), 24, 8192, tp=12, dp=1, **{**layout, "pp": 2})
