"""Software switches are inputs of the stack (a --framework preset, each overridable), priced where the cost model
reads them and launched by what `job render` writes; Megatron-core flags for current shapes; TP across whole nodes
and uneven end stages searched instead of refused; the planner's inputs as spec objects."""

import dataclasses
import json
import pathlib

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import (
    Fleet,
    ParallelConfig,
    PlanError,
    SearchSpace,
    Software,
    TrainingSpec,
    build_plan,
    evaluate,
    frameworks,
    get_model,
    search,
    search_specs,
)
from ekstrain.planner.search import cross_node_tp_degrees

REPO = pathlib.Path(__file__).resolve().parents[2]
JOB = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--partition", "gpu-h100"]
JOB += ["--scheduler", "volcano", "--nodes", "4", "--model", "llama3-70b", "--image", "nvcr.io/nvidia/nemo:25.09"]
JOB += ["--global-batch", "256", "--seq-len", "8192", "--framework", "megatron"]
P5_8 = Fleet.from_instance("p5.48xlarge", 8)
SMALL = Fleet.from_instance("p5.48xlarge", 4)
TP8 = dict(tp=8, pp=1, dp=8, micro_batch=1, recompute="full", sequence_parallel=True, zero=1)


def _render(capsys, *extra: str) -> str:
    assert main([*JOB, *extra]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_job_render_launches_the_tp_overlap_it_priced(capsys):
    on = _render(capsys, "--tp-comm-overlap", "on")
    off = _render(capsys, "--tp-comm-overlap", "off")
    assert "--tp-comm-overlap" in on and "--sequence-parallel" in on
    assert "--tp-comm-overlap" not in off


def test_job_render_writes_the_deepspeed_switches_and_the_megatron_lm_preset(capsys):
    deepspeed = [*JOB[:-2], "--framework", "deepspeed", "--overlap-grad-reduce", "off", "--bucket-size", "200000000"]
    deepspeed[deepspeed.index("llama3-70b")] = "llama3-8b"
    assert main(deepspeed) == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert '"overlap_comm": false' in text and '"reduce_bucket_size": 200000000' in text
    plain = _render(capsys, "--framework", "megatron-lm")  # the last --framework wins: argparse
    assert "--tp-comm-overlap" not in plain and "--overlap-grad-reduce" not in plain
    assert main([*JOB, "--bucket-size", "0"]) == 2
    assert "error: ekstrain job render: --bucket-size must be 1 to" in capsys.readouterr().err


def test_a_preset_sets_the_switches_and_a_flag_overrides_one():
    plain = frameworks.software_for("megatron-lm")
    assert plain.tp_comm_overlap is False and plain.overlap_grad_reduce is False
    assert frameworks.software_for("megatron-lm", tp_comm_overlap=True).tp_comm_overlap is True
    assert frameworks.software_for("megatron").tp_comm_overlap is True
    assert frameworks.canonical("megatron-lm") == "megatron" and frameworks.canonical("fsdp-eager") == "fsdp"
    priced = evaluate(get_model("llama3-70b"), P5_8, 64, 8192, software=plain, **TP8)
    nvidia = evaluate(get_model("llama3-70b"), P5_8, 64, 8192, software=frameworks.software_for("megatron"), **TP8)
    assert not priced.training.overlaps_tp_comm and priced.step_time_s > nvidia.step_time_s
    assert "--tp-comm-overlap" not in priced.megatron_args() and "--overlap-grad-reduce" not in priced.megatron_args()
    assert {"--tp-comm-overlap", "--overlap-grad-reduce", "--overlap-param-gather"} <= set(nvidia.megatron_args())
    eager = TrainingSpec(64, 8192, framework="fsdp", software=frameworks.software_for("fsdp-eager"))
    assert eager.unfused  # the eager switch is what the elementwise-kernel count reads


def test_plan_cli_preset_and_json_state_the_switches(capsys):
    argv = ["plan", "evaluate", "--model", "llama3-70b", "--instance", "p5.48xlarge", "--nodes", "8", "--json"]
    argv += ["--global-batch", "64", "--seq-len", "8192", "--tp", "8", "--pp", "1", "--dp", "8", "--zero", "1"]
    argv += ["--micro-batch", "1", "--recompute", "full", "--sequence-parallel", "--framework", "megatron-lm"]
    assert main([*argv, "--precision", "fp8", "--fp8-recipe", "tensorwise", "--bucket-size", "100000000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["framework"] == "megatron" and out["tp_comm_overlap"] is False
    assert out["software"]["fp8_recipe"] == "tensorwise" and out["software"]["bucket_params"] == 100_000_000
    with pytest.raises(SystemExit) as usage:
        main([*argv, "--fp8-recipe", "nope"])
    assert usage.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert main([*argv, "--bucket-size", "0"]) == 2
    assert "--bucket-size must be >= 1" in capsys.readouterr().err


def test_megatron_fp8_recipe_bf16_end_layers_buckets_and_offload():
    sw = Software(fp8_recipe="tensorwise", fp8_bf16_layers=2, bucket_params=10**8)
    plan = evaluate(get_model("llama3-70b"), P5_8, 64, 8192, precision="fp8", software=sw, **TP8)
    args = plan.megatron_args()
    text = " ".join(args)
    assert "--fp8-format hybrid --fp8-recipe tensorwise" in text
    assert "--first-last-layers-bf16 --num-layers-at-start-in-bf16 2 --num-layers-at-end-in-bf16 2" in text
    assert "--ddp-bucket-size 100000000" in text
    offload = Software(activation_offload_layers=4)
    layout = {**TP8, "recompute": "none"}
    plan = evaluate(get_model("llama3-8b"), P5_8, 64, 8192, software=offload, **layout)
    assert "--cpu-offloading-num-layers 4" in " ".join(plan.megatron_args())
    # Megatron-core's TransformerConfig refuses CPU offloading with pipeline parallelism or recompute
    piped = evaluate(get_model("llama3-8b"), P5_8, 64, 8192, software=offload, **{**TP8, "pp": 2, "dp": 4})
    with pytest.raises(PlanError, match="cpu-offloading"):
        piped.megatron_args()


def test_deepspeed_config_carries_overlap_and_buckets():
    sw = Software(overlap_grad_reduce=False, bucket_params=2 * 10**8, prefetch_bucket_params=10**7)
    layout = dict(tp=1, pp=1, dp=64, micro_batch=1, recompute="full", zero=3)
    plan = evaluate(get_model("llama3-8b"), P5_8, 64, 8192, framework="deepspeed", software=sw, **layout)
    zero = plan.deepspeed_config()["zero_optimization"]
    assert zero["overlap_comm"] is False and zero["reduce_bucket_size"] == zero["allgather_bucket_size"] == 2 * 10**8
    assert zero["stage3_prefetch_bucket_size"] == 10**7
    default = evaluate(get_model("llama3-8b"), P5_8, 64, 8192, framework="deepspeed", **layout)
    assert default.deepspeed_config()["zero_optimization"]["stage3_prefetch_bucket_size"] == 5 * 10**7


def _args(plan) -> dict[str, str | bool]:
    """Megatron arguments as {flag: value or True}."""
    args, out = plan.megatron_args(), {}
    for i, word in enumerate(args):
        if word.startswith("--"):
            nxt = args[i + 1] if i + 1 < len(args) else "--"
            out[word] = True if nxt.startswith("--") else nxt
    return out


def test_megatron_flags_for_deepseek_v3_mla_shared_experts_dense_first_layers():
    fleet = Fleet.from_instance("p5.48xlarge", 256)
    plan = evaluate(
        get_model("deepseek-v3"), fleet, 4096, 4096, tp=1, pp=16, dp=128, ep=64, micro_batch=1, recompute="full", zero=1
    )
    a = _args(plan)
    # DeepSeek-V3 config.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64,
    # v_head_dim 128, n_routed_experts 256, num_experts_per_tok 8, moe_intermediate_size 2048, n_shared_experts 1,
    # first_k_dense_replace 3, intermediate_size 18432
    assert a["--multi-latent-attention"] is True and "--group-query-attention" not in a
    assert (a["--q-lora-rank"], a["--kv-lora-rank"], a["--qk-head-dim"]) == ("1536", "512", "128")
    assert (a["--qk-pos-emb-head-dim"], a["--v-head-dim"]) == ("64", "128")
    assert (a["--num-experts"], a["--moe-router-topk"], a["--moe-ffn-hidden-size"]) == ("256", "8", "2048")
    assert a["--ffn-hidden-size"] == "18432" and a["--moe-shared-expert-intermediate-size"] == "2048"
    assert a["--moe-layer-freq"] == "([0]*3+[1]*58)" and a["--expert-model-parallel-size"] == "64"
    # 61 layers on 16 stages: 14 middle stages of 4, the first 3 and the last 2 (Megatron's uneven-split flags)
    assert (a["--decoder-first-pipeline-num-layers"], a["--decoder-last-pipeline-num-layers"]) == ("3", "2")


def test_megatron_flags_for_qwen3_and_gpt_oss_head_dim_and_capacity_factor():
    qwen = evaluate(get_model("qwen3-235b-a22b"), P5_8, 64, 4096, tp=4, pp=2, dp=8, ep=8, micro_batch=1, zero=1)
    a = _args(qwen)
    assert a["--kv-channels"] == "128" and a["--num-query-groups"] == "4" and a["--moe-ffn-hidden-size"] == "1536"
    assert "--moe-layer-freq" not in a and "--moe-shared-expert-intermediate-size" not in a
    oss = get_model("gpt-oss-120b")
    padded = dataclasses.replace(oss, capacity_factor=1.25)
    plan = evaluate(padded, P5_8, 64, 4096, tp=8, pp=1, dp=8, ep=8, micro_batch=1, zero=1, sequence_parallel=True)
    b = _args(plan)
    assert b["--kv-channels"] == "64" and b["--moe-expert-capacity-factor"] == "1.25"
    assert b["--moe-pad-expert-input-to-capacity"] is True
    assert "--kv-channels" not in _args(evaluate(get_model("llama3-8b"), P5_8, 64, 4096, tp=8, pp=1, dp=8))


def test_nemo_refuses_what_its_hydra_config_cannot_say():
    fleet = Fleet.from_instance("p5.48xlarge", 256)
    plan = evaluate(get_model("deepseek-v3"), fleet, 4096, 4096, tp=1, pp=16, dp=128, ep=64, recompute="full", zero=1)
    with pytest.raises(PlanError, match="emit megatron"):
        plan.nemo_overrides()
    ok = evaluate(get_model("llama3-70b"), P5_8, 64, 8192, **TP8).nemo_overrides()
    assert "model.ub_tp_comm_overlap=true" in ok and "model.optim.overlap_grad_sync=true" in ok


def test_uneven_end_stages_beyond_one_layer_short():
    layout = ParallelConfig(tp=1, pp=16, dp=1, micro_batch=1)
    assert layout.stage_layers(61) == (3, 4) and layout.end_stage_layers(61) == (3, 2)
    assert ParallelConfig(tp=1, pp=16, dp=1, micro_batch=1).end_stage_layers(126) == (7, 7)  # Meta's split unchanged
    fleet = Fleet.from_instance("p5.48xlarge", 256)
    base = dict(tp=1, pp=16, dp=128, ep=64, micro_batch=1, recompute="full", zero=1)
    evaluate(get_model("deepseek-v3"), fleet, 4096, 4096, **base)  # refused before
    with pytest.raises(PlanError, match="without interleaving"):
        evaluate(get_model("deepseek-v3"), fleet, 4096, 4096, **{**base, "vpp": 2})
    with pytest.raises(PlanError, match="do not split"):  # 61 layers on 32 stages leave the last stage none
        ParallelConfig(tp=1, pp=32, dp=1, micro_batch=1).validate(
            get_model("deepseek-v3"), SMALL, TrainingSpec(32, 4096)
        )


def test_tp_across_nodes_is_searched_where_no_tp_within_a_node_fits():
    # Llama 3 8B at 1M tokens a sequence, no CP, on 16 GPUs: TP 8 needs 105 GiB a GPU, TP 16 over both nodes 65 GiB
    fleet = Fleet.from_instance("p5.48xlarge", 2)
    assert cross_node_tp_degrees(get_model("llama3-8b"), fleet) == (16,)
    best = search(get_model("llama3-8b"), fleet, 1, 1 << 20, max_cp=1, top=1)[0]
    assert best.tp == 16 and best.within_headroom
    assert best.time.tp_comm > 0
    with pytest.raises(PlanError, match="does not fit"):
        search(get_model("llama3-8b"), fleet, 1, 1 << 20, max_cp=1, top=1, cross_node_tp=False)


def test_spec_objects_give_the_keyword_search_and_evaluate():
    model, fleet = get_model("llama3-8b"), P5_8
    training = TrainingSpec(64, 8192, software=frameworks.software_for("megatron-lm"))
    by_specs = search_specs(model, fleet, training, SearchSpace(top=3))
    by_keywords = search(model, fleet, 64, 8192, software=frameworks.software_for("megatron-lm"), top=3)
    assert [p.summary() for p in by_specs] == [p.summary() for p in by_keywords]
    assert [p.step_time_s for p in by_specs] == [p.step_time_s for p in by_keywords]
    layout = ParallelConfig(tp=8, pp=1, dp=8, micro_batch=1, sequence_parallel=True, zero=1)
    built = build_plan(model, fleet, training, layout)
    kept = evaluate(model, fleet, 64, 8192, tp=8, pp=1, dp=8, sequence_parallel=True, zero=1, tp_comm_overlap=False)
    assert built.step_time_s == kept.step_time_s
