"""Exact formula tests: ZeRO model states, Korthikanti activations, Narayanan Eq. 2 and Eq. 3."""

import pytest

from ekstrain.planner.calibration import TABLE1
from ekstrain.planner.memory import layer_activation_bytes, model_state_bytes
from ekstrain.planner.models import NARAYANAN_TABLE1_MODELS, get_model
from ekstrain.planner.parallel import FULL, NONE, SELECTIVE
from ekstrain.planner.perf import step_flops
from ekstrain.planner.training import TrainingSpec


@pytest.mark.parametrize("stage, expected_gb", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_7_5b_on_64_gpus(stage, expected_gb):
    # GIVEN Psi = 7.5B and N_d = 64 (ZeRO Fig. 1) WHEN summing model states THEN 120/31.4/16.6/1.9 GB
    total = sum(model_state_bytes(7.5e9, stage, 64))
    assert total / 1e9 == pytest.approx(expected_gb, abs=0.05)


def test_zero_stage_formulas_exactly():
    psi, n = 1e9, 16
    assert model_state_bytes(psi, 1, n) == (2 * psi, 2 * psi, 12 * psi / n)
    assert model_state_bytes(psi, 2, n) == (2 * psi, 2 * psi / n, 12 * psi / n)
    assert model_state_bytes(psi, 3, n) == (2 * psi / n, 2 * psi / n, 12 * psi / n)


S, B, H, A, T = 2048, 1, 12288, 96, 8
GPT3 = get_model("gpt3-175b")
SBH = S * B * H


@pytest.mark.parametrize(
    "tp, sp, recompute, expected",
    [
        (1, False, NONE, SBH * (34 + 5 * A * S / H)),
        (T, False, NONE, SBH * (10 + 24 / T + 5 * A * S / (H * T))),
        (T, True, NONE, SBH * (34 / T + 5 * A * S / (H * T))),
        (T, False, SELECTIVE, SBH * (10 + 24 / T)),
        (T, True, SELECTIVE, SBH * 34 / T),
        (T, False, FULL, SBH * 2),
    ],
)
def test_korthikanti_table2(tp, sp, recompute, expected):
    got = layer_activation_bytes(GPT3, S, B, tp=tp, sequence_parallel=sp, recompute=recompute)
    assert got == pytest.approx(expected, rel=1e-12)


def test_context_parallel_splits_tokens_but_scores_see_all_keys():
    full = layer_activation_bytes(GPT3, S, B, tp=T, sequence_parallel=True)
    halved = layer_activation_bytes(GPT3, S, B, tp=T, cp=2, sequence_parallel=True)
    assert halved == pytest.approx(full / 2)


@pytest.mark.parametrize("model", NARAYANAN_TABLE1_MODELS, ids=lambda m: m.name)
def test_parameter_count_is_eq2_plus_final_layernorm(model):
    n_layers, h, v, s = model.layers, model.hidden, model.vocab, 2048
    eq2 = 12 * n_layers * h * h * (1 + 13 / (12 * h) + (v + s) / (12 * n_layers * h))
    assert model.total_params == pytest.approx(eq2 + 2 * h, rel=1e-12)
    assert round(model.total_params / 1e9, 1) == pytest.approx(float(model.name[4:-1]), abs=0.051)


@pytest.mark.parametrize("row", TABLE1, ids=lambda r: r.model.name)
def test_hardware_flops_are_eq3(row):
    m = row.model
    n_layers, h, v, s, b = m.layers, m.hidden, m.vocab, 2048, row.global_batch
    eq3 = 96 * b * s * n_layers * h * h * (1 + s / (6 * h) + v / (16 * n_layers * h))
    flops = step_flops(m, TrainingSpec(b, s, flash_attention=False), FULL)
    assert flops.hardware == pytest.approx(eq3, rel=1e-12)
    eq7 = 72 * b * n_layers * s * h * h * (1 + s / (6 * h) + v / (12 * h * n_layers))  # Korthikanti Eq. 7: model FLOPs
    assert flops.model == pytest.approx(eq7, rel=1e-12)


def test_llama3_parameter_counts():
    assert get_model("llama3-8b").total_params / 1e9 == pytest.approx(8.03, abs=0.01)
    assert get_model("llama3-70b").total_params / 1e9 == pytest.approx(70.55, abs=0.01)
    assert get_model("llama3-405b").total_params / 1e9 == pytest.approx(405.85, abs=0.01)
    assert get_model("mixtral-8x7b").total_params / 1e9 == pytest.approx(46.70, abs=0.01)
    assert get_model("mixtral-8x7b").active_params / 1e9 == pytest.approx(12.88, abs=0.01)


def test_published_mfu_counts_causal_attention_as_half_the_square():
    # GIVEN Llama 3 405B at 8k WHEN counting model FLOPs per token THEN the published convention is
    # 6 x matmul weights + 6 s h per layer (half of the 12 s h square; Llama 3 paper Table 4)
    m, s = get_model("llama3-405b"), 8192
    flops = step_flops(m, TrainingSpec(1, s), NONE)
    per_token = 6 * (m.layers * m.matmul_params_per_token + m.hidden * m.vocab) + 6 * m.layers * s * m.hidden
    assert flops.model_causal == pytest.approx(per_token * s, rel=1e-12)
    assert flops.model - flops.model_causal == pytest.approx(6 * m.layers * s * m.hidden * s, rel=1e-12)


def test_an_encoder_counts_the_whole_square_in_both_conventions():
    flops = step_flops(get_model("bert-large"), TrainingSpec(8, 512), NONE)
    assert flops.model_causal == flops.model
