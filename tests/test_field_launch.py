"""Launch commands run as a shell would run them: ``bash -n`` parses them, and a stub ``torchrun``
(and ``neuron_parallel_compile`` / ``srun``) prints the argv it receives with the pod's env set.

GIVEN the prod stack and one run per template that launches torchrun from a shell
WHEN the generated script runs under bash with stubs first on PATH and the scheduler's env
THEN every ``${VAR}`` reached torchrun expanded (no literal ``${``), for pre-compile and training.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import stat
import subprocess

from conftest import stack_config
from support.jobs import FakePlanner, kubelet_expand
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import render, render_sbatch

PROD = stack_config("prod")
STUB = '#!/bin/sh\necho "$(basename "$0") $*"\n'
PASS_THROUGH = '#!/bin/sh\necho "$(basename "$0")"\nexec "$@"\n'


def _stubs(tmp: pathlib.Path) -> pathlib.Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(parents=True)
    scripts = {
        "torchrun": STUB,
        "neuron_parallel_compile": PASS_THROUGH,
        "mkdir": STUB,
        "touch": STUB,
        "scontrol": "#!/bin/sh\necho node-0\n",
        # srun: `hostname --ip-address` answers an IP; a training step prints its argv.
        "srun": '#!/bin/sh\ncase "$*" in *hostname*) echo 10.0.0.7;; *) '
        'while [ "${1#-}" != "$1" ]; do shift; done; exec "$@";; esac\n',
    }
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _run(body: str, tmp: pathlib.Path, env: dict[str, str]) -> list[str]:
    script = tmp / "launch.sh"
    script.write_text(body)
    subprocess.run(["bash", "-n", str(script)], check=True)
    full = {"PATH": f"{_stubs(tmp)}:{os.environ['PATH']}", **env}
    out = subprocess.run(["bash", str(script)], env=full, capture_output=True, text=True, check=True, cwd=tmp)
    return [line for line in out.stdout.splitlines() if "torchrun" in line]


def _container_body(obj: dict) -> str:
    spec = obj["spec"]
    template = spec["tasks"][0]["template"] if obj["kind"] == "Job" and "tasks" in spec else spec["template"]
    return str(template["spec"]["containers"][0]["command"][2])


def test_trainium_precompile_and_training_expand_the_node_rank(tmp_path: pathlib.Path) -> None:
    job = render(spec_for("trainium", lora_rank=16), PROD, "trainium", FakePlanner())[-1]
    lines = _run(_container_body(job), tmp_path, {"JOB_COMPLETION_INDEX": "3"})
    assert len(lines) == 2, lines  # neuron_parallel_compile torchrun ..., then torchrun ...
    for line in lines:
        assert "--node_rank=3" in line.split() and "${" not in line, line


def test_volcano_worker_expands_the_task_index(tmp_path: pathlib.Path) -> None:
    job = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())[-1]
    (line,) = _run(_container_body(job), tmp_path, {"VC_TASK_INDEX": "5"})
    assert "--node_rank=5" in line.split() and "${" not in line


def test_slurm_script_expands_job_id_and_head_ip(tmp_path: pathlib.Path) -> None:
    text = render_sbatch(spec_for("gpu-a100"), PROD, FakePlanner())
    text = text.replace("cat > ", "cat > /dev/null; : ")  # the DeepSpeed/launch files go to FSx
    lines = _run(text, tmp_path, {"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "node-[0-1]"})
    assert lines and all("${" not in line for line in lines), lines
    assert "--rdzv_id=42" in lines[-1].split() and "--rdzv_endpoint=10.0.0.7:29500" in lines[-1].split()
    # torchrun runs in the training image through pyxis, with the slurmd pod's FSx mount.
    srun = next(line for line in text.splitlines() if line.startswith("srun --kill-on-bad-exit=1 "))
    assert "--container-image=registry.example#train:1" in srun and "--container-mounts=/shared:/shared" in srun


ALL_REDUCE_ROWS = """#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong
   1073741824     268435456     float     sum      -1   5000.0  214.75  {bw}      0   5000.0  214.75  {bw}      0
   2147483648     536870912     float     sum      -1   9000.0  238.61  {bw}      0   9000.0  238.61  {bw}      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 12.5
