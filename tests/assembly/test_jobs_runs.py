"""Job templates: restarts are the same on every scheduler, sizes respect the layout's share,
paths are under the scheduler's mount, MPI ranks keep the image's environment, launchers fit system nodes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import REPO, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import CASES, spec_for

from ekstrain.assembly.jobs import JobRequestError, health_check, render, render_sbatch, resolve_for
from ekstrain.simulate.engine import ADDON_DAEMONSETS
from ekstrain.simulate.load import system_nodes
from ekstrain.simulate.quantity import parse
from ekstrain.tooling import validation

PROD = stack_config("prod")


def whole_job_restarts(scheduler: str, objects: list[dict[str, Any]], nodes: int) -> int:
    """How many times the rendered workload restarts every worker after a failure, read from the manifest."""
    job = objects[-1]
    spec = job["spec"]
    if scheduler in ("mpijob", "nccl-test"):
        assert spec["mpiReplicaSpecs"]["Launcher"]["restartPolicy"] == "OnFailure"
        return int(spec["runPolicy"]["backoffLimit"])
    if scheduler == "pytorchjob":
        limit = spec["runPolicy"]["backoffLimit"]
        assert limit % nodes == 0 and {r["restartPolicy"] for r in spec["pytorchReplicaSpecs"].values()} == {
            "OnFailure"
        }
        return int(limit // nodes)
    if scheduler == "trainjob":
        runtime = objects[-2]
        (rj,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        assert rj["template"]["spec"]["backoffLimit"] == 0, "a pod failure fails the Job, then the JobSet restarts"
        return int(runtime["spec"]["template"]["spec"]["failurePolicy"]["maxRestarts"])
    if scheduler in ("volcano", "bionemo"):
        assert {(p["event"], p["action"]) for p in spec["policies"]} == {
            ("PodEvicted", "RestartJob"),
            ("PodFailed", "RestartJob"),
        }
        return int(spec["maxRetry"])
    if scheduler == "rayjob":
        assert spec["submitterConfig"]["backoffLimit"] == spec["backoffLimit"]
        run = json.loads(re.search(r"RUN = json.loads\((.*)\)\n", objects[0]["data"]["ray_train.py"])[1].strip("'"))
        assert run["max_failures"] == spec["backoffLimit"]
        return int(spec["backoffLimit"])
    if scheduler == "trainium":
        assert spec["backoffLimit"] % nodes == 0
        return int(spec["backoffLimit"] // nodes)
    raise AssertionError(scheduler)


@pytest.mark.parametrize("restarts", [0, 1, 5])
@pytest.mark.parametrize(
    ("scheduler", "partition"), [c for c in CASES if c[0] not in ("slurm", "raycluster", "nccl-test")]
)
def test_max_restarts_means_the_same_on_every_scheduler(scheduler: str, partition: str, restarts: int) -> None:
    """a lost node ended a TrainJob (JobSet default: no restart) while Volcano restarted 3 times."""
    objects = render(spec_for(partition, max_restarts=restarts), PROD, scheduler, FakePlanner())
    assert whole_job_restarts(scheduler, objects, 2) == restarts
    if validation.upstream_dir() is not None:
        assert [p for o in objects for p in validation.validate_object(o, PROD.cluster.kubernetes_version)] == []


@pytest.mark.parametrize("restarts", [0, 2])
def test_slurm_requeues_at_most_max_restarts_times(restarts: int) -> None:
    text = render_sbatch(spec_for("gpu-a100", max_restarts=restarts), PROD, FakePlanner())
    assert ("#SBATCH --requeue\n" in text) == bool(restarts)
    assert ("#SBATCH --no-requeue\n" in text) == (not restarts)
    assert ('scontrol requeue "$SLURM_JOB_ID"' in text) == bool(restarts)
    if restarts:
        assert f'if [ "${{SLURM_RESTART_COUNT:-0}}" -gt {restarts} ]; then' in text
        assert f'[ "${{SLURM_RESTART_COUNT:-0}}" -lt {restarts} ]' in text


def test_a_job_fits_the_layout_share_of_its_instance_type() -> None:
    """prod's trainium (trn1 + trn1n, maxNodes 32) is two NodePools of 16; 32 trn1 nodes never start."""
    spec = spec_for("trainium", nodes=32, instance_type="trn1.32xlarge", global_batch=1024)
    with pytest.raises(JobRequestError) as exc:
        render(spec, PROD, "trainium", FakePlanner())
    assert str(exc.value) == (
        "32 nodes of trn1.32xlarge requested but partition trainium holds at most 16 (NodePool trainium-trn1: "
        "its share of maxNodes 32 over 2 EFA layouts); ask for at most 16 nodes, use --instance-type "
        "trn1n.32xlarge (16), or raise ekstrain:partitions (trainium).maxNodes"
    )
    spec16 = spec_for("trainium", nodes=16, instance_type="trn1n.32xlarge", global_batch=1024)
    assert resolve_for(spec16, PROD, "trainium", FakePlanner()).nodes == 16
    # A single-layout mixed partition (p4d + p4de share one EFA layout) keeps its whole maxNodes.
    assert resolve_for(spec_for("gpu-a100", nodes=16, instance_type="p4de.24xlarge"), PROD, "volcano", FakePlanner())


