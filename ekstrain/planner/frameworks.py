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

from ekstrain.planner.errors import PlanError
from ekstrain.planner.training import DEEPSPEED, FSDP, HSDP, MEGATRON

NEMO = "nemo"
NEURON = "neuronx-distributed"
NAMES: tuple[str, ...] = (MEGATRON, NEMO, DEEPSPEED, FSDP, HSDP, NEURON)
ALIASES: dict[str, str] = {"torchrun-fsdp": FSDP, "torchrun": FSDP, "neuron": NEURON, "nxd": NEURON}
CHOICES: tuple[str, ...] = NAMES + tuple(ALIASES)
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
    found = ALIASES.get(name, name)
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
