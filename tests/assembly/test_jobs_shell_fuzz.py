"""No user value reaches a shell as code. Every generated script runs for hostile input.

For each flag class (``--script``, ``--dataset-path``, ``--checkpoint-path``, the arguments after ``--``,
``--env`` values, ``--resume-flag``) hypothesis draws hostile text (command substitution, backticks,
``;``/``&&``/``|``, redirections, globs, ``${VAR}``/``$(VAR)`` of platform and kubelet variables, quotes,
backslashes, ``%`` patterns) and a scheduler. The rendered script is checked with ``bash -n`` and then run
by bash as the controller would start it (Kubernetes: the kubelet's ``$(VAR)`` expansion first, then
``bash -c`` with the controller's variables; MPIJob: the launcher's ``mpirun`` stub starts the rank
program with only the ``-x`` variables; Slurm: the sbatch script; RayJob: the launcher with a stub Ray
Train), with ``torchrun``/``python``/``srun``/``mpirun``/``neuron_parallel_compile``/``scontrol``
replaced by stubs that log their argv (NUL-separated: the platform's own scripts are multi-line arguments)
and their environment. The test asserts the
argv equals the one the builder meant, the user's value arrives in it byte for byte, and nothing else ran
(a canary file a substitution would create is never created; only the expected programs were called).
Two refusal classes check that control characters and bad ``--env`` names exit 2 with one line.

``EKSTRAIN_FUZZ_EXAMPLES`` sets the examples per class (default 25 for CI; the issue's run uses 3000);
``EKSTRAIN_FUZZ_REPORT=<file>`` writes per-class counts and the slowest example as JSON.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import REPO, stack_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.jobs import FakePlanner, kubelet_expand
from test_jobs_templates import CASES, spec_for

from ekstrain.assembly.jobs import (
    JobRequestError,
    RunSpec,
    bionemo,
    pytorchjob,
    render,
    render_sbatch,
    resolve_for,
    slurm,
    trainium,
    trainjob,
    volcano,
)
from ekstrain.assembly.jobs import planning as planning_module
from ekstrain.assembly.jobs.resolve import PlatformWord, ResolvedRun, kubelet_literal
from ekstrain.assembly.jobs.spec import ENV_NAME, REFUSED_CATEGORIES, RUN_OWNED_ENV, RUN_OWNED_PREFIXES, SHELL_OWNED_ENV
from ekstrain.cli import main as cli

EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "25"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
SCHEDULER_CASES = [c for c in CASES if c[0] not in ("raycluster", "nccl-test")]
"""raycluster runs no command of ours; nccl-test takes no user text (tests/test_field_launch.py runs it)."""
CANARY = "CANARY"
"""Created in the working directory by any payload that runs."""
PAYLOADS = [
    f"$(: >{CANARY})",
    f"`: >{CANARY}`",
    f"; : >{CANARY}",
    f"&& : >{CANARY}",
    f"| : >{CANARY}",
    f"<(: >{CANARY})",
    f">{CANARY}",
    f"'$(: >{CANARY})'",
    f'"$(: >{CANARY})"',
    "${RANK}",
    "${VC_TASK_INDEX}",
    "$RANK",
    "$(RANK)",
    "$(DATA_DIR)",
    "$$(DATA_DIR)",
    "$$",
    "$",
    "$((1+1))",
    "${IFS}",
    "'",
    '"',
    "\\",
    "*",
    "?",
    "[a]",
    "~",
    "{a,b}",
    "#",
    "!",
    "%x",
    "%j",
    " ",
    "=",
    "--",
    "-x",
    "é",
    "\u00a0",
]
TEXT = st.lists(
    st.one_of(
        st.sampled_from(PAYLOADS),
        st.text(
            st.characters(blacklist_categories=tuple(REFUSED_CATEGORIES), max_codepoint=0x2FFF), min_size=1, max_size=6
        ),
    ),
    min_size=1,
    max_size=5,
).map("".join)
"""Hostile but valid text: payloads and printable characters, no character the templates refuse."""
PATH_PART = TEXT.map(lambda s: s.replace("/", "_")[:40])
HARNESS_ENV = frozenset({"PATH", "STUB_LOG", "HOME", "PWD", "OLDPWD", "SHLVL", "head_node", "head_node_ip", "status"})
PLATFORM_VARS = {
    "RANK": "0",
    "MASTER_ADDR": "master.example",
    "MASTER_PORT": "29500",
    "PET_NODE_RANK": "0",
    "PET_MASTER_ADDR": "master.example",
    "PET_MASTER_PORT": "29500",
    "VC_TASK_INDEX": "0",
    "JOB_COMPLETION_INDEX": "0",
    "SLURM_JOB_ID": "42",
    "SLURM_JOB_NODELIST": "node-0",
    "head_node_ip": "10.0.0.7",
}
"""What the controllers (and the sbatch script's own srun stub) set."""
ENV_NAMES = st.from_regex(ENV_NAME, fullmatch=True).filter(
    lambda n: (
        len(n) <= 30
        and n not in SHELL_OWNED_ENV
        and n not in RUN_OWNED_ENV
        and n not in HARNESS_ENV
        and not n.startswith((*RUN_OWNED_PREFIXES, "BASH", "LD_", "OMPI_", "PMIX", "OPAL", "STUB"))
    )
)

STUB = r"""#!/bin/bash
STUB_prog="${0##*/}"
printf '%s\0' "$STUB_prog" "$#" "$@" >> "$STUB_LOG"
env -0 > "$STUB_LOG.env.$STUB_prog"
case "$STUB_prog" in
  srun) case " $* " in *" --ip-address "*) echo 10.0.0.7;; esac ;;
  scontrol) [ "$1" = show ] && echo node-0 ;;
  mpirun)
    # Open MPI: ranks start with only the -x variables (ssh/orted do not pass the launcher's environment).
    STUB_args=("$@"); STUB_i=0; STUB_pass=("STUB_LOG=$STUB_LOG")
    while [ "$STUB_i" -lt "${#STUB_args[@]}" ]; do
      case "${STUB_args[$STUB_i]}" in
        --allow-run-as-root|--tag-output) STUB_i=$((STUB_i + 1)) ;;
        -x)
          STUB_name="${STUB_args[$((STUB_i + 1))]}"
          [ -n "${!STUB_name+set}" ] && STUB_pass+=("$STUB_name=${!STUB_name}")
          STUB_i=$((STUB_i + 2)) ;;
        --bind-to|-np|--npernode) STUB_i=$((STUB_i + 2)) ;;
        --mca) STUB_i=$((STUB_i + 3)) ;;
        *) break ;;
      esac
    done
    exec env -i "${STUB_pass[@]}" OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_SIZE=1 \
      OMPI_COMM_WORLD_LOCAL_SIZE=1 "${STUB_args[@]:$STUB_i}" ;;
esac
exit 0
"""
STUBS = ("torchrun", "python", "srun", "scontrol", "mpirun", "neuron_parallel_compile")


@dataclass
class Tally:
    examples: dict[str, int] = field(default_factory=dict)
    per_scheduler: dict[str, dict[str, int]] = field(default_factory=dict)
    slowest: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Per class: seconds and the example (render + every script run, or the CLI refusal)."""

    def add(self, cls: str, scheduler: str, seconds: float, what: str) -> None:
        self.examples[cls] = self.examples.get(cls, 0) + 1
        by = self.per_scheduler.setdefault(cls, {})
        by[scheduler] = by.get(scheduler, 0) + 1
        if seconds > self.slowest.get(cls, (0.0, ""))[0]:
            self.slowest[cls] = (seconds, f"{scheduler}: {what[:200]}")


TALLY = Tally()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    target = os.environ.get("EKSTRAIN_FUZZ_REPORT")
    if target:
        pathlib.Path(target).write_text(
            json.dumps(
                {
                    "examples_per_class": TALLY.examples,
                    "per_scheduler": TALLY.per_scheduler,
                    "slowest": {cls: [round(sec, 3), what] for cls, (sec, what) in TALLY.slowest.items()},
                },
                indent=2,
            )
            + "\n"
        )


class Rig:
    def __init__(self, work: pathlib.Path, bin_dir: pathlib.Path, cfg: Any) -> None:
        self.work, self.bin, self.cfg = work, bin_dir, cfg

    def __repr__(self) -> str:
        return f"Rig({self.work})"

    @property
    def log(self) -> pathlib.Path:
        return self.work / "stub.log"

    def reset(self) -> None:
        for p in self.work.glob("stub.log*"):
            p.unlink()
        for mount in ("fsx", "shared"):  # the Neuron pre-compile runs once per job name (marker in the cache)
            shutil.rmtree(self.work / mount / "neuron-cache", ignore_errors=True)
        assert not (self.work / CANARY).exists()

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        lines = self.log.read_bytes().decode().split("\0")
        out, i = [], 0
        while i < len(lines) - 1:
            prog, count = lines[i], int(lines[i + 1])
            out.append([prog, *lines[i + 2 : i + 2 + count]])
            i += 2 + count
        return out

    def env_of(self, prog: str) -> dict[str, str]:
        raw = (self.work / f"stub.log.env.{prog}").read_bytes().decode()
        return dict(item.split("=", 1) for item in raw.split("\0") if item)

    def run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        full = {"PATH": f"{self.bin}:/usr/bin:/bin", "STUB_LOG": str(self.log), "HOME": str(self.work), **env}
        return subprocess.run(argv, env=full, cwd=self.work, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Rig:
    if shutil.which("bash") is None:
        pytest.fail("bash is required to run the generated scripts")
    work = tmp_path_factory.mktemp("shell-fuzz")
    (work / "fsx").mkdir()
    (work / "shared").mkdir()
    for bait in ("a", "b", "ab"):  # an unquoted glob would expand to these
        (work / bait).write_text("")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for name in STUBS:
        (bin_dir / name).write_text(STUB)
        (bin_dir / name).chmod(0o755)
    prod = stack_config("prod")
    storage = prod.storage.model_copy(
        update={"fsx": prod.storage.fsx.model_copy(update={"mount_path": str(work / "fsx")})}
    )
    schedulers = prod.schedulers.model_copy(
        update={"slurm": prod.schedulers.slurm.model_copy(update={"shared_mount_path": str(work / "shared")})}
    )
    return Rig(work, bin_dir, prod.model_copy(update={"storage": storage, "schedulers": schedulers}))


def mount_of(rig: Rig, scheduler: str) -> str:
    return str(rig.work / ("shared" if scheduler == "slurm" else "fsx"))


spec = spec_for  # the job-template tests' RunSpec for a partition (tests/assembly/test_jobs_templates.py)


def expanded(argv: list[str], env: dict[str, str]) -> list[str]:
    return [a.expand(env) if isinstance(a, PlatformWord) else a for a in argv]


def kube_env(entries: list[dict[str, str]]) -> dict[str, str]:
    """The kubelet's env: each value expanded with the variables defined before it."""
    out = dict(PLATFORM_VARS)
    for e in entries:
        out[e["name"]] = kubelet_expand(e["value"], out)
    return out


def bash_checked(rig: Rig, body: str, env: dict[str, str]) -> None:
    syntax = subprocess.run(["bash", "-n", "-c", body], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    done = rig.run(["bash", "-c", body], env)
    assert done.returncode == 0, done.stdout + done.stderr


def training_container(scheduler: str, job: dict[str, Any]) -> dict[str, Any]:
    spec_ = job["spec"]
    if scheduler == "pytorchjob":
        return spec_["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    if scheduler == "trainjob":
        return spec_["trainer"]
    if scheduler in ("volcano", "bionemo"):
        return spec_["tasks"][0]["template"]["spec"]["containers"][0]
    if scheduler == "trainium":
        return spec_["template"]["spec"]["containers"][0]
    raise AssertionError(scheduler)


def run_workload(rig: Rig, scheduler: str, run_spec: RunSpec) -> tuple[list[str], dict[str, str], ResolvedRun]:
    """Run the generated workload with stubs; (argv the training program got, its environment, the run)."""
    rig.reset()
    planner = FakePlanner()
    r = resolve_for(run_spec, rig.cfg, scheduler, planner)
    platform = PLATFORM_VARS
    if scheduler == "slurm":
        text = render_sbatch(run_spec, rig.cfg, planner)
        directives = [line for line in text.splitlines() if line.startswith("#SBATCH")]
        assert all(re.fullmatch(r"#SBATCH --[a-z-]+(=[-A-Za-z0-9_./%]+)?", d) for d in directives), directives
        script = rig.work / "job.sbatch"
        script.write_text(text)
        bash_checked(rig, text, {k: platform[k] for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST")})
        calls = [c for c in rig.calls() if c[0] == "srun" and "--ip-address" not in c]
        assert {c[0] for c in rig.calls()} == {"srun", "scontrol"}
        (train,) = calls[-1:]
        pre = ["neuron_parallel_compile"] if r.is_trainium and run_spec.precompile else []
        assert len(calls) == 1 + bool(pre)
        want = expanded([*slurm.container_flags(r), *r.torchrun(slurm._rendezvous(), r.checkpoint_dir)], platform)
        assert train[1:] == ["--kill-on-bad-exit=1", "--label", *want]  # --label: each line says its task
        return want[want.index("torchrun") + 1 :], rig.env_of("srun"), r
    objects = render(run_spec, rig.cfg, scheduler, planner)
    job = objects[-1]
    if scheduler == "rayjob":
        return run_ray(rig, objects[0]["data"]["ray_train.py"]), {}, r
    if scheduler == "mpijob":
        launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        env = kube_env(launcher["env"])
        argv = [kubelet_expand(a, env) for a in launcher["command"]]
        assert argv[-3:-1] == ["bash", "-c"]
        syntax = subprocess.run(["bash", "-n", "-c", argv[-1]], capture_output=True, text=True)
        assert syntax.returncode == 0, syntax.stderr
        done = rig.run(argv, {k: v for k, v in env.items() if k not in PLATFORM_VARS})
        assert done.returncode == 0, done.stdout + done.stderr
        assert [c[0] for c in rig.calls()] == ["mpirun", "python"]
        (python,) = [c for c in rig.calls() if c[0] == "python"]
        assert python[1:] == r.script_args()
        return python[1:], rig.env_of("python"), r
    container = training_container(scheduler, job)
    env = kube_env(container["env"])
    command = [kubelet_expand(a, env) for a in container["command"]]
    assert command[:2] == ["/bin/bash", "-c"]
    bash_checked(rig, command[2], env)
    if scheduler == "bionemo":
        want = expanded(bionemo.torchrun_argv(r, volcano.rendezvous(r)), env)
    else:
        rendezvous = {
            "pytorchjob": pytorchjob.RENDEZVOUS,
            "trainjob": trainjob.RENDEZVOUS,
            "volcano": volcano.rendezvous(r),
            "trainium": trainium.rendezvous(r),
        }[scheduler]
        want = expanded(r.torchrun(rendezvous), env)
    calls = rig.calls()
    if r.is_trainium and run_spec.precompile:
        assert calls[0] == ["neuron_parallel_compile", *want, f"--max_steps={run_spec.precompile_steps}"]
        calls = calls[1:]
    assert calls == [want], "exactly one torchrun with the intended argv, nothing else"
    return want[1:], rig.env_of("torchrun"), r


class _Recorder:
    argv: list[str] = []


def run_ray(rig: Rig, source: str) -> list[str]:
    """Execute the Ray Train launcher with a stub ``ray``: the argv each worker's script gets."""

    class Config:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.kwargs = kwargs

    class TorchTrainer:
        def __init__(self, loop: Any, train_loop_config: dict[str, Any], **kwargs: Any) -> None:
            self.config = train_loop_config

        def fit(self) -> None:
            _Recorder.argv = list(self.config["argv"])

    ray = types.ModuleType("ray")
    train = types.ModuleType("ray.train")
    for name in ("CheckpointConfig", "FailureConfig", "RunConfig", "ScalingConfig"):
        setattr(train, name, Config)
    torch = types.ModuleType("ray.train.torch")
    torch.TorchTrainer = TorchTrainer  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in ("ray", "ray.train", "ray.train.torch")}
    sys.modules.update({"ray": ray, "ray.train": train, "ray.train.torch": torch})
    try:
        cwd = os.getcwd()
        os.chdir(rig.work)
        exec(compile(source, "ray_train.py", "exec"), {"__name__": "__main__"})
    finally:
        os.chdir(cwd)
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return list(_Recorder.argv)


def check(rig: Rig, cls: str, case: tuple[str, str], what: str, **kw: Any) -> tuple[list[str], dict[str, str]]:
    scheduler, partition = case
    started = time.perf_counter()
    try:
        argv, env, _ = run_workload(rig, scheduler, spec(partition, **kw))
    finally:
        assert not (rig.work / CANARY).exists(), f"{what!r} ran a command"
    TALLY.add(cls, scheduler, time.perf_counter() - started, what)
    return argv, env


CASE = st.sampled_from(SCHEDULER_CASES)


@FUZZ
@given(case=CASE, script=TEXT.filter(lambda s: not s.startswith("/")))
def test_script(rig: Rig, case: tuple[str, str], script: str) -> None:
    argv, _ = check(rig, "script", case, script, script=script)
    if case[0] != "bionemo":  # BioNeMo runs its own pretrain.py
        assert script in argv


@FUZZ
@given(case=CASE, args=st.lists(TEXT, min_size=1, max_size=4))
def test_script_args(rig: Rig, case: tuple[str, str], args: list[str]) -> None:
    argv, _ = check(rig, "args", case, " ".join(args), args=tuple(args))
    assert argv[-len(args) :] == args


@FUZZ
@given(case=CASE, parts=st.lists(PATH_PART, min_size=1, max_size=3))
def test_dataset_path(rig: Rig, case: tuple[str, str], parts: list[str]) -> None:
    path = "/".join([mount_of(rig, case[0]), "data", *parts])
    argv, env = check(rig, "dataset-path", case, path, dataset_path=path)
    if case[0] == "bionemo":
        assert f"++model.data.dataset_path={path}/zinc15" in argv
    else:
        assert f"--data_dir={path}" in argv
    if env:
        assert env["DATA_DIR"] == path


@FUZZ
@given(case=CASE, parts=st.lists(PATH_PART, min_size=1, max_size=3))
def test_checkpoint_path(rig: Rig, case: tuple[str, str], parts: list[str]) -> None:
    path = "/".join([mount_of(rig, case[0]), "ckpt", *parts])
    argv, env = check(rig, "checkpoint-path", case, path, checkpoint_path=path)
    if case[0] == "bionemo":
        assert f"exp_manager.exp_dir={path}" in argv
    else:
        assert f"--checkpoint_dir={path}" in argv
    if env:
        assert env["CHECKPOINT_DIR"] == path
    if case[0] != "rayjob":
        assert pathlib.Path(path, "nccl-trace").is_dir(), "mkdir -p got the exact path"


@FUZZ
@given(case=CASE, env=st.dictionaries(ENV_NAMES, TEXT, min_size=1, max_size=3))
def test_env(rig: Rig, case: tuple[str, str], env: dict[str, str]) -> None:
    _, seen = check(rig, "env", case, repr(env), env=env)
    if case[0] != "rayjob":
        assert {k: seen.get(k) for k in env} == env


@FUZZ
@given(case=CASE, flag=TEXT)
def test_resume_flag(rig: Rig, case: tuple[str, str], flag: str) -> None:
    argv, _ = check(rig, "resume-flag", case, flag, resume_flag=flag)
    if case[0] != "bionemo":
        r = resolve_for(spec(case[1], resume_flag=flag), rig.cfg, case[0], FakePlanner())
        assert f"{flag}={r.checkpoint_dir}/latest" in argv


# ---- refusals: exit 2, one line naming the flag --------------------------------------------------------

REFUSED = st.characters(whitelist_categories=tuple(REFUSED_CATEGORIES))
FLAGS = {
    "--script": "script",
    "--dataset-path": "dataset_path",
    "--checkpoint-path": "checkpoint_path",
    "--resume-flag": "resume_flag",
    "--name": "name",
    "--model": "model",
}


@pytest.fixture
def fake_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planning_module, "RealPlanner", FakePlanner)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    base = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--image", "img:1", "--model"]
    code = cli.main([*base, "llama3-8b", "--global-batch", "256", "--seq-len", "4096", "--nodes", "2", *argv])
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    return code, out.err


@FUZZ
@given(
    where=st.sampled_from([*FLAGS, "--env", "args"]),
    before=TEXT,
    bad=REFUSED,
    after=st.text(max_size=3),
    scheduler=st.sampled_from(["volcano", "slurm", "mpijob", "trainjob"]),
)
def test_control_characters_are_refused(
    fake_planner: None,
    capsys: pytest.CaptureFixture[str],
    where: str,
    before: str,
    bad: str,
    after: str,
    scheduler: str,
) -> None:
    value = before + bad + after
    started = time.perf_counter()
    if where == "--env":
        argv, flag = [f"--env=USER_VALUE={value}"], "--env USER_VALUE="
    elif where == "args":
        argv, flag = ["--", value], "script argument 1 (after --)"
    else:
        argv, flag = [f"{where}={value}"], where  # the = form: a value may start with '-'
    code, err = _cli(["--scheduler", scheduler, "--partition", "gpu-a100", *argv], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: ekstrain job render: {flag}") and f"U+{ord(bad):04X}" in err and "remove it" in err
    TALLY.add("control-characters", scheduler, time.perf_counter() - started, repr(value))


@FUZZ
@given(name=st.text(min_size=1, max_size=12).filter(lambda n: not ENV_NAME.fullmatch(n) and "=" not in n))
def test_bad_env_names_are_refused(fake_planner: None, capsys: pytest.CaptureFixture[str], name: str) -> None:
    started = time.perf_counter()
    code, err = _cli(["--scheduler", "slurm", "--partition", "gpu-a100", f"--env={name}=1"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: ekstrain job render: --env name") and "e.g. --env MY_FLAG=1" in err
    TALLY.add("env-names", "slurm", time.perf_counter() - started, repr(name))


def test_bash_and_launcher_owned_env_names_are_refused() -> None:
    with pytest.raises(JobRequestError, match="UID is a variable bash sets or reads itself"):
        spec("gpu-a100", env={"UID": "0"})
    with pytest.raises(JobRequestError, match="EXECIGNORE is a variable bash"):
        spec("gpu-a100", env={"EXECIGNORE": "*"})
    for name in ("WORLD_SIZE", "LOCAL_WORLD_SIZE", "VC_TASK_INDEX", "OMPI_COMM_WORLD_RANK", "head_node_ip"):
        with pytest.raises(JobRequestError, match=f"--env name {name} is set for every process by the controller"):
            spec("gpu-a100", env={name: "1"})


def test_old_quoting_would_have_run_the_payload(rig: Rig) -> None:
    """The injection defect: ``${`` in a value switched it to double quotes, so ``$(...)`` ran."""
    hostile = f"${{X}}$(: >{CANARY})"
    old = '"' + hostile + '"'
    rig.reset()
    rig.run(["bash", "-c", f"torchrun {old}"], {})
    assert (rig.work / CANARY).exists()
    (rig.work / CANARY).unlink()
    argv, _ = check(rig, "regression", ("volcano", "gpu-a100"), hostile, script=hostile)
    assert hostile in argv


@FUZZ
@given(text=st.text())
def test_kubelet_literal_round_trips(text: str) -> None:
    assert kubelet_expand(kubelet_literal(text), {"DATA_DIR": "/x", "RANK": "0"}) == text
