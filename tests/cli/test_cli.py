"""The one ``ekstrain`` command line ("One command line"): one test per promise.

help with defaults and an example for every command; ``--version``; did-you-mean for a command, a flag and a
choice (exit 2, one line); ``--json`` of every table command parses strictly; a closed pipe ends without a
traceback; ``render`` prints its stage lines on stderr and a short stdout summary; ``plan --emit`` prints what
``job render`` runs for the same plan.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Any

import click
import pytest
import yaml
from conftest import REPO, stack_config

from ekstrain.assembly import plan_emit
from ekstrain.assembly.jobs.render import render as render_job
from ekstrain.assembly.jobs.spec import RunSpec
from ekstrain.cli import kit as cli_kit
from ekstrain.cli import main as cli
from ekstrain.planner import emit as planner_emit

PLAN = ["--instance", "p5.48xlarge", "--nodes", "2", "--global-batch", "256", "--seq-len", "4096"]
TRN_PLAN = ["--instance", "trn1.32xlarge", "--nodes", "2", "--global-batch", "64", "--seq-len", "4096"]


def run(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``ekstrain argv`` in this process (usage errors leave by SystemExit)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue()


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in JSON output")

    return json.loads(text, parse_constant=refuse)


def commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += commands(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


@pytest.mark.parametrize("path", [" ".join(p) for p, _ in commands(cli.build_cli())])
def test_GIVEN_any_command_WHEN_help_THEN_it_shows_an_example_and_every_default(path: str) -> None:
    command = dict((" ".join(p), c) for p, c in commands(cli.build_cli()))[path]
    code, out, err = run([*path.split(), "--help"])
    assert code == 0 and err == ""
    assert "Examples:" in out and "ekstrain " in out.split("Examples:")[1]
    flat = " ".join(out.split())
    for param in command.params:
        default = getattr(param, "default", None)
        if (
            isinstance(param, click.Option)
            and not param.is_flag
            and not param.required
            and default not in (None, (), "")
        ):
            assert f"[default: {default}]" in flat, (param.name, out)


def test_GIVEN_the_installed_package_WHEN_version_THEN_it_prints_the_package_version() -> None:
    code, out, _ = run(["--version"])
    assert code == 0 and out.strip() == f"ekstrain {importlib.metadata.version('ekstrain')}"


JOB = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--partition", "gpu-h100"]


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["catalg"], "did you mean 'catalog'?"),
        (["plan", "serch"], "did you mean 'search'?"),
        ([*JOB, "--schedular", "nccl-test"], "did you mean --scheduler?"),
        (["plan", "search", "--model", "llama3-8b", *PLAN, "--emit", "megatorn"], "did you mean 'megatron'?"),
        ([*JOB, "--scheduler", "volcno"], "did you mean 'volcano'?"),
        (["catalog", "--family", "trainum"], "did you mean 'trainium'?"),
    ],
)
def test_GIVEN_a_misspelled_command_flag_or_choice_WHEN_run_THEN_one_line_names_the_right_one_and_exit_2(
    argv: list[str], suggestion: str
) -> None:
    code, out, err = run(argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ekstrain") and suggestion in err, err
    assert "--help" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [
        ["catalog", "--json"],
        ["catalog", "--family", "trainium", "--json"],
        ["job", "schedulers", "--json"],
        ["storage", "--checkpoint-gib", "1043", "--capacity-gib", "4800", "--json"],
        ["plan", "search", "--model", "llama3-8b", *PLAN, "--top", "3", "--json"],
        ["plan", "evaluate", "--model", "llama3-8b", *PLAN, "--tp", "1", "--pp", "1", "--dp", "16"]
        + ["--micro-batch", "1", "--recompute", "none", "--json"],
        ["plan", "search", "--model", "llama3-8b", *PLAN, "--emit", "deepspeed", "--json"],
        ["plan", "calibrate", "--json"],
    ],
    ids=lambda argv: " ".join(argv[:2]) + (" --emit" if "--emit" in argv else ""),
)
def test_GIVEN_a_table_command_WHEN_json_THEN_stdout_is_strict_json(argv: list[str]) -> None:
    code, out, err = run(argv)
    assert code in (0, 1), err  # storage exits 1 when the file system is too slow: the JSON still says so
    assert strict_json(out)


def test_GIVEN_a_non_finite_number_WHEN_dumped_THEN_it_becomes_null() -> None:
    from ekstrain.cli import kit as cli_kit

    assert strict_json(cli_kit.dumps({"a": float("nan"), "b": [float("inf"), 1.5]})) == {"a": None, "b": [None, 1.5]}


def test_GIVEN_a_reader_that_closed_the_pipe_WHEN_catalog_writes_THEN_no_traceback() -> None:
    # The reader closes before the writer has written (a Python start takes far longer), so the write hits EPIPE.
    proc = subprocess.Popen(
        [sys.executable, "-m", "ekstrain", "catalog", "--json"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err and err == "", err
    assert code in (0, cli.EXIT_BROKEN_PIPE)


def test_GIVEN_a_pipe_into_head_WHEN_catalog_THEN_the_first_line_arrives_and_nothing_is_reported() -> None:
    proc = subprocess.run(
        f"{shlex.quote(sys.executable)} -m ekstrain catalog | head -1",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("type") and proc.stderr == "", proc.stderr


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], pathlib.Path]:
    """One real ``ekstrain render`` of the dev stack (a cold render takes a minute or two here)."""
    out = tmp_path_factory.mktemp("render") / "dev"
    proc = subprocess.run(
        [sys.executable, "-m", "ekstrain", "render", "--stack", "dev"]
        + ["--stack-file", str(REPO / "Pulumi.dev.yaml"), "--out", str(out), "--allow-unchecked"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc, out


def test_GIVEN_a_render_WHEN_it_runs_THEN_stages_go_to_stderr_and_stdout_is_a_short_summary(
    rendered: tuple[subprocess.CompletedProcess[str], pathlib.Path],
) -> None:
    proc, out = rendered
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    # "[k/n] what": every stage reports as it ends (finer lines may come between), in order, up to [n/n]
    stages = [tuple(map(int, m.groups())) for m in re.finditer(r"^\[(\d+)/(\d+)\] ", proc.stderr, re.M)]
    assert len(stages) >= 3 and stages == sorted(stages) and stages[-1][0] == stages[-1][1], proc.stderr
    lines = proc.stdout.splitlines()
    assert 3 <= len(lines) <= 10, proc.stdout
    assert lines[0].startswith("stack dev: ") and "resources registered" in lines[0]
    assert any(line.startswith("checks: ") and " passed, 0 failed" in line for line in lines), proc.stdout
    assert lines[-1] == f"full report: {out / 'SUMMARY.md'}"
    summary = (out / "SUMMARY.md").read_text()
    assert "## Partitions" in summary and "## Partitions" not in proc.stdout


def test_GIVEN_a_rendered_stack_WHEN_simulate_json_THEN_stdout_is_strict_json(
    rendered: tuple[subprocess.CompletedProcess[str], pathlib.Path],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, build = rendered
    stack = ["--stack", "dev", "--stack-file", str(REPO / "Pulumi.dev.yaml"), "--build", str(build)]
    # examples/mix-dev.yaml names the pre-flight `make simulate` renders into build/examples-dev/
    monkeypatch.chdir(tmp_path)
    nccl = tmp_path / "build" / "examples-dev" / "nccl-check-gpu-small.yaml"
    job = ["job", "render", "--stack-file", str(REPO / "Pulumi.dev.yaml"), "--scheduler", "nccl-test"]
    assert run([*job, "--partition", "gpu-small", "--out", str(nccl)])[0] == 0
    code, out, err = run(["simulate", *stack, "--json", str(nccl)])
    assert code in (0, 1), err
    assert set(strict_json(out)) == {"started", "blocked", "could_start_if_scaled"}
    code, out, err = run(["simulate", *stack, "--timeline", str(REPO / "examples" / "mix-dev.yaml"), "--json"])
    assert code in (0, 1), err
    timeline = strict_json(out)
    assert timeline["jobs"] and all("state" in j for j in timeline["jobs"])


# ---- plan --emit == job render ------------------------------------------------------------------------

RENDEZVOUS = ("--node_rank=", "--master_addr=", "--master_port=", "--rdzv")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def job_launch(plan: Any, emit: str, model: str, global_batch: int, seq_len: int) -> tuple[list[str], dict[str, str]]:
    """The exec'd torchrun words (rendezvous left out) and launch files of the job templates' output."""
    framework = plan_emit.JOB_FRAMEWORK[emit]
    trainium = emit == "neuron"
    spec = RunSpec(
        name=f"{model}-{framework}".replace(".", "-").lower()[:40].rstrip("-"),
        partition="trainium" if trainium else "gpu-h100",
        nodes=plan.nodes,
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        model=model,
        global_batch=global_batch,
        seq_len=seq_len,
        framework=framework,  # type: ignore[arg-type]
        plan=plan,
    )
    objects = render_job(spec, stack_config("prod"), "trainium" if trainium else "volcano")
    script = next(s for s in _strings(objects) if "exec torchrun" in s)
    line = next(line.strip() for line in script.splitlines() if line.strip().startswith("exec torchrun"))
    words = [w for w in shlex.split(line)[1:] if not w.startswith(RENDEZVOUS)]
    files = {k: v for o in objects if o.get("kind") == "ConfigMap" for k, v in o.get("data", {}).items()}
    return words, files


@pytest.mark.parametrize("emit", ["torchrun", "deepspeed", "megatron", "neuron", "nemo"])
def test_GIVEN_a_plan_WHEN_emit_THEN_it_prints_the_launch_lines_job_render_writes(
    emit: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    real = plan_emit.launch

    def spy(plan: Any, name: str, **kwargs: Any) -> str:
        seen["plan"] = plan
        return real(plan, name, **kwargs)

    monkeypatch.setattr(plan_emit, "launch", spy)
    fleet = TRN_PLAN if emit == "neuron" else PLAN
    model, global_batch = "llama3-8b", int(fleet[fleet.index("--global-batch") + 1])
    code, out, err = run(["plan", "search", "--model", model, *fleet, "--emit", emit])
    assert code == 0, err
    plan = seen["plan"]
    if emit == "nemo":  # no job template runs NeMo: the planner's emitter is the source
        assert shlex.split(out) == planner_emit.nemo_overrides(plan)
        return
    words, files = job_launch(plan, emit, model, global_batch, 4096)
    first, *rest = out.rstrip("\n").split("\n", 1)
    assert shlex.split(first) == words
    if emit == "deepspeed":
        body = rest[0].split("\n", 1)[1]  # after "# /etc/ekstrain/ds_config.json"
        assert json.loads(body) == json.loads(files["ds_config.json"])
    else:
        assert rest == []


def test_GIVEN_words_after_a_double_dash_WHEN_job_render_THEN_they_reach_the_training_script_as_is() -> None:
    argv = [*JOB, "--scheduler", "volcano", "--nodes", "2", "--model", "llama3-8b", "--image"]
    argv += ["nvcr.io/nvidia/pytorch:25.01-py3", "--global-batch", "256", "--seq-len", "4096"]
    code, out, err = run([*argv, "--", "--lr", "1e-4", "--nodes", "x y"])
    assert code == 0, err
    script = next(s for s in _strings(list(yaml.safe_load_all(out))) if "exec torchrun" in s)
    line = next(line.strip() for line in script.splitlines() if line.strip().startswith("exec torchrun"))
    assert shlex.split(line)[-4:] == ["--lr", "1e-4", "--nodes", "x y"]


def required_options() -> list[tuple[str, str]]:
    """(command path, --flag) of every required option of every command."""
    return [
        (" ".join(path), cli_kit.flag_of(param))
        for path, command in commands(cli.build_cli())
        if not isinstance(command, click.Group)
        for param in command.params
        if isinstance(param, click.Option) and param.required
    ]


@pytest.mark.parametrize(("path", "flag"), required_options())
def test_GIVEN_a_required_option_left_out_WHEN_run_THEN_one_line_names_it_and_exit_2(path: str, flag: str) -> None:
    """Click 8.3+ reads an explicit default=None as a value: `plan evaluate` without --seq-len once reached the
    planner and died in a TypeError traceback. Every other required option is given, so the one left out is named."""
    command = dict((" ".join(p), c) for p, c in commands(cli.build_cli()))[path]
    others = [o for o in command.params if isinstance(o, click.Option) and o.required and cli_kit.flag_of(o) != flag]
    argv = [*path.split()]
    for option in others:
        choices = getattr(option.type, "choices", None)
        argv += [cli_kit.flag_of(option), str(next(iter(choices))) if choices else "1"]
    code, _, err = run(argv)
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"error: ekstrain {path}: argument {flag} is required (see ekstrain {path} --help)"
    ]
