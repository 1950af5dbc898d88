"""Per-generation calibration: constants are what the fit returns; held-out rows stay held out."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.cli.main import main
from ekstrain.planner import Fleet, calibration, evaluate, get_model
from ekstrain.planner.efficiency import GENERATIONS, MEGATRON_2021


@pytest.mark.parametrize("generation, precision", calibration.fitted_keys())
def test_stored_efficiency_is_the_fitted_one(generation, precision):
    # GIVEN the fit rows of a generation WHEN the matmul efficiency is fitted THEN the stored
    # constant is that value (to 0.01): no hand-tuned number hides in efficiency.py
    stored = GENERATIONS[generation].matmul_for(precision)
    assert calibration.fit(generation, precision) == pytest.approx(stored, abs=0.01)


def test_a100_table1_uses_the_2021_software_and_the_a100_constants():
    assert MEGATRON_2021.matmul == GENERATIONS["a100"].matmul and not MEGATRON_2021.dp_overlap


def test_validation_rows_are_not_fit_rows():
    def rows(split):
        return {(m.source, m.model, m.gpus, m.seq_len) for m in calibration.MEASUREMENTS if m.split == split}

    fit, held_out = rows(calibration.FIT), rows(calibration.VALIDATION)
    assert fit and held_out and not fit & held_out
    # every generation with fit rows also has held-out rows
    assert {m.generation for m in calibration.MEASUREMENTS if m.split == calibration.FIT} <= {
        m.generation for m in calibration.MEASUREMENTS if m.split == calibration.VALIDATION
    }


def test_fit_error_is_minimal_at_the_fitted_value():
    best = calibration.fit("h100", "bf16")
    at_best = calibration.fit_error("h100", "bf16", best)
    assert at_best <= calibration.fit_error("h100", "bf16", best - 0.05)
    assert at_best <= calibration.fit_error("h100", "bf16", best + 0.05)


def test_framework_constants_are_the_fitted_ones():
    # GIVEN the FSDP and DeepSpeed fit rows WHEN fitting the framework terms THEN efficiency.py
    # stores exactly those values (software factor; ZeRO-3 traffic and overlap)
    a100 = GENERATIONS["a100"]
    assert calibration.fit_software("fsdp") == pytest.approx(a100.software_for("fsdp"), abs=0.01)
    traffic, overlap = calibration.fit_zero3("deepspeed")
    assert (traffic, overlap) == pytest.approx(
        (a100.zero3_traffic_for("deepspeed"), a100.zero3_overlap_for("deepspeed")), abs=0.021
    )
    # the framework terms are the software's: the same on every generation
    assert {e.software for e in GENERATIONS.values()} == {a100.software}


def test_every_framework_with_fit_rows_has_held_out_rows():
    frameworks = {m.framework for m in calibration.MEASUREMENTS}
    for framework in frameworks:
        splits = {m.split for m in calibration.MEASUREMENTS if m.framework == framework}
        assert calibration.VALIDATION in splits, framework


LAYOUT = ["--model", "llama3-8b", "--instance", "p5.48xlarge", "--nodes", "8", "--global-batch", "128"]
LAYOUT += ["--seq-len", "8192", "--tp", "1", "--pp", "1", "--dp", "64", "--micro-batch", "2", "--recompute", "none"]
LAYOUT += ["--zero", "3", "--framework", "fsdp"]


@settings(max_examples=8, deadline=None)
@given(factor=st.floats(min_value=0.3, max_value=2.0))
def test_calibrate_measured_recovers_the_software_factor_of_a_step(tmp_path_factory, factor):
    # GIVEN the step time the model predicts at software factor x WHEN calibrating from that one
    # measured step (CLI) THEN the fitted factor is x, and evaluate with the file reproduces the step
    def plan_at(eff):
        fleet = Fleet.from_instance("p5.48xlarge", 8)
        return evaluate(
            get_model("llama3-8b"),
            fleet,
            128,
            8192,
            tp=1,
            pp=1,
            dp=64,
            micro_batch=2,
            zero=3,
            framework="fsdp",
            efficiency=eff,
        )

    base = GENERATIONS["h100"]
    measured = plan_at(calibration.with_software(base, "fsdp", factor)).step_time_s
    assert calibration.software_from_step(plan_at, base, "fsdp", measured) == pytest.approx(factor, rel=1e-3)
    out = tmp_path_factory.mktemp("cal") / "cal.json"
    assert main(["plan", "calibrate", "--measured", repr(measured), *LAYOUT, "--out", str(out)]) == 0
    assert json.loads(out.read_text())["software"] == pytest.approx(factor, rel=1e-3)
    evaluated = tmp_path_factory.mktemp("cal") / "plan.json"
    assert main(["plan", "evaluate", *LAYOUT, "--calibration-json", str(out), "--json", "--out", str(evaluated)]) == 0
    assert json.loads(evaluated.read_text())["step_time_s"] == pytest.approx(measured, rel=1e-3)


def test_a_measurement_no_factor_explains_is_refused(capsys):
    assert main(["plan", "calibrate", "--measured", "0.0001", *LAYOUT]) == 2
    assert "outside what this layout can take" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, seq_len, published",
    [
        ("mpt-1b", 2048, 1_315_950_592),
        ("mpt-7b", 2048, 6_658_859_008),
        ("mpt-7b", 8192, 6_684_024_832),
        ("mpt-13b", 2048, 12_853_954_560),
        ("mpt-30b", 2048, 29_975_214_080),
        ("mpt-70b", 2048, 64_862_437_376),
    ],
)
def test_mpt_models_match_llm_foundry_numparams_column(name, seq_len, published):
    # GIVEN llm-foundry's benchmark table's NumParams column WHEN our MPT spec counts its parameters at the
    # row's sequence length (learned positions) THEN it is that number exactly
    assert calibration.model_for(name, seq_len).total_params == published


def test_deepspeed_zero3_pays_one_collective_latency_per_parameter_tensor():
    # GIVEN GPT-3 175B under DeepSpeed ZeRO-3 on 1,536 A100 WHEN the per-tensor latency is priced THEN it is
    # 12 tensors x 96 layers x 3 collectives x (base + 1,535 network ring steps) per micro-batch
    from ekstrain.planner import comm, perf

    model = get_model("gpt3-175b")
    assert perf.zero3_tensors_per_layer(model) == 12
    assert perf.zero3_tensors_per_layer(get_model("llama3-8b")) == 7
    row = next(m for m in calibration.MEASUREMENTS if m.framework == "deepspeed" and m.gpus == 1536)
    eff = GENERATIONS["a100"]
    with_latency = row.plan(eff).time.dp_comm
    links = comm.Links.of(calibration.selene(192), eff.intra_node, eff.network)
    latency = 3 * 12 * 96 * comm.ring_latency(links, 1536, 1)
    assert latency == pytest.approx(3 * 12 * 96 * (comm.BASE_LATENCY_S + 1535 * comm.RING_STEP_NETWORK_S))
    assert with_latency > latency > 40.0


def test_eager_plans_price_the_unfused_kernels_and_keep_their_calibration_apart(tmp_path, capsys):
    # GIVEN the same FSDP layout evaluated with and without --eager
    def step(*extra: str) -> dict:
        assert main(["plan", "evaluate", *LAYOUT, "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    fused, eager = step(), step("--eager")
    # THEN only the compute grows (elementwise kernels, perf.elementwise_passes), and the JSON says which ran
    assert eager["step_time_breakdown_s"]["compute"] > fused["step_time_breakdown_s"]["compute"]
    assert eager["memory_gib"] == fused["memory_gib"]
    assert fused["unfused_kernels"] == [] and eager["unfused_kernels"] == ["norm", "rope", "activation", "layout"]
    # AND search ranks with the same pricing: eager, its best plan is slower and says it ran eager
    search = ["plan", "search", *LAYOUT[:10], "--framework", "fsdp", "--top", "1", "--json"]
    best = {}
    for flags in ((), ("--eager",)):
        assert main([*search, *flags]) == 0
        best[flags] = json.loads(capsys.readouterr().out)[0]
    assert best[("--eager",)]["step_time_s"] > best[()]["step_time_s"]
    assert best[("--eager",)]["unfused_kernels"] == eager["unfused_kernels"]
    # AND a calibration written with --eager is refused for a fused run, and the other way round, naming the fix
    out = tmp_path / "eager.json"
    assert main(["plan", "calibrate", "--measured", "5", *LAYOUT, "--eager", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["eager"] is True
    assert main(["plan", "evaluate", *LAYOUT, "--calibration-json", str(out)]) == 2
    assert "calibrated with --eager, but this run is without it" in capsys.readouterr().err
    assert main(["plan", "evaluate", *LAYOUT, "--eager", "--calibration-json", str(out)]) == 0
    out.write_text(out.read_text().replace('"eager": true', '"eager": "yes"'))
    capsys.readouterr()
    assert main(["plan", "evaluate", *LAYOUT, "--eager", "--calibration-json", str(out)]) == 2
    assert "eager must be true or false (JSON booleans), got 'yes'" in capsys.readouterr().err
