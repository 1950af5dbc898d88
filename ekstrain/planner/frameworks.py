"""One framework vocabulary for ``plan --framework``, ``plan --emit`` and ``job render --framework``.

A framework name says both how a plan is launched (the job template / emitter) and whose cost model
ranks it (model-state bookkeeping, software factor, ZeRO behaviour, attention kernel): the job's
framework ranks its plan, so ``job render --framework deepspeed`` runs the best *DeepSpeed* plan and
``plan search --emit deepspeed`` prints that same plan's launch lines.

==========================  ================================  =====================================
name                        launched by                       ranked by the cost model of
==========================  ================================  =====================================
``megatron``                Megatron-LM ``pretrain_gpt.py``   Megatron-core (distributed optimizer)
``nemo``                    NeMo Hydra overrides (emit only)  Megatron-core (NeMo runs it)
``deepspeed``               DeepSpeed + ds_config.json        DeepSpeed ZeRO
``fsdp``                    torchrun, PyTorch FSDP2           FSDP2 (torchtitan)
``hsdp``                    torchrun, FSDP2 2-D mesh          FSDP2 hybrid shard
``neuronx-distributed``     neuronx-distributed (Trainium)    Megatron-core layout (NxD keeps it)
==========================  ================================  =====================================

Old names stay accepted as aliases: ``torchrun-fsdp`` and ``torchrun`` (the job template's and
``--emit``'s former names for FSDP) and ``neuron`` / ``nxd`` for neuronx-distributed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ekstrain.planner.errors import PlanError
from ekstrain.planner.software import Software
from ekstrain.planner.training import DEEPSPEED, FSDP, HSDP, MEGATRON

NEMO = "nemo"
NEURON = "neuronx-distributed"
NAMES: tuple[str, ...] = (MEGATRON, NEMO, DEEPSPEED, FSDP, HSDP, NEURON)
ALIASES: dict[str, str] = {"torchrun-fsdp": FSDP, "torchrun": FSDP, "neuron": NEURON, "nxd": NEURON}
MEGATRON_LM = "megatron-lm"
FSDP_EAGER = "fsdp-eager"
STACKS: dict[str, str] = {MEGATRON_LM: MEGATRON, FSDP_EAGER: FSDP}
"""Stack presets (PRESETS below) and the framework each launches: the same launcher, other switches."""
CHOICES: tuple[str, ...] = NAMES + tuple(STACKS) + tuple(ALIASES)
"""What every ``--framework`` / ``--emit`` flag accepts."""
JOB_NAMES: tuple[str, ...] = (FSDP, HSDP, DEEPSPEED, MEGATRON, NEURON)
"""Frameworks a job template launches (NeMo has none: ``plan --emit nemo`` prints its overrides)."""
COST_MODEL: dict[str, str] = {
    MEGATRON: MEGATRON,
    NEMO: MEGATRON,
    DEEPSPEED: DEEPSPEED,
    FSDP: FSDP,
    HSDP: HSDP,
    NEURON: MEGATRON,
}
"""The planner's model (training.FRAMEWORKS) each framework is ranked by."""


def canonical(name: str) -> str:
    """The framework's one name (aliases resolved); PlanError naming the choices otherwise."""
    found = STACKS.get(name) or ALIASES.get(name, name)
    if found not in NAMES:
        raise PlanError(f"unknown framework {name!r}; use one of {', '.join(NAMES)} (aliases: {', '.join(ALIASES)})")
    return found


def cost_model(name: str) -> str:
    """The planner cost model (``search(framework=...)``) that ranks plans for ``name``."""
    return COST_MODEL[canonical(name)]


def for_plan_command(framework: str | None, emit: str | None) -> tuple[str, str | None]:
    """(framework, emit) of a ``plan`` command, both canonical. ``--emit X`` alone ranks for X;
    ``--framework`` alone ranks for it (default megatron); both must name the same framework,
    since a plan ranked for one framework is not the best plan of another."""
    emitted = canonical(emit) if emit else None
    chosen = canonical(framework) if framework else None
    if emitted and chosen and COST_MODEL[emitted] != COST_MODEL[chosen]:
        raise PlanError(
            f"--framework {framework} and --emit {emit} disagree: the plan is ranked for the framework it is "
            f"emitted for; drop --framework (or use --emit {chosen})"
        )
    return chosen or emitted or MEGATRON, emitted


# --- stack presets ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preset:
    """A ``--framework`` name: the framework that launches and ranks the plan, with its stack's switches."""

    framework: str
    software: Software
    source: str
    """Where the switches come from (the stack's code or recipe, with its version)."""


PRESETS: dict[str, Preset] = {
    MEGATRON: Preset(
        MEGATRON,
        Software(tp_comm_overlap=True, overlap_grad_reduce=True, overlap_param_gather=True),
        "NVIDIA's Megatron-Bridge/NeMo performance recipes (tp_comm_overlap, overlap_grad_reduce and "
        "overlap_param_gather set), which the Hopper/Blackwell constants are fitted on",
    ),
    MEGATRON_LM: Preset(
        MEGATRON,
        Software(tp_comm_overlap=False, overlap_grad_reduce=False, overlap_param_gather=False),
        "plain Megatron-LM pretrain_gpt.py with its argparse defaults (megatron/training/arguments.py and "
        "ModelParallelConfig.tp_comm_overlap = False, core_v0.15.0rc7-2333-gd98e8a64): no TP overlap, no "
        "--overlap-grad-reduce, no --overlap-param-gather",
    ),
    NEMO: Preset(
        NEMO,
        Software(tp_comm_overlap=True, overlap_grad_reduce=True, overlap_param_gather=True),
        "NeMo's recipes (MegatronCommOverlapCallback with tp_comm_overlap, overlap_grad_reduce, overlap_param_gather)",
    ),
    DEEPSPEED: Preset(
        DEEPSPEED,
        Software(tp_comm_overlap=False, overlap_grad_reduce=True),
        "ekstrain's ds_config.json (overlap_comm true) with DeepSpeed v0.19.5's bucket defaults "
        "(reduce/allgather 5e8, stage3_prefetch 5e7: deepspeed/runtime/zero/config.py)",
    ),
    FSDP: Preset(FSDP, Software(tp_comm_overlap=False), "torchtitan with torch.compile (fused elementwise kernels)"),
    FSDP_EAGER: Preset(
        FSDP,
        Software(tp_comm_overlap=False, eager=True),
        "torchtitan's Llama code in eager PyTorch (training.EAGER_PYTORCH)",
    ),
    HSDP: Preset(HSDP, Software(tp_comm_overlap=False), "FSDP2 2-D mesh (HYBRID_SHARD), torch.compile"),
    NEURON: Preset(NEURON, Software(tp_comm_overlap=False), "neuronx-distributed (no userbuffers)"),
}
"""``--framework`` presets: a stack and its switches; every switch is overridable on the command line."""


def preset(name: str) -> Preset:
    """The preset of ``name`` (a framework name, an alias or a versioned stack preset)."""
    return PRESETS.get(name) or PRESETS[canonical(name)]


def software_for(name: str, **overrides: object) -> Software:
    """The preset's switches with every ``overrides`` value that is not None put over them."""
    base = preset(name).software
    given = {k: v for k, v in overrides.items() if v is not None}
    return replace(base, **given) if given else base  # type: ignore[arg-type]
