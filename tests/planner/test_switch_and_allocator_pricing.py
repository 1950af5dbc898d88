"""The FP8 recipe, the BF16 end layers and activation offload are priced (each in the functional form perf.py and
memory.py state), the caching allocator's reserved-over-allocated is itemised in the memory breakdown, and search,
ranking and evaluate apply one headroom rule to one total."""

import dataclasses
import json

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import Fleet, PlanError, Software, comm, evaluate, get_model, memory, perf, ranking, search
from ekstrain.planner.efficiency import efficiency_for
from ekstrain.planner.fleet import BF16, FP8, GIB
from ekstrain.planner.plan import Plan

LLAMA_8B = get_model("llama3-8b")
P5 = Fleet.from_instance("p5.48xlarge", 2)
B200 = Fleet.from_instance("p6-b200.48xlarge", 2)
SEQ, BATCH = 8192, 64
# PP 1, no recompute: compute = m x layers x (forward + backward) of one layer, nothing else in it.
TP4 = dict(tp=4, pp=1, dp=4, micro_batch=1, recompute="none", sequence_parallel=True, zero=1)


def _plan(fleet=P5, precision=FP8, software=None, efficiency=None, **layout):
    return evaluate(
        LLAMA_8B,
        fleet,
        BATCH,
        SEQ,
        precision=precision,
        software=software,
        efficiency=efficiency,
        **{**TP4, **layout},
    )


def _cast_traffic(fleet, tp):
    """Seconds per byte-per-element of casting one layer's GEMM operands: the inputs (m x k) in the forward, the
    output gradients (m x n) in the backward (perf._layer_gemms and _layer_costs)."""
    eff = efficiency_for(fleet)
    hbm = fleet.rank_hbm_bytes_per_s * eff.hbm
    shapes = perf._layer_shapes(LLAMA_8B, 1 * SEQ, tp, 1)
    forward = sum(c * m * k for c, m, _, k in shapes) / hbm
    backward = sum(c * m * n for c, m, n, _ in shapes) / hbm
    return forward, backward


def test_the_default_recipe_is_delayed_and_prices_as_before():
    assert Software().fp8_recipe == "delayed"
    default = _plan()
    assert _plan(software=Software(fp8_recipe="delayed")).time == default.time
    assert perf.FP8_RECIPE_CAST_BYTES["delayed"] == perf.FP8_CAST_BYTES == 4


def test_current_scaling_pays_its_amax_pass_and_tp_amax_reductions():
    delayed, tensorwise = _plan(), _plan(software=Software(fp8_recipe="tensorwise"))
    m, layers = delayed.grad_accum, LLAMA_8B.layers
    forward, backward = _cast_traffic(P5, 4)
    eff = efficiency_for(P5)
    links = comm.Links.of(P5, eff.intra_node, eff.network)
    amax = 2 * comm.all_reduce(links, 4.0, 4, 1)  # QKV/FC1 inputs forward, proj/FC2 output gradients backward
    # + 2 bytes an element: nvte_compute_amax reads the BF16 operand once more before the cast
    expected = m * layers * (2 * (forward + backward) + 2 * amax)
    assert tensorwise.time.compute - delayed.time.compute == pytest.approx(expected, rel=1e-9)
    assert expected > 0.005 * delayed.time.compute  # a visible cost, not rounding
    # without sequence parallelism no operand is sequence-sharded: no amax all-reduce, the read pass stays
    no_sp = dict(tp=1, dp=16, sequence_parallel=False)
    forward1, backward1 = _cast_traffic(P5, 1)
    gap = _plan(software=Software(fp8_recipe="tensorwise"), **no_sp).time.compute - _plan(**no_sp).time.compute
    assert gap == pytest.approx(_plan(**no_sp).grad_accum * layers * 2 * (forward1 + backward1), rel=1e-9)


def test_mxfp8_is_blackwell_only_and_pays_its_block_scales():
    with pytest.raises(PlanError, match="mxfp8 runs on Blackwell"):
        _plan(software=Software(fp8_recipe="mxfp8"))
    delayed = _plan(fleet=B200)
    mx = _plan(fleet=B200, software=Software(fp8_recipe="mxfp8"))
    forward, backward = _cast_traffic(B200, 4)
    expected = delayed.grad_accum * LLAMA_8B.layers * (2 / 32) * (forward + backward)
    assert mx.time.compute - delayed.time.compute == pytest.approx(expected, rel=1e-9)
    blockwise = _plan(software=Software(fp8_recipe="blockwise"))
    assert blockwise.time.compute - _plan().time.compute == pytest.approx(
        _plan().grad_accum * LLAMA_8B.layers * (8 / 128) * sum(_cast_traffic(P5, 4)), rel=1e-9
    )
    # BF16 plans have no casts: the recipe is not read
    assert _plan(precision=BF16, software=Software(fp8_recipe="tensorwise")).time == _plan(precision=BF16).time


