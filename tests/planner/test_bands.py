"""Error bands on every step time; H200, Trainium2 and B200 BF16 marked uncalibrated."""

import json

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import validation
from ekstrain.planner.bands import ANY_FRAMEWORK, ERROR_BANDS, band_for


def test_stored_bands_are_the_leave_one_source_out_percentiles(left_out):
    # GIVEN every source predicted with constants fitted without it WHEN the bands are computed THEN the
    # stored ones are those values (no hand-set band)
    assert validation.bands() == pytest.approx(ERROR_BANDS, abs=0.002)
    assert set(validation.bands()) == set(ERROR_BANDS)


@pytest.mark.parametrize(
    "generation, precision, calibrated, nearest",
    [
        ("h100", "bf16", True, "h100"),
        ("h200", "bf16", False, "h100"),
        ("trainium2", "bf16", False, "trainium1"),
        ("b200", "bf16", False, "b200"),
        ("b200", "fp8", True, "b200"),
        ("", "bf16", False, "a100"),
    ],
)
def test_uncalibrated_generations_carry_the_nearest_band(generation, precision, calibrated, nearest):
    band = band_for(generation, "megatron", precision)
    assert band.calibrated is calibrated
    assert band.fraction == ERROR_BANDS[(nearest, ANY_FRAMEWORK)]
    assert ("uncalibrated" in band.basis) is not calibrated


@pytest.mark.parametrize(
    "instance, calibrated", [("p5en.48xlarge", False), ("trn2.48xlarge", False), ("p5.48xlarge", True)]
)
def test_every_output_says_whether_it_is_calibrated(capsys, instance, calibrated):
    argv = ["plan", "search", "--model", "llama3-8b", "--instance", instance, "--nodes", "2"]
    argv += ["--global-batch", "64", "--seq-len", "4096", "--top", "2"]
    assert main([*argv, "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert all(p["calibrated"] is calibrated for p in plans)
    assert all(p["step_time_range_s"][0] < p["step_time_s"] < p["step_time_range_s"][1] for p in plans)
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert ("warning: uncalibrated" in table) is not calibrated
    assert "±" in table.splitlines()[-1] or "±" in table


FLEET = {
    "accelerators_per_node": 8,
    "peak_tflops_bf16": 989,
    "hbm_gib": 141,
    "hbm_gbytes_per_s": 4800,
    "intra_node_gbytes_per_s": 900,
    "inter_node_gbits_per_s": 3200,
}


@pytest.mark.parametrize("given, inferred", [(None, "h200"), ("h100", None)])
def test_fleet_json_generation_is_given_or_inferred_with_a_warning(tmp_path, capsys, given, inferred):
    fleet = {**FLEET, **({"generation": given} if given else {})}
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(fleet))
    argv = ["plan", "search", "--model", "llama3-8b", "--fleet-json", str(path), "--nodes", "1"]
    assert main([*argv, "--global-batch", "16", "--seq-len", "4096", "--top", "1", "--json"]) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)[0]
    if inferred:
        assert f"inferred '{inferred}'" in captured.err and 'add "generation"' in captured.err.lower()
        assert plan["calibrated"] is False  # h200: uncalibrated, said in the output as well
    else:
        assert captured.err == "" and plan["calibrated"] is True
