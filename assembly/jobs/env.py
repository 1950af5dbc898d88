"""The EFA / NCCL / PyTorch / Neuron environment of every worker, as one data table.

Values are distilled from the AWS reference templates (platform-anchors.md (d)6). Each row says
when it applies; :func:`platform_env` evaluates the table for one resolved run, so every
scheduler's workers get exactly the same variables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ekstrain.facts import catalog, training_metrics


@dataclass(frozen=True)
class EnvContext:
    family: str
    """``gpu`` or ``trainium``."""
    efa: int
    """EFA interfaces each worker requests (0: no EFA)."""
    gpudirect_rdma: bool
    hugepages: bool
    neuron_cores: int
    checkpoint_dir: str
    data_dir: str
    compile_cache: str


@dataclass(frozen=True)
class EnvRule:
    name: str
    value: Callable[[EnvContext], str] | str
    when: Callable[[EnvContext], bool]
    why: str


def _always(_: EnvContext) -> bool:
    return True


def _efa(c: EnvContext) -> bool:
    return c.efa > 0


def _gpu(c: EnvContext) -> bool:
    return c.family == catalog.GPU


def _gpu_efa(c: EnvContext) -> bool:
    return c.family == catalog.GPU and c.efa > 0


def _trainium(c: EnvContext) -> bool:
    return c.family == catalog.TRAINIUM


HEARTBEAT_FILE = "/tmp/ekstrain-progress"
HANG_SECONDS = 1800
"""A step that has not finished for 30 minutes is a hang: more than any step, checkpoint save (281 s on prod's FSx,
`ekstrain storage`) or Neuron graph load after the first step; before the first step the file does not exist and
the probe passes (compilation, data loading)."""


def liveness_probe() -> dict[str, object]:
    """The workers' hang detector (``PROGRESS_HEARTBEAT_FILE``): passes while the file is absent or fresh."""
    test = (
        f'f="${{PROGRESS_HEARTBEAT_FILE:-{HEARTBEAT_FILE}}}"; [ ! -e "$f" ] || '
        f'[ $(( $(date +%s) - $(stat -c %Y "$f") )) -lt {HANG_SECONDS} ]'
    )
    return {"exec": {"command": ["/bin/sh", "-c", test]}, "periodSeconds": 60, "failureThreshold": 1}


SOCKET_EXCLUDE = "^lo,docker,veth_def_agent"
"""Interfaces NCCL/Gloo bootstrap must not use (prefix match: ``docker`` covers ``docker0``)."""

# No LD_LIBRARY_PATH and no NCCL_TUNER_PLUGIN path: the image's own ld.so configuration finds libfabric
# and aws-ofi-nccl wherever its EFA installer put them (1.50 installs aws-ofi-nccl in /opt/amazon/ofi-nccl/lib/,
# older ones in .../lib/x86_64-linux-gnu/), and NCCL >= 2.19 loads the tuner from the net plugin library itself
# when NCCL_TUNER_PLUGIN is unset. Overriding either breaks one image layout or the other.
IMAGE_OWNED_ENV = frozenset({"LD_LIBRARY_PATH", "NCCL_TUNER_PLUGIN", "NCCL_NET_PLUGIN"})

