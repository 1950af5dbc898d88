"""Step time, FLOPs, MFU and HFU for one plan.

FLOP conventions (stated once, used everywhere):

* Forward FLOPs per token per layer = 2 x (matmul weights the token multiplies) + 4 s h for the
  attention scores and their product with V, counted over the full s x s square (non-causal), as
  Narayanan et al. 2021 Eq. 3 and Korthikanti et al. 2022 Eq. 7 do. Logits add 2 h V per token.
* Model FLOPs = forward + backward (2 x forward), no recomputation: this is what MFU divides by
  (Chowdhery et al. 2022, PaLM appendix B). LoRA: the frozen weights need no weight gradient, so
  their backward is 1 x forward; the adapters' is 2 x.
* Hardware FLOPs = model FLOPs + what recomputation repeats: the whole layer forward (full) or the
  attention scores (selective). HFU divides these. Narayanan Table 1's TFLOP/s are hardware FLOPs
  with full recomputation (Eq. 3's factor 96 = 4 passes x 24), so MFU = HFU x 3/4 there.

Time model (per micro-batch on the slowest pipeline stage, then the 1F1B schedule):

* compute = matmul FLOPs / (peak x matmul_efficiency) + elementwise bytes / (HBM bandwidth x
  hbm_efficiency); the elementwise traffic is ``elementwise_traffic`` times the layer's stored
  activations (Korthikanti, no recompute) per forward pass, twice that per backward pass;
* TP: 4 all-reduces (or reduce-scatter + all-gather pairs under SP) of b s h per layer, 6 with full
  recompute (Narayanan 3.3: ``8bsh(t-1)/t`` per layer), on the intra-node link, not overlapped;
* CP: ring attention passes K and V (cp - 1) times per pass, hidden behind the attention math;
* EP: 2 all-to-alls of the routed tokens per MoE layer and pass;
* PP: step = (m + (p - 1)/v) x stage time (bubble (p-1)/(v m), Narayanan 2.2), plus one activation
  send forward and one gradient send backward per chunk, scatter/gathered over TP;
* DP: gradient all-reduce (ZeRO 0/1, once a step), reduce-scatter per micro-batch (ZeRO 2), and
  two all-gathers + one reduce-scatter per micro-batch (ZeRO 3: 1.5x ZeRO 1's 2 psi), hidden behind
  the backward (and forward) passes when ``dp_overlap`` is on;
* optimizer step: AdamW streams 32 bytes per trainable parameter through HBM (or the host link and
  host AdamW with ZeRO-Offload).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ekstrain.planner.fleet import Fleet
from ekstrain.planner.memory import (
    GRAD_BYTES,
    WEIGHT_BYTES,
    layer_activation_bytes,
    lora_params_per_layer,
    stage_params,
)
from ekstrain.planner.models import ModelSpec
from ekstrain.planner.parallel import FULL, NONE, SELECTIVE, ParallelConfig
from ekstrain.planner.training import TrainingSpec

ACT = 2
"""Bytes of one bf16 activation element on the wire."""
ADAMW_HBM_BYTES_PER_PARAM = 32
"""Read fp32 master, m, v (12) + bf16 grad (2); write master, m, v (12) + bf16 weight (2); plus the
grad zeroing (2) and fp32 scratch (2)."""


@dataclass(frozen=True)
class Efficiency:
    """Achieved fractions of hardware peaks: the calibrated constants of the time model.

    Values come from the calibration on Narayanan Table 1 (docs/planner.md, section Calibration):
    they are the only tuned numbers in the planner.
    """

    matmul: float = 0.68
    """Fraction of dense peak the matmuls sustain end to end (fitted; cuBLAS alone reaches ~0.8 on
    A100, the rest is kernel launch and framework gaps the model does not itemise)."""
    hbm: float = 0.80
    """Fraction of HBM bandwidth elementwise kernels (LayerNorm, GeLU, softmax, dropout) reach."""
    elementwise_traffic: float = 1.5
    """HBM bytes those kernels move per forward pass, per byte of stored activations."""
    intra_node: float = 0.75
    """Bus bandwidth NCCL reaches on NVLink / NeuronLink, as a fraction of the link figure."""
    network: float = 0.80
    """Bus bandwidth reached on EFA / InfiniBand, as a fraction of the per-rank share."""
    dp_overlap: bool = True
    """Data-parallel traffic runs under the backward pass (Megatron --overlap-grad-reduce, DDP
    buckets, FSDP prefetch). Megatron-LM as of Narayanan 2021 did not overlap it."""
    host_link_gbytes_per_s: float = 25.0
    """Per-rank PCIe bandwidth for ZeRO-Offload (not in the catalog; PCIe Gen4 x16 ~ 25 GB/s)."""
    host_adam_params_per_s: float = 1.0e9
    """DeepSpeed CPU-Adam throughput per rank (uncalibrated; ZeRO-Offload paper order of magnitude)."""


DEFAULT_EFFICIENCY = Efficiency()
MEGATRON_2021 = Efficiency(dp_overlap=False)
"""The software of Narayanan Table 1: same hardware efficiencies, no DP overlap."""


@dataclass(frozen=True)
class Flops:
    """FLOPs of one training step of the whole model (all ranks)."""

    model: float
    hardware: float


def step_flops(model: ModelSpec, training: TrainingSpec, recompute: str) -> Flops:
    tokens = training.tokens_per_step
    s, h = training.seq_len, model.hidden
    matmul = 2 * model.matmul_params_per_token
    attention = 4 * s * h
    logits = 2 * h * model.vocab
    if training.is_lora:
        attention_lora, expert_lora = lora_params_per_layer(model, training.lora_rank, model.top_k)
        lora = 2 * (attention_lora + expert_lora)
        layer_model = 2 * matmul + 3 * (lora + attention)  # frozen weights: forward + input gradient
        logits_model = 2 * logits
        layer_forward = matmul + lora + attention
    else:
        layer_model = 3 * (matmul + attention)
        logits_model = 3 * logits
        layer_forward = matmul + attention
    recomputed = {NONE: 0.0, SELECTIVE: attention, FULL: layer_forward}[recompute]
    model_flops = tokens * (model.layers * layer_model + logits_model)
    return Flops(model_flops, model_flops + tokens * model.layers * recomputed)


@dataclass(frozen=True)
class StepTime:
    """Seconds per step, split by cause. ``compute`` is the busy time of the slowest stage outside
    the bubble; the other terms are exposed (not hidden) time."""

    compute: float
    tp_comm: float
    cp_comm: float
    ep_comm: float
    pp_p2p: float
    pp_bubble: float
    dp_comm: float
    optimizer: float

    @property
    def total(self) -> float:
        return (
            self.compute
            + self.tp_comm
            + self.cp_comm
            + self.ep_comm
            + self.pp_p2p
            + self.pp_bubble
            + self.dp_comm
            + self.optimizer
        )

    def parts(self) -> dict[str, float]:
        return {
            "compute": self.compute,
            "tp_comm": self.tp_comm,
            "cp_comm": self.cp_comm,
            "ep_comm": self.ep_comm,
            "pp_p2p": self.pp_p2p,
            "pp_bubble": self.pp_bubble,
            "dp_comm": self.dp_comm,
            "optimizer": self.optimizer,
        }


def _all_reduce(bytes_: float, ranks: int, bandwidth: float) -> float:
    """Ring all-reduce: each rank sends and receives 2 (n-1)/n of the buffer."""
    return 2 * (ranks - 1) / ranks * bytes_ / bandwidth if ranks > 1 else 0.0


def _half_collective(bytes_: float, ranks: int, bandwidth: float) -> float:
    """Reduce-scatter, all-gather or all-to-all of a ``bytes_`` buffer: (n-1)/n of it per rank."""
    return (ranks - 1) / ranks * bytes_ / bandwidth if ranks > 1 else 0.0


@dataclass(frozen=True)
class _MicroBatch:
    """Per-micro-batch seconds of one stage's rank, by pass."""

    forward: float
    backward: float
    recompute: float
    tp: float
    cp: float
    ep: float
    p2p: float

    @property
    def busy(self) -> float:
        return self.forward + self.backward + self.recompute

    @property
    def total(self) -> float:
        return self.busy + self.tp + self.cp + self.ep + self.p2p


