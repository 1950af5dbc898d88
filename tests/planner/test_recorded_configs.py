"""Published runs are recorded with the configuration their sources ran (third round)."""

import pytest

from ekstrain.planner import Fleet, calibration, evaluate, get_model
from ekstrain.planner.parallel import FULL, NONE, RECOMPUTE_MODES, SELECTIVE, SELECTIVE_OP
from ekstrain.planner.perf import op_sac_share


def test_op_sac_recomputes_wk_wo_and_w3_of_a_llama_layer():
    # GIVEN Llama 3 8B (hidden 4096, kv 1024, ffn 14336) WHEN torchtitan's "every second mm" policy runs
    # THEN the recomputed GEMM share is (wk + wo + w3) / (wq + wk + wv + wo + w1 + w3 + w2)
    expected = (1024 + 4096 + 14336) / (4096 + 1024 + 1024 + 4096 + 3 * 14336)
    assert op_sac_share(get_model("llama3-8b")) == pytest.approx(expected)
    assert 0.36 < expected < 0.37


def test_op_sac_costs_between_no_and_full_recompute_and_is_no_search_choice():
    # GIVEN Llama 3 8B on 8 p5 under FSDP WHEN evaluated with each recompute mode THEN per-op selective AC
    # is slower than none and faster than full, and neither the search nor the CLI offers it
    fleet = Fleet.from_instance("p5.48xlarge", 8)

    def step(recompute: str) -> float:
        plan = evaluate(
            get_model("llama3-8b"), fleet, 64, 8192, tp=1, pp=1, dp=64, zero=3, recompute=recompute, framework="fsdp"
        )
        return plan.step_time_s

    assert step(NONE) < step(SELECTIVE_OP) < step(FULL)
    assert SELECTIVE_OP not in RECOMPUTE_MODES


def test_sources_recorded_with_the_checkpointing_they_ran():
    rows = calibration.MEASUREMENTS
    # torchtitan's Llama 3 8B runs (A100 page, H200 benchmark, H100 Dec 2024 page) set selective_ac_option "op"
    titan_8b = [m for m in rows if "torchtitan" in m.source and m.model == "llama3-8b"]
    assert len(titan_8b) == 7 and {m.recompute for m in titan_8b} == {SELECTIVE_OP}
    # neuronx-nemo-megatron gpt_175b.sh sets ACT_CHKPNT_GRANULARITY=selective
    (gpt3,) = [m for m in rows if m.source == calibration._NEURON and m.model == "gpt3-175b"]
    assert gpt3.recompute == SELECTIVE