RULES: tuple[EnvRule, ...] = (
    # libfabric / EFA
    EnvRule("FI_PROVIDER", "efa", _efa, "use the EFA libfabric provider, never fall back to TCP sockets"),
    EnvRule(
        "FI_EFA_USE_DEVICE_RDMA",
        "1",
        lambda c: c.efa > 0 and c.gpudirect_rdma,
        "GPUDirect/Neuron RDMA over EFA (p4d, p5, trn1 and later; catalog gpudirect_rdma)",
    ),
    EnvRule("FI_EFA_FORK_SAFE", "1", _efa, "DataLoader workers fork after EFA memory registration"),
    EnvRule(
        "FI_EFA_USE_HUGE_PAGE",
        "0",
        lambda c: c.efa > 0 and not c.hugepages,
        "no hugepages requested: libfabric must not try to map them",
    ),
    # NCCL
    EnvRule("NCCL_DEBUG", "WARN", _gpu, "INFO is too chatty at scale; set INFO to debug EFA"),
    EnvRule("NCCL_BUFFSIZE", "8388608", _gpu_efa, "8 MiB buffers (AWS tuning for EFA)"),
    EnvRule("NCCL_P2P_NET_CHUNKSIZE", "524288", _gpu_efa, "512 KiB p2p chunks (AWS tuning for EFA)"),
    EnvRule("NCCL_SOCKET_IFNAME", SOCKET_EXCLUDE, _gpu, "bootstrap over the pod's eth0, not loopback/docker"),
    EnvRule("NCCL_SOCKET_TIMEOUT_MS", "600000", _gpu, "slow pods at gang start must not fail the bootstrap"),
    EnvRule("GLOO_SOCKET_IFNAME", "eth0", _always, "Gloo (CPU collectives, barrier) over the pod network"),
    # PyTorch robustness
    EnvRule("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1", _gpu, "a hung collective kills the process (then restart)"),
    EnvRule("TORCH_NCCL_ENABLE_MONITORING", "1", _gpu, "watchdog heartbeat monitor"),
    EnvRule(
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC",
        "600",
        _gpu,
        "hang detection: the NCCL watchdog's monitor kills the process when the watchdog itself is stuck this long "
        "(PyTorch ProcessGroupNCCL, default 480)",
    ),
    EnvRule("TORCH_NCCL_DUMP_ON_TIMEOUT", "1", _gpu, "flight-recorder dump on a collective timeout"),
    EnvRule("TORCH_NCCL_TRACE_BUFFER_SIZE", "20000", _gpu, "flight-recorder entries kept per rank"),
    EnvRule(
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
        lambda c: f"{c.checkpoint_dir}/nccl-trace/rank_",
        _gpu,
        "dumps go to FSx so they survive the pod restart that follows a timeout",
    ),
    EnvRule("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", _gpu, "less fragmentation on long runs"),
    # Neuron
    EnvRule("NEURON_RT_NUM_CORES", lambda c: str(c.neuron_cores), _trainium, "every NeuronCore of the node"),
    EnvRule(
        "NEURON_CC_FLAGS",
        lambda c: f"--model-type transformer --cache_dir={c.compile_cache}",
        _trainium,
        "compiled graphs are cached on FSx and shared by every node and every restart",
    ),
    EnvRule("NEURON_COMPILE_CACHE_URL", lambda c: c.compile_cache, _trainium, "same cache for torch-neuronx"),
    EnvRule("MALLOC_ARENA_MAX", "64", _trainium, "bounds host memory of 32 ranks per node"),
    EnvRule("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "3", _trainium, "AWS reference value"),
    EnvRule("NEURON_FUSE_SOFTMAX", "1", _trainium, "AWS reference value"),
    EnvRule("XLA_DOWNCAST_BF16", "1", _trainium, "bf16 training on Trainium"),
    # Data, checkpoints, resume (read by the training script; see docs/jobs.md)
    EnvRule("DATA_DIR", lambda c: c.data_dir, _always, "dataset root on FSx"),
    EnvRule("CHECKPOINT_DIR", lambda c: c.checkpoint_dir, _always, "checkpoints of this run on FSx"),
    EnvRule(
        "RESUME_FROM_CHECKPOINT",
        lambda c: f"{c.checkpoint_dir}/latest",
        _always,
        "resume from the newest checkpoint when it exists, start fresh otherwise",
    ),
    EnvRule(
        "PROGRESS_HEARTBEAT_FILE",
        HEARTBEAT_FILE,
        _always,
        "hang detection: the training script touches it after every step; the worker's liveness probe fails when "
        "it is older than HANG_SECONDS (a hung rank restarts the job instead of holding its nodes)",
    ),
    EnvRule(
        training_metrics.PORT_ENV,
        str(training_metrics.PORT),
        _always,
        "the progress metrics (last step, last checkpoint) the training process serves for the PodMonitor and the "
        "job-progress alerts (ekstrain/facts/training_metrics.py, docs/alerts.md)",
    ),
    EnvRule("PYTHONUNBUFFERED", "1", _always, "logs reach kubectl logs immediately"),
)


def platform_env(ctx: EnvContext) -> dict[str, str]:
    """Name -> value of every rule that applies, in table order."""
    out: dict[str, str] = {}
    for rule in RULES:
        if rule.when(ctx):
            out[rule.name] = rule.value(ctx) if callable(rule.value) else rule.value
    return out


MPI_FLAGS: tuple[str, ...] = (
    "--allow-run-as-root",
    "--bind-to",
    "none",
    "--mca",
    "pml",
    "^ucx",
    "--mca",
    "btl",
    "tcp,self",
    "--mca",
    "btl_tcp_if_exclude",
    "lo,docker0,veth_def_agent",
)
"""Open MPI flags for EFA clusters: no UCX, TCP only for MPI's own bootstrap (NCCL/libfabric carry the data)."""

MPI_FORWARDED_IMAGE_ENV: tuple[str, ...] = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD")
"""The image's own variables ``mpirun -x`` forwards to every rank: ranks start through ssh/orted without the
image's ``ENV``, so without them NCCL, aws-ofi-nccl and ``fi_info`` are not found. AWS's MPIJob forwards
PATH and LD_LIBRARY_PATH (aws-samples/awsome-distributed-training @50820097
micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml) and its image sets LD_PRELOAD to its NCCL
(nccl-tests.Dockerfile @7988de6d: ``ENV LD_PRELOAD /opt/nccl/build/lib/libnccl.so``). Open MPI only warns
about a name that is not set in the launcher."""