def _micro_batch_time(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    layers: int,
    logits: bool,
) -> _MicroBatch:
    s, h, b = training.seq_len, model.hidden, p.micro_batch
    tokens = b * s / p.cp  # tokens a rank processes per micro-batch
    peak = fleet.rank_peak_flops(training.precision) * eff.matmul
    hbm = fleet.rank_hbm_bytes_per_s * eff.hbm

    matmul = 2 * tokens * model.matmul_params_per_token / p.tp
    lora = 0.0
    if training.is_lora:
        lora = 2 * tokens * sum(lora_params_per_layer(model, training.lora_rank, model.top_k)) / p.tp
    attention = 4 * tokens * s * h / p.tp
    stored = layer_activation_bytes(
        model, s, b, p.tp, p.cp, p.sequence_parallel, NONE, training.flash_attention
    )
    elementwise = eff.elementwise_traffic * stored / hbm
    attention_time = attention / peak
    layer_forward = (matmul + lora + attention) / peak + elementwise
    weight_grad_matmul = 0.0 if training.is_lora else matmul
    layer_backward = (matmul + weight_grad_matmul + 2 * lora + 2 * attention) / peak + 2 * elementwise
    layer_recompute = {NONE: 0.0, SELECTIVE: attention_time, FULL: layer_forward}[p.recompute]
    logits_forward = 2 * tokens * h * model.vocab / p.tp / peak if logits else 0.0
    logits_backward = logits_forward * (1 if training.is_lora else 2)

    passes = 3 if p.recompute == FULL else 2  # forward, backward (+ recomputed forward)
    activation_bytes = ACT * tokens * h
    intra_tp = fleet.group_bytes_per_s(p.tp) * eff.intra_node
    tp = layers * 2 * passes * _all_reduce(activation_bytes, p.tp, intra_tp)
    cp = 0.0
    if p.cp > 1:
        kv_bytes = 2 * ACT * tokens * model.kv_dim / p.tp
        link = _bandwidth(fleet, eff, p.tp * p.cp)
        ring = (p.cp - 1) * kv_bytes / link
        # forward and recomputed forward pass K, V once; backward passes K, V and their gradients.
        per_layer = sum(
            max(0.0, volume - math)
            for volume, math in ((ring, attention_time), (2 * ring, 2 * attention_time))
        )
        if p.recompute == FULL:
            per_layer += max(0.0, ring - attention_time)
        cp = layers * per_layer
    ep = 0.0
    if p.ep > 1:
        routed = ACT * tokens * model.top_k * h / (p.tp if p.sequence_parallel else 1)
        ep = layers * 2 * passes * _half_collective(routed, p.ep, _bandwidth(fleet, eff, p.tp * p.cp * p.ep))
    p2p = 0.0
    if p.pp > 1:
        neighbour = _bandwidth(fleet, eff, p.tp * p.cp * p.dp + 1)
        p2p = 2 * p.vpp * activation_bytes / p.tp / neighbour
    return _MicroBatch(
        layers * layer_forward + logits_forward,
        layers * layer_backward + logits_backward,
        layers * layer_recompute,
        tp,
        cp,
        ep,
        p2p,
    )


