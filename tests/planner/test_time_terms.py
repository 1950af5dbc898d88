"""Planner v3 time terms: attention kernels, FP8 casts, GEMM shape, collectives, per-framework DP."""

import pytest

from ekstrain.planner import Fleet, attention, comm, evaluate, get_model
from ekstrain.planner.memory import model_state_bytes
from ekstrain.planner.perf import _gemm

P5 = Fleet.from_instance("p5.48xlarge", 16)


def test_attention_reproduces_the_published_kernel_table_and_plateaus():
    # FA3 paper Figure 5: cuDNN causal at 8k = 529 TFLOP/s of H100's 989
    assert attention.forward_fraction("h100", attention.CUDNN, 128, 8192, True) == pytest.approx(529 / 989)
    # between points: monotone in log(seq); beyond 16k: flat; causal below non-causal
    assert (
        attention.forward_fraction("h100", attention.FA3, 128, 3000, True)
        < attention.forward_fraction("h100", attention.FA3, 128, 6000, True)
        < attention.forward_fraction("h100", attention.FA3, 128, 16384, True)
        == attention.forward_fraction("h100", attention.FA3, 128, 131072, True)
    )
    assert attention.forward_fraction("a100", attention.FA2, 128, 16384, False) == pytest.approx(0.73)
    assert attention.forward_fraction("h100", attention.FA2, 64, 4096, True) < attention.forward_fraction(
        "h100", attention.FA2, 128, 4096, True
    )


def test_framework_picks_the_kernel():
    assert attention.kernel_for("h100", "megatron") == attention.CUDNN
    assert attention.kernel_for("h100", "fsdp") == attention.FA2  # PyTorch SDPA's flash backend
    assert attention.kernel_for("trainium1", "megatron") is None


def _plan(model, seq, precision="bf16", nodes=16, **layout):
    fleet = Fleet.from_instance("p5.48xlarge", nodes)
    return evaluate(get_model(model), fleet, 128, seq, precision=precision, **layout)


def test_published_mfu_falls_from_8k_to_128k_on_metas_layouts():
    # Meta measured 400 -> 380 TFLOP/s on 16k GPUs going from 8k (CP1) to 128k (CP16): attention below
    # GEMM speed makes the published MFU fall while the full-square convention rises
    fleet = Fleet.from_instance("p5.48xlarge", 2048)
    layout = {"tp": 8, "pp": 16, "vpp": 8, "zero": 2, "micro_batch": 1, "sequence_parallel": True}
    short = evaluate(get_model("llama3-405b"), fleet, 2048, 8192, dp=128, **layout)
    long = evaluate(get_model("llama3-405b"), fleet, 128, 131072, dp=8, cp=16, **layout)
    assert long.mfu < short.mfu
    assert long.mfu_full_square > short.mfu_full_square  # the old convention rose


def test_fp8_speedup_grows_with_model_size():
    # casts are O(mk + mn) against the GEMM's O(mnk): small models gain less from FP8 (NeMo's
    # published layouts of Llama 3 8B and GPT-3 175B on 64 H100)
    def speedup(model, seq, **layout):
        bf16 = _plan(model, seq, nodes=8, **layout)
        return bf16.step_time_s / _plan(model, seq, "fp8", nodes=8, **layout).step_time_s

    small = speedup("llama3-8b", 8192, tp=1, pp=1, dp=64, micro_batch=1, zero=1)
    large = speedup("gpt3-175b", 2048, tp=4, pp=8, dp=2, vpp=6, micro_batch=1, zero=1, sequence_parallel=True)
    assert 1.0 < small < large < 2.0


def test_wave_quantization_charges_a_whole_last_wave():
    peak, hbm = 500e12, 3e15  # compute-bound: the roofline stays out of it
    full_wave = _gemm(128 * 132, 128, 8192, peak, hbm, sms=132)  # exactly one wave of 132 tiles
    one_more = _gemm(128 * 133, 128, 8192, peak, hbm, sms=132)  # 133 tiles: two waves
    assert one_more == pytest.approx(2 * full_wave)
    assert _gemm(128 * 133, 128, 8192, peak, hbm, sms=0) == pytest.approx(full_wave * 133 / 132)


def test_reduce_scatter_is_a_flat_ring_across_nodes():
    links = comm.Links.of(P5, 0.8, 0.8)
    small = 1e3  # latency-bound: n - 1 network steps, not (k - 1) NVLink + (nodes - 1) network
    assert comm.reduce_scatter(links, small, 128, 1) > 127 * comm.RING_STEP_NETWORK_S
    big = 1e10  # bandwidth: (n-1)/n of the buffer over the node's NICs
    expected = (
        comm.BASE_LATENCY_S + 127 * comm.RING_STEP_NETWORK_S + 127 / 128 * big / min(links.intra, 8 * links.network)
    )
    assert comm.reduce_scatter(links, big, 128, 1) == pytest.approx(expected, rel=0.01)


def test_deepspeed_zero3_exposes_more_traffic_than_fsdp_at_small_batch():
    layout = {"tp": 1, "pp": 1, "dp": 128, "micro_batch": 1, "recompute": "full", "zero": 3}
    fsdp = evaluate(get_model("llama3-8b"), P5, 128, 4096, framework="fsdp", **layout)
    deepspeed = evaluate(get_model("llama3-8b"), P5, 128, 4096, framework="deepspeed", **layout)
    assert deepspeed.time.dp_comm > fsdp.time.dp_comm > 0  # FSDP: only the edge layers exposed


def test_hsdp_shards_within_the_node_and_all_reduces_across():
    layout = {"tp": 1, "pp": 1, "dp": 128, "micro_batch": 1, "recompute": "full", "zero": 3}
    hsdp = evaluate(get_model("llama3-8b"), P5, 128, 4096, framework="hsdp", **layout)
    fsdp = evaluate(get_model("llama3-8b"), P5, 128, 4096, framework="fsdp", **layout)
    params = hsdp.memory.params / 4  # fp32 sharded weights
    w, g, o = model_state_bytes(params * 8, 3, 8, framework="hsdp")
    assert (hsdp.memory.params, hsdp.memory.grads, hsdp.memory.optimizer) == pytest.approx((w, g, o), rel=1e-6)
    assert hsdp.memory.optimizer == pytest.approx(16 * fsdp.memory.optimizer)  # 8 shards, not 128


def test_triton_flash_attention_runs_at_fa2_over_the_published_speedup():
    # GIVEN FlashAttention-2's published 1.3-2.5x speed-up over FlashAttention in Triton (Dao 2023 section 4.1)
    # WHEN a run names the Triton kernel THEN its attention runs at FA2's throughput / sqrt(1.3 x 2.5)
    from ekstrain.planner import attention

    fa2 = attention.forward_fraction("a100", attention.FA2, 128, 8192, True)
    triton = attention.forward_fraction("a100", attention.FA_TRITON, 128, 8192, True)
    assert triton == pytest.approx(fa2 / (1.3 * 2.5) ** 0.5)
