"""One RunSpec -> the same nodes, processes, parallel degrees, EFA and env on every scheduler.

The numbers are read back from the rendered manifests / sbatch text (not from the resolver),
so a builder that drops or rewrites one of them fails here.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from typing import Any

import pytest
from conftest import stack_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.jobs import FakePlanner
from test_jobs_templates import accelerator_containers, spec_for

from ekstrain.assembly.jobs import RunSpec, render, render_sbatch, resolve_for
from ekstrain.assembly.jobs.env import RULES, EnvContext, platform_env
from ekstrain.facts import catalog, names

PROD = stack_config("prod")
GPU_SCHEDULERS = ("mpijob", "pytorchjob", "trainjob", "volcano", "rayjob", "slurm")
TRN_SCHEDULERS = ("trainium", "trainjob", "volcano", "slurm")


def _torchrun_line(text: str) -> list[str]:
    line = next(
        ln for ln in text.splitlines() if re.search(r"(^|\s)torchrun ", ln) and "neuron_parallel_compile" not in ln
    )
    # Slurm: the step's status decides the requeue (`srun ... || status=$?`).
    argv = shlex.split(line[line.index("torchrun") :].removesuffix(" || status=$?"))
    return argv


SLURM_MOUNT = PROD.schedulers.slurm.shared_mount_path
FSX_MOUNT = PROD.storage.fsx.mount_path


def _script_tail(argv: list[str], script: str = "train.py") -> list[str]:
    # slurmd pods see FSx at the Slurm shared path; the same file is the same path under either mount.
    return [
        re.sub(rf"(^|=){re.escape(SLURM_MOUNT)}/", rf"\g<1>{FSX_MOUNT}/", a)
        for a in argv[argv.index(script) :]
        if "ds_config.json" not in a
    ]


def observed(objects: list[dict[str, Any]] | str, scheduler: str) -> dict[str, Any]:
    """nodes, nproc_per_node, world, script args as the rendered workload states them."""
    if scheduler == "slurm":
        text = objects
        assert isinstance(text, str)
        argv = _torchrun_line(text)
        nodes = int(re.search(r"#SBATCH --nodes=(\d+)", text).group(1))
        nproc = int(next(a for a in argv if a.startswith("--nproc_per_node=")).split("=")[1])
        assert f"--nnodes={nodes}" in argv
        return {"nodes": nodes, "nproc": nproc, "world": nodes * nproc, "args": _script_tail(argv)}
    assert isinstance(objects, list)
    job = objects[-1]
    spec = job["spec"]
    if scheduler == "mpijob":
        nodes = spec["mpiReplicaSpecs"]["Worker"]["replicas"]
        cmd = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
        np_ = int(cmd[cmd.index("-np") + 1])
        per = int(cmd[cmd.index("--npernode") + 1])
        assert per == spec["slotsPerWorker"] and np_ == nodes * per
        tail = cmd[-1].splitlines()[-1]
        argv = shlex.split(tail[tail.index("python") :])[1:]
        return {"nodes": nodes, "nproc": per, "world": np_, "args": _script_tail(argv)}
    if scheduler == "rayjob":
        group = spec["rayClusterSpec"]["workerGroupSpecs"][0]
        source = objects[0]["data"]["ray_train.py"]
        run = json.loads(ast.literal_eval(re.search(r"RUN = json.loads\((.*)\)\n", source).group(1)))
        nproc = run["num_workers"] // group["replicas"]
        assert group["rayStartParams"]["num-gpus"] == str(nproc)
        return {
            "nodes": group["replicas"],
            "nproc": nproc,
            "world": run["num_workers"],
            "args": _script_tail(run["argv"]),
        }
    if scheduler == "trainjob":
        body = spec["trainer"]["command"][2]
        nodes, nproc = spec["trainer"]["numNodes"], spec["trainer"]["numProcPerNode"]
    elif scheduler == "pytorchjob":
        reps = spec["pytorchReplicaSpecs"]
        nodes = reps["Master"]["replicas"] + reps.get("Worker", {}).get("replicas", 0)
        body = reps["Master"]["template"]["spec"]["containers"][0]["command"][2]
        nproc = int(spec["nprocPerNode"])
    elif scheduler == "volcano":
        nodes = spec["tasks"][0]["replicas"]
        assert spec["minAvailable"] == nodes
        body = spec["tasks"][0]["template"]["spec"]["containers"][0]["command"][2]
        nproc = None
    elif scheduler == "trainium":
        nodes = spec["completions"]
        assert spec["parallelism"] == nodes
        body = spec["template"]["spec"]["containers"][0]["command"][2]
        nproc = None
    argv = _torchrun_line(body)
    assert f"--nnodes={nodes}" in argv
    run_nproc = int(next(a for a in argv if a.startswith("--nproc_per_node=")).split("=")[1])
    assert nproc in (None, run_nproc)
    return {"nodes": nodes, "nproc": run_nproc, "world": nodes * run_nproc, "args": _script_tail(argv)}


def render_any(spec: RunSpec, scheduler: str) -> list[dict[str, Any]] | str:
    if scheduler == "slurm":
        return render_sbatch(spec, PROD, FakePlanner())
    return render(spec, PROD, scheduler, FakePlanner())


def _assert_same(spec: RunSpec, schedulers: tuple[str, ...]) -> dict[str, Any]:
    seen = {s: observed(render_any(spec, s), s) for s in schedulers}
    first = seen[schedulers[0]]
    for s, got in seen.items():
        assert got == first, f"{s} disagrees with {schedulers[0]}"
    degrees = {s: resolve_for(spec, PROD, s, FakePlanner()).degrees for s in schedulers}
    assert len({json.dumps(d, sort_keys=True) for d in degrees.values()}) == 1
    return first


def test_same_run_same_numbers_on_every_gpu_scheduler() -> None:
    spec = spec_for("gpu-a100", nodes=4, global_batch=512)
    got = _assert_same(spec, GPU_SCHEDULERS)
    assert (got["nodes"], got["nproc"], got["world"]) == (4, 8, 32)
    args = dict(a.split("=", 1) for a in got["args"] if "=" in a)
    assert args["--gradient_accumulation_steps"] == "16"  # 512 / (micro 1 x dp 32)
    assert args["--tensor_parallel_size"] == "1" and args["--global_batch_size"] == "512"
    assert args["--resume_from_checkpoint"] == "/fsx/checkpoints/run/latest"


def test_same_run_same_numbers_on_every_trainium_scheduler() -> None:
    got = _assert_same(spec_for("trainium", nodes=4, lora_rank=16), TRN_SCHEDULERS)
    assert (got["nodes"], got["nproc"], got["world"]) == (4, 32, 128)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    partition=st.sampled_from(["gpu-a100", "gpu-h100"]),
    nodes=st.integers(1, 8),
    micro_dp_multiple=st.integers(1, 4),
    framework=st.sampled_from(["torchrun-fsdp", "deepspeed", "megatron"]),
)
def test_any_gpu_run_is_consistent_across_schedulers(
    partition: str, nodes: int, micro_dp_multiple: int, framework: str
) -> None:
    spec = spec_for(partition, nodes=nodes, global_batch=nodes * 8 * micro_dp_multiple, framework=framework)
    got = _assert_same(spec, GPU_SCHEDULERS)
    assert got["world"] == nodes * 8


def test_deepspeed_config_carries_the_plan_batch_arithmetic() -> None:
    spec = spec_for("gpu-a100", nodes=4, global_batch=512, framework="deepspeed")
    r = resolve_for(spec, PROD, "volcano", FakePlanner())
    ds = r.deepspeed_config
    assert ds is not None
    assert (
        ds["train_batch_size"]
        == 512
        == ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] * r.degrees["dp"]
    )
    cm = render(spec, PROD, "volcano", FakePlanner())[0]
    assert json.loads(cm["data"]["ds_config.json"]) == ds
    sbatch = render_sbatch(spec, PROD, FakePlanner())
    assert f"--deepspeed_config={SLURM_MOUNT}/checkpoints/run/ds_config.json" in sbatch
    assert '"train_batch_size": 512' in sbatch


def test_megatron_resumes_with_load_and_gets_the_plan_arguments() -> None:
    spec = spec_for("gpu-h100", nodes=8, global_batch=512, framework="megatron", model="llama3-70b")
    argv = observed(render_any(spec, "volcano"), "volcano")["args"]
    assert "--tensor-model-parallel-size=8" in argv or any(a.startswith("--tensor-model-parallel-size") for a in argv)
    assert argv[argv.index("--load") + 1] == "/fsx/checkpoints/run" == argv[argv.index("--save") + 1]
    assert not any(a.startswith("--resume_from_checkpoint") for a in argv)


# ---- EFA and env against the catalog ---------------------------------------------------------------


@pytest.mark.parametrize("partition", [p.name for p in PROD.partitions])
def test_efa_count_and_env_match_the_catalog(partition: str) -> None:
    part = PROD.partition(partition)
    types = [catalog.get(t) for t in part.instance_types]
    scheduler = "trainium" if part.accelerator == "trainium" else "volcano"
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    (worker,) = accelerator_containers(objects[-1])
    assert worker["resources"]["limits"][names.EFA_RESOURCE] == min(t.efa_max_interfaces for t in types)
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_FORK_SAFE"] == "1"
    assert ("FI_EFA_USE_DEVICE_RDMA" in env) == all(t.gpudirect_rdma for t in types)
    assert env["TORCH_NCCL_ASYNC_ERROR_HANDLING" if part.accelerator == "gpu" else "NEURON_RT_NUM_CORES"]
    if part.accelerator == "gpu":
        assert env["NCCL_SOCKET_IFNAME"].startswith("^") and "lo" in env["NCCL_SOCKET_IFNAME"]
        assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
        assert "NCCL_TUNER_PLUGIN" not in env  # aws-ofi-nccl's path differs by installer version


def test_expected_prod_efa_counts() -> None:
    counts = {}
    for part in PROD.partitions:
        scheduler = "trainium" if part.accelerator == "trainium" else "volcano"
        (worker,) = accelerator_containers(render(spec_for(part.name), PROD, scheduler, FakePlanner())[-1])
        counts[part.name] = worker["resources"]["limits"][names.EFA_RESOURCE]
    assert counts == {"gpu-a100": 4, "gpu-h100": 32, "trainium": 8}


def _ctx(**kw: Any) -> EnvContext:
    base = dict(
        family="gpu",
        efa=4,
        gpudirect_rdma=True,
        hugepages=False,
        neuron_cores=0,
        checkpoint_dir="/fsx/checkpoints/x",
        data_dir="/fsx/data",
        compile_cache="/fsx/neuron-cache",
    )
    return EnvContext(**{**base, **kw})


def test_device_rdma_only_where_the_hardware_supports_it() -> None:
    assert "FI_EFA_USE_DEVICE_RDMA" not in platform_env(_ctx(gpudirect_rdma=False))  # g5 / g6e
    assert platform_env(_ctx())["FI_EFA_USE_DEVICE_RDMA"] == "1"
    no_efa = platform_env(_ctx(efa=0))
    assert not any(k.startswith("FI_") for k in no_efa)


def test_env_table_rows_are_unique_and_explained() -> None:
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(r.why for r in RULES)


def test_dev_stack_g5_partition_has_no_device_rdma() -> None:
    dev = stack_config("dev")
    r = resolve_for(spec_for("gpu-small", nodes=2, global_batch=16, model="bert-large"), dev, "volcano", FakePlanner())
    assert r.efa == 1 and "FI_EFA_USE_DEVICE_RDMA" not in r.env and r.nproc_per_node == 1
