"""The Plan: one evaluated parallel layout, its memory, step time and MFU, and its JSON contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ekstrain.planner import emit, frameworks, inputs
from ekstrain.planner.bands import Band, band_for
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import GIB, Fleet
from ekstrain.planner.memory import (
    HEADROOM,
    OPTIMIZER_BYTES,
    WEIGHT_BYTES,
    MemoryBreakdown,
    lora_params_per_layer,
    within_headroom,
    worst_stage_memory,
)
from ekstrain.planner.models import ModelSpec
from ekstrain.planner.parallel import NONE, ParallelConfig
from ekstrain.planner.perf import Efficiency, Flops, StepTime, step_flops, step_time
from ekstrain.planner.software import DEFAULT_SOFTWARE, Software
from ekstrain.planner.training import MEGATRON, TrainingSpec

CHECKPOINT_BYTES_PER_PARAM = WEIGHT_BYTES + OPTIMIZER_BYTES
"""A resumable checkpoint holds bf16 weights plus fp32 master weights, momentum and variance."""
MFU_CONVENTION = (
    "mfu counts causal attention as half of the s x s square (Llama 3 paper, Megatron-LM); "
    "mfu_full_square counts all of it (Narayanan 2021 Eq. 3, Korthikanti 2022 Eq. 7)"
)
BUBBLE_LIMIT = 0.10
NETWORK_LIMIT = 0.10
MEMORY_LIMIT = HEADROOM
"""Fractions of the step (or of HBM) above which explain() names a cause as limiting."""


@dataclass(frozen=True)
class Plan:
    model: ModelSpec
    fleet: Fleet
    training: TrainingSpec
    parallel: ParallelConfig
    memory: MemoryBreakdown
    """The worst pipeline stage's rank."""
    time: StepTime
    flops: Flops
    notes: tuple[str, ...] = ()
    """Set by the search's ranking: why this plan is not the first (empty for the first)."""

    # --- degrees (the JSON contract names) --------------------------------------------------
    @property
    def tp(self) -> int:
        return self.parallel.tp

    @property
    def pp(self) -> int:
        return self.parallel.pp

    @property
    def dp(self) -> int:
        return self.parallel.dp

    @property
    def cp(self) -> int:
        return self.parallel.cp

    @property
    def ep(self) -> int:
        return self.parallel.ep

    @property
    def vpp(self) -> int:
        return self.parallel.vpp

    @property
    def micro_batch(self) -> int:
        return self.parallel.micro_batch

    @property
    def grad_accum(self) -> int:
        return self.parallel.grad_accum(self.training)

    @property
    def zero(self) -> int:
        return self.parallel.zero

    @property
    def recompute(self) -> str:
        return self.parallel.recompute

    @property
    def sequence_parallel(self) -> bool:
        return self.parallel.sequence_parallel

    # --- what job templates need ----------------------------------------------------------------
    @property
    def nodes(self) -> int:
        return self.fleet.nodes

    @property
    def accelerators_per_node(self) -> int:
        """GPUs or Neuron chips per node: the device-plugin resource count a pod requests."""
        return self.fleet.accelerators_per_node

    @property
    def workers_per_node(self) -> int:
        """Processes (ranks) per node: one per GPU, one per NeuronCore."""
        return self.fleet.ranks_per_node

    @property
    def checkpoint_bytes(self) -> int:
        """Bytes of one resumable checkpoint (LoRA: the adapters only; the base model is read-only)."""
        trainable: float = self.model.total_params
        if self.training.is_lora:
            attention, expert = lora_params_per_layer(self.model, self.training.lora_rank, self.model.experts)
            trainable = self.model.layers * (attention + expert)
        return int(CHECKPOINT_BYTES_PER_PARAM * trainable)

    # --- outcomes -------------------------------------------------------------------------
    @property
    def fits(self) -> bool:
        return self.memory.total <= self.fleet.rank_memory_bytes

    @property
    def memory_used(self) -> float:
        """The worst stage's share of a rank's HBM."""
        return self.memory.total / self.fleet.rank_memory_bytes

    @property
    def within_headroom(self) -> bool:
        """Fits with the headroom search ranks by (memory.HEADROOM): the same rule in search and evaluate."""
        return within_headroom(self.memory.total, self.fleet.rank_memory_bytes)

    @property
    def step_time_s(self) -> float:
        return self.time.total

    @property
    def error_band(self) -> Band:
        """How far to trust ``step_time_s`` (bands.py): the held-out error of this generation and
        framework, and whether the generation is calibrated."""
        return band_for(self.fleet.generation, self.training.framework, self.training.precision)

    @property
    def tokens_per_s(self) -> float:
        return self.training.tokens_per_step / self.step_time_s

    @property
    def model_tflops_per_gpu(self) -> float:
        """Model FLOP/s per rank (no recompute), in TFLOP/s, in the published convention (causal
        attention counted as half of the square; perf.py)."""
        return self.flops.model_causal / self.step_time_s / self.fleet.ranks / 1e12

    @property
    def model_tflops_per_gpu_full_square(self) -> float:
        """Model FLOP/s per rank with the whole s x s attention square counted (Korthikanti Eq. 7)."""
        return self.flops.model / self.step_time_s / self.fleet.ranks / 1e12

    @property
    def hardware_tflops_per_gpu(self) -> float:
        """Hardware FLOP/s per rank (with recompute), in TFLOP/s: Narayanan Table 1's convention."""
        return self.flops.hardware / self.step_time_s / self.fleet.ranks / 1e12

    @property
    def _peak_tflops(self) -> float:
        return self.fleet.rank_peak_flops(self.training.precision) / 1e12

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation, causal attention counted as half (Llama 3 paper, Megatron-LM)."""
        return self.model_tflops_per_gpu / self._peak_tflops

    @property
    def mfu_full_square(self) -> float:
        """MFU with the whole attention square counted (Narayanan/Korthikanti; PaLM appendix B)."""
        return self.model_tflops_per_gpu_full_square / self._peak_tflops

    @property
    def hfu(self) -> float:
        return self.hardware_tflops_per_gpu / self._peak_tflops

    def limits(self) -> list[str]:
        """What holds this plan back, most important first (memory, bubble, network, ...)."""
        total = self.step_time_s
        share = {k: v / total for k, v in self.time.parts().items()}
        found: list[tuple[float, str]] = []
        used = self.memory_used
        if not self.within_headroom:
            found.append(
                (used, f"memory: {used:.0%} of HBM used ({self.memory.stage}), above the {HEADROOM:.0%} headroom")
            )
        if share["pp_bubble"] > BUBBLE_LIMIT:
            found.append(
                (
                    share["pp_bubble"],
                    f"pipeline bubble: {share['pp_bubble']:.0%} of the step "
                    f"((p-1)/(v m) = {self.pp - 1}/({self.vpp}x{self.grad_accum}))",
                )
            )
        network = {
            "tp_comm": "TP traffic (intra-node)",
            "cp_comm": "CP traffic",
            "ep_comm": "EP all-to-all",
            "pp_p2p": "PP point-to-point",
            "dp_comm": "exposed DP/ZeRO traffic",
        }
        for key, label in network.items():
            if share[key] > NETWORK_LIMIT:
                found.append((share[key], f"{label}: {share[key]:.0%} of the step"))
        if self.recompute != NONE:
            extra = self.flops.hardware / self.flops.model - 1
            if extra > 0.05:
                found.append((extra * 0.75, f"{self.recompute} recompute: +{extra:.0%} FLOPs"))
        if not found:
            found.append((share["compute"], f"compute-bound: {share['compute']:.0%} of the step is math"))
        return [text for _, text in sorted(found, reverse=True)]

    def explain(self) -> str:
        return "; ".join(self.limits())

    def summary(self) -> str:
        p = self
        return (
            f"tp={p.tp} pp={p.pp} dp={p.dp} cp={p.cp} ep={p.ep} vpp={p.vpp} mb={p.micro_batch} "
            f"ga={p.grad_accum} zero={p.zero} recompute={p.recompute} sp={p.sequence_parallel}"
        )

    def to_json(self) -> dict[str, Any]:
        """The stable plan contract (see docs/planner.md); extra keys may be added, none removed."""
        return {
            "model": self.model.name,
            "fleet": self.fleet.name,
            "nodes": self.nodes,
            "accelerators_per_node": self.accelerators_per_node,
            "workers_per_node": self.workers_per_node,
            "global_batch": self.training.global_batch,
            "seq_len": self.training.seq_len,
            "precision": self.training.precision,
            "lora_rank": self.training.lora_rank,
            **self.parallel.degrees(),
            "grad_accum": self.grad_accum,
            "zero": self.zero,
            "offload_optimizer": self.parallel.offload_optimizer,
            "recompute": self.recompute,
            "sequence_parallel": self.sequence_parallel,
            "fits": self.fits,
            "within_headroom": self.within_headroom,
            "memory_used_fraction": round(self.memory_used, 4),
            "framework": self.training.framework,
            "unfused_kernels": list(self.training.unfused),
            "tp_comm_overlap": self.training.overlaps_tp_comm,
            "software": {**self.training.software.to_json(), "tp_comm_overlap": self.training.overlaps_tp_comm},
            "memory_gib": {k: round(v, 3) for k, v in self.memory.gib().items()},
            "memory_stage": self.memory.stage,
            "activation_bytes_per_layer": round(self.memory.activation_bytes_per_layer),
            "activation_layers_in_flight": round(self.memory.layers_in_flight, 3),
            "memory_capacity_gib": round(self.fleet.rank_memory_bytes / GIB, 3),
            "step_time_s": round(self.step_time_s, 6),
            "step_time_band": round(self.error_band.fraction, 3),
            "step_time_range_s": [
                round(self.step_time_s * (1 - self.error_band.fraction), 6),
                round(self.step_time_s * (1 + self.error_band.fraction), 6),
            ],
            "calibrated": self.error_band.calibrated,
            "calibration": self.error_band.basis,
            "step_time_breakdown_s": {k: round(v, 6) for k, v in self.time.parts().items()},
            "tokens_per_s": round(self.tokens_per_s, 1),
            "model_tflops_per_gpu": round(self.model_tflops_per_gpu, 2),
            "hardware_tflops_per_gpu": round(self.hardware_tflops_per_gpu, 2),
            "mfu": round(self.mfu, 4),
            "mfu_full_square": round(self.mfu_full_square, 4),
            "mfu_convention": MFU_CONVENTION,
            "hfu": round(self.hfu, 4),
            "checkpoint_bytes": self.checkpoint_bytes,
            "limits": self.limits(),
            "vs_best": list(self.notes),
        }

    # --- emitters (see emit.py) -------------------------------------------------------------------
    def deepspeed_config(self) -> dict[str, Any]:
        return emit.deepspeed_config(self)

    def torchrun_args(self) -> list[str]:
        return emit.torchrun_args(self)

    def torchrun_env(self) -> dict[str, str]:
        return emit.torchrun_env(self)

    def megatron_args(self) -> list[str]:
        return emit.megatron_args(self)

    def nemo_overrides(self) -> list[str]:
        return emit.nemo_overrides(self)

    def neuron_args(self) -> list[str]:
        return emit.neuron_args(self)


def build_plan(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    parallel: ParallelConfig,
    efficiency: Efficiency | None = None,
) -> Plan:
    """Validate ``parallel`` and evaluate it; raises PlanError when it does not divide."""
    parallel.validate(model, fleet, training)
    return Plan(
        model,
        fleet,
        training,
        parallel,
        worst_stage_memory(model, parallel, training),
        step_time(model, fleet, training, parallel, efficiency),
        step_flops(model, training, parallel.recompute),
    )


def evaluate(
    model: ModelSpec,
    fleet: Fleet,
    global_batch: int,
    seq_len: int,
    *,
    tp: int,
    pp: int,
    dp: int,
    cp: int = 1,
    ep: int = 1,
    vpp: int = 1,
    micro_batch: int = 1,
    recompute: str = NONE,
    sequence_parallel: bool = False,
    zero: int = 0,
    offload_optimizer: bool = False,
    precision: str = "bf16",
    lora_rank: int = 0,
    flash_attention: bool = True,
    framework: str = MEGATRON,
    efficiency: Efficiency | None = None,
    attention_kernel: str | None = None,
    unfused: tuple[str, ...] = (),
    tp_comm_overlap: bool | None = None,
    software: Software | None = None,
) -> Plan:
    """Evaluate one fixed layout (the keyword form of :func:`build_plan`). The plan is returned even when it does
    not fit (``plan.fits``);
    a layout that does not divide raises PlanError. ``framework`` is any name of frameworks.py."""
    training = TrainingSpec(
        global_batch,
        seq_len,
        precision=precision,
        lora_rank=lora_rank,
        flash_attention=flash_attention,
        framework=frameworks.cost_model(framework),
        attention_kernel=attention_kernel,
        unfused=unfused,
        tp_comm_overlap=tp_comm_overlap,
        software=software or DEFAULT_SOFTWARE,
    )
    inputs.check_lora_rank(model, lora_rank)
    parallel = ParallelConfig(
        tp=tp,
        pp=pp,
        dp=dp,
        micro_batch=micro_batch,
        cp=cp,
        ep=ep,
        vpp=vpp,
        zero=zero,
        recompute=recompute,
        sequence_parallel=sequence_parallel,
        offload_optimizer=offload_optimizer,
    )
    return build_plan(model, fleet, training, parallel, efficiency)


__all__ = ["Plan", "PlanError", "build_plan", "evaluate"]