def _bandwidth(fleet: Fleet, eff: Efficiency, span: int) -> float:
    within_node = span <= fleet.ranks_per_node
    return fleet.group_bytes_per_s(span) * (eff.intra_node if within_node else eff.network)


def step_time(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency = DEFAULT_EFFICIENCY,
) -> StepTime:

    m = p.grad_accum(training)
    edge, full = p.stage_layers(model.layers)
    last_layers = full if p.pp == 1 else edge
    stages = [_micro_batch_time(model, fleet, training, p, eff, last_layers, logits=True)]
    if p.pp > 1:
        stages.append(_micro_batch_time(model, fleet, training, p, eff, full, logits=False))
    slowest = max(stages, key=lambda t: t.total)
    bubble_micro_batches = (p.pp - 1) / p.vpp

    # Data-parallel traffic of the stage with the most weights (the last: output layer).
    params = stage_params(model, p, training, last_layers, first=p.pp == 1, last=True)
    dp_link = _bandwidth(fleet, eff, p.tp * p.cp * p.dp)

    def grads(reduce: Callable[[float, int, float], float]) -> float:
        # Expert replicas lie inside the same span of ranks as the dense replicas (EP is carved out of DP).
        return reduce(GRAD_BYTES * params.trainable_dense, p.grad_reduce_ranks, dp_link) + reduce(
            GRAD_BYTES * params.trainable_expert, p.expert_replicas, dp_link
        )

    def weights() -> float:
        return _half_collective(WEIGHT_BYTES * params.dense, p.grad_reduce_ranks, dp_link) + _half_collective(
            WEIGHT_BYTES * params.expert, p.expert_replicas, dp_link
        )

    overlap = 1.0 if eff.dp_overlap else 0.0
    if p.zero <= 1:
        # One all-reduce (ZeRO-1: reduce-scatter + all-gather, the same bytes) after the last
        # micro-batch, hidden behind that micro-batch's backward pass.
        dp = max(0.0, grads(_all_reduce) - overlap * slowest.backward)
    elif p.zero == 2:
        # Gradients are reduce-scattered every micro-batch (that is what frees their memory);
        # updated weights are all-gathered once, behind the next step's first forward.
        dp = m * max(0.0, grads(_half_collective) - overlap * slowest.backward)
        dp += max(0.0, weights() - overlap * slowest.forward)
    else:
        # Weights are gathered for every forward and backward, gradients scattered every backward.
        dp = m * (
            max(0.0, weights() - overlap * slowest.forward)
            + max(0.0, weights() + grads(_half_collective) - overlap * slowest.backward)
        )

    trainable_shard = params.trainable / (p.grad_reduce_ranks if p.zero >= 1 else 1)
    if p.offload_optimizer:
        link = eff.host_link_gbytes_per_s * 1e9
        optimizer = (
            GRAD_BYTES + WEIGHT_BYTES
        ) * trainable_shard / link + trainable_shard / eff.host_adam_params_per_s
    else:
        optimizer = ADAMW_HBM_BYTES_PER_PARAM * trainable_shard / (fleet.rank_hbm_bytes_per_s * eff.hbm)

    return StepTime(
        compute=m * slowest.busy,
        tp_comm=m * slowest.tp,
        cp_comm=m * slowest.cp,
        ep_comm=m * slowest.ep,
        pp_p2p=m * slowest.p2p,
        pp_bubble=bubble_micro_batches * slowest.total,
        dp_comm=dp,
        optimizer=optimizer,
    )
