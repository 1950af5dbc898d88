"""Pre-flight health check per partition: device counts from the catalog, then an all-reduce.

An MPIJob on ``nodes`` nodes of the partition (default 2) with the very same worker resources,
EFA count and env as training jobs. The launcher first runs one check per node (accelerators
and EFA devices visible in the container must equal the catalog's counts; libfabric must see
the EFA provider), then the all-reduce: NCCL's ``all_reduce_perf`` on GPU partitions, Neuron's
``nccom-test allr`` on Trainium. A wrong count or a failed collective fails the job.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.assembly.jobs import mpijob
from ekstrain.assembly.jobs.resolve import ResolvedRun, resolve
from ekstrain.assembly.jobs.spec import RunSpec
from ekstrain.facts import catalog, versions

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

GPU_IMAGE = versions.NCCL_TESTS_IMAGE
"""AWS's nccl-tests image with EFA, aws-ofi-nccl and Open MPI (override with --image)."""
NEURON_IMAGE = versions.NEURON_TRAINING_IMAGE
"""A Neuron training image with nccom-test and neuron-ls (override with --image)."""
ALL_REDUCE = "/opt/nccl-tests/build/all_reduce_perf"
DEFAULT_NODES = 2


@dataclass(frozen=True)
class HealthCheckPlan:
    """Pure data parallelism over every worker: lets the health check reuse the training resolver."""

    nodes: int
    accelerators_per_node: int
    dp: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    micro_batch: int = 1
    grad_accum: int = 1
    zero: int = 0
    fits: bool = True


def spec_for(
    cfg: StackConfig, partition: str, nodes: int | None = None, image: str | None = None, name: str | None = None
) -> RunSpec:
    part = next((p for p in cfg.partitions if p.name == partition), None)
    trainium = part is not None and part.accelerator == catalog.TRAINIUM
    count = nodes or (min(DEFAULT_NODES, part.max_nodes) if part else DEFAULT_NODES)
    it = catalog.get(part.instance_types[0]) if part else None
    workers = it.workers_per_node if it else 1
    return RunSpec(
        name=name or f"nccl-check-{partition}"[:40].rstrip("-"),
        partition=partition,
        nodes=count,
        image=image or (NEURON_IMAGE if trainium else GPU_IMAGE),
        model="all-reduce",
        global_batch=count * workers,
        seq_len=1,
        framework="neuronx-distributed" if trainium else "fsdp",
        resume_flag="",
        precompile=False,
        checkpoint_path=f"{cfg.storage.fsx.mount_path.rstrip('/')}{cfg.storage.fsx.checkpoint_path}/health",
        max_restarts=0,
        plan=HealthCheckPlan(nodes=count, accelerators_per_node=workers, dp=count * workers),
    )


def node_check(r: ResolvedRun) -> str:
    """Shell run once per node: visible accelerators and EFA devices must match the catalog."""
    acc = r.instance.accelerator_count
    count_acc = (
        "nvidia-smi -L | grep -c '^GPU '"
        if not r.is_trainium
        else "neuron-ls --json-output | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'"
    )
    lines = [
        "set -euo pipefail",
        f"acc=$({count_acc})",
        f'[ "$acc" -eq {acc} ] || {{ echo "$(hostname): expected {acc} {r.accelerator_resource}, '
        f'found $acc"; exit 1; }}',
    ]
    if r.efa:
        lines += [
            "efa=$(ls -d /dev/infiniband/uverbs* 2>/dev/null | wc -l)",
            f'[ "$efa" -eq {r.efa} ] || {{ echo "$(hostname): expected {r.efa} EFA devices, found $efa"; exit 1; }}',
            'fi_info -p efa -t FI_EP_RDM > /dev/null || { echo "$(hostname): libfabric has no EFA provider"; exit 1; }',
        ]
    lines.append(f'echo "$(hostname): {acc} accelerators, {r.efa} EFA devices: OK"')
    return "\n".join(lines) + "\n"


LOG = "/tmp/allreduce.log"


def verdict(r: ResolvedRun, log: str = LOG) -> list[str]:
    """Shell lines that fail the check unless the collective ran over EFA and reached the catalog's
    minimum bus bandwidth (``catalog.NCCL_MIN_BUSBW_GB_S``) at the largest message size."""
    lines: list[str] = []
    if r.is_trainium:
        busbw = f"bw=$(grep -oE 'Avg bus bandwidth[^0-9]*[0-9.]+' {log} | grep -oE '[0-9.]+$' | tail -n 1)"
    else:
        lines.append(f'grep -q "Out of bounds values : 0 OK" {log} || {{ echo "all-reduce: wrong results"; exit 1; }}')
        if r.efa:
            # aws-ofi-nccl logs "NET/OFI ..." at init when NCCL loaded it (NCCL_DEBUG=INFO); without it NCCL
            # would have used its socket transport over the pod network.
            lines.append(
                f'grep -q "NET/OFI" {log} || {{ echo "all-reduce: NCCL did not load aws-ofi-nccl (NET/OFI)"; exit 1; }}'
            )
            lines.append(
                f'! grep -q "Using network Socket" {log} || {{ echo "all-reduce: NCCL used TCP sockets"; exit 1; }}'
            )
        # Last data row = largest message; column 8 = out-of-place busbw (all_reduce_perf's table).
        busbw = f"bw=$(awk '$1 ~ /^[0-9]+$/ && NF >= 8 {{v=$8}} END {{print v}}' {log})"
    floor = catalog.NCCL_MIN_BUSBW_GB_S.get(r.instance.name)
    if floor is not None and r.nodes >= 2:
        lines += [
            busbw,
            f"awk -v bw=\"${{bw:-0}}\" 'BEGIN {{ exit !(bw + 0 >= {floor}) }}' || "
            f'{{ echo "all-reduce: bus bandwidth ${{bw:-none}} GB/s < {floor} GB/s for {r.instance.name}"; '
            "exit 1; }",
        ]
    return lines


def launcher_shell(r: ResolvedRun) -> str:
    check = mpijob.mpirun(r, ["bash", "-c", node_check(r)], r.nodes, 1, r.env)
    if r.is_trainium:
        # Large messages only: nccom-test's gate is its average bus bandwidth over the sweep.
        collective = [
            "nccom-test",
            "-r",
            str(r.world_size),
            "-N",
            str(r.nodes),
            "-b",
            "256M",
            "-e",
            "1G",
            "-f",
            "2",
            "-n",
            "20",
            "-d",
            "fp32",
            "allr",
            "--hosts",
        ]
        run = shlex.join(collective) + " $(awk '{print $1}' /etc/mpi/hostfile)"
    else:
        env = {**r.env, "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
        collective = mpijob.mpirun(
            r,
            [ALL_REDUCE, "-b", "8", "-e", "2G", "-f", "2", "-g", "1", "-c", "1", "-n", "50"],
            r.world_size,
            r.nproc_per_node,
            env,
        )
        run = "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET " + shlex.join(collective)
    return (
        "\n".join(
            [
                "set -euo pipefail",
                shlex.join(check),
                f"{run} 2>&1 | tee {LOG}",
                *verdict(r),
                'echo "all-reduce on ' + f'{r.nodes} x {r.instance.name}: OK"',
            ]
        )
        + "\n"
    )


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    return mpijob.build(r, launcher_command=["/bin/bash", "-c", launcher_shell(r)])


def render(cfg: StackConfig, partition: str, nodes: int | None = None, image: str | None = None) -> list[dict]:
    spec = spec_for(cfg, partition, nodes, image)
    return build(resolve(spec, cfg))
