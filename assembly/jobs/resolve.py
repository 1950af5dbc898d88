"""RunSpec + StackConfig -> ResolvedRun: the ONE place that computes a run's numbers.

Nodes, processes per node, parallel degrees, gradient accumulation, accelerator and EFA counts,
memory, environment, volumes and scheduling constraints are all decided here; the builders in
``assembly/jobs/<scheduler>.py`` only lay them out, so every scheduler gets the same run.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ekstrain.assembly.jobs import env as envtable
from ekstrain.assembly.jobs import planning
from ekstrain.assembly.jobs.planning import PlannerBackend, choose_plan, plan_instance_type
from ekstrain.assembly.jobs.spec import (
    HUGEPAGE_2MI,
    PLATFORM_VARS,
    TRAINIUM_FRAMEWORKS,
    JobRequestError,
    RunSpec,
    hugepages_bytes,
)
from ekstrain.facts import catalog, names
from ekstrain.layout.partitions import PartitionShape, layout_nodes, shape

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
JOB_LABEL = "ekstrain.io/job"
FILES_DIR = "/etc/ekstrain"
"""Where the launch ConfigMap (DeepSpeed JSON, Ray launcher) is mounted in every pod."""
SHM_MOUNT = "/dev/shm"
MEMORY_FRACTION = 0.85
"""Worker memory request = limit = this share of the node's RAM: Karpenter reserves ~7.5 % VM overhead
plus kube-reserved and eviction, the rest is left to the node's DaemonSets (CNI, device plugins, FSx CSI)."""
SHM_FRACTION = 0.125
"""``/dev/shm`` size limit as a share of node RAM (counts against the worker's memory limit)."""
MASTER_PORT = 29500
LAUNCHER_MAX: tuple[float, float] = (2.0, 4.0 * 2**30)
"""CPU cores and memory bytes a CPU-only launcher (mpirun) asks for at most."""
LAUNCHER_SHARE = 0.25
"""...and at most this share of the smallest system node's allocatable: launchers run there next to the
controllers and DaemonSets, and a few jobs' launchers must fit at once (a 2-CPU launcher can
never start on dev's m7i.large, whose allocatable is 1.93 CPU)."""
SSH_CAPABILITIES = ("AUDIT_WRITE", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")
"""What sshd (MPI workers) needs after ``drop: [ALL]``; all are allowed by the Pod Security baseline."""


@dataclass(frozen=True)
class ResolvedRun:
    spec: RunSpec
    shape: PartitionShape
    instance: catalog.InstanceType
    plan: Any
    namespace: str
    nodes: int
    nproc_per_node: int
    degrees: dict[str, Any]
    """nodes, nproc_per_node, world_size, tp, pp, dp, cp, ep, vpp, micro_batch, grad_accum, zero, recompute,
    sequence_parallel, offload_optimizer: the consistency key every scheduler shares."""
    efa: int
    hugepages_2mi: str | None
    memory: str
    cpu: str
    shm_size: str
    mount_path: str
    data_dir: str
    checkpoint_dir: str
    compile_cache: str
    env: dict[str, str]
    deepspeed_config: dict[str, Any] | None
    kubernetes_version: str
    labels: dict[str, str] = field(default_factory=dict)
    launcher_cpu: str = "2"
    launcher_memory: str = "4Gi"
    """Requests of the CPU-only launcher container (:func:`launcher_requests`)."""
    checkpoint_root: str = ""
    """The stack's checkpoint directory on this mount (exists before any job: Slurm's output goes there)."""
    extra_files: dict[str, str] = field(default_factory=dict)
    """Files a builder adds to the launch ConfigMap (the Ray launcher)."""
    queue: str = ""
    """The Volcano queue the job names (assembly/schedulers/teams.py ``queue_for``); @default "": the partition's."""
    slurm_log_dir: str | None = None
    """sbatch: the node-local directory the job's output goes to (``<dir>/<job id>/<name>.out``), where the log
    agent tails it (``ekstrain:logging``); None: the output goes only to the checkpoint root on FSx."""
    volcano: bool = False
    """The stack runs Volcano: every template gang-schedules through the partition's queue
    (``schedulers.volcano.enabled``; without Volcano a ``schedulerName: volcano`` pod would never bind)."""

    # ---- derived views shared by the builders ---------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def family(self) -> str:
        return self.instance.family

    @property
    def is_trainium(self) -> bool:
        return self.family == catalog.TRAINIUM

    @property
    def accelerator_resource(self) -> str:
        return self.instance.accelerator_resource

    @property
    def world_size(self) -> int:
        return self.nodes * self.nproc_per_node

    def resources(self) -> dict[str, Any]:
        """Worker container resources: accelerators, EFA, hugepages and memory in requests AND limits
        (extended resources must be equal in both); CPU is requested but not limited (no throttling)."""
        limits: dict[str, Any] = {self.accelerator_resource: self.instance.accelerator_count}
        if self.efa:
            limits[names.EFA_RESOURCE] = self.efa
        if self.hugepages_2mi:
            limits["hugepages-2Mi"] = self.hugepages_2mi
        limits["memory"] = self.memory
        return {"requests": {**limits, "cpu": self.cpu}, "limits": dict(limits)}

    def node_selector(self) -> dict[str, str]:
        # One instance type per job: a mixed partition (p4d + p4de) must not mix GPU memory sizes in one plan.
        # The partition label: a mixed-layout partition (trn1 + trn1n) has one NodePool per layout.
        return {names.PARTITION_LABEL: self.shape.name, INSTANCE_TYPE_LABEL: self.instance.name}

    def tolerations(self) -> list[dict[str, str]]:
        return [
            {"key": self.accelerator_resource, "operator": "Equal", "value": names.TAINT_VALUE, "effect": "NoSchedule"}
        ]

    def annotations(self) -> dict[str, str]:
        return {DO_NOT_DISRUPT: "true"}

    def env_list(self, extra: dict[str, str] | None = None) -> list[dict[str, str]]:
        """Container env; values escaped for the kubelet's ``$(VAR)`` expansion, so each arrives as given."""
        merged = {**self.env, **(extra or {})}
        return [{"name": k, "value": kubelet_literal(v)} for k, v in merged.items()]

    def security_context(self, ssh: bool = False) -> dict[str, Any]:
        """Pod Security baseline-compatible: no privilege, no escalation, every capability dropped.

        EFA needs no ``IPC_LOCK``: the EKS accelerated AMIs run containerd with ``LimitMEMLOCK=infinity``,
        which containers inherit, and CAP_IPC_LOCK only matters when RLIMIT_MEMLOCK is finite.
        """
        caps: dict[str, Any] = {"drop": ["ALL"]}
        if ssh:
            caps["add"] = list(SSH_CAPABILITIES)
        return {
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "capabilities": caps,
            "seccompProfile": {"type": "RuntimeDefault"},
        }

    def files(self) -> dict[str, str]:
        """Files of the launch ConfigMap (mounted at FILES_DIR); empty when the run needs none."""
        out: dict[str, str] = {}
        if self.deepspeed_config is not None:
            out["ds_config.json"] = json.dumps(self.deepspeed_config, indent=2, sort_keys=True) + "\n"
        out.update(self.extra_files)
        return out

    def volumes(self, with_files: bool = True) -> list[dict[str, Any]]:
        vols: list[dict[str, Any]] = [
            {"name": "fsx", "persistentVolumeClaim": {"claimName": names.FSX_PVC}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": self.shm_size}},
        ]
        if with_files and self.files():
            vols.append({"name": "launch", "configMap": {"name": self.launch_configmap_name}})
        return vols

    def volume_mounts(self, with_files: bool = True) -> list[dict[str, Any]]:
        mounts: list[dict[str, Any]] = [
            {"name": "fsx", "mountPath": self.mount_path},
            {"name": "shm", "mountPath": SHM_MOUNT},
        ]
        if with_files and self.files():
            mounts.append({"name": "launch", "mountPath": FILES_DIR, "readOnly": True})
        return mounts

    @property
    def launch_configmap_name(self) -> str:
        return f"{self.name}-launch"

    def metadata(self, name: str | None = None) -> dict[str, Any]:
        return {"name": name or self.name, "namespace": self.namespace, "labels": dict(self.labels)}

    # ---- the training command -------------------------------------------------------------------

    def script_args(self, files_dir: str = FILES_DIR) -> list[str]:
        """``script`` + the plan's arguments + resume + the user's arguments (one list for every scheduler)."""
        return [self.spec.script, *self.plan_args(files_dir), *self.resume_args(), *self.spec.args]

    def plan_args(self, files_dir: str = FILES_DIR) -> list[str]:
        d = self.degrees
        fw = self.spec.framework
        common = [
            f"--model={self.spec.model}",
            f"--seq_len={self.spec.seq_len}",
            f"--data_dir={self.data_dir}",
            f"--checkpoint_dir={self.checkpoint_dir}",
        ]
        if self.spec.lora_rank is not None:
            common.append(f"--lora_rank={self.spec.lora_rank}")
        layout = [
            f"--tensor_parallel_size={d['tp']}",
            f"--pipeline_parallel_size={d['pp']}",
            f"--context_parallel_size={d['cp']}",
        ]
        if d["ep"] > 1:
            layout.append(f"--expert_parallel_size={d['ep']}")
        if d["vpp"] > 1:
            layout.append(f"--virtual_pipeline_stages={d['vpp']}")
        if fw == "deepspeed":
            # DeepSpeed's JSON has the batch, ZeRO and offload; TP/PP/CP are the model code's (Megatron-DeepSpeed).
            return [*common, *layout, "--deepspeed", f"--deepspeed_config={files_dir}/ds_config.json"]
        if fw == "megatron":
            # Megatron's indexed dataset prefix (<prefix>.bin/.idx) and a Hugging Face tokenizer, both on FSx.
            return [
                *_plan_list(self.plan, "megatron_args"),
                "--save",
                self.checkpoint_dir,
                "--load",
                self.checkpoint_dir,
                "--data-path",
                f"{self.data_dir}/{self.spec.model}_text_document",
                "--tokenizer-type",
                "HuggingFaceTokenizer",
                "--tokenizer-model",
                f"{self.data_dir}/tokenizer",
            ]
        if fw == "neuronx-distributed":
            neuron = _plan_list(self.plan, "neuron_args")
            if "--seq_len" in neuron:
                common = [a for a in common if not a.startswith("--seq_len=")]
            return [*common, *neuron]
        extra = []
        if d["offload_optimizer"]:
            extra.append("--offload_optimizer")
        return [
            *common,
            f"--global_batch_size={self.spec.global_batch}",
            f"--micro_batch_size={d['micro_batch']}",
            f"--gradient_accumulation_steps={d['grad_accum']}",
            *layout,
            f"--zero_stage={d['zero']}",
            f"--recompute={d['recompute']}",
            f"--sequence_parallel={int(bool(d['sequence_parallel']))}",
            *extra,
        ]

    def resume_args(self) -> list[str]:
        if self.spec.framework == "megatron" or not self.spec.resume_flag:
            return []  # Megatron resumes from --load <dir> (latest_checkpointed_iteration.txt) natively
        return [f"{self.spec.resume_flag}={self.checkpoint_dir}/latest"]

    def torchrun(self, rendezvous: list[str], files_dir: str = FILES_DIR) -> list[str]:
        return [
            "torchrun",
            f"--nnodes={self.nodes}",
            f"--nproc_per_node={self.nproc_per_node}",
            *rendezvous,
            *self.script_args(files_dir),
        ]

    def static_rendezvous(self, node_rank: str, master_addr: str, port: int | str = MASTER_PORT) -> list[str]:
        """torchrun's static rendezvous; the three values may reference :data:`PLATFORM_VARS`."""
        return [
            PlatformWord(f"--node_rank={node_rank}"),
            PlatformWord(f"--master_addr={master_addr}"),
            PlatformWord(f"--master_port={port}"),
        ]

    def prelude(self) -> list[str]:
        """Shell lines every worker runs before training: FSx directories for checkpoints and NCCL dumps."""
        dirs = [self.checkpoint_dir, f"{self.checkpoint_dir}/nccl-trace"]
        if self.is_trainium:
            dirs.append(self.compile_cache)
        return ["set -euo pipefail", f"mkdir -p {' '.join(shlex.quote(d) for d in dirs)}"]

    def precompile_lines(self, rendezvous: list[str]) -> list[str]:
        """Trainium: trace and compile every graph once (cached on FSx), then train with the cache warm."""
        if not (self.is_trainium and self.spec.precompile):
            return []
        marker = f"{self.compile_cache}/.{self.name}-compiled"
        cmd = ["neuron_parallel_compile", *self.torchrun(rendezvous), f"--max_steps={self.spec.precompile_steps}"]
        return [
            f"if [ ! -f {shlex.quote(marker)} ]; then",
            f"  {shell_join(cmd)}",
            f"  touch {shlex.quote(marker)}",
            "fi",
        ]

    def shell(self, rendezvous: list[str], extra_lines: list[str] | None = None) -> str:
        """``bash -c`` body: prelude, optional pre-compilation, then ``exec torchrun ...``.

        Rendezvous arguments (:class:`PlatformWord`) expand the controller's variables
        (``${VC_TASK_INDEX}``); every other argument is single-quoted (see :func:`shell_join`).
        """
        lines = [
            *self.prelude(),
            *(extra_lines or []),
            *self.precompile_lines(rendezvous),
            "exec " + shell_join(self.torchrun(rendezvous)),
        ]
        return "\n".join(lines) + "\n"


def _plan_list(plan: Any, method: str) -> list[str]:
    fn = getattr(plan, method, None)
    return [str(a) for a in fn()] if callable(fn) else []


_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class PlatformWord(str):
    """An argument the platform writes with ``${VAR}`` references to :data:`PLATFORM_VARS`.

    Every other argument (the user's script, paths, arguments, env values) is a plain ``str`` and is
    single-quoted, so ``$(...)``, `` `...` ``, ``${...}``, globs and ``;`` in it reach the program as
    typed. Only a ``PlatformWord`` is expanded, and only its ``${VAR}`` parts."""

    def __new__(cls, template: str) -> PlatformWord:
        unknown = sorted(set(_VAR_REF.findall(template)) - PLATFORM_VARS)
        if unknown or "$" in _VAR_REF.sub("", template):
            raise ValueError(f"platform word {template!r} references {unknown or 'a bare $'}, not PLATFORM_VARS")
        return super().__new__(cls, template)

    def shell(self) -> str:
        """``--node_rank="${VC_TASK_INDEX}"``: literal parts single-quoted, variables double-quoted."""
        out, last = [], 0
        for m in _VAR_REF.finditer(self):
            if m.start() > last:
                out.append(shlex.quote(self[last : m.start()]))
            out.append(f'"${{{m.group(1)}}}"')
            last = m.end()
        if last < len(self):
            out.append(shlex.quote(self[last:]))
        return "".join(out)

    def expand(self, env: dict[str, str]) -> str:
        """What the shell passes on, given the variables' values (tests compare argv with this)."""
        return _VAR_REF.sub(lambda m: env[m.group(1)], self)


def shell_word(arg: str) -> str:
    return arg.shell() if isinstance(arg, PlatformWord) else shlex.quote(arg)


def shell_join(argv: list[str]) -> str:
    """One shell word per argument: :class:`PlatformWord` s expand their platform variables, every other
    argument is single-quoted (``shlex.quote``) and reaches the program byte for byte."""
    return " ".join(shell_word(a) for a in argv)


def kubelet_literal(text: str) -> str:
    """``text`` escaped so the kubelet passes it on unchanged.

    The kubelet expands ``$(NAME)`` in a container's command, args and env values and turns ``$$`` into
    ``$`` (kubernetes third_party/forked/golang/expansion/expand.go; "Variable references $(VAR_NAME) are
    expanded ... Escaped references will never be expanded", core/v1 Container.command). Doubling every
    ``$`` that precedes ``$`` or ``(`` makes the result exactly ``text``: the shell, not the kubelet,
    sees ``$(...)``."""
    return _KUBELET_SPECIAL.sub("$$", text)


_KUBELET_SPECIAL = re.compile(r"\$(?=[$(])")


def _check_hugepages(spec: RunSpec, instance: catalog.InstanceType) -> None:
    """Pre-allocated huge pages come out of the node's RAM and the kubelet takes them off allocatable memory
    (kubernetes.io/docs/tasks/manage-hugepages/scheduling-hugepages); the worker already asks for
    MEMORY_FRACTION of the RAM, so the pages must fit in the rest or the pod never schedules."""
    if spec.hugepages_2mi is None:
        return
    room = int(instance.memory_gib * (1 - MEMORY_FRACTION) * 2**30) // HUGEPAGE_2MI * HUGEPAGE_2MI
    if hugepages_bytes(spec.hugepages_2mi) > room:
        raise JobRequestError(
            f"--hugepages-2mi {spec.hugepages_2mi} does not fit beside the worker's memory request "
            f"({MEMORY_FRACTION:.0%} of {instance.name}'s {instance.memory_gib} GiB): use at most {room // 2**20}Mi"
        )


def _gib(value: float) -> str:
    return f"{int(value)}Gi"


def worker_cpu_memory(vcpus: int, memory_gib: float) -> tuple[str, str]:
    """(cpu, memory) a whole-node worker requests on an instance of ``vcpus`` and ``memory_gib``: all but a
    sixteenth of the vCPUs (at least 2, for the node's DaemonSets and kubelet) and :data:`MEMORY_FRACTION`."""
    return str(vcpus - max(2, vcpus // 16)), _gib(memory_gib * MEMORY_FRACTION)


def _under(path: str, root: str) -> bool:
    return posixpath.normpath(path) == root or posixpath.normpath(path).startswith(root.rstrip("/") + "/")


def resolve(
    spec: RunSpec,
    cfg: StackConfig,
    planner: PlannerBackend | None = None,
    require_family: str | None = None,
    mount_path: str | None = None,
) -> ResolvedRun:
    """Every number of ``spec`` on ``cfg``'s partition; :class:`JobRequestError` for a bad request.

    ``require_family`` is the accelerator family a template needs (the Trainium Job needs
    ``trainium``; the GPU-only templates pass ``gpu``). ``mount_path`` is where the workers see the
    FSx file system when it is not ``storage.fsx.mountPath`` (Slurm's slurmd pods mount it at
    ``schedulers.slurm.sharedMountPath``).
    """
    try:
        part = cfg.partition(spec.partition)
    except KeyError:
        known = [p.name for p in cfg.partitions]
        close = difflib.get_close_matches(spec.partition, known, n=1)
        raise JobRequestError(
            f"unknown partition {spec.partition!r}"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; fix: pass --partition one of the stack's partitions: {', '.join(known) or 'none'}"
        ) from None
    shp = shape(part.name, part.accelerator, part.instance_types, part.efa)
    if spec.nodes > part.max_nodes:
        raise JobRequestError(
            f"{spec.nodes} nodes requested but partition {part.name} has maxNodes "
            f"{part.max_nodes}; ask for at most {part.max_nodes} nodes or raise "
            f"ekstrain:partitions ({part.name}).maxNodes"
        )
    wants_trainium = spec.framework in TRAINIUM_FRAMEWORKS or require_family == catalog.TRAINIUM
    if wants_trainium and part.accelerator != catalog.TRAINIUM:
        what = "the Trainium job template" if require_family == catalog.TRAINIUM else f"framework {spec.framework}"
        raise JobRequestError(
            f"{what} needs a trainium partition but {part.name} is a {part.accelerator} partition; "
            f"use one of: {_partitions_of(cfg, catalog.TRAINIUM)}"
        )
    gpu_only = require_family == catalog.GPU or (
        spec.framework not in TRAINIUM_FRAMEWORKS and require_family != catalog.TRAINIUM
    )
    if part.accelerator == catalog.TRAINIUM and gpu_only:
        what = f"framework {spec.framework}" if require_family is None else "this GPU job template"
        raise JobRequestError(
            f"{what} needs a gpu partition but {part.name} is a trainium partition; use "
            f"--framework neuronx-distributed with the trainium template, or a gpu partition: "
            f"{_partitions_of(cfg, catalog.GPU)}"
        )
    it_name = spec.instance_type or part.instance_types[0]
    if it_name not in part.instance_types:
        raise JobRequestError(
            f"instance type {it_name} is not in partition {part.name} "
            f"({', '.join(part.instance_types)}); pick one of those or another partition"
        )
    instance = catalog.get(it_name)
    _check_layout_share(spec, part.max_nodes, shp, it_name)
    _check_hugepages(spec, instance)
    fsx = cfg.storage.fsx
    if not fsx.enabled:
        raise JobRequestError(
            "the stack has no FSx file system (ekstrain:storage.fsx.enabled is false); jobs keep "
            "data, checkpoints and compile caches on FSx"
        )
    mount = (mount_path or fsx.mount_path).rstrip("/") or "/"
    data_dir = spec.dataset_path or posixpath.join(mount, fsx.data_path.lstrip("/"))
    checkpoint_dir = spec.checkpoint_path or posixpath.join(mount, fsx.checkpoint_path.lstrip("/"), spec.name)
    for label, path in (("dataset path", data_dir), ("checkpoint path", checkpoint_dir)):
        if not _under(path, mount):
            raise JobRequestError(f"{label} {path} is outside the FSx mount {mount}; pods see only {mount}/...")
    _check_other_mount(spec, mount, {fsx.mount_path, cfg.schedulers.slurm.shared_mount_path})

    plan = spec.plan if spec.plan is not None else choose_plan(spec, instance, planner or planning.RealPlanner())
    _check_plan(spec, plan, instance, shp)
    nproc = instance.workers_per_node
    degrees = _degrees(spec, plan, nproc)
    _check_torchrun_args(plan, spec.nodes, nproc)
    deepspeed = None
    if spec.framework == "deepspeed":
        deepspeed = _deepspeed_config(plan, degrees, spec)
    compile_cache = posixpath.join(mount, "neuron-cache")
    ctx = envtable.EnvContext(
        family=instance.family,
        efa=shp.efa_for(instance.name),
        gpudirect_rdma=shp.gpudirect_rdma,
        hugepages=spec.hugepages_2mi is not None,
        neuron_cores=instance.neuron_cores,
        checkpoint_dir=checkpoint_dir,
        data_dir=data_dir,
        compile_cache=compile_cache,
    )
    env = envtable.platform_env(ctx)
    env.update({str(k): str(v) for k, v in _plan_env(plan).items()})
    env.update({str(k): str(v) for k, v in spec.env.items()})
    worker_cpu, worker_memory = worker_cpu_memory(instance.vcpus, instance.memory_gib)
    launcher_cpu, launcher_memory = launcher_requests(cfg.cluster.system_node_group.instance_types)
    return ResolvedRun(
        spec=spec,
        shape=shp,
        instance=instance,
        plan=plan,
        namespace=spec.namespace or names.TRAINING_NAMESPACE,
        nodes=spec.nodes,
        nproc_per_node=nproc,
        degrees=degrees,
        efa=shp.efa_for(instance.name),
        hugepages_2mi=spec.hugepages_2mi,
        memory=worker_memory,
        cpu=worker_cpu,
        shm_size=_gib(instance.memory_gib * SHM_FRACTION),
        mount_path=mount,
        data_dir=data_dir,
        checkpoint_dir=checkpoint_dir,
        compile_cache=compile_cache,
        env=env,
        deepspeed_config=deepspeed,
        kubernetes_version=cfg.cluster.kubernetes_version,
        labels={JOB_LABEL: spec.name, names.PARTITION_LABEL: part.name, "app.kubernetes.io/managed-by": "ekstrain"},
        checkpoint_root=posixpath.join(mount, fsx.checkpoint_path.lstrip("/")),
        launcher_cpu=launcher_cpu,
        launcher_memory=launcher_memory,
        volcano=cfg.schedulers.volcano.enabled,
        queue=_queue(cfg, part.name, spec.team),
    )


def _queue(cfg: StackConfig, partition: str, team: str | None) -> str:
    """The job's Volcano queue: its team's in the partition, or the partition's queue for work of no team."""
    from ekstrain.assembly.schedulers import teams

    try:
        return teams.queue_for(cfg, partition, team)
    except ValueError as exc:
        raise JobRequestError(f"--team: {exc}") from None


def launcher_requests(system_instance_types: list[str]) -> tuple[str, str]:
    """(cpu, memory) for a launcher: :data:`LAUNCHER_MAX`, capped at :data:`LAUNCHER_SHARE` of the smallest
    system node's allocatable as Karpenter/the EKS AMI compute it (ekstrain.simulate.load.system_nodes: 7.5 %
    VM overhead, kube-reserved cpu ladder and 11 MiB x pods + 255 MiB, 100 Mi eviction)."""
    from ekstrain.simulate.load import system_nodes

    nodes = system_nodes(system_instance_types)
    cpu, memory = LAUNCHER_MAX
    if nodes:
        cpu = min(cpu, LAUNCHER_SHARE * min(n.allocatable["cpu"] for n in nodes))
        memory = min(memory, LAUNCHER_SHARE * min(n.allocatable["memory"] for n in nodes))
    return f"{int(cpu * 1000) // 50 * 50}m", f"{int(memory // 2**20)}Mi"


def _check_layout_share(spec: RunSpec, max_nodes: int, shp: PartitionShape, instance_type: str) -> None:
    """A mixed-layout partition (trn1 + trn1n) has one NodePool per EFA layout, each with its share of
    maxNodes (ekstrain.layout.partitions.layout_nodes, the NodePools' ``limits.nodes``): a job of one instance
    type can use only its layout's share."""
    pools = layout_nodes(shp, max_nodes)
    if len(pools) == 1:
        return
    layout, limit = next((lay, n) for lay, n in pools if any(t.name == instance_type for t in lay.instance_types))
    if spec.nodes > limit:
        others = [f"{t.name} ({n})" for lay, n in pools if lay is not layout for t in lay.instance_types]
        raise JobRequestError(
            f"{spec.nodes} nodes of {instance_type} requested but partition {shp.name} holds at most {limit} "
            f"(NodePool {layout.name}: its share of maxNodes {max_nodes} over {len(pools)} EFA layouts); ask "
            f"for at most {limit} nodes, use --instance-type {' or '.join(others)}, or raise "
            f"ekstrain:partitions ({shp.name}).maxNodes"
        )


def _check_other_mount(spec: RunSpec, mount: str, mounts: set[str]) -> None:
    """The script and the script's arguments must not name a path under another of the platform's FSx
    mount points: Kubernetes pods see FSx at ``storage.fsx.mountPath``, Slurm jobs (slurmd pods and the
    pyxis container) only at ``schedulers.slurm.sharedMountPath``."""
    for other in sorted(m.rstrip("/") for m in mounts if m.rstrip("/") != mount):
        for flag, value in (("--script", spec.script), *((f"script argument {a!r}", a) for a in spec.args)):
            path = value.partition("=")[2] if value.startswith("-") else value
            if _under(path, other):
                fixed = mount + posixpath.normpath(path)[len(other) :]
                raise JobRequestError(
                    f"{flag}: {path} is under {other}, which this scheduler's containers do not mount "
                    f"(FSx is at {mount} here); use {fixed}"
                )


def _partitions_of(cfg: StackConfig, family: str) -> str:
    return ", ".join(p.name for p in cfg.partitions if p.accelerator == family) or "none in this stack"


def _check_plan(spec: RunSpec, plan: Any, instance: catalog.InstanceType, shp: PartitionShape) -> None:
    planned_for = plan_instance_type(plan)
    if planned_for is not None and planned_for != instance.name:
        raise JobRequestError(
            f"the plan is for {planned_for} but partition {shp.name} runs {instance.name} "
            f"(of {', '.join(t.name for t in shp.instance_types)}); re-plan for {instance.name}"
        )
    nodes = getattr(plan, "nodes", spec.nodes)
    if nodes != spec.nodes:
        raise JobRequestError(
            f"the plan is for {nodes} nodes but the job asks for {spec.nodes}; re-plan with --nodes {spec.nodes}"
        )
    if not getattr(plan, "fits", True):
        raise JobRequestError(
            f"the plan for {spec.model} does not fit {spec.nodes} x {instance.name} in "
            "accelerator memory; add nodes or use LoRA"
        )
    per_node = getattr(plan, "accelerators_per_node", None)
    if per_node is not None and per_node not in (instance.accelerator_count, instance.workers_per_node):
        raise JobRequestError(
            f"the plan assumes {per_node} accelerators per node but {instance.name} has "
            f"{instance.accelerator_count} ({instance.workers_per_node} workers); re-plan for it"
        )


def _degrees(spec: RunSpec, plan: Any, nproc: int) -> dict[str, Any]:
    d = {k: int(getattr(plan, k, 1) or 1) for k in ("tp", "pp", "dp", "cp", "ep")}
    micro = int(plan.micro_batch)
    grad_accum = int(plan.grad_accum)
    world = spec.nodes * nproc
    if d["tp"] * d["pp"] * d["cp"] * d["dp"] != world:
        raise JobRequestError(
            f"plan degrees tp={d['tp']} pp={d['pp']} cp={d['cp']} dp={d['dp']} do not cover "
            f"{world} workers ({spec.nodes} nodes x {nproc}); re-plan for this node count"
        )
    if micro * d["dp"] * grad_accum != spec.global_batch:
        raise JobRequestError(
            f"global batch {spec.global_batch} != micro batch {micro} x dp {d['dp']} x grad accum "
            f"{grad_accum}; choose a global batch divisible by micro batch x dp"
        )
    parallel = getattr(plan, "parallel", None)
    return {
        "nodes": spec.nodes,
        "nproc_per_node": nproc,
        "world_size": world,
        **d,
        "vpp": int(getattr(plan, "vpp", 1) or 1),
        "micro_batch": micro,
        "grad_accum": grad_accum,
        "zero": int(getattr(plan, "zero", 0) or 0),
        "recompute": str(getattr(plan, "recompute", "none")),
        "sequence_parallel": bool(getattr(plan, "sequence_parallel", False)),
        "offload_optimizer": bool(getattr(plan, "offload_optimizer", getattr(parallel, "offload_optimizer", False))),
    }


LAUNCHER_OWNED_ENV = frozenset({"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
"""Per-process values torchrun / mpirun / Ray Train / the operators set; never exported pod-wide."""


def _plan_env(plan: Any) -> dict[str, Any]:
    fn = getattr(plan, "torchrun_env", None)
    env = dict(fn()) if callable(fn) else {}
    return {k: v for k, v in env.items() if k not in LAUNCHER_OWNED_ENV}


def _check_torchrun_args(plan: Any, nodes: int, nproc: int) -> None:
    """The planner's torchrun arguments must agree with ours (its rendezvous is replaced per scheduler)."""
    fn = getattr(plan, "torchrun_args", None)
    if not callable(fn):
        return
    for arg in fn():
        key, _, value = str(arg).partition("=")
        expected = {"--nnodes": nodes, "--nproc-per-node": nproc, "--nproc_per_node": nproc}.get(key)
        if expected is not None and value != str(expected):
            raise JobRequestError(
                f"the planner's torchrun {key}={value} disagrees with {expected} for this run; "
                "re-plan for this partition and node count"
            )


def _deepspeed_config(plan: Any, degrees: dict[str, Any], spec: RunSpec) -> dict[str, Any]:
    fn = getattr(plan, "deepspeed_config", None)
    config = dict(fn()) if callable(fn) else {}
    config.setdefault("train_batch_size", spec.global_batch)
    config.setdefault("train_micro_batch_size_per_gpu", degrees["micro_batch"])
    config.setdefault("gradient_accumulation_steps", degrees["grad_accum"])
    expected = (spec.global_batch, degrees["micro_batch"], degrees["grad_accum"])
    got = (config["train_batch_size"], config["train_micro_batch_size_per_gpu"], config["gradient_accumulation_steps"])
    if got != expected:
        raise JobRequestError(
            f"the planner's DeepSpeed config {got} (train batch, micro batch, grad accum) disagrees "
            f"with the plan {expected}"
        )
    return config
