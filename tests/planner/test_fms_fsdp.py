"""fms-fsdp's README tables (fourth round): recorded as published, every-second-block AC priced."""

from statistics import mean

import pytest

from ekstrain.planner import Fleet, calibration, evaluate, get_model, validation
from ekstrain.planner.parallel import EVERY_SECOND_BLOCK, FULL, NONE, RECOMPUTE_MODES


def _rows(source: str) -> list[calibration.Measurement]:
    return [m for m in calibration.MEASUREMENTS if m.source == source]


def test_every_second_block_costs_between_no_and_full_recompute_and_is_no_search_choice():
    # GIVEN Llama 2 13B on 16 p4de under FSDP WHEN evaluated with each recompute mode THEN checkpointing every
    # second block is slower than none and faster than full, stores between the two, and is not offered
    fleet = Fleet.from_instance("p4de.24xlarge", 16)

    def plan(recompute: str):
        return evaluate(
            get_model("llama2-13b"), fleet, 256, 4096, tp=1, pp=1, dp=128, micro_batch=2, zero=3,
            recompute=recompute, framework="fsdp",
        )  # fmt: skip

    none, half, full = plan(NONE), plan(EVERY_SECOND_BLOCK), plan(FULL)
    assert none.step_time_s < half.step_time_s < full.step_time_s
    assert full.memory.activations < half.memory.activations < none.memory.activations
    assert EVERY_SECOND_BLOCK not in RECOMPUTE_MODES


def test_the_13b_rows_checkpointing_is_what_the_tables_hfu_over_mfu_says():
    # GIVEN the March 2024 table's 13B rows ("Selective AC", ratio not printed) THEN recomputing every second
    # block gives hardware/model FLOPs 1 + (1/2)/3, and the table's HFU/MFU (0.59/0.51 A100, 0.40/0.35 H100)
    # is nearer that than every third block (1 + 1/9) or every block (4/3)
    rows = [m for m in _rows(calibration._FMS_MAR24) if m.model == "llama2-13b"]
    assert len(rows) == 2 and {m.recompute for m in rows} == {EVERY_SECOND_BLOCK}
    flops = rows[0].plan().flops
    assert flops.hardware / flops.model == pytest.approx(1 + 1 / 6, abs=0.005)  # the output layer is not recomputed
    for hfu, mfu in ((0.59, 0.51), (0.40, 0.35)):
        nearest = min((1 + 1 / 9, 1 + 1 / 6, 4 / 3), key=lambda ratio: abs(hfu / mfu - ratio))
        assert nearest == 1 + 1 / 6


def test_fms_rows_are_recorded_as_published_with_roles_decided_per_release():
    march, may = _rows(calibration._FMS_MAR24), _rows(calibration._FMS_MAY24)
    assert len(march) == 8 and {m.split for m in march} == {calibration.FIT}
    assert len(may) == 2 and {m.split for m in may} == {calibration.VALIDATION}
    for m in march + may:
        # batch 2 per GPU, no gradient accumulation, sequence 4096, 128 A100 or 96 H100
        assert (m.micro_batch, m.global_batch, m.seq_len) == (2, 2 * m.gpus, 4096)
        assert m.gpus == {"a100": 128, "h100": 96}[m.generation]
        assert (m.framework == "hsdp") is (m.model == "llama2-7b")
    (h100,) = [m for m in may if m.generation == "h100"]
    assert h100.plan().fleet.inter_node_gbits_per_s == 800  # "H100 96 GPUs with 800 Gbps"


def test_leave_one_source_out_figures_as_measured(left_out):
    # The figures docs/planner.md and `make bench` print (seventh calibration round: a per-step cost and bucketed
    # data-parallel overlap, two new validation sources; the fifth measured 7.11 %, 29.2 %, 133/155, each source
    # once 6.13 %, fms-fsdp 4.6 %): 21 sources, 161 runs
    results = left_out
    errors = [abs(r.error) for r in results]
    assert (len(validation.sources()), len(results)) == (21, 161)
    assert mean(errors) == pytest.approx(0.0670, abs=0.0005)
    assert max(errors) == pytest.approx(0.2929, abs=0.0005)
    assert mean(validation.source_weighted(results).values()) == pytest.approx(0.0560, abs=0.0005)
    assert validation.coverage() == (146, 161)
    fms = [abs(r.error) for r in results if r.source in calibration.ADDED_IN_ROUND4]
    assert len(fms) == 10 and mean(fms) == pytest.approx(0.044, abs=0.001)
