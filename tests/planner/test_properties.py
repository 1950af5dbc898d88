"""Property tests: memory-saving options never add memory; searched degrees multiply to the fleet."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.planner import Fleet, PlanError, get_model, search
from ekstrain.planner.memory import worst_stage_memory
from ekstrain.planner.parallel import FULL, NONE, SELECTIVE, ParallelConfig
from ekstrain.planner.training import TrainingSpec

MODEL = get_model("llama3-70b")
RECOMPUTE_ORDER = (NONE, SELECTIVE, FULL)

layouts = st.builds(
    lambda tp, pp, cp, zero, rc, mb, flash: (
        ParallelConfig(tp=tp, pp=pp, dp=64 // (tp * pp * cp) or 1, micro_batch=mb, cp=cp, zero=zero, recompute=rc),
        TrainingSpec(1024, 8192, flash_attention=flash),
    ),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2]),
    st.sampled_from([0, 1, 2, 3]),
    st.sampled_from(RECOMPUTE_ORDER),
    st.sampled_from([1, 2, 4]),
    st.booleans(),
)


def total(parallel, training):
    return worst_stage_memory(MODEL, parallel, training).total


@given(layouts)
def test_higher_zero_stage_never_increases_memory(case):
    parallel, training = case
    for zero in range(parallel.zero, 3):
        assert total(replace(parallel, zero=zero + 1), training) <= total(replace(parallel, zero=zero), training)


@given(layouts)
def test_more_recompute_never_increases_memory(case):
    parallel, training = case
    base = replace(parallel, recompute=NONE)
    assert total(replace(base, recompute=SELECTIVE), training) <= total(base, training)
    assert total(replace(base, recompute=FULL), training) <= total(replace(base, recompute=SELECTIVE), training)


@given(layouts)
def test_sequence_parallel_and_offload_never_increase_memory(case):
    parallel, training = case
    if parallel.tp > 1:
        assert total(replace(parallel, sequence_parallel=True), training) <= total(parallel, training)
    if parallel.zero >= 1:
        assert total(replace(parallel, offload_optimizer=True), training) <= total(parallel, training)


@given(layouts)
def test_smaller_micro_batch_never_increases_memory(case):
    parallel, training = case
    if parallel.micro_batch > 1:
        assert total(replace(parallel, micro_batch=1), training) <= total(parallel, training)


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(["p4de.24xlarge", "p5.48xlarge", "trn1.32xlarge"]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from(["llama3-8b", "gpt-7.5b", "mixtral-8x7b"]),
)
def test_search_degrees_multiply_to_the_fleet(instance, nodes, name):
    fleet = Fleet.from_instance(instance, nodes)
    try:
        plans = search(get_model(name), fleet, 256, 4096, top=50)
    except PlanError as error:  # a model that fits nowhere is the one acceptable outcome
        assert "does not fit" in str(error)
        return
    for plan in plans:
        assert plan.tp * plan.pp * plan.dp * plan.cp == fleet.ranks
        assert plan.micro_batch * plan.grad_accum * plan.dp == 256
        assert plan.fits
