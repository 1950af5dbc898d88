"""What a user asks for: one description of a training run, independent of the scheduler.

A :class:`RunSpec` names the model, the partition, the node count, the image, the training
script and the batch; the resolver (:mod:`ekstrain.assembly.jobs.resolve`) turns it plus the stack config
into every number a manifest needs, and the per-scheduler builders only lay those numbers out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ekstrain.planner import frameworks as planner_frameworks
from ekstrain.planner import inputs as planner_inputs

Framework = Literal["fsdp", "hsdp", "deepspeed", "megatron", "neuronx-distributed"]
FRAMEWORKS: tuple[str, ...] = planner_frameworks.JOB_NAMES
"""The planner's one vocabulary (ekstrain/planner/frameworks.py); old names (``torchrun-fsdp``) are aliases."""
FRAMEWORK_CHOICES: tuple[str, ...] = planner_frameworks.CHOICES
"""What ``job render --framework`` accepts: the same names as ``plan --framework`` and ``plan --emit``."""
TRAINIUM_FRAMEWORKS = frozenset({"neuronx-distributed"})
"""Frameworks that only run on Trainium; every other framework needs GPUs (CUDA/NCCL)."""

NAME_PATTERN = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
"""DNS-1035 label (used with ``fullmatch``: ``re.match(...$)`` would accept a trailing newline)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""Names a POSIX shell can ``export`` (Slurm exports every variable; POSIX.1-2017 XBD 8.1 names)."""
SHELL_OWNED_ENV = frozenset(
    {
        *("BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_ARGV0", "BASH_CMDS"),
        *("BASH_COMMAND", "BASH_ENV", "BASH_LINENO", "BASH_REMATCH", "BASH_SOURCE", "BASH_SUBSHELL"),
        *("BASH_VERSINFO", "BASH_VERSION", "DIRSTACK", "ENV", "EPOCHREALTIME", "EPOCHSECONDS", "EUID"),
        *("FUNCNAME", "GROUPS", "HISTCMD", "IFS", "LINENO", "PIPESTATUS", "PPID", "RANDOM", "SECONDS"),
        *("SHELLOPTS", "SRANDOM", "UID", "_", "CDPATH", "EXECIGNORE", "GLOBIGNORE", "POSIXLY_CORRECT"),
        *("PS4", "TMOUT"),
    }
)
"""Variables bash sets itself, reads at start-up or refuses to assign (bash(1) "Shell Variables"): exporting
them from the generated scripts fails (UID is read-only) or changes how the script itself runs (EXECIGNORE
hides commands, POSIXLY_CORRECT changes the grammar); every ``BASH*`` name too."""
PLATFORM_VARS = frozenset(
    {
        "RANK",  # PyTorchJob: the operator's replica rank (= node rank)
        "MASTER_ADDR",
        "MASTER_PORT",
        "PET_NODE_RANK",  # TrainJob: the Trainer torch plugin
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "VC_TASK_INDEX",  # Volcano env plugin
        "JOB_COMPLETION_INDEX",  # Indexed Job
        "SLURM_JOB_ID",  # Slurm
        "head_node_ip",  # set by the sbatch script itself
    }
)
"""The only variables a generated shell line expands: each is set by a controller or by the script itself."""
RUN_OWNED_ENV = frozenset(
    {*PLATFORM_VARS, "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "head_node", "status"}
)
RUN_OWNED_PREFIXES = ("OMPI_COMM_WORLD_", "PET_", "SLURM_")
"""Variables each process gets from its controller, launcher (torchrun, mpirun, the MPIJob rank mapping) or
the generated script; a ``--env`` value for them would be overwritten, so it is refused."""
REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Cs": "a byte that is not UTF-8",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
"""Unicode categories no value may carry: they end a shell line or a YAML scalar, hide text, or cannot be encoded."""
MAX_NAME = 40
"""Room for the longest suffix a controller adds (``-launcher``, ``-worker-127``, ``-sbatch``) within 63."""

FIXED_DEGREES = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "zero", "recompute", "sequence_parallel")
"""Plan fields a RunSpec may pin; the planner's best plan that matches all pinned ones is used."""


