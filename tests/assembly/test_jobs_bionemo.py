"""BioNeMo molecule generation: the MolMIM job template carries the real planner's numbers, runs as a
Volcano gang job on the partition, and its command is a valid shell script with the Hydra overrides."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from conftest import REPO, needs_upstream, stack_config

from ekstrain import planner
from ekstrain.assembly.jobs import SCHEDULERS, RunSpec, bionemo, render
from ekstrain.facts import versions
from ekstrain.planner import models
from ekstrain.planner.fleet import Fleet
from ekstrain.tooling import validation

PROD = stack_config("prod")


def _spec(**kw: object) -> RunSpec:
    base: dict[str, object] = dict(
        name="molmim-pretrain",
        partition="gpu-h100",
        nodes=2,
        image=versions.BIONEMO_IMAGE,
        model="molmim-70m",
        global_batch=2048,
        seq_len=128,
    )
    return RunSpec(**{**base, **kw})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def job() -> dict:
    (obj,) = render(_spec(), PROD, "bionemo")
    return obj


def _script(job: dict) -> str:
    return job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]


def test_registered_as_a_gpu_template() -> None:
    assert SCHEDULERS["bionemo"].family == "gpu" and SCHEDULERS["bionemo"].build is bionemo.build


def test_planner_model_is_molmim_sized() -> None:
    m = models.get_model("molmim-70m")
    assert (m.layers, m.hidden, m.heads) == (12, 512, 8)
    assert 35e6 < m.total_params < 75e6


def test_hydra_overrides_are_the_real_planners_numbers(job: dict) -> None:
    # GIVEN the planner's best plan for MolMIM on 2 x p5.48xlarge
    best = planner.search(models.get_model("molmim-70m"), Fleet.from_instance("p5.48xlarge", 2), 2048, 128)[0]
    argv = shlex.split(_script(job).splitlines()[-1].removeprefix("exec "))
    overrides = dict(a.lstrip("+").split("=", 1) for a in argv if "=" in a and not a.startswith("--"))
    # THEN the job trains exactly that layout
    assert overrides["trainer.num_nodes"] == "2" and overrides["trainer.devices"] == "8"
    assert overrides["model.global_batch_size"] == "2048"
    assert int(overrides["model.micro_batch_size"]) == best.micro_batch
    assert int(overrides["model.tensor_model_parallel_size"]) == best.tp
    assert int(overrides["model.pipeline_model_parallel_size"]) == best.pp
    assert overrides["model.data.dataset_path"] == "/fsx/data/zinc15"
    assert overrides["exp_manager.exp_dir"] == "/fsx/checkpoints/molmim-pretrain"
    assert argv[:3] == ["torchrun", "--nnodes=2", "--nproc_per_node=8"]
    assert bionemo.SCRIPT in argv and f"--config-name={bionemo.CONFIG_NAME}" in argv


def test_command_parses_as_bash(job: dict) -> None:
    subprocess.run(["bash", "-n", "-c", _script(job)], check=True)


def test_gang_job_on_the_partition_with_efa_and_fsx(job: dict) -> None:
    assert (job["kind"], job["spec"]["queue"], job["spec"]["minAvailable"]) == ("Job", "gpu-h100", 2)
    pod = job["spec"]["tasks"][0]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "ekstrain.io/partition": "gpu-h100",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
    }
    c = pod["containers"][0]
    assert c["image"] == versions.BIONEMO_IMAGE
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 8 and c["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32
    assert {"name": "BIONEMO_HOME", "value": "/workspace/bionemo"} in c["env"]
    assert job["metadata"]["labels"]["ekstrain.io/workload"] == "bionemo-molmim"


@needs_upstream
def test_validates_against_the_volcano_crd(job: dict) -> None:
    assert validation.validate_object(job, PROD.cluster.kubernetes_version) == []


def test_example_uses_the_pinned_image() -> None:
    text = (REPO / "examples" / "render-all.sh").read_text()
    assert re.search(r"^BIONEMO_IMAGE=(\S+)", text, flags=re.M).group(1) == versions.BIONEMO_IMAGE  # type: ignore[union-attr]
    assert "--scheduler bionemo" in text


def test_trainium_partition_is_refused() -> None:
    from ekstrain.assembly.jobs import JobRequestError

    with pytest.raises(JobRequestError, match="gpu partition"):
        render(_spec(partition="trainium"), PROD, "bionemo")