def test_bf16_end_layers_run_at_bf16_speed():
    fp8 = _plan()
    ends = _plan(software=Software(fp8_bf16_layers=2))
    p = fp8.parallel
    eff = efficiency_for(P5)
    links = comm.Links.of(P5, eff.intra_node, eff.network)
    as_fp8 = perf._layer_costs(LLAMA_8B, P5, fp8.training, p, eff, links)
    as_bf16 = perf._layer_costs(LLAMA_8B, P5, perf.bf16_training(fp8.training), p, eff, links)
    per_layer = (as_bf16.forward + as_bf16.backward) - (as_fp8.forward + as_fp8.backward)
    assert per_layer > 0  # BF16 GEMMs at half the FP8 peak outweigh the casts they skip
    # PP 1: the stage holds both ends, 2 x 2 layers in BF16
    assert ends.time.compute - fp8.time.compute == pytest.approx(fp8.grad_accum * 4 * per_layer, rel=1e-9)
    assert _plan(software=Software(fp8_bf16_layers=1000)).time.compute == pytest.approx(
        _plan(precision=BF16).time.compute, rel=1e-9
    )  # every layer in BF16: the BF16 plan's compute (casts gone, output layer BF16 in both)
    # PP 2: one end on each edge stage; the slower stage sets the step
    pp2 = dict(pp=2, dp=2)
    assert _plan(software=Software(fp8_bf16_layers=1), **pp2).time.compute > _plan(**pp2).time.compute
    assert _plan(precision=BF16, software=Software(fp8_bf16_layers=2)).time == _plan(precision=BF16).time


def test_activation_offload_frees_its_layers_and_exposes_only_what_the_pass_cannot_hide():
    base = _plan(precision=BF16)
    offload = _plan(precision=BF16, software=Software(activation_offload_layers=8))
    per_layer = base.memory.activation_bytes_per_layer
    assert base.memory.activations - offload.memory.activations == pytest.approx(8 * per_layer, rel=1e-12)
    assert offload.memory.total < base.memory.total
    # at PCIe's 25 GB/s two layers' copies hide behind a 32-layer pass: no time
    hidden = _plan(precision=BF16, software=Software(activation_offload_layers=2))
    assert hidden.time.offload == 0.0 and hidden.time.total == pytest.approx(base.time.total, rel=1e-12)
    # a slow host link exposes max(0, N x copy - pass) in each direction, per micro-batch
    slow = dataclasses.replace(efficiency_for(P5), host_link_gbytes_per_s=1.0)
    exposed = _plan(precision=BF16, software=Software(activation_offload_layers=8), efficiency=slow)
    plain = _plan(precision=BF16, efficiency=slow)
    eff = slow
    links = comm.Links.of(P5, eff.intra_node, eff.network)
    costs = perf._layer_costs(LLAMA_8B, P5, plain.training, plain.parallel, eff, links)
    copy = per_layer / 1e9
    layers = LLAMA_8B.layers
    expected = plain.grad_accum * (
        max(0.0, 8 * copy - layers * costs.forward) + max(0.0, 8 * copy - layers * costs.backward)
    )
    assert expected > 0
    assert exposed.time.offload == pytest.approx(expected, rel=1e-9)
    assert exposed.to_json()["step_time_breakdown_s"]["offload"] == pytest.approx(expected, abs=1e-6)