"""


def _health(tmp: pathlib.Path, partition: str, log: str) -> subprocess.CompletedProcess[str]:
    from ekstrain.assembly.jobs import nccl

    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "fake.log").write_text(log)
    launcher = nccl.render(PROD, partition)[-1]["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    body = kubelet_expand(launcher["containers"][0]["command"][2])
    bin_dir = _stubs(tmp)
    # mpirun: the per-node check passes; the collective prints the canned NCCL output.
    (bin_dir / "mpirun").write_text(f'#!/bin/sh\ncase "$*" in *all_reduce_perf*) cat {tmp}/fake.log;; esac\n')
    (bin_dir / "nccom-test").write_text(f"#!/bin/sh\ncat {tmp}/fake.log\n")
    for name in ("mpirun", "nccom-test"):
        (bin_dir / name).chmod(0o755)
    script = tmp / "health.sh"
    script.write_text(body.replace("/tmp/allreduce.log", str(tmp / "out.log")))
    subprocess.run(["bash", "-n", str(script)], check=True)
    return subprocess.run(
        ["bash", str(script)], env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}, capture_output=True, text=True, cwd=tmp
    )


def test_nccl_check_passes_only_over_efa_at_the_catalog_bandwidth(tmp_path: pathlib.Path) -> None:
    ofi = "NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 32 nics)\n"
    good = _health(tmp_path / "good", "gpu-h100", ofi + ALL_REDUCE_ROWS.format(bw="352.10"))
    assert good.returncode == 0, good.stdout + good.stderr
    sockets = _health(
        tmp_path / "sockets", "gpu-h100", "NCCL INFO Using network Socket\n" + ALL_REDUCE_ROWS.format(bw="352.10")
    )
    assert sockets.returncode != 0 and "NET/OFI" in sockets.stdout
    slow = _health(tmp_path / "slow", "gpu-h100", ofi + ALL_REDUCE_ROWS.format(bw="90.00"))
    assert slow.returncode != 0 and "bus bandwidth 90.00 GB/s < 240.0" in slow.stdout


def test_neuron_check_gates_on_bus_bandwidth(tmp_path: pathlib.Path) -> None:
    ok = _health(tmp_path / "ok", "trainium", "Avg bus bandwidth:\t75.2 GB/s\n")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    slow = _health(tmp_path / "slow", "trainium", "Avg bus bandwidth:\t20.1 GB/s\n")
    assert slow.returncode != 0 and "< 60.0" in slow.stdout


def _megatron_parser() -> argparse.ArgumentParser:
    # The subset of megatron/training/arguments.py the platform must set (same names; last occurrence wins).
    p = argparse.ArgumentParser(allow_abbrev=False)
    for flag in (
        "--num-layers",
        "--hidden-size",
        "--num-attention-heads",
        "--num-query-groups",
        "--ffn-hidden-size",
        "--seq-length",
        "--max-position-embeddings",
        "--train-iters",
        "--tensor-model-parallel-size",
        "--pipeline-model-parallel-size",
        "--micro-batch-size",
        "--global-batch-size",
    ):
        p.add_argument(flag, type=int, required=True)
    for flag in ("--lr", "--min-lr", "--weight-decay", "--clip-grad"):
        p.add_argument(flag, type=float, required=True)
    for flag in (
        "--position-embedding-type",
        "--normalization",
        "--tokenizer-type",
        "--tokenizer-model",
        "--data-path",
        "--save",
        "--load",
    ):
        p.add_argument(flag, required=True)
    for flag in ("--group-query-attention", "--swiglu", "--untie-embeddings-and-output-weights", "--bf16"):
        p.add_argument(flag, action="store_true")
    return p


def test_megatron_launch_has_the_model_and_user_arguments(tmp_path: pathlib.Path) -> None:
    import yaml

    from ekstrain.cli.main import main
    from ekstrain.planner.models import get_model

    out = tmp_path / "job.yaml"
    assert (
        main(
            [
                "job",
                "render",
                "--stack",
                "prod",
                "--scheduler",
                "volcano",
                "--partition",
                "gpu-h100",
                "--nodes",
                "8",
                "--model",
                "llama3-70b",
                "--framework",
                "megatron",
                "--global-batch",
                "512",
                "--seq-len",
                "8192",
                "--image",
                "img:1",
                "--script",
                "/fsx/code/Megatron-LM/pretrain_gpt.py",
                "--out",
                str(out),
                "--",
                "--lr",
                "1e-4",
                "--train-iters",
                "5000",
            ]
        )
        == 0
    )
    job = list(yaml.safe_load_all(out.read_text()))[-1]
    (line,) = _run(_container_body(job), tmp_path, {"VC_TASK_INDEX": "0"})
    argv = line.split()
    script = argv.index("/fsx/code/Megatron-LM/pretrain_gpt.py")
    args, unknown = _megatron_parser().parse_known_args(argv[script + 1 :])
    m = get_model("llama3-70b")
    assert (
        args.num_layers,
        args.hidden_size,
        args.num_attention_heads,
        args.num_query_groups,
        args.ffn_hidden_size,
    ) == (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden)
    assert args.group_query_attention and args.swiglu and args.untie_embeddings_and_output_weights and args.bf16
    assert (args.position_embedding_type, args.normalization) == ("rope", "RMSNorm")
    assert args.seq_length == args.max_position_embeddings == 8192 and args.global_batch_size == 512
    assert args.data_path == "/fsx/data/llama3-70b_text_document" and args.tokenizer_type == "HuggingFaceTokenizer"
    assert (args.lr, args.train_iters) == (1e-4, 5000)  # the user's `--` arguments come last and win
