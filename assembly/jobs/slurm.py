"""Slurm (Slinky): an sbatch script, as text or wrapped in a ConfigMap.

One task per node (``--exclusive``), ``srun`` starts torchrun on every node, and torchrun's c10d
rendezvous runs on the head node's IP (hostnames of Slinky's slurmd pods are not resolvable
from every pod, anchors (d)6). The Slurm partition has the Kubernetes partition's name. Jobs run
inside the slurmd containers, so the RunSpec image is only recorded in a comment.
"""

from __future__ import annotations

import shlex
from typing import Any

from ekstrain.assembly.jobs.resolve import MASTER_PORT, PlatformWord, ResolvedRun, shell_join


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
        # The output file is opened before the script runs, so it goes to the stack's checkpoint root (it
        # exists; a user's --checkpoint-path may not yet), or with ekstrain:logging to the node's directory the log
        # agent tails (the Prolog made <dir>/<job id>) and the script copies it to the checkpoint root.
        # No user text on #SBATCH lines.
        f"#SBATCH --output={output_path(r)}",
        "#SBATCH --requeue" if r.spec.max_restarts else "#SBATCH --no-requeue",
        "",
        f"# ekstrain run {r.name}: {r.spec.model} on {r.nodes} x {r.instance.name} ({r.efa} EFA each) "
        f"in {r.spec.image} (pyxis; private registries need enroot credentials, docs/jobs.md)",
        f"# plan: tp={d['tp']} pp={d['pp']} dp={d['dp']} cp={d['cp']} ep={d['ep']} vpp={d['vpp']} "
        f"micro_batch={d['micro_batch']} grad_accum={d['grad_accum']} zero={d['zero']} recompute={d['recompute']} "
        f"(global batch {r.spec.global_batch})",
        *fsx_copy(r),
        *r.prelude(),
        *restart_guard(r),
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
            f"  srun --kill-on-bad-exit=1 --label {shell_join([*container_flags(r), *pre])}",
            f"  touch {shlex.quote(marker)}",
            "fi",
        ]
    lines += [
        "status=0",
        "srun --kill-on-bad-exit=1 --label "
        + shell_join([*container_flags(r), *r.torchrun(rdzv, files_dir)])
        + " || status=$?",
        *requeue_on_failure(r),
        'exit "$status"',
    ]
    return "\n".join(lines) + "\n"


def output_path(r: ResolvedRun) -> str:
    """sbatch ``--output``: ``%j`` the job id, ``%x`` the job name (sbatch(1) filename pattern)."""
    if r.slurm_log_dir:
        return f"{r.slurm_log_dir}/%j/%x.out"
    return f"{r.checkpoint_root}/%x-%j.out"


def fsx_copy(r: ResolvedRun) -> list[str]:
    """With the node-local output (ekstrain:logging), every line also goes to ``<checkpoint root>/<name>-<id>.out``
    on FSx, where it was before, for whoever reads it from a login pod."""
    if not r.slurm_log_dir:
        return []
    prefix = shlex.quote(f"{r.checkpoint_root}/{r.name}-")
    return [f'exec > >(tee -a {prefix}"${{SLURM_JOB_ID}}.out") 2>&1']


RESTART_COUNT = "${SLURM_RESTART_COUNT:-0}"
"""Times Slurm restarted this job (node failure or requeue; sbatch(1) OUTPUT ENVIRONMENT VARIABLES)."""


def restart_guard(r: ResolvedRun) -> list[str]:
    """``--max-restarts`` N: Slurm requeues on node failure (``--requeue``) without a per-job limit
    (slurm.conf MaxBatchRequeue is cluster-wide), so the script stops itself after N restarts."""
    n = r.spec.max_restarts
    if not n:
        return []
    return [
        f'if [ "{RESTART_COUNT}" -gt {n} ]; then',
        f'  echo "{r.name}: restarted {RESTART_COUNT} times, more than --max-restarts {n}; giving up"; exit 1',
        "fi",
    ]


def requeue_on_failure(r: ResolvedRun) -> list[str]:
    """A failed training step (a rank crashed, ``--kill-on-bad-exit``) requeues the job while restarts are
    left, as Volcano's PodFailed -> RestartJob does; the next run resumes from ``<checkpoint dir>/latest``."""
    n = r.spec.max_restarts
    if not n:
        return []
    return [
        f'if [ "$status" -ne 0 ] && [ "{RESTART_COUNT}" -lt {n} ]; then',
        f'  echo "{r.name}: training failed (exit $status); requeue, restart $(({RESTART_COUNT} + 1)) of {n}"',
        '  scontrol requeue "$SLURM_JOB_ID"',
        "fi",
    ]


def configmap(r: ResolvedRun) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": r.metadata(f"{r.name}-sbatch"),
        "data": {f"{r.name}.sbatch": script(r)},
    }