def test_the_allocator_term_is_itemised_in_the_breakdown(capsys):
    plan = _plan(precision=BF16)
    page = memory.ALLOCATOR_LARGE_PAGE + memory.ALLOCATOR_SMALL_PAGE
    assert plan.memory.allocator == 2 * page  # compute stream + the overlapped DP communication stream
    assert _plan(precision=BF16, dp=1, tp=4, pp=4).memory.allocator == page  # no DP traffic: one stream
    parts = plan.memory
    assert parts.total == pytest.approx(
        parts.params + parts.grads + parts.optimizer + parts.activations + parts.buffers + parts.allocator
    )
    assert plan.to_json()["memory_gib"]["allocator"] == pytest.approx(2 * page / GIB, abs=1e-3)
    argv = ["plan", "evaluate", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--nodes", "2"]
    argv += ["--global-batch", "64", "--seq-len", "8192", "--tp", "4", "--pp", "1", "--dp", "4", "--micro-batch", "1"]
    argv += ["--recompute", "none", "--sequence-parallel"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "allocator 0.04," in capsys.readouterr().out  # 44 MiB, in the text breakdown
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memory_gib"]["allocator"] > 0


def _boundary_fleet():
    """A fleet whose capacity makes ``total / capacity <= 0.9`` and ``total <= 0.9 * capacity`` disagree for some
    total within a few ulps of the boundary (they do for about one capacity in eight)."""
    import math

    for tenth in range(800, 1000):
        fleet = dataclasses.replace(P5, hbm_gib=tenth / 10)
        capacity = fleet.rank_memory_bytes
        edge = memory.HEADROOM * capacity
        for step in range(-3, 4):
            total = edge + step * math.ulp(edge)
            if (total / capacity <= memory.HEADROOM) != (total <= memory.HEADROOM * capacity):
                return fleet, total
    raise AssertionError("no boundary capacity found")


def test_search_ranking_and_evaluate_apply_one_headroom_rule_at_the_boundary():
    fleet, total = _boundary_fleet()
    plan = _plan(precision=BF16)
    parts = plan.memory
    at_edge = dataclasses.replace(parts, buffers=parts.buffers + total - parts.total)
    assert at_edge.total == total
    boundary = Plan(LLAMA_8B, fleet, plan.training, plan.parallel, at_edge, plan.time, plan.flops)
    # the search pruned with total <= 0.9 x capacity while evaluate asked total / capacity <= 0.9: at this total
    # one accepted what the other refused
    assert boundary.within_headroom == (at_edge.total <= memory.HEADROOM * fleet.rank_memory_bytes)
    searched = memory.within_headroom(at_edge.total, fleet.rank_memory_bytes)  # search.py's call now
    assert boundary.within_headroom == searched
    assert ("of HBM (>" in " ".join(ranking._why_not_first(boundary, plan, False))) == (not searched)


def test_every_searched_plan_evaluates_to_the_same_total_and_headroom_verdict():
    found = search(LLAMA_8B, P5, BATCH, SEQ, precision="bf16", top=8)
    assert found
    for plan in found:
        again = evaluate(
            LLAMA_8B,
            P5,
            BATCH,
            SEQ,
            tp=plan.tp,
            pp=plan.pp,
            dp=plan.dp,
            cp=plan.cp,
            vpp=plan.vpp,
            micro_batch=plan.micro_batch,
            recompute=plan.recompute,
            sequence_parallel=plan.sequence_parallel,
            zero=plan.zero,
            offload_optimizer=plan.parallel.offload_optimizer,
        )
        assert again.memory.total == plan.memory.total
        assert again.within_headroom == plan.within_headroom


def test_deepspeed_offloads_every_checkpoint_whatever_n_says():
    layout = dict(tp=1, pp=1, dp=16, sequence_parallel=False, recompute="full", zero=3)
    plain = _plan(precision=BF16, framework="deepspeed", **layout)
    offload = _plan(precision=BF16, framework="deepspeed", software=Software(activation_offload_layers=1), **layout)
    assert plain.memory.activations > 0 and offload.memory.activations == 0.0  # cpu_checkpointing: all of them


def test_search_with_offload_returns_only_layouts_the_launcher_takes():
    """Megatron-core offloads without PP or recompute, DeepSpeed only checkpoints: the search used to return a PP
    plan that ``--emit megatron`` then refused."""
    offload = Software(activation_offload_layers=4)
    big = get_model("llama3-70b")
    megatron = search(big, P5, 64, SEQ, precision="bf16", top=20, software=offload)
    assert megatron and all(p.pp == 1 and p.recompute == "none" for p in megatron)
    assert all("--cpu-offloading-num-layers" in " ".join(p.megatron_args()) for p in megatron[:3])
    deepspeed = search(LLAMA_8B, P5, BATCH, SEQ, framework="deepspeed", top=20, software=offload)
    assert deepspeed and all(p.recompute != "none" for p in deepspeed)
    assert deepspeed[0].deepspeed_config()["activation_checkpointing"]["cpu_checkpointing"] is True
