"""Eager PyTorch's unfused elementwise kernels, counted (perf.elementwise_passes; docs/planner.md, fifth round)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ekstrain.planner import calibration, perf
from ekstrain.planner.calibration import model_for
from ekstrain.planner.errors import PlanError
from ekstrain.planner.training import (
    UNFUSED_ACTIVATION,
    UNFUSED_LAYOUT,
    UNFUSED_NORM,
    UNFUSED_OPS,
    UNFUSED_ROPE,
    UNFUSED_ROPE_MATRIX,
    TrainingSpec,
)


def _count(h: int, q: int, kv: int, f: int, norm: int, rope: int, act: int, layout: bool) -> float:
    """Bytes per token of one Llama layer's forward elementwise kernels, written out."""
    return (
        2 * norm * h + 12 * h + rope * (q + kv) + act * f + ((4 * h + (4 * (kv + q) if kv < q else 0)) if layout else 0)
    )


def test_fused_stacks_move_the_fitted_traffic():
    for name in ("llama2-7b", "llama3-405b", "mpt-7b", "gpt3-175b"):
        assert perf.elementwise_passes(model_for(name, 4096)) == 1.0


def test_counts_follow_the_stacks_code():
    llama2 = model_for("llama2-7b", 4096)  # MHA, SwiGLU 11,008
    h, f = 4096, 11008
    fused = _count(h, h, h, f, 4, 4, 6, False)
    fms = _count(h, h, h, f, 36, 36, 10, True)
    assert perf.elementwise_passes(llama2, calibration._FMS_EAGER) == pytest.approx(fms / fused)
    llama3 = model_for("llama3-8b", 8192)  # GQA: 8 of 32 heads, SwiGLU 14,336
    kv, f = 1024, 14336
    titan = _count(h, h, kv, f, 4, 20, 10, True)
    assert perf.elementwise_passes(llama3, calibration._TITAN_EAGER) == pytest.approx(
        titan / _count(h, h, kv, f, 4, 4, 6, False)
    )
    # MPT: F.layer_norm and GeLU are one kernel each in eager PyTorch; learned positions, no RoPE
    mpt = model_for("mpt-7b", 2048)
    assert perf.elementwise_passes(mpt, (UNFUSED_NORM, UNFUSED_ROPE, UNFUSED_ACTIVATION)) == 1.0


def test_eager_rows_as_their_code_reads():
    rows = calibration.MEASUREMENTS
    for m in rows:
        if m.source == calibration._FMS_MAR24:
            assert m.unfused == (UNFUSED_NORM, UNFUSED_ROPE_MATRIX, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
        elif m.source == calibration._TITAN_A100:
            # fused_rmsnorm in the 8B/13B configs, rmsnorm (tensor ops) in the 70B ones; compile = false in all
            expected = (UNFUSED_ROPE, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
            assert m.unfused == ((UNFUSED_NORM, *expected) if m.model.endswith("70b") else expected)
        elif m.source == calibration._TITAN_H100_2412:
            # the page's "FSDP" rows ran eager (its fused RMSNorm, as the A100 page's 8B), "+ torch.compile" fused
            eager = (UNFUSED_ROPE, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
            assert m.unfused in (eager, ())
            assert (m.unfused == ()) is (m.published_tokens_per_s_per_device in (6667, 6514))
        elif m.source == calibration._HF_DS_FSDP:
            # transformers' eager Llama: LlamaRMSNorm as tensor ops, rotate-half RoPE, act_fn(gate) * up apart
            assert m.unfused == (UNFUSED_NORM, UNFUSED_ROPE, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
        else:  # Megatron family, DeepSpeed on Megatron's model, NxD, llm-foundry's MPT, torch.compile rows
            assert m.unfused == ()


def test_unfused_ops_are_checked():
    assert TrainingSpec(8, 4096, unfused=UNFUSED_OPS[:1]).unfused == (UNFUSED_NORM,)
    with pytest.raises(PlanError, match="unfused ops"):
        TrainingSpec(8, 4096, unfused=("softmax",))
    with pytest.raises(PlanError, match="one op"):
        TrainingSpec(8, 4096, unfused=(UNFUSED_ROPE, UNFUSED_ROPE_MATRIX))


def test_eager_prices_more_elementwise_time_and_nothing_else():
    m = next(r for r in calibration.MEASUREMENTS if r.source == calibration._FMS_MAR24 and r.model == "llama2-7b")
    eager = m.plan()
    fused = replace(m, unfused=()).plan()
    assert eager.step_time_s > fused.step_time_s
    assert eager.memory.total == fused.memory.total
