"""One CLI voice: errors are `error: <command>: <what>` then `fix: <what to do>`, with a did-you-mean for models,
partitions and schedulers; a flag that does nothing alone is refused; capacity is told apart from workloads;
unversioned images are refused as the render refuses them; progress lines never glue; JSON numbers are rounded."""

from __future__ import annotations

import io
import json
import pathlib
import sys
import threading
import time

import pytest
from conftest import REPO
from support.renders import Renders

from ekstrain.cli.main import main
from ekstrain.infra import render

JOB = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--scheduler", "volcano", "--nodes", "2"]
JOB += ["--image", "nvcr.io/nvidia/pytorch:25.01-py3", "--global-batch", "512", "--seq-len", "8192"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _error_then_fix(err: str, command: str) -> tuple[str, str]:
    lines = err.strip().splitlines()
    assert len(lines) == 2, err
    error, fix = lines
    assert error.startswith(f"error: {command}: ") and fix.startswith("fix: "), err
    return error, fix


def test_an_unknown_partition_is_an_error_with_a_did_you_mean_and_a_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run([*JOB, "--partition", "gpu-h10", "--model", "llama3-70b"], capsys)
    assert code == 2 and out == ""
    error, fix = _error_then_fix(err, "ekstrain job render")
    assert "unknown partition 'gpu-h10' (did you mean 'gpu-h100'?)" in error
    assert "--partition" in fix and "gpu-a100, gpu-h100, trainium" in fix


def test_an_unknown_model_names_the_command_and_the_closest_model(capsys: pytest.CaptureFixture[str]) -> None:
    # job render (the planner behind it) and plan search say it the same way
    code, _, err = _run([*JOB, "--partition", "gpu-h100", "--model", "llama3-70"], capsys)
    assert code == 2
    error, fix = _error_then_fix(err, "ekstrain job render")
    assert "unknown model 'llama3-70' (did you mean 'llama3-70b'?)" in error and "--model" in fix
    plan = ["plan", "search", "--model", "llama3-70", "--instance", "p5.48xlarge", "--nodes", "2"]
    code, _, err = _run([*plan, "--global-batch", "512", "--seq-len", "8192"], capsys)
    assert code == 2
    error, fix = _error_then_fix(err, "ekstrain plan search")
    assert "(did you mean 'llama3-70b'?)" in error and fix.startswith("fix: pass --model one of ")


def test_an_unknown_scheduler_gets_a_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["job", "render", "--scheduler", "volcan", "--partition", "gpu-h100"], capsys)
    assert code == 2 and err.startswith("error: ekstrain job render: ") and "'volcano'" in err


def test_html_without_timeline_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    # GIVEN `simulate --html FILE` with no --timeline WHEN run THEN refused before anything (it used to be ignored)
    code, out, err = _run(["simulate", "--stack", "prod", "--html", str(tmp_path / "t.html")], capsys)
    assert code == 2 and out == ""
    error, fix = _error_then_fix(err, "ekstrain simulate")
    assert "--html" in error and "--timeline" in fix
    assert not (tmp_path / "t.html").exists()


@pytest.mark.parametrize("image", ["nvcr.io/nvidia/pytorch:latest", "nvcr.io/nvidia/pytorch"])
def test_job_render_refuses_unversioned_images_as_the_render_does(
    image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a if a != "nvcr.io/nvidia/pytorch:25.01-py3" else image for a in JOB]
    code, out, err = _run([*argv, "--partition", "gpu-h100", "--model", "llama3-70b"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ekstrain job render: argument --image: ") and "names no version" in err
    assert "pin a tag" in err


def test_storage_json_numbers_are_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["storage", "--checkpoint-gib", "140", "--deployment-type", "SCRATCH_2", "--json"], capsys)
    assert code in (0, 1)
    assert "0000000" not in out  # 168.00000000000003 before
    data = json.loads(out)
    assert data["configured"]["usd_per_month"] == 168.0 and data["configured"]["save_seconds"] == 641.38


class _SlowStream(io.StringIO):
    """A stderr whose writes take a moment, so writes of two threads interleave when they can."""

    def write(self, s: str) -> int:
        n = super().write(s)
        time.sleep(0.0005)
        return n


def test_progress_lines_from_threads_never_glue(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = _SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    lines = [f"[3/3] checks: helm template {i}/40 releases" for i in range(40)]
    threads = [threading.Thread(target=render.stderr_progress, args=(line,)) for line in lines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(stream.getvalue().splitlines()) == sorted(lines)


@pytest.fixture(scope="module")
def prod_build(renders: Renders) -> pathlib.Path:
    out, code = renders.run("prod")
    assert code in (0, 1)  # 1: no upstream schemas (a plain clone): the render is written all the same
    return out


def test_simulate_tells_capacity_apart_from_workloads(
    prod_build: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN one job on prod, whose three Slurm NodeSets are at 0 replicas
    job = tmp_path / "nccl.yaml"
    argv = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--scheduler", "nccl-test"]
    assert main([*argv, "--partition", "gpu-h100", "--out", str(job)]) == 0
    capsys.readouterr()
    # WHEN simulated THEN one workload starts; the slurmd pods are capacity that could start if scaled
    stack = ["--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--build", str(prod_build)]
    code, out, _ = _run(["simulate", *stack, str(job)], capsys)
    assert code == 0, out
    assert out.strip().splitlines()[-1] == (
        "1 workloads start, 0 blocked; 3 Slurm NodeSets at 0 replicas could start if scaled"
    )
    assert sum(line.startswith("CAPACITY Pod/slurm-worker-") for line in out.splitlines()) == 3
    code, out, _ = _run(["simulate", *stack, "--json", str(job)], capsys)
    data = json.loads(out)
    assert len(data["started"]) == 1 and len(data["could_start_if_scaled"]) == 3


def test_a_shipped_mix_before_make_examples_says_to_run_it(
    prod_build: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN the shipped prod mix, whose workloads `make examples` renders into build/examples, in a fresh checkout
    monkeypatch.chdir(tmp_path)
    mix = REPO / "examples" / "mix-prod.yaml"
    stack = ["--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--build", str(prod_build)]
    code, _, err = _run(["simulate", *stack, "--timeline", str(mix)], capsys)
    # THEN exit 2, naming the file and the make target that writes it
    assert code == 2 and "is not a file" in err and "`make examples`" in err, err