class JobRequestError(ValueError):
    """A request that cannot become a valid workload; ``str()`` is one line naming the fix."""


INT32_MAX = 2**31 - 1
"""The restart counts land in int32 fields: Volcano Job ``maxRetry`` (volcano.sh/apis batch/v1alpha1 JobSpec),
``runPolicy.backoffLimit`` (kubeflow/trainer v1 RunPolicy, MPIJob and PyTorchJob), batch Job ``backoffLimit``
(k8s.io/api batch/v1), RayJob ``backoffLimit`` (ray-project/kuberay v1), TrainJob ``failurePolicy.maxRestarts``
(kubeflow/trainer v2). PyTorchJob and the Indexed Job count pod failures: restarts x nodes."""
HUGEPAGE_2MI = 2 * 2**20
"""A hugepages-2Mi request is a whole number of 2 MiB pages: the kernel's hugetlb pool holds whole pages
(kernel.org admin-guide/mm/hugetlbpage), and the kubelet reports hugepages-<size> capacity in them
(kubernetes.io/docs/tasks/manage-hugepages/scheduling-hugepages, Kubernetes v1.35)."""
_QUANTITY = re.compile(r"(?P<num>[0-9]{1,40}(?:\.[0-9]{1,9})?)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?")
_SCALE = {
    "": 1,
    **{s: 2 ** (10 * i) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
    **{s: 10 ** (3 * i) for i, s in enumerate(("k", "M", "G", "T", "P", "E"), 1)},
}


def hugepages_bytes(text: str) -> int:
    """Bytes of a ``--hugepages-2mi`` quantity: a positive whole number of 2 MiB pages, within int64 bytes."""
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise JobRequestError(f"--hugepages-2mi {_shown(text)} is not a quantity such as 5120Mi or 2Gi")
    whole, _, frac = match["num"].partition(".")
    scale = _SCALE[match["suffix"] or ""]
    numerator = (int(whole) * 10 ** len(frac) + int(frac or 0)) * scale
    if numerator % 10 ** len(frac) or (numerator // 10 ** len(frac)) % HUGEPAGE_2MI:
        raise JobRequestError(
            f"--hugepages-2mi {text} is not a whole number of 2Mi pages (the kernel allocates whole huge pages); "
            "use a multiple of 2Mi such as 5120Mi"
        )
    value = numerator // 10 ** len(frac)
    if not 0 < value < 2**63:
        raise JobRequestError(
            f"--hugepages-2mi {text} is outside 2Mi..8Ei (a Kubernetes quantity is int64 bytes); use e.g. 5120Mi"
        )
    return value


def _shown(value: str) -> str:
    text = repr(value)  # repr escapes every non-printable character, so the message stays one line
    return text if len(text) <= 80 else text[:77] + "..."


def check_text(flag: str, value: str) -> None:
    """Refuse characters that would end a shell line, a YAML scalar or an ``#SBATCH`` directive.

    Every value is quoted as one shell word where it is used; a newline or another control character
    is never what a path, an argument or an image means, so it is refused rather than escaped."""
    for position, char in enumerate(value, 1):
        what = REFUSED_CATEGORIES.get(unicodedata.category(char))
        if what:
            raise JobRequestError(
                f"{flag} {_shown(value)} has {what} (U+{ord(char):04X}) at character {position}; "
                "values must be one line of printable text: remove it"
            )


FIELD_FLAGS = {
    "partition": "--partition",
    "image": "--image",
    "model": "--model",
    "script": "--script",
    "instance_type": "--instance-type",
    "team": "--team",
    "dataset_path": "--dataset-path",
    "checkpoint_path": "--checkpoint-path",
    "namespace": "--namespace",
    "hugepages_2mi": "--hugepages-2mi",
    "resume_flag": "--resume-flag",
    "recompute": "--recompute",
    "name": "--name",  # last: the CLI's default name is derived from --model
}
"""RunSpec field -> the ``ekstrain job render`` flag that sets it (errors name the flag)."""


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One training run. Everything not given is derived from the stack and the planner."""

    name: str
    """Workload name (DNS-1035 label, at most 40 characters)."""
    partition: str
    """Partition of the stack (``ekstrain:partitions[].name``): NodePool, Volcano queue and Slurm partition."""
    nodes: int
    """Whole nodes; one worker pod (or Slurm task) per node."""
    image: str
    """Training container image (unused by Slurm, whose slurmd pods run their own image)."""
    model: str
    """Planner model name (``ekstrain plan models``), e.g. ``llama3-70b``."""
    global_batch: int
    """Sequences per optimizer step across all data-parallel replicas."""
    seq_len: int
    script: str = "train.py"
    """@default ``train.py``: the training entry point, relative to the image's working dir or absolute."""
    args: tuple[str, ...] = ()
    """@default none: extra script arguments, appended after the plan's."""
    framework: Framework = "fsdp"
    """@default fsdp (torchrun + PyTorch FSDP2); ``neuronx-distributed`` for Trainium. The framework also
    ranks the plan: the job runs the planner's best plan *for this framework*. Old names are aliases
    (``torchrun-fsdp`` = ``fsdp``, ``neuron`` = ``neuronx-distributed``)."""
    lora_rank: int | None = None
    """@default none (full fine-tune); a rank makes the planner size a LoRA fine-tune."""
    team: str | None = None
    """@default none: the partition's queue for work of no team (``<partition>-shared`` when the stack names teams
    there); a team of ``schedulers.volcano.teams`` puts the job in its queue ``<partition>-<team>``."""
    instance_type: str | None = None
    """@default the partition's first instance type; must be one of the partition's types."""
    dataset_path: str | None = None
    """@default ``<fsx mount><fsx dataPath>`` (``/fsx/data``)."""
    checkpoint_path: str | None = None
    """@default ``<fsx mount><fsx checkpointPath>/<name>`` (``/fsx/checkpoints/<name>``)."""
    namespace: str | None = None
    """@default ``training`` (``ekstrain.facts.names.TRAINING_NAMESPACE``)."""
    hugepages_2mi: str | None = None
    """@default none. Request ``hugepages-2Mi`` (e.g. ``5120Mi``) only on nodes that pre-allocate them:
    Karpenter does not model hugepages (aws/karpenter-provider-aws#3315), see docs/jobs.md."""
    resume_flag: str = "--resume_from_checkpoint"
    """@default ``--resume_from_checkpoint``: passed ``<flag>=<checkpoint dir>/latest``; "" to pass no flag
    (the ``RESUME_FROM_CHECKPOINT`` env is always set). Megatron resumes with ``--load`` instead."""
    precompile: bool = True
    """@default true: Trainium jobs run ``neuron_parallel_compile`` once before training (cache on FSx)."""
    precompile_steps: int = 10
    """@default 10: training steps the Neuron pre-compilation runs to trace the graphs."""
    max_restarts: int = 3
    """@default 3: whole-job restarts (Volcano maxRetry, backoffLimit, torchrun/srun requeue)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """@default none: extra environment, applied last (overrides the platform's values)."""
    planner_options: Mapping[str, Any] = field(default_factory=dict)
    """@default none: passed to ``ekstrain.planner.search`` unchanged."""
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    vpp: int | None = None
    micro_batch: int | None = None
    zero: int | None = None
    recompute: str | None = None
    sequence_parallel: bool | None = None
    """Pinned plan fields (@default none: the planner chooses)."""
    plan: Any | None = None
    """@default none: a plan computed beforehand; it must be for this partition's instance type and ``nodes``."""
    planned_hours: float | None = None
    """@default none: training hours the run needs; on a Capacity Block partition it is checked against the
    block's window (assembly/jobs/windows.py)."""

    def __post_init__(self) -> None:
        self._check_text()
        if not NAME_PATTERN.fullmatch(self.name) or len(self.name) > MAX_NAME:
            raise JobRequestError(
                f"--name {_shown(self.name)} must be a DNS-1035 label (a-z, 0-9, '-', starting with a "
                f"letter) of at most {MAX_NAME} characters (the default is <model>-<scheduler>)"
            )
        framework = planner_frameworks.ALIASES.get(self.framework, self.framework)
        if framework not in FRAMEWORKS:
            raise JobRequestError(
                f"unknown framework {self.framework!r}; use one of {', '.join(FRAMEWORKS)} "
                f"(aliases: {', '.join(planner_frameworks.ALIASES)})"
                + (
                    "; no job template runs NeMo: `ekstrain plan search ... --emit nemo` prints its overrides"
                    if framework == planner_frameworks.NEMO
                    else ""
                )
            )
        object.__setattr__(self, "framework", framework)
        self._check_numbers()

    def _check_numbers(self) -> None:
        """Every number within what the planner models and the manifests' fields hold, before any work: one
        line naming the flag, its range and why (a 10^30 batch made the divisor search run for minutes)."""
        for flag, value, low, high, why in (
            ("--nodes", self.nodes, 1, planner_inputs.MAX_NODES, "the planner's fleet bound"),
            ("--global-batch", self.global_batch, 1, planner_inputs.MAX_GLOBAL_BATCH, planner_inputs.WHY_BATCH),
            ("--seq-len", self.seq_len, 1, planner_inputs.MAX_SEQ_LEN, planner_inputs.WHY_SEQ_LEN),
            ("--lora-rank", self.lora_rank, 1, planner_inputs.MAX_LORA_RANK, "LoRA ranks are 4-256 in practice"),
            *(
                (f"--{name.replace('_', '-')}", getattr(self, name), 1, planner_inputs.MAX_DEGREE, "ranks of any fleet")
                for name in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")
            ),
            ("--zero", self.zero, 0, 3, "ZeRO stages 0-3"),
            ("--max-restarts", self.max_restarts, 0, INT32_MAX, "an int32 field"),
            ("precompile_steps", self.precompile_steps, 1, INT32_MAX, "an int32 count"),
        ):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise JobRequestError(f"{flag} must be a whole number, got {_shown(str(value))}")
            if not low <= value <= high:
                shown = str(value) if len(str(value)) <= 24 else f"a {len(str(value))}-digit number"
                raise JobRequestError(f"{flag} is {shown}, outside {low}..{high:,} ({why})")
        # PyTorchJob/Trainium backoffLimit = restarts x nodes (pod failures): int32 as well.
        if self.max_restarts * self.nodes > INT32_MAX:
            raise JobRequestError(
                f"--max-restarts {self.max_restarts} x --nodes {self.nodes} pod failures exceed the int32 "
                f"backoffLimit ({INT32_MAX:,}); use --max-restarts {INT32_MAX // self.nodes} or fewer"
            )
        if self.hugepages_2mi is not None:
            hugepages_bytes(self.hugepages_2mi)

    def _check_text(self) -> None:
        for field_name, flag in FIELD_FLAGS.items():
            value = getattr(self, field_name)
            if value is not None:
                check_text(flag, value)
        if not self.script:
            raise JobRequestError("--script is empty; give the training script's path")
        for index, arg in enumerate(self.args, 1):
            check_text(f"script argument {index} (after --)", arg)
        for key, value in self.env.items():
            key, value = str(key), str(value)
            if not ENV_NAME.fullmatch(key):
                raise JobRequestError(
                    f"--env name {_shown(key)} is not a variable name; use letters, digits and '_', "
                    "not starting with a digit (e.g. --env MY_FLAG=1)"
                )
            if key in SHELL_OWNED_ENV or key.startswith("BASH"):
                raise JobRequestError(
                    f"--env name {key} is a variable bash sets or reads itself (bash(1) Shell Variables); "
                    "pick another name"
                )
            if key in RUN_OWNED_ENV or key.startswith(RUN_OWNED_PREFIXES):
                raise JobRequestError(
                    f"--env name {key} is set for every process by the controller, the launcher or the "
                    "generated script; it cannot be set per job (pick another name)"
                )
            check_text(f"--env {key}=", value)

    @property
    def fixed_degrees(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in FIXED_DEGREES if getattr(self, k) is not None}
