"""The search's floor bound (search.FLOOR_BOUND): a layout block is skipped only when none of its plans can change what
the search returns, so the top plans, their step times, memory and notes are those of the unpruned search."""

import importlib
from dataclasses import replace

import pytest

from ekstrain.planner import Fleet, get_model, search
from ekstrain.planner.efficiency import efficiency_for
from ekstrain.planner.parallel import RECOMPUTE_MODES
from ekstrain.planner.perf import pipeline_floor, step_time
from ekstrain.planner.software import Software
from ekstrain.planner.training import DEEPSPEED, FSDP, HSDP, TrainingSpec

search_module = importlib.import_module("ekstrain.planner.search")  # the package exports the function as search


def _result(plans):
    # everything the ranking hands back, step times to the last bit
    return [(p.summary(), p.step_time_s, p.memory.total, p.notes) for p in plans]


@pytest.mark.parametrize(
    ("name", "nodes", "batch", "seq", "options"),
    [
        ("llama3-8b", 4, 256, 8192, {}),  # dense
        ("llama3-8b", 4, 32, 65536, {}),  # dense at a length that needs CP (ranking.CP_MIN_SEQ)
        ("llama3-8b", 2, 128, 4096, {"framework": "fsdp", "flash_attention": False}),  # selective recompute searched
        ("llama3-70b", 8, 256, 4096, {"framework": "deepspeed"}),  # ZeRO 0-3, no ZeRO-2/3 with a pipeline
        ("mixtral-8x7b", 4, 256, 4096, {}),  # MoE
        ("deepseek-v3", 32, 512, 4096, {}),  # MLA, shared experts, dense-first layers
        ("qwen3-235b-a22b", 8, 256, 4096, {}),  # 94 layers, 128 experts
        ("llama3-8b", 4, 256, 8192, {"precision": "fp8", "software": Software(fp8_bf16_layers=1)}),  # BF16 ends
        ("llama3-8b", 4, 256, 8192, {"software": Software(activation_offload_layers=4)}),  # offload: PP 1 only
    ],
)
def test_the_top_ten_are_those_of_the_unpruned_search(monkeypatch, name, nodes, batch, seq, options):
    fleet = Fleet.from_instance("p5.48xlarge", nodes)
    priced = []
    monkeypatch.setattr(search_module, "step_time", lambda *a: priced.append(1) or step_time(*a))
    pruned = _result(search(get_model(name), fleet, batch, seq, top=10, **options))
    pruned_count = len(priced)
    # the unpruned path: no floor bound (it needs a top bound) and no CP or micro-batch pruning
    monkeypatch.setattr(search_module, "PRUNE_OFF", True)
    monkeypatch.setattr(search_module, "CP_HOPELESS", float("inf"))
    full = _result(search(get_model(name), fleet, batch, seq, top=10, **options))
    assert pruned == full
    assert pruned_count < len(priced) - pruned_count  # the pruned search priced fewer plans


def test_the_floor_bound_alone_changes_nothing(monkeypatch):
    # against the search with every other pruning rule on and the floor bound off (a floor of 0 is never past it):
    # the same plans, to the last bit, from fewer priced
    fleet = Fleet.from_instance("p5.48xlarge", 8)
    priced = []
    monkeypatch.setattr(search_module, "step_time", lambda *a: priced.append(1) or step_time(*a))
    pruned = _result(search(get_model("qwen3-235b-a22b"), fleet, 256, 4096, top=10))
    pruned_count = len(priced)
    monkeypatch.setattr(search_module, "pipeline_floor", lambda *a: 0.0)
    assert _result(search(get_model("qwen3-235b-a22b"), fleet, 256, 4096, top=10)) == pruned
    assert pruned_count < len(priced) - pruned_count


@pytest.mark.parametrize(
    ("name", "nodes", "training"),
    [
        ("mixtral-8x7b", 1, TrainingSpec(64, 4096)),
        ("llama3-8b", 2, TrainingSpec(32, 32768)),  # CP
        ("llama3-8b", 1, TrainingSpec(64, 8192, precision="fp8", framework=DEEPSPEED)),
        ("llama3-8b", 1, TrainingSpec(64, 8192, lora_rank=16, framework=FSDP)),
        ("llama3-8b", 1, TrainingSpec(64, 4096, flash_attention=False, framework=HSDP)),
        # FP8 with BF16 end layers: the first stage can be the slowest, and one stage holds both ends
        ("llama3-8b", 2, TrainingSpec(64, 8192, precision="fp8", software=Software(fp8_bf16_layers=2))),
        # activation offload: copies exposed beyond each pass, Megatron-core's and DeepSpeed's checkpoint offload
        ("llama3-8b", 1, TrainingSpec(64, 8192, software=Software(activation_offload_layers=8))),
        ("llama3-8b", 1, TrainingSpec(64, 8192, framework=DEEPSPEED, software=Software(activation_offload_layers=8))),
    ],
)
def test_the_floor_is_under_every_step_it_bounds(name, nodes, training):
    # pipeline_floor of a layout (its degrees, micro-batch and recompute mode) bounds its step at every ZeRO stage and
    # offload, whatever the framework, precision or adapters: what lets the search skip a block unpriced
    model, fleet = get_model(name), Fleet.from_instance("p5.48xlarge", nodes)
    eff = efficiency_for(fleet)
    layouts = search_module.candidate_layouts(
        model,
        fleet,
        training,
        zero_stages=(0, 1, 2, 3),
        recompute_modes=RECOMPUTE_MODES,
        allow_offload=True,
        max_cp=fleet.ranks,
        max_micro_batch=None,
    )
    checked = 0
    for parallel, _ in layouts:
        lightest = replace(parallel, zero=0, offload_optimizer=False)
        step = step_time(model, fleet, training, parallel, eff).total
        assert pipeline_floor(model, fleet, training, lightest, eff) <= step * (1 + 1e-12), parallel
        # the staged form (cheaper floors first) returns a floor too, whatever it is asked to exceed
        for enough in (0.0, step / 2, step):
            assert pipeline_floor(model, fleet, training, lightest, eff, {}, enough) <= step * (1 + 1e-12), parallel
        checked += 1
    assert checked > 20


def test_qwen3_on_16k_gpus_prices_a_third_of_the_plans(monkeypatch):
    # the largest search of the catalog (scripts/bench_planner.py): 16,641 plans priced before the floor bound
    priced = []
    monkeypatch.setattr(search_module, "step_time", lambda *a: priced.append(1) or step_time(*a))
    best = search(get_model("qwen3-235b-a22b"), Fleet.from_instance("p5.48xlarge", 2048), 4096, 4096, top=10)[0]
    assert len(priced) < 6000
    # the unpruned search's first plan (as the search returned it before the floor bound)
    assert best.summary() == "tp=4 pp=16 dp=256 cp=1 ep=4 vpp=6 mb=1 ga=16 zero=1 recompute=none sp=True"
    assert best.step_time_s == pytest.approx(1.1593799660389765, rel=1e-12)