def test_slurm_paths_are_under_the_slurm_mount() -> None:
    """the sbatch example ran /fsx/code/finetune.py although its container mounts only /shared."""
    with pytest.raises(JobRequestError) as exc:
        render_sbatch(spec_for("gpu-a100", script="/fsx/code/finetune.py"), PROD, FakePlanner())
    assert str(exc.value) == (
        "--script: /fsx/code/finetune.py is under /fsx, which this scheduler's containers do not mount "
        "(FSx is at /shared here); use /shared/code/finetune.py"
    )
    with pytest.raises(
        JobRequestError,
        match=r"script argument '--config=/shared/c.yaml': /shared/c.yaml is under /shared, .* use /fsx/c.yaml$",
    ):
        render(spec_for("gpu-a100", args=("--config=/shared/c.yaml",)), PROD, "volcano", FakePlanner())
    with pytest.raises(JobRequestError, match=r"/\./fsx/x\.py is under /fsx, .*; use /shared/x\.py$"):
        render_sbatch(spec_for("gpu-a100", script="/./fsx/x.py"), PROD, FakePlanner())
    text = render_sbatch(spec_for("gpu-a100", script="/shared/code/finetune.py"), PROD, FakePlanner())
    mounts = re.search(r"--container-mounts=(\S+)", text)[1]
    mounted = [m.split(":")[1] for m in mounts.split(",")]
    srun = next(line for line in text.splitlines() if line.startswith("srun --kill-on-bad-exit=1 "))
    paths = re.findall(r"(?:^|[ =])(/[^ ':\"]+)", srun.split(" torchrun ", 1)[1])
    assert paths and all(any(p == m or p.startswith(m + "/") for m in mounted) for p in paths), paths


def test_mpi_ranks_get_the_images_environment() -> None:
    """ranks start through ssh without the image's ENV (NCCL, aws-ofi-nccl, fi_info not found)."""
    for objects in (render(spec_for("gpu-h100"), PROD, "mpijob", FakePlanner()), health_check(PROD, "gpu-h100")):
        launcher = objects[-1]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
        text = " ".join(launcher["command"])
        for name in ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD"):
            assert f"-x {name} " in text


@pytest.mark.parametrize("stack", sorted(p.name.split(".")[1] for p in REPO.glob("Pulumi.*.yaml")))
def test_the_launcher_fits_the_smallest_system_node(stack: str) -> None:
    """dev's NCCL check requested 2 CPU on m7i.large (1.93 allocatable) and could never start."""
    cfg = stack_config(stack)
    nodes = system_nodes(cfg.cluster.system_node_group.instance_types)
    for part in cfg.partitions:
        launcher = health_check(cfg, part.name)[-1]["spec"]["mpiReplicaSpecs"]["Launcher"]
        requests = launcher["template"]["spec"]["containers"][0]["resources"]["requests"]
        for node in nodes:
            for resource in ("cpu", "memory"):
                addons = sum(parse(r.get(resource, "0")) for _, r in ADDON_DAEMONSETS)
                assert (
                    parse(requests[resource])
                    <= 0.25 * node.allocatable[resource]
                    < (node.allocatable[resource] - addons)
                )
