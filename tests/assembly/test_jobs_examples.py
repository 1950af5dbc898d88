"""Each seed example in examples/render-all.sh is one command that renders and validates.

Uses the real planner when ``ekstrain.planner`` is importable, else the test double.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re
import shlex

import pytest
import yaml
from conftest import REPO
from support.jobs import FakePlanner

from ekstrain.assembly.jobs import planning
from ekstrain.cli import main as cli
from ekstrain.tooling import validation

SCRIPT = REPO / "examples" / "render-all.sh"
REAL_PLANNER = importlib.util.find_spec("ekstrain.planner") is not None


def _commands(out: pathlib.Path) -> list[list[str]]:
    text = SCRIPT.read_text()
    variables = dict(re.findall(r"^([A-Z_]+)=([^\s$#]+)(?:\s+#.*)?$", text, flags=re.M))
    variables["OUT"] = str(out)
    commands = []
    for line in text.splitlines():
        if line.startswith('"$EKSTRAIN" job render'):
            for key, value in variables.items():
                line = line.replace(f'"${key}"', value).replace(f"${key}", value)
            commands.append(shlex.split(line)[1:])
    return commands


@pytest.fixture
def planner(monkeypatch: pytest.MonkeyPatch) -> None:
    if not REAL_PLANNER:
        monkeypatch.setattr(planning, "RealPlanner", FakePlanner)


def test_script_has_the_six_seed_workloads_and_three_health_checks(tmp_path: pathlib.Path) -> None:
    schedulers = [c[c.index("--scheduler") + 1] for c in _commands(tmp_path)]
    assert schedulers == [
        "slurm",
        "mpijob",
        "trainium",
        "rayjob",
        "volcano",
        "bionemo",
        "slurm",
        "nccl-test",
        "nccl-test",
        "nccl-test",
    ]


@pytest.mark.parametrize("index", range(10))
def test_example_renders_and_validates(
    index: int, tmp_path: pathlib.Path, planner: None, capsys: pytest.CaptureFixture[str]
) -> None:
    if validation.upstream_dir() is None:
        pytest.skip("upstream schemas absent")
    argv = _commands(tmp_path)[index]
    argv += ["--stack-file", str(REPO / "Pulumi.prod.yaml")]
    code = cli.main(argv)
    assert code == 0, capsys.readouterr().err
    out = pathlib.Path(argv[argv.index("--out") + 1])
    text = out.read_text()
    if out.suffix == ".sbatch":
        assert text.startswith("#!/bin/bash") and "#SBATCH --nodes=4" in text and "--nproc_per_node=8" in text
        return
    assert "--validate" in argv, "the CLI validated every object (exit 1 otherwise)"
    docs = list(yaml.safe_load_all(text))
    assert docs and all(d["metadata"]["namespace"] == "training" for d in docs)


def test_llama3_70b_full_finetune_is_the_planners_call(
    planner: None, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """Without --lora-rank the template renders the planner's full fine-tune plan if it finds one,
    and otherwise exits 2 with one line; it never invents a layout."""
    argv = _commands(tmp_path)[0]
    i = argv.index("--lora-rank")
    full = argv[:i] + argv[i + 2 :] + ["--stack-file", str(REPO / "Pulumi.prod.yaml")]
    code = cli.main(full)
    err = capsys.readouterr().err
    if REAL_PLANNER:  # the planner fits a full fine-tune by sharding nearly every byte
        assert code == 0, err
        text = pathlib.Path(full[full.index("--out") + 1]).read_text()
        plan = dict(kv.split("=") for kv in re.search(r"# plan: (.*) \(global", text).group(1).split())
        assert int(plan["tp"]) * int(plan["pp"]) * int(plan["cp"]) * int(plan["dp"]) == 32
        assert int(plan["micro_batch"]) * int(plan["dp"]) * int(plan["grad_accum"]) == 64
    else:  # the test double's arithmetic: 16 B/param over 32 GPUs does not fit 80 % of 40 GB
        assert code == 2
        assert err.count("\n") == 1 and "no parallel plan fits llama3-70b on 4 x p4d.24xlarge" in err
