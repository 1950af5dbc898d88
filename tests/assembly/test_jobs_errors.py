"""Bad requests fail with one clear line (JobRequestError); the CLI exits 2 with that line."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml
from conftest import REPO, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import JobRequestError, RunSpec, render, resolve_for
from ekstrain.assembly.jobs import planning as planning_module
from ekstrain.cli import main as cli
from ekstrain.tooling import validation

PROD = stack_config("prod")


def _error(spec: RunSpec, scheduler: str = "volcano", planner: Any = None) -> str:
    with pytest.raises(JobRequestError) as exc:
        render(spec, PROD, scheduler, planner or FakePlanner())
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_more_nodes_than_the_partition_max() -> None:
    assert _error(spec_for("gpu-h100", nodes=9)) == (
        "9 nodes requested but partition gpu-h100 has maxNodes 8; ask for at most 8 nodes or raise "
        "ekstrain:partitions (gpu-h100).maxNodes"
    )


def test_trainium_template_on_a_gpu_partition() -> None:
    text = _error(spec_for("gpu-a100"), "trainium")
    assert "needs a trainium partition but gpu-a100 is a gpu partition" in text and "trainium" in text


def test_trainium_framework_on_a_gpu_partition() -> None:
    text = _error(spec_for("gpu-a100", framework="neuronx-distributed"))
    assert text.startswith("framework neuronx-distributed needs a trainium partition")


@pytest.mark.parametrize("scheduler", ["mpijob", "pytorchjob", "rayjob"])
def test_gpu_templates_on_the_trainium_partition(scheduler: str) -> None:
    assert "needs a gpu partition but trainium is a trainium partition" in _error(spec_for("trainium"), scheduler)


def test_cuda_framework_on_the_trainium_partition() -> None:
    text = _error(spec_for("trainium", framework="deepspeed"))
    assert text.startswith("framework deepspeed needs a gpu partition")


def test_unknown_partition() -> None:
    assert _error(spec_for("gpu-b200")) == (
        "unknown partition 'gpu-b200' (did you mean 'gpu-h100'?); fix: pass --partition one of the stack's "
        "partitions: gpu-a100, gpu-h100, trainium"
    )


def test_plan_for_a_different_instance_type() -> None:
    plan = FakePlanner().search("llama3-8b", "p5.48xlarge", 2, 256, 4096)[0]
    text = _error(spec_for("gpu-a100", plan=plan))
    assert text.startswith("the plan is for p5.48xlarge but partition gpu-a100 runs p4d.24xlarge")


def test_instance_type_outside_the_partition() -> None:
    text = _error(spec_for("gpu-a100", instance_type="p5.48xlarge"))
    assert text == (
        "instance type p5.48xlarge is not in partition gpu-a100 (p4d.24xlarge, p4de.24xlarge); pick one "
        "of those or another partition"
    )


def test_plan_for_a_different_node_count() -> None:
    plan = FakePlanner().search("llama3-8b", "p4d.24xlarge", 2, 256, 4096)[0]
    assert "the plan is for 2 nodes but the job asks for 4" in _error(spec_for("gpu-a100", nodes=4, plan=plan))


def test_model_that_fits_nowhere_says_how_to_fix_it() -> None:
    text = _error(spec_for("gpu-a100", nodes=1, model="llama3-70b"))
    assert text.startswith("no parallel plan fits llama3-70b on 1 x p4d.24xlarge")
    assert "LoRA" in text


def test_batch_that_does_not_divide() -> None:
    plan = dataclasses.replace(FakePlanner().search("llama3-8b", "p4d.24xlarge", 2, 256, 4096)[0], grad_accum=3)
    assert "global batch 256 != micro batch 1 x dp 16 x grad accum 3" in _error(spec_for("gpu-a100", plan=plan))


def test_bad_names_and_numbers() -> None:
    with pytest.raises(JobRequestError, match="DNS-1035"):
        spec_for("gpu-a100", name="Llama_70B")
    with pytest.raises(JobRequestError, match=r"--nodes is 0, outside 1\.\.131,072"):
        spec_for("gpu-a100", nodes=0)


def test_paths_outside_fsx() -> None:
    assert "outside the FSx mount /fsx" in _error(spec_for("gpu-a100", checkpoint_path="/tmp/ckpt"))


def test_pinned_degrees_are_honoured() -> None:
    r = resolve_for(spec_for("gpu-h100", nodes=2, tp=8), PROD, "volcano", FakePlanner())
    assert r.degrees["tp"] == 8 and r.degrees["dp"] == 2


# ---- CLI ---------------------------------------------------------------------------------------------

ARGS = [
    "job",
    "render",
    "--stack-file",
    str(REPO / "Pulumi.prod.yaml"),
    "--image",
    "img:1",
    "--model",
    "llama3-8b",
    "--global-batch",
    "256",
    "--seq-len",
    "4096",
]


@pytest.fixture
def fake_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planning_module, "RealPlanner", FakePlanner)


def test_cli_exits_2_with_one_line(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main([*ARGS, "--scheduler", "volcano", "--partition", "gpu-a100", "--nodes", "17"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert out.err == (
        "error: ekstrain job render: 17 nodes requested but partition gpu-a100 has maxNodes 16; ask for at "
        "most 16 nodes or raise ekstrain:partitions (gpu-a100).maxNodes\n"
    )


def test_cli_trainium_on_gpu_exits_2(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([*ARGS, "--scheduler", "trainium", "--partition", "gpu-h100", "--nodes", "2"]) == 2
    assert "needs a trainium partition" in capsys.readouterr().err


def test_cli_missing_arguments_exit_2(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "job",
            "render",
            "--stack-file",
            str(REPO / "Pulumi.prod.yaml"),
            "--scheduler",
            "volcano",
            "--partition",
            "gpu-a100",
        ]
    )
    assert code == 2 and "volcano needs --nodes, --image, --model, --global-batch, --seq-len" in capsys.readouterr().err


def test_cli_unknown_scheduler_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([*ARGS, "--scheduler", "kueue", "--partition", "gpu-a100", "--nodes", "2"])
    assert exc.value.code == 2


def test_cli_renders_yaml_to_stdout_and_file(
    fake_planner: None, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    assert cli.main([*ARGS, "--scheduler", "mpijob", "--partition", "gpu-a100", "--nodes", "4"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["MPIJob"]
    assert docs[0]["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4
    out = tmp_path / "job.sbatch"
    assert cli.main([*ARGS, "--scheduler", "slurm", "--partition", "gpu-a100", "--nodes", "4", "--out", str(out)]) == 0
    assert out.read_text().startswith("#!/bin/bash\n#SBATCH --job-name=llama3-8b-slurm\n")


def test_cli_validate_flag(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    if validation.upstream_dir() is None:
        pytest.skip("upstream schemas absent")
    assert (
        cli.main(
            [*ARGS, "--scheduler", "slurm", "--configmap", "--partition", "trainium", "--nodes", "2", "--validate"]
        )
        == 0
    )
    (doc,) = yaml.safe_load_all(capsys.readouterr().out)
    assert doc["kind"] == "ConfigMap" and "llama3-8b-slurm.sbatch" in doc["data"]


def test_cli_nccl_test_needs_no_model(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        [
            "job",
            "render",
            "--stack-file",
            str(REPO / "Pulumi.prod.yaml"),
            "--scheduler",
            "nccl-test",
            "--partition",
            "gpu-h100",
        ]
    )
    assert code == 0
    (job,) = yaml.safe_load_all(capsys.readouterr().out)
    assert job["kind"] == "MPIJob" and job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2


def test_cli_bad_stack_file_exits_2(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text((REPO / "Pulumi.prod.yaml").read_text().replace("maxNodes: 8", "maxNodes: -1"))
    code = cli.main(["job", "render", "--stack-file", str(bad), "--scheduler", "nccl-test", "--partition", "gpu-h100"])
    err = capsys.readouterr().err
    assert code == 2 and "maxNodes" in err and "Traceback" not in err


def test_cli_refuses_a_scheduler_the_stack_does_not_install(
    fake_planner: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prod runs Kubeflow Trainer, so a PyTorchJob would never start (it used to exit 0 with a warning)."""
    assert cli.main([*ARGS, "--scheduler", "pytorchjob", "--partition", "gpu-a100", "--nodes", "2"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == (
        "error: ekstrain job render: this stack does not install pytorchjob's controller: set "
        "ekstrain:schedulers.kubeflow.flavor: training-operator (it is 'trainer'; the training operator cannot "
        "run beside the MPI operator), or use --scheduler mpijob or trainjob or volcano or bionemo or rayjob or "
        "slurm\n"
    )
    assert cli.main([*ARGS, "--scheduler", "trainjob", "--partition", "gpu-a100", "--nodes", "2"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_refusal_offers_only_schedulers_for_the_partition(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = tmp_path / "Pulumi.dev.yaml"
    dev.write_text((REPO / "Pulumi.dev.yaml").read_text())
    argv = ["job", "render", "--stack-file", str(dev), "--partition", "gpu-small", "--scheduler", "rayjob"]
    assert cli.main([*argv, "--nodes", "2", "--image", "img:1", "--model", "llama3-8b"]) == 2
    err = capsys.readouterr().err
    assert "set ekstrain:schedulers.kuberay.enabled: true, or use --scheduler mpijob or volcano or bionemo" in err


def test_plan_instance_type_is_read_from_the_fleet_name() -> None:
    from types import SimpleNamespace

    assert (
        planning_module.plan_instance_type(SimpleNamespace(fleet=SimpleNamespace(name="p5.48xlarge"))) == "p5.48xlarge"
    )
    assert planning_module.plan_instance_type(SimpleNamespace()) is None


def test_planner_torchrun_counts_must_agree_and_launcher_env_is_not_exported() -> None:
    plan = FakePlanner().search("llama3-8b", "p4d.24xlarge", 2, 256, 4096)[0]
    r = resolve_for(spec_for("gpu-a100", plan=plan), PROD, "volcano", FakePlanner())
    assert r.env["NNODES"] == "2" and "WORLD_SIZE" not in r.env
    bad = dataclasses.replace(plan, accelerators_per_node=4)
    assert "the plan assumes 4 accelerators per node" in _error(spec_for("gpu-a100", plan=bad))


def test_planner_torchrun_args_that_disagree_are_an_error() -> None:
    plan = FakePlanner().search("llama3-8b", "p4d.24xlarge", 2, 256, 4096)[0]

    class Skewed(type(plan)):  # type: ignore[misc]
        def torchrun_args(self) -> list[str]:
            return ["--nnodes=2", "--nproc-per-node=4"]

    skewed = Skewed(**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)})
    assert "the planner's torchrun --nproc-per-node=4 disagrees with 8" in _error(spec_for("gpu-a100", plan=skewed))


def test_plans_a_framework_cannot_run_are_skipped() -> None:
    class PipelinePlanner(FakePlanner):
        """Ranks a pipelined ZeRO-3 layout first, as a hardware-only ranking may."""

        def search(self, *a: Any, **kw: Any) -> list[Any]:
            plans = super().search(*a, **kw)
            return [dataclasses.replace(p, pp=2, dp=p.dp // 2, grad_accum=p.grad_accum * 2) for p in plans[:1]] + plans

    r = resolve_for(spec_for("gpu-a100", framework="deepspeed"), PROD, "volcano", PipelinePlanner())
    assert r.degrees["pp"] == 1, "DeepSpeed cannot pipeline with ZeRO-3: the next plan is used"
    r = resolve_for(spec_for("gpu-a100", framework="torchrun-fsdp"), PROD, "volcano", PipelinePlanner())
    assert r.degrees["pp"] == 2


def test_no_runnable_plan_for_the_framework_is_an_error() -> None:
    class OnlyPipelines(FakePlanner):
        def search(self, *a: Any, **kw: Any) -> list[Any]:
            return [
                dataclasses.replace(p, pp=2, dp=p.dp // 2, grad_accum=p.grad_accum * 2)
                for p in super().search(*a, **kw)
                if p.dp % 2 == 0
            ]

    text = _error(spec_for("gpu-a100", framework="deepspeed"), planner=OnlyPipelines())
    assert "can run under deepspeed (DeepSpeed's pipeline engine supports ZeRO stages 0 and 1 only)" in text


# ---- the three reported shell injections --------------------------------------------------------


def test_cli_refuses_a_newline_in_the_checkpoint_path(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    """It became a command through the unquoted ``#SBATCH --output`` line."""
    argv = ["--scheduler", "slurm", "--partition", "gpu-a100", "--nodes", "2"]
    assert cli.main([*ARGS, *argv, "--checkpoint-path", "/shared/ckpt\ntouch /tmp/pwned"]) == 2
    assert capsys.readouterr().err == (
        "error: ekstrain job render: --checkpoint-path '/shared/ckpt\\ntouch /tmp/pwned' has a control character "
        "(U+000A) at character 13; values must be one line of printable text: remove it\n"
    )


def test_cli_refuses_an_env_name_that_is_a_command(fake_planner: None, capsys: pytest.CaptureFixture[str]) -> None:
    """``--env '$(id)=1'`` was emitted as ``export $(id)=1``."""
    argv = ["--scheduler", "slurm", "--partition", "gpu-a100", "--nodes", "2", "--env", "$(id)=1"]
    assert cli.main([*ARGS, *argv]) == 2
    assert capsys.readouterr().err == (
        "error: ekstrain job render: --env name '$(id)' is not a variable name; use letters, digits and '_', not "
        "starting with a digit (e.g. --env MY_FLAG=1)\n"
    )


def test_dollar_brace_no_longer_switches_a_value_to_double_quotes() -> None:
    """``${`` in ``--script``/``--dataset-path``/args made the whole word double-quoted, so ``$(...)`` ran."""
    hostile = "${HOME}$(touch /tmp/pwned)"
    objects = render(spec_for("gpu-a100", script=hostile, args=(hostile,)), PROD, "volcano", FakePlanner())
    body = objects[-1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]
    assert f'"{hostile}"' not in body and body.count("'${HOME}$$(touch /tmp/pwned)'") == 2
