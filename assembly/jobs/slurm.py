"""Slurm (Slinky): an sbatch script, as text or wrapped in a ConfigMap.

One task per node (``--exclusive``), ``srun`` starts torchrun on every node, and torchrun's c10d
rendezvous runs on the head node's IP (hostnames of Slinky's slurmd pods are not resolvable
from every pod, anchors (d)6). The Slurm partition has the Kubernetes partition's name. Jobs run
inside the slurmd containers, so the RunSpec image is only recorded in a comment.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import Any

from assembly.jobs.resolve import MASTER_PORT, PlatformWord, ResolvedRun, shell_join


def enroot_uri(image: str) -> str:
    """pyxis/enroot image reference: ``registry#repository:tag`` for a registry other than Docker Hub."""
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return f"{first}#{rest}"
    return image


def container_flags(r: ResolvedRun) -> list[str]:
    return [
        f"--container-image={enroot_uri(r.spec.image)}",
        f"--container-mounts={r.mount_path}:{r.mount_path}",
        "--no-container-mount-home",
    ]


def _rendezvous() -> list[str]:
    return [
        PlatformWord("--rdzv_id=${SLURM_JOB_ID}"),
        "--rdzv_backend=c10d",
        PlatformWord(f"--rdzv_endpoint=${{head_node_ip}}:{MASTER_PORT}"),
    ]


def script(r: ResolvedRun) -> str:
    d = r.degrees
    files_dir = r.checkpoint_dir
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={r.name}",
        f"#SBATCH --partition={r.shape.name}",
        f"#SBATCH --nodes={r.nodes}",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --exclusive",
    ]
    if not r.is_trainium:
        lines.append(f"#SBATCH --gpus-per-node={r.instance.accelerator_count}")
    lines += [
        # The output file is opened before the script runs, so it goes to the existing checkpoint root.
        f"#SBATCH --output={posixpath.dirname(r.checkpoint_dir)}/%x-%j.out",
        "#SBATCH --requeue",
        "",
        f"# ekstrain run {r.name}: {r.spec.model} on {r.nodes} x {r.instance.name} ({r.efa} EFA each) "
        f"in {r.spec.image} (pyxis; private registries need enroot credentials, docs/jobs.md)",
        f"# plan: tp={d['tp']} pp={d['pp']} dp={d['dp']} cp={d['cp']} ep={d['ep']} vpp={d['vpp']} "
        f"micro_batch={d['micro_batch']} grad_accum={d['grad_accum']} zero={d['zero']} recompute={d['recompute']} "
        f"(global batch {r.spec.global_batch})",
        *r.prelude(),
        "",
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in r.env.items()]
    for name, text in r.files().items():
        lines += [
            "",
            f"cat > {shlex.quote(files_dir + '/' + name)} <<'EKSTRAIN_EOF'",
            text.rstrip("\n"),
            "EKSTRAIN_EOF",
        ]
    lines += [
        "",
        'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "head_node_ip=$(srun --nodes=1 --ntasks=1 -w \"$head_node\" hostname --ip-address | awk '{print $1}')",
        'echo "rendezvous on ${head_node} (${head_node_ip})"',
        "",
    ]
    rdzv = _rendezvous()
    if r.is_trainium and r.spec.precompile:
        marker = f"{r.compile_cache}/.{r.name}-compiled"
        pre = ["neuron_parallel_compile", *r.torchrun(rdzv, files_dir), f"--max_steps={r.spec.precompile_steps}"]
        lines += [
            f"if [ ! -f {shlex.quote(marker)} ]; then",
            f"  srun --kill-on-bad-exit=1 {shell_join([*container_flags(r), *pre])}",
            f"  touch {shlex.quote(marker)}",
            "fi",
        ]
    lines.append("srun --kill-on-bad-exit=1 " + shell_join([*container_flags(r), *r.torchrun(rdzv, files_dir)]))
    return "\n".join(lines) + "\n"


def configmap(r: ResolvedRun) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": r.metadata(f"{r.name}-sbatch"),
        "data": {f"{r.name}.sbatch": script(r)},
    }
