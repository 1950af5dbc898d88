"""CLI contract (keys, exit codes) and emitters."""

import json
import math

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import Fleet, evaluate, get_model

CONTRACT_KEYS = {
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "vpp",
    "micro_batch",
    "grad_accum",
    "zero",
    "recompute",
    "sequence_parallel",
    "fits",
    "memory_gib",
    "step_time_s",
    "model_tflops_per_gpu",
    "mfu",
}
COMMON = ["--instance", "p5.48xlarge", "--nodes", "4", "--global-batch", "128", "--seq-len", "4096"]


def test_search_json_is_a_ranked_list_of_contract_plans(capsys):
    assert main(["plan", "search", "--model", "llama3-8b", *COMMON, "--json", "--top", "5"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert len(plans) == 5
    for plan in plans:
        assert set(plan) >= CONTRACT_KEYS
        assert set(plan["memory_gib"]) >= {"params", "grads", "optimizer", "activations", "total"}
    # ranked by step time in 2 % buckets (ranking.TIE: smaller differences are ties, the simpler plan first)
    fastest = min(p["step_time_s"] for p in plans)
    buckets = [math.floor(math.log(p["step_time_s"] / fastest) / math.log(1.02)) for p in plans]
    assert buckets == sorted(buckets)


def test_evaluate_prints_one_plan(capsys):
    argv = [
        "plan",
        "evaluate",
        "--model",
        "llama3-8b",
        *COMMON,
        "--tp",
        "2",
        "--pp",
        "1",
        "--dp",
        "16",
        "--micro-batch",
        "1",
        "--recompute",
        "selective",
        "--sequence-parallel",
        "--zero",
        "1",
        "--json",
    ]
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["tp"], plan["dp"], plan["zero"], plan["grad_accum"], plan["fits"]) == (2, 16, 1, 8, True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            [
                "plan",
                "search",
                "--model",
                "llama3-8b",
                "--instance",
                "p9.huge",
                "--nodes",
                "1",
                "--global-batch",
                "8",
                "--seq-len",
                "4096",
            ],
            "unknown instance type",
        ),
        (
            [
                "plan",
                "evaluate",
                "--model",
                "llama3-8b",
                *COMMON,
                "--tp",
                "3",
                "--pp",
                "1",
                "--dp",
                "10",
                "--micro-batch",
                "1",
                "--recompute",
                "none",
            ],
            "tp*pp*dp*cp",
        ),
        (
            [
                "plan",
                "search",
                "--model",
                "llama3-405b",
                "--instance",
                "g5.8xlarge",
                "--nodes",
                "1",
                "--global-batch",
                "8",
                "--seq-len",
                "4096",
            ],
            "does not fit",
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_model_and_fleet_json(tmp_path, capsys):
    model = {
        "name": "tiny",
        "layers": 4,
        "hidden": 512,
        "heads": 8,
        "kv_heads": 8,
        "ffn_hidden": 2048,
        "vocab": 32000,
        "gated_mlp": False,
        "tied_embeddings": True,
    }
    fleet = {
        "accelerators_per_node": 4,
        "peak_tflops_bf16": 100,
        "hbm_gib": 24,
        "hbm_gbps": 900,
        "intra_node_gbytes_per_s": 50,
        "inter_node_gbits_per_s": 100,
    }
    (tmp_path / "m.json").write_text(json.dumps(model))
    (tmp_path / "f.json").write_text(json.dumps(fleet))
    argv = [
        "plan",
        "search",
        "--model-json",
        str(tmp_path / "m.json"),
        "--fleet-json",
        str(tmp_path / "f.json"),
        "--nodes",
        "2",
        "--global-batch",
        "64",
        "--seq-len",
        "1024",
        "--json",
        "--top",
        "1",
    ]
    assert main(argv) == 0
    best = json.loads(capsys.readouterr().out)[0]
    assert best["tp"] * best["pp"] * best["dp"] * best["cp"] == 8


def test_emitters_carry_the_plan():
    fleet = Fleet.from_instance("p5.48xlarge", 16)
    plan = evaluate(
        get_model("llama3-70b"),
        fleet,
        512,
        8192,
        tp=8,
        pp=4,
        dp=4,
        micro_batch=1,
        recompute="full",
        sequence_parallel=True,
        zero=1,
    )
    ds = plan.deepspeed_config()
    assert ds["train_batch_size"] == ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] * 4
    args = plan.megatron_args()
    assert args[args.index("--tensor-model-parallel-size") + 1] == "8"
    assert "--use-distributed-optimizer" in args and "--sequence-parallel" in args
    assert "--nproc-per-node=8" in plan.torchrun_args()
    assert plan.checkpoint_bytes == 14 * get_model("llama3-70b").total_params


def test_uneven_pipeline_emits_first_and_last_stage_layers():
    plan = evaluate(
        get_model("llama3-405b"),
        Fleet.from_instance("p5.48xlarge", 128),
        1024,
        8192,
        tp=8,
        pp=16,
        dp=8,
        micro_batch=1,
        recompute="full",
        sequence_parallel=True,
        zero=1,
    )
    args = plan.megatron_args()
    assert args[args.index("--decoder-first-pipeline-num-layers") + 1] == "7"
    assert args[args.index("--decoder-last-pipeline-num-layers") + 1] == "7"


def test_trainium_ranks_are_neuron_cores():
    fleet = Fleet.from_instance("trn1.32xlarge", 2)
    plan = evaluate(
        get_model("llama3-8b"),
        fleet,
        64,
        4096,
        tp=8,
        pp=1,
        dp=8,
        micro_batch=1,
        recompute="selective",
        sequence_parallel=True,
        zero=1,
    )
    assert (plan.accelerators_per_node, plan.workers_per_node) == (16, 32)
    neuron = plan.neuron_args()
    assert neuron[neuron.index("--tensor_parallel_size") + 1] == "8" and "--use_zero_1" in neuron


EVALUATE_405B = [
    "plan",
    "evaluate",
    "--model",
    "llama3-405b",
    "--instance",
    "p5.48xlarge",
    "--global-batch",
    "2048",
    "--seq-len",
    "8192",
    "--tp",
    "8",
    "--pp",
    "16",
    "--micro-batch",
    "1",
    "--recompute",
    "full",
    "--sequence-parallel",
    "--zero",
    "1",
    "--json",
]


def test_interleaved_schedule_on_uneven_stages_is_expressible(capsys):
    # GIVEN Llama 3 405B's 126 layers on 16 stages (7 on the end stages, 8 elsewhere)
    # WHEN it is evaluated with 2 virtual chunks per rank
    argv = [*EVALUATE_405B, "--nodes", "2048", "--dp", "128", "--vpp", "2"]
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    # THEN the interleaved bubble (p-1)/(v m) is the one priced: half of plain 1F1B's
    assert main([*EVALUATE_405B, "--nodes", "2048", "--dp", "128"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plan["vpp"] == 2 and plan["fits"]
    ratio = plan["step_time_breakdown_s"]["pp_bubble"] / plain["step_time_breakdown_s"]["pp_bubble"]
    assert ratio == pytest.approx(0.5, rel=0.1)


def test_evaluate_prints_a_plan_that_does_not_fit_and_exits_0(capsys):
    # GIVEN 405B squeezed onto 4 nodes WHEN evaluated THEN the plan says so, with the breakdown
    argv = [a if a != "16" else "4" for a in EVALUATE_405B]  # pp 16 -> 4
    assert main([*argv, "--nodes", "4", "--dp", "1"]) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert plan["fits"] is False and captured.err == ""
    assert plan["memory_gib"]["total"] > plan["memory_capacity_gib"]
    assert plan["memory_gib"]["optimizer"] > 0 and plan["memory_gib"]["activations"] > 0


def _model_json(tmp_path, **override):
    model = {
        "name": "tiny",
        "layers": 4,
        "hidden": 512,
        "heads": 8,
        "kv_heads": 8,
        "ffn_hidden": 2048,
        "vocab": 32000,
        "gated_mlp": False,
        "tied_embeddings": True,
        **override,
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model))
    return str(path)


SEARCH_8B = ["plan", "search", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--global-batch", "64"]
EVAL_8B = ["plan", "evaluate", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--nodes", "1"]
EVAL_8B += ["--global-batch", "64", "--seq-len", "4096", "--pp", "1", "--micro-batch", "1", "--recompute", "full"]


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*SEARCH_8B, "--nodes", "1", "--seq-len", "0"], "--seq-len must be >= 1"),
        ([*SEARCH_8B, "--nodes", "0", "--seq-len", "4096"], "--nodes must be >= 1"),
        ([*SEARCH_8B, "--nodes", "1", "--seq-len", "4096", "--top", "-1"], "--top must be >= 0"),
        ([*EVAL_8B, "--tp", "0", "--dp", "8"], "--tp must be >= 1"),
        ([*EVAL_8B, "--tp", "1", "--dp", "8", "--zero", "5"], "--zero must be one of 0, 1, 2, 3"),
        ([*EVAL_8B, "--tp", "one", "--dp", "8"], "invalid int value"),
        ([*SEARCH_8B, "--nodes", "1", "--seq-len", "4096", "--out", "/nonexistent/dir/plan.txt"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def _exit_code(argv):
    """What the process exits with: argparse's usage errors leave through SystemExit."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


@pytest.mark.parametrize(
    "override, message",
    [({"layers": "4"}, "layers must be a whole number"), ({"gated_mlp": 1}, "gated_mlp must be true or false")],
)
def test_mistyped_model_json_is_one_line_and_exit_2(tmp_path, capsys, override, message):
    argv = ["plan", "search", "--model-json", _model_json(tmp_path, **override), "--instance", "p5.48xlarge"]
    assert main([*argv, "--nodes", "1", "--global-batch", "8", "--seq-len", "1024"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_out_writes_the_table_to_a_file(tmp_path, capsys):
    out = tmp_path / "plans.json"
    assert main([*SEARCH_8B, "--nodes", "1", "--seq-len", "4096", "--top", "2", "--json", "--out", str(out)]) == 0
    assert capsys.readouterr().out == "" and len(json.loads(out.read_text())) == 2
