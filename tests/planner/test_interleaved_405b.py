"""Interleaved pipelines as Meta ran Llama 3 405B: Megatron-core's in-flight count, the memory-balanced split
(one layer fewer on the first and last stage: the end chunks hold no layer at one layer per virtual stage),
Meta's sharding (optimizer states and gradients over DP), and the published throughput."""

import pytest
from support.planner import searched

from ekstrain.planner import Fleet, calibration, evaluate, get_model
from ekstrain.planner.memory import held_layers
from ekstrain.planner.parallel import ParallelConfig

LLAMA_405B = get_model("llama3-405b")
META = [(8192, 2048, 8192, 1, 430), (16384, 2048, 8192, 1, 400), (16384, 128, 131072, 16, 380)]
"""Llama 3 paper Table 4: GPUs, sequences per step (16M tokens), sequence, CP, TFLOP/s per GPU."""


def _meta(gpus: int, global_batch: int, seq_len: int, cp: int, **over: object):
    layout: dict = dict(tp=8, pp=16, cp=cp, dp=gpus // (128 * cp), vpp=8, zero=2, micro_batch=1, recompute="none")
    layout.update(over)
    return evaluate(
        LLAMA_405B,
        Fleet.from_instance("p5.48xlarge", gpus // 8),
        global_batch,
        seq_len,
        sequence_parallel=True,
        **layout,
    )


def test_one_layer_per_virtual_stage_leaves_the_end_chunks_empty():
    # GIVEN 126 layers on 16 stages of 8 virtual stages WHEN Megatron-core's interleaved schedule holds its
    # warm-up passes THEN stage 0 holds 2*15 + 7*16 + 1 = 143 passes, 31 of them on its empty first chunk
    # (only the embedding), so 112 layer-micro-batches; stage 1 holds 141 passes of one layer
    p = ParallelConfig(tp=8, pp=16, dp=64, micro_batch=1, vpp=8)
    assert p.stage_layers(126) == (7, 8)
    assert held_layers(p, 126, 32, 0) == 112
    assert held_layers(p, 126, 32, 1) == 141
    # as many micro-batches as stages: every forward runs first, 16 x 8 passes, 16 of them empty on stage 0
    assert held_layers(p, 126, 16, 0) == 16 * 7 and held_layers(p, 126, 16, 1) == 16 * 8


@pytest.mark.parametrize(("gpus", "global_batch", "seq_len", "cp", "tflops"), META)
def test_metas_layouts_fit_in_80_gb_and_land_within_15_percent(gpus, global_batch, seq_len, cp, tflops):
    plan = _meta(gpus, global_batch, seq_len, cp)
    assert plan.fits and plan.memory.total <= 80 * 2**30, plan.memory.gib()
    published = calibration._llama3_tokens(tflops, seq_len)
    assert abs(plan.tokens_per_s / gpus / published - 1) <= 0.15


def test_metas_layouts_land_within_15_percent_when_metas_source_is_left_out(left_out):
    llama3 = [r for r in left_out if r.source == calibration._LLAMA3]
    assert len(llama3) == 3 and all(abs(r.error) <= 0.15 for r in llama3)


def test_without_gradient_sharding_the_interleaved_layout_does_not_fit():
    # Megatron's distributed optimizer keeps the whole fp32 gradient buffer: 11.9 GiB more per GPU
    assert not _meta(8192, 2048, 8192, 1, zero=1).fits


def test_the_search_tries_interleaving_and_the_balanced_split_for_405b():
    plans = searched("llama3-405b", "p5.48xlarge", 2048, 2048, 8192, top=10)
    assert plans[0].vpp > 1 and plans[0].pp == 16 and plans[0].parallel.stage_layers(126) == (7, 8)
    assert plans[0].vpp == 8  # one layer per virtual stage: the end chunks hold no layer (Meta's split)


def test_megatron_args_use_the_embedding_and_loss_in_split_flags():
    args = _meta(8192, 2048, 8192, 1).megatron_args()
    assert "--account-for-embedding-in-pipeline-split" in args and "--account-for-loss-in-pipeline-split" in args
    assert args[args.index("--num-virtual-stages-per-pipeline-rank") + 1] == "8"
    assert "--decoder-first-pipeline-num-layers" not in args
    assert args[args.index("--data-parallel-sharding-strategy") + 1] == "optim_grads"
