"""Step time, FLOPs, MFU and HFU for one plan.

FLOP conventions (stated once, used everywhere):

* Forward FLOPs per token per layer = 2 x (matmul weights the token multiplies) + 4 s h for the
  attention scores and their product with V, counted over the full s x s square (non-causal), as
  Narayanan et al. 2021 Eq. 3 and Korthikanti et al. 2022 Eq. 7 do. Logits add 2 h V per token.
* Model FLOPs = forward + backward (2 x forward), no recomputation: this is what MFU divides by
  (Chowdhery et al. 2022, PaLM appendix B). LoRA: the frozen weights need no weight gradient, so
  their backward is 1 x forward; the adapters' is 2 x.
* Two MFU conventions, both reported. ``mfu`` (the published one) counts a causal model's attention
  as half of the s x s square, 2 s h forward per token per layer: the Llama 3 paper's TFLOP/s
  (arXiv 2407.21783 Table 4) and Megatron-LM's ``num_floating_point_operations`` (causal factor
  0.5) count it so. ``mfu_full_square`` counts the whole square, as Narayanan Eq. 3 and
  Korthikanti Eq. 7 do (their tables use it); at 128k tokens it reads about twice the other.
* Hardware FLOPs = model FLOPs + what recomputation repeats: the whole layer forward (full) or the
  attention scores (selective). HFU divides these. Narayanan Table 1's TFLOP/s are hardware FLOPs
  with full recomputation (Eq. 3's factor 96 = 4 passes x 24), so MFU = HFU x 3/4 there.

Time model (per micro-batch on the slowest pipeline stage, then the pipeline schedule):

* GEMMs: each of the layer's GEMMs on its per-rank shape (M = tokens, N and K split by TP, experts
  by EP) costs max(FLOPs x quantization / (peak x matmul x software), bytes / (HBM x hbm)): the
  memory roofline, 128-wide tile quantization and wave quantization over the SMs (NVIDIA Deep
  Learning Performance Guide, "Matrix Multiplication Background") are the small-GEMM loss when a
  small hidden size, TP, CP or EP shrink per-rank work. Backward = 2 x forward GEMMs. FP8 GEMMs run
  at the FP8 peak with 1-byte operands plus Transformer Engine's casts (FP8_CAST_BYTES).
* Attention: FlashAttention-style kernels compute the unmasked half of a causal square at the
  published throughput of the kernel the framework runs (attention.py: by generation, sequence
  length, causal mask, head dim); backward 2.5 x the forward FLOPs (5 GEMMs vs 2, Dao 2023 section
  3.2). Without FlashAttention the full square runs at GEMM speed.
* Elementwise kernels: ``elementwise_traffic`` x stored activations of HBM traffic per forward, fitted on
  Megatron's fused kernels; a stack that runs some of them in eager PyTorch (``TrainingSpec.unfused``) moves
  the bytes ``elementwise_passes`` counts kernel by kernel over the fused count.
* Communication: alpha-beta per collective (comm.py): TP all-gathers / reduce-scatters (SP) or
  all-reduces, CP's K/V ring overlapped step by step with the attention it feeds, EP all-to-alls,
  PP sends, DP gradient reduce-scatter / all-reduce and parameter all-gathers hidden behind the
  backward / forward passes where the framework overlaps them (``dp_overlap``; ZeRO-3 per
  framework: ``zero3_traffic``, ``zero3_overlap``, edge layers exposed; HSDP's replica all-reduce).
* Pipeline: step = m x stage time + bubble; the bubble is the schedule's: (p - 1) stage times for
  1F1B, (p - 1)/v for interleaved 1F1B (Narayanan 2021 section 2.2), with 2v sends per micro-batch.
* Optimizer step: AdamW streams 32 bytes per trainable parameter through HBM (or the host link and
  host AdamW with ZeRO-Offload).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import ceil
from typing import Any

from ekstrain.facts import catalog
from ekstrain.planner import attention, comm
from ekstrain.planner.comm import Links
from ekstrain.planner.efficiency import DEFAULT_EFFICIENCY, MEGATRON_2021, Efficiency, efficiency_for
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import BF16, FP8, Fleet
from ekstrain.planner.memory import (
    GRAD_BYTES,
    WEIGHT_BYTES,
    layer_activation_bytes,
    lora_params_per_layer,
    offloaded_layers,
    stage_params,
    stored_per_layer,
)
from ekstrain.planner.models import RMSNORM, ModelSpec
from ekstrain.planner.parallel import EVERY_SECOND_BLOCK, FULL, NONE, SELECTIVE, SELECTIVE_OP, ParallelConfig
from ekstrain.planner.software import FP8_BLOCKWISE, FP8_DELAYED, FP8_MXFP8, FP8_TENSORWISE
from ekstrain.planner.training import (
    DEEPSPEED,
    FSDP,
    HSDP,
    MEGATRON,
    UNFUSED_ACTIVATION,
    UNFUSED_LAYOUT,
    UNFUSED_NORM,
    UNFUSED_ROPE,
    UNFUSED_ROPE_MATRIX,
    TrainingSpec,
)

__all__ = [
    "DEFAULT_EFFICIENCY",
    "MEGATRON_2021",
    "Efficiency",
    "StepTime",
    "efficiency_for",
    "step_flops",
    "step_time",
]

TILE = 128
"""Output tile edge of cuBLAS/CUTLASS tensor-core GEMMs (NVIDIA "Matrix Multiplication Background")."""
ACT = 2
"""Bytes of one bf16 activation element on the wire."""
ADAMW_HBM_BYTES_PER_PARAM = 32
"""Read fp32 master, m, v (12) + bf16 grad (2); write master, m, v (12) + bf16 weight (2); plus the
grad zeroing (2) and fp32 scratch (2)."""


MEGATRON_BUCKET_MIN = 40_000_000
MEGATRON_BUCKET_PER_RANK = 1_000_000
"""Megatron-core DDP's default gradient bucket: max(40M, 1M x data-parallel ranks) parameters."""
DEEPSPEED_REDUCE_BUCKET = 500_000_000
"""DeepSpeed's ``reduce_bucket_size`` default, elements (deepspeed/runtime/zero/config.py, 0.19: ``pp_int(5e8)``):
gradients are reduced a bucket at a time, on the reduce stream when ``overlap_comm`` is on (ZeRO-3's default:
``overlap_comm_valid`` sets it for stage 3), as stage_1_and_2.py and stage3.py's ipg buckets do."""
DEEPSPEED_PREFETCH_BUCKET = 50_000_000
"""``stage3_prefetch_bucket_size`` default, elements: how far ahead of the submodule being computed ZeRO-3's
PartitionedParameterCoordinator issues its asynchronous coalesced all-gathers (partitioned_param_coordinator.py,
``fetch_sub_module``: at least one parameter, then until the window is full; 0.19)."""


@dataclass(frozen=True)
class Flops:
    """FLOPs of one training step of the whole model (all ranks)."""

    model: float
    """Full-square convention (Korthikanti Eq. 7)."""
    hardware: float
    """Model FLOPs + recomputation, full square (Narayanan Eq. 3)."""
    model_causal: float = 0.0
    """Model FLOPs with a causal model's attention counted as half of the square (the published MFU)."""


def op_sac_share(model: ModelSpec) -> float:
    """Share of a layer's weight-GEMM FLOPs torchtitan's per-op selective checkpointing recomputes
    (parallel.SELECTIVE_OP: every second mm of wq, wk, wv, wo, w1, w3, w2, i.e. wk, wo and w3; an MoE or
    ungated MLP recomputes its second MLP mm the same way)."""
    h, kv, f = model.hidden, model.kv_dim, model.ffn_hidden
    up = (2 if model.gated_mlp else 1) * f
    recomputed = kv + h + (f if model.gated_mlp else 0)
    return recomputed / (h + 2 * kv + h + up + f)


def step_flops(model: ModelSpec, training: TrainingSpec, recompute: str) -> Flops:
    tokens = training.tokens_per_step
    s, h = training.seq_len, model.hidden
    matmul = 2 * model.matmul_params_per_token
    attention = 2 * s * model.score_width  # Q K^T and the product with V (4 s h when heads x head_dim = h)
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
    recomputed = {
        NONE: 0.0,
        SELECTIVE: attention,
        FULL: layer_forward,
        SELECTIVE_OP: op_sac_share(model) * matmul,
        EVERY_SECOND_BLOCK: layer_forward / 2,
    }[recompute]
    model_flops = tokens * (model.layers * layer_model + logits_model)
    masked_half = 3 * (attention / 2) if model.causal else 0.0  # forward + backward of the masked half
    causal_flops = model_flops - tokens * model.layers * masked_half
    return Flops(model_flops, model_flops + tokens * model.layers * recomputed, causal_flops)


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
    offload: float = 0.0
    """Host transfers of offloaded activations the passes do not hide (``offload_exposed``)."""

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
            + self.offload
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
            "offload": self.offload,
        }


def _gemm(m: float, n: float, k: float, peak: float, hbm: float, sms: int = 0, element: float = ACT) -> float:
    """Seconds of one (m x k) @ (k x n) GEMM: the memory roofline, 128-wide output tiles (a
    partial tile costs a whole one) and, on GPUs, whole waves of tiles over the SMs (a last wave
    that fills a few SMs costs a whole wave; NVIDIA Deep Learning Performance Guide, "Matrix
    Multiplication Background", "Wave Quantization"). ``element`` = bytes per input element."""
    if m <= 0 or n <= 0 or k <= 0:
        return 0.0
    tiles = ceil(m / TILE) * ceil(n / TILE)
    slots = ceil(tiles / sms) * sms if sms else tiles
    return max(2 * slots * TILE * TILE * k / peak, (element * (m * k + k * n) + ACT * m * n) / hbm)


SMS = {"a100": 108, "h100": 132, "h200": 132, "b200": 148}
"""Streaming multiprocessors per GPU (NVIDIA A100 and H100 whitepapers: 108 and 132 SMs on SXM;
B200: 148, NVIDIA Blackwell architecture technical brief). Trainium has no SM waves: 0."""
FP8_CAST_BYTES = 4
"""HBM bytes per element Transformer Engine moves to feed an FP8 GEMM one operand: read the BF16
tensor (2), write its FP8 copy (1) and the transposed FP8 copy Hopper's FP8 GEMMs need for the
other pass (1); amax and scale are fused into the same kernel (Transformer Engine docs, "Using FP8
with Transformer Engine": per-tensor scaling, delayed/current scaling recipes). Forward casts the
activation input of every GEMM, backward the output gradient; weights are cast once per step
(``fp8_weight_caching`` across micro-batches), which is not itemised. This is the ``delayed`` recipe (the scale is
last step's, so amax is a by-product of the cast); the other recipes move more (FP8_RECIPE_CAST_BYTES)."""
FP8_RECIPE_CAST_BYTES: dict[str, float] = {
    FP8_DELAYED: FP8_CAST_BYTES,
    FP8_TENSORWISE: FP8_CAST_BYTES + ACT,
    FP8_MXFP8: FP8_CAST_BYTES + 2 / 32,
    FP8_BLOCKWISE: FP8_CAST_BYTES + 2 * 4 / 128,
}
"""HBM bytes per element of one FP8 operand cast, by Transformer Engine recipe (the quantizers of
transformer_engine/pytorch/csrc/quantizer.cpp, TE 2.x):

* ``delayed``: FP8_CAST_BYTES, amax fused into the cast.
* ``tensorwise`` (current scaling): ``Float8CurrentScalingQuantizer::quantize_impl`` runs
  ``nvte_compute_amax`` over the BF16 input first, then the scale, then ``nvte_quantize_v2`` ("compute scale cannot
  be fused with quantize kernel"): the input is read twice, + 2 bytes an element.
* ``mxfp8``: one kernel computes each 32-element block's E8M0 scale as it casts; the row-wise and column-wise copies
  are quantized apart (MX scales run along one dimension), each with a 1-byte scale per 32 elements: + 2/32.
* ``blockwise`` (``Float8BlockQuantizer``, 1 x 128 tiles): the same one kernel, an fp32 scale per 128 elements for
  each of the two copies: + 8/128.

Which GEMMs run in FP8 is the same for all four: every linear layer's, the attention core and the output layer in
BF16 (Megatron-core's TE layers; perf._attention_time and ``logits_forward`` are priced at BF16). The block-scaled
recipes' GEMMs are priced at the FP8 GEMM efficiency too: no published paired measurement of their GEMM speed
against tensor scaling on one chip was found."""
AMAX_REDUCTIONS_PER_PASS = 2
"""Current scaling under sequence parallelism all-reduces each sequence-sharded operand's amax over the TP group
before casting, and waits for it (quantize_impl: ``amax_reduction_group->allreduce(...)->wait()``): Transformer
Engine sets ``with_amax_reduction`` on the input quantizer of the column-parallel GEMMs (QKV in ``Linear``, FC1 in
``LayerNormMLP``) and on the output-gradient quantizer of the row-parallel ones (projection, FC2)
(``_customize_quantizers_float8_current_scaling``, transformer_engine/pytorch/module/linear.py and
layernorm_mlp.py): two latency-bound collectives a layer in each pass."""


def _layer_shapes(model: ModelSpec, tokens: float, tp: int, ep: int) -> list[tuple[float, float, float, float]]:
    """(count, m, n, k) of one layer's weight GEMMs on one rank (tokens after SP's all-gather)."""
    h, f = model.hidden, model.ffn_hidden
    up = (2 if model.gated_mlp else 1) * f
    # Attention's projections as one input GEMM of their summed width (Q, K, V; MLA's down- and
    # up-projections) and the out-projection: for GQA exactly (q + 2 kv) x h and v x h.
    into = (model.attention_matmul_params - model.v_dim * h) / h
    shapes = [(1.0, tokens, into / tp, h), (1.0, tokens, h, model.v_dim / tp)]
    if model.is_moe:
        # Layers that are MoE, the rest dense-first (DeepSeek-V3): counts are per layer, averaged.
        moe, dense = model.moe_layers / model.layers, model.dense_layers / model.layers
        # balanced routing, inputs padded to the capacity factor when one is set
        per_expert = tokens * model.top_k * max(1.0, model.capacity_factor) * ep / model.experts
        shapes.append((moe, tokens, model.experts, h))  # router (BF16)
        shapes += [
            (moe * model.experts / ep, per_expert, up / tp, h),
            (moe * model.experts / ep, per_expert, h, f / tp),
        ]
        if model.shared_experts:
            shared = model.shared_experts
            shapes += [(moe, tokens, shared * up / tp, h), (moe, tokens, h, shared * f / tp)]
        if model.dense_layers:
            wide = model.dense_ffn_hidden or f
            wide_up = (2 if model.gated_mlp else 1) * wide
            shapes += [(dense, tokens, wide_up / tp, h), (dense, tokens, h, wide / tp)]
    else:
        shapes += [(1.0, tokens, up / tp, h), (1.0, tokens, h, f / tp)]
    return shapes


@lru_cache(maxsize=65536)
def _layer_gemms(
    model: ModelSpec,
    tokens: float,
    tp: int,
    ep: int,
    peak: float,
    hbm: float,
    sms: int,
    fp8: bool,
    cast_bytes: float = FP8_CAST_BYTES,
) -> tuple[float, float]:
    """(GEMM seconds, FP8 cast seconds) of one layer's forward on one rank. The backward runs two
    GEMMs per forward GEMM and casts each output gradient once (``cast_bytes``: FP8_RECIPE_CAST_BYTES)."""
    gemms = casts = 0.0
    for count, m, n, k in _layer_shapes(model, tokens, tp, ep):
        gemms += count * _gemm(m, n, k, peak, hbm, sms, 1 if fp8 else ACT)
        if fp8:
            casts += count * cast_bytes * m * k / hbm
    return gemms, casts


def check_fp8_recipe(fleet: Fleet, training: TrainingSpec) -> None:
    """MXFP8 needs Blackwell's block-scaled tensor cores: Transformer Engine's ``MXFP8BlockScaling`` is refused
    below compute capability 10.0 (``check_mxfp8_support``, transformer_engine/pytorch/fp8.py), and Megatron-core's
    own tests skip ``fp8-mxfp8`` on Hopper."""
    recipe = training.software.fp8_recipe
    if training.precision == FP8 and recipe == FP8_MXFP8 and fleet.generation not in MXFP8_GENERATIONS:
        raise PlanError(
            f"--fp8-recipe {FP8_MXFP8} runs on Blackwell (b200) only, not {fleet.generation}; "
            f"use --fp8-recipe {FP8_DELAYED} or {FP8_TENSORWISE}"
        )


MXFP8_GENERATIONS = ("b200",)


@lru_cache(maxsize=1024)
def elementwise_passes(model: ModelSpec, unfused: tuple[str, ...] = ()) -> float:
    """HBM bytes per token of one layer's forward elementwise kernels, with ``unfused`` ops run in eager
    PyTorch, over the same count with every op fused (1.0 when nothing is unfused). Each kernel reads its
    inputs and writes its output once; bf16 = 2 bytes, fp32 = 4.

    Fused (Megatron-core: apex/TE LayerNorm and RMSNorm, fused RoPE, bias-SwiGLU / bias-GeLU and
    bias-dropout-add fusions; torch.compile's Inductor fuses the same chains): each norm 4 h (read and
    write in bf16), the two residual adds 12 h, RoPE 4 (q + k), SwiGLU 6 f (two inputs, one output), GeLU 4 f.

    Unfused, as the eager stacks' model code writes them:

    * norm: RMSNorm as tensor ops, ``x.float()``, ``pow(2)``, ``mean``, ``x * rsqrt``, ``type_as``,
      ``weight *`` (torchtitan's ``RMSNorm``, torchtitan/models/norms.py; fms's ``LayerNormParameterized``
      with ``use_high_precision_pow``, fms/modules/layernorm.py): 6 + 8 + 4 + 8 + 6 + 4 = 36 h per norm.
      A LayerNorm calls ``F.layer_norm``, one ATen kernel, so stays 4 h (llm-foundry's
      ``low_precision_layernorm``).
    * rope: through fp32 as a complex product (``xq.float()``, ``view_as_complex(...) * freqs_cis``,
      ``type_as``: torchtitan's ``apply_rotary_emb``): 6 + 8 + 6 = 20 per element of q and k. rope-matrix:
      fms's ``RotaryEmbedding.adjusted_qk`` (March 2024) multiplies by 2 x 2 rotation matrices, ``q.float()``,
      ``freqs.mul(q_.unsqueeze(-2))`` (an fp32 tensor twice q's size), ``.sum(5)``, ``type_as``:
      6 + 12 + 12 + 6 = 36 per element.
    * activation: ``F.silu(w1(x)) * w3(x)`` as two kernels: 4 f + 6 f (a GeLU is one kernel either way).
    * layout: SDPA's output ``transpose(1, 2).contiguous()`` (4 h) and, at GQA, K and V repeated to every
      query head before SDPA (``repeat_kv``; reads 2 kv, writes 2 q bytes each: 4 (kv + q)).
    """
    h, q, kv, f = (
        model.hidden,
        model.heads * model.head_dim,
        model.kv_dim,
        model.ffn_hidden * (model.top_k + model.shared_experts),
    )
    rotary = model.max_positions == 0
    gated = model.gated_mlp

    def count(eager: frozenset[str]) -> float:
        rms = model.norm == RMSNORM and UNFUSED_NORM in eager
        total = 2 * (36 if rms else 4) * h + 12 * h
        if rotary:
            rope = 36 if UNFUSED_ROPE_MATRIX in eager else 20 if UNFUSED_ROPE in eager else 4
            total += rope * (q + kv)
        if gated:
            total += (10 if UNFUSED_ACTIVATION in eager else 6) * f
        else:
            total += 4 * f
        if UNFUSED_LAYOUT in eager:
            total += 4 * h + (4 * (kv + q) if kv < q else 0)
        return total

    return count(frozenset(unfused)) / count(frozenset())


@dataclass(frozen=True)
class _MicroBatch:
    """Per-micro-batch seconds of one stage's rank, by pass; communication is the exposed part."""

    forward: float
    backward: float
    recompute: float
    tp: float
    cp: float
    ep: float
    p2p: float
    offload: float = 0.0

    @property
    def busy(self) -> float:
        return self.forward + self.backward + self.recompute

    @property
    def total(self) -> float:
        return self.busy + self.tp + self.cp + self.ep + self.p2p + self.offload


@dataclass(frozen=True)
class _LayerCosts:
    """Per-layer seconds on one rank for one micro-batch: what depends only on (tp, cp, ep,
    micro-batch, sequence parallelism), shared by every layout that differs in pp, vpp, dp, ZeRO
    or recompute."""

    tokens: float
    forward: float
    backward: float
    attention_forward: float
    attention_backward: float
    logits_forward: float
    tp_per_pass: float
    op_sac_recompute: float = 0.0
    """Per-op selective checkpointing (parallel.SELECTIVE_OP): its share of the forward GEMMs and casts,
    plus every elementwise kernel of the layer."""


def _layer_costs(
    model: ModelSpec, fleet: Fleet, training: TrainingSpec, p: ParallelConfig, eff: Efficiency, links: Links
) -> _LayerCosts:
    s, h, b = training.seq_len, model.hidden, p.micro_batch
    tokens = b * s / p.cp  # tokens a rank processes per micro-batch
    fp8 = training.precision == FP8
    software = eff.software_for(training.framework)
    peak = fleet.rank_peak_flops(training.precision) * eff.matmul_for(training.precision) * software
    hbm = fleet.rank_hbm_bytes_per_s * eff.hbm
    sms = SMS.get(fleet.generation, 0)

    cast_bytes = FP8_RECIPE_CAST_BYTES[training.software.fp8_recipe]
    gemms, casts = _layer_gemms(model, tokens, p.tp, p.ep, peak, hbm, sms, fp8, cast_bytes)
    output_grad_casts = 0.0
    if fp8:  # the output gradient of each GEMM is cast once: n-wide where the input was k-wide
        output_grad_casts = sum(c * cast_bytes * m * n / hbm for c, m, n, _ in _layer_shapes(model, tokens, p.tp, p.ep))
        if training.software.fp8_recipe == FP8_TENSORWISE and p.sequence_parallel and p.tp > 1:
            amax = AMAX_REDUCTIONS_PER_PASS * comm.all_reduce(links, 4.0, p.tp, 1)  # one fp32 amax each
            casts += amax
            output_grad_casts += amax
    lora = 0.0
    if training.is_lora:
        lora = 2 * tokens * sum(lora_params_per_layer(model, training.lora_rank, model.top_k)) / p.tp / peak
    attention_forward, attention_backward = _attention_time(model, fleet, training, p, eff, tokens)
    stored = layer_activation_bytes(model, s, b, p.tp, p.cp, p.sequence_parallel, NONE, training.flash_attention)
    elementwise = eff.elementwise_traffic * stored / hbm * elementwise_passes(model, training.unfused)
    layer_forward = gemms + casts + lora + attention_forward + elementwise
    weight_grads = 0.0 if training.is_lora else gemms
    layer_backward = gemms + weight_grads + output_grad_casts + 2 * lora + attention_backward + 2 * elementwise
    bf16_peak = fleet.rank_peak_flops(BF16) * eff.matmul * software  # the output layer stays BF16
    logits_forward = _gemm(tokens, model.vocab / p.tp, h, bf16_peak, hbm, sms)

    activation_bytes = ACT * tokens * h
    if p.sequence_parallel:  # all-gather before, reduce-scatter after each of attention and MLP
        per_pass = 2 * (comm.all_gather(links, activation_bytes, p.tp, 1) * 2)
    else:  # one all-reduce after each of attention and MLP
        per_pass = 2 * comm.all_reduce(links, activation_bytes, p.tp, 1)
    op_sac = op_sac_share(model) * (gemms + casts) + elementwise
    return _LayerCosts(
        tokens, layer_forward, layer_backward, attention_forward, attention_backward, logits_forward, per_pass, op_sac
    )


def _micro_batch_time(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    links: Links,
    layers: int,
    logits: bool,
    costs: _LayerCosts | None = None,
    bf16_layers: int = 0,
    bf16_costs: _LayerCosts | None = None,
) -> _MicroBatch:
    """``bf16_layers`` of the ``layers`` run their GEMMs in BF16 under an FP8 plan (``Software.fp8_bf16_layers``):
    priced with the BF16 layer costs (``bf16_costs``), the rest with ``costs``."""
    c = costs or _layer_costs(model, fleet, training, p, eff, links)
    tokens, h = c.tokens, model.hidden

    layers_forward, layers_backward = layers * c.forward, layers * c.backward
    layers_recompute = layers * _recompute_of(c, p.recompute)
    k = min(bf16_layers, layers)
    if k:
        b = bf16_costs or _layer_costs(model, fleet, bf16_training(training), p, eff, links)
        layers_forward += k * (b.forward - c.forward)
        layers_backward += k * (b.backward - c.backward)
        layers_recompute += k * (_recompute_of(b, p.recompute) - _recompute_of(c, p.recompute))
    logits_forward = c.logits_forward if logits else 0.0
    logits_backward = logits_forward * (1 if training.is_lora else 2)

    # forward, backward (+ recomputed forward, in every second block for EVERY_SECOND_BLOCK)
    passes = {FULL: 3.0, EVERY_SECOND_BLOCK: 2.5}.get(p.recompute, 2.0)
    tp = (1 - (eff.tp_overlap if training.overlaps_tp_comm else 0.0)) * layers * passes * c.tp_per_pass

    cp = 0.0
    if p.cp > 1:
        # Ring attention: cp - 1 steps, each passing this rank's K and V (and their gradients
        # backward) while the attention of the chunk already held is computed.
        kv_bytes = ACT * tokens * model.kv_width / p.tp
        step = comm.ring_step(links, kv_bytes, p.cp, p.tp)
        back_step = comm.ring_step(links, 2 * kv_bytes, p.cp, p.tp)
        exposed = max(0.0, step - c.attention_forward / p.cp) * (passes - 1)
        exposed += max(0.0, back_step - c.attention_backward / p.cp)
        cp = layers * (p.cp - 1) * exposed
    ep = 0.0
    if p.ep > 1:
        routed = ACT * tokens * model.top_k * h / (p.tp if p.sequence_parallel else 1)
        ep = layers * 2 * passes * comm.all_to_all(links, routed, p.ep, p.tp * p.cp)
    p2p = 0.0
    if p.pp > 1:
        same_node = p.tp * p.cp * p.dp * p.pp <= fleet.ranks_per_node
        p2p = 2 * p.vpp * comm.send_recv(links, ACT * tokens * h / p.tp, same_node)
    offload = 0.0
    offloaded = offloaded_layers(training, layers) if training.software.activation_offload_layers else 0
    if offloaded:
        copy = stored_per_layer(model, p, training) / (eff.host_link_gbytes_per_s * 1e9)
        offload = offload_exposed(offloaded, copy, layers_forward) + offload_exposed(offloaded, copy, layers_backward)
    return _MicroBatch(
        layers_forward + logits_forward,
        layers_backward + logits_backward,
        layers_recompute,
        tp,
        cp,
        ep,
        p2p,
        offload,
    )


def _recompute_of(costs: _LayerCosts, recompute: str) -> float:
    """Seconds one layer's recomputation repeats per micro-batch under ``recompute``."""
    if recompute == NONE:
        return 0.0
    if recompute == SELECTIVE:
        return costs.attention_forward
    if recompute == FULL:
        return costs.forward
    if recompute == SELECTIVE_OP:
        return costs.op_sac_recompute
    return costs.forward / 2  # EVERY_SECOND_BLOCK


def offload_exposed(layers: int, copy: float, passed: float) -> float:
    """Seconds of ``layers`` offloaded layers' host copies (``copy`` seconds each, device-to-host in the forward,
    back in the backward) that a pass of ``passed`` seconds over the stage does not hide: ``max(0, layers x copy -
    passed)``. Transformer Engine's ``AsyncDoubleBufferGroupOffloadHandler`` (transformer_engine/pytorch/
    cpu_offload.py) copies on its own d2h/h2d streams, spreads the offloaded groups' windows evenly over the model's
    layers (``layer_window_map``) and prefetches the reload a group ahead; its docstring: "D2h and h2d copying are
    completely hidden behind computation if computation time of a layer is longer than host-device communication
    time". The copies queue on one stream, so the bound is the whole pass; what exceeds it waits on the stream.
    PCIe at ``Efficiency.host_link_gbytes_per_s`` (uncalibrated)."""
    return max(0.0, layers * copy - passed)


def bf16_training(training: TrainingSpec) -> TrainingSpec:
    """The same training in BF16: what a layer kept in BF16 under an FP8 plan costs."""
    return replace(training, precision=BF16)


def bf16_end_layers(training: TrainingSpec, p: ParallelConfig, layers: int, ends: int) -> int:
    """Of a stage's ``layers``, those kept in BF16 (``Software.fp8_bf16_layers`` N at each end of the model, Megatron-
    core ``--num-layers-at-start-in-bf16`` / ``--num-layers-at-end-in-bf16``): ``ends`` = the model's ends the stage
    holds (both at PP 1, one on the first and last stage). With interleaving the end layers are in the stage's
    first (last) chunk of layers / vpp; an N past a chunk spills to the next stages, which are not followed (NVIDIA's
    recipes keep 1-2)."""
    n = training.software.fp8_bf16_layers if training.precision == FP8 else 0
    if not n or not ends:
        return 0
    chunk = layers if p.pp == 1 else max(layers // p.vpp, 1)
    return min(ends * min(n, chunk), layers)


def _attention_time(
    model: ModelSpec, fleet: Fleet, training: TrainingSpec, p: ParallelConfig, eff: Efficiency, tokens: float
) -> tuple[float, float]:
    """(forward, backward) seconds of one layer's attention scores and their product with V.

    FlashAttention-style kernels compute only the unmasked half of a causal square, at the
    published throughput of the kernel the framework runs (attention.py). With CP the kernel runs
    on chunks of s/cp keys (load-balanced, so no masked tiles but the diagonal). Without
    FlashAttention the whole square runs at BF16 GEMM speed."""
    s, width = training.seq_len, model.score_width
    bf16_peak = fleet.rank_peak_flops(BF16)
    if not training.flash_attention:
        forward = 2 * tokens * s * width / p.tp / (bf16_peak * eff.matmul * eff.software_for(training.framework))
        return forward, 2 * forward
    executed = 2 * tokens * s * width / p.tp * (0.5 if model.causal else 1.0)
    kernel = training.attention_kernel or attention.kernel_for(fleet.generation, training.framework)
    if kernel is None:  # no published kernel table: the generation's GEMM efficiency
        forward_fraction = backward_fraction = eff.matmul * eff.software_for(training.framework)
    else:
        causal_kernel = model.causal and p.cp == 1
        forward_fraction = attention.forward_fraction(fleet.generation, kernel, model.head_dim, s / p.cp, causal_kernel)
        backward_fraction = forward_fraction * attention.BACKWARD_RATIO
    forward = executed / (bf16_peak * forward_fraction)
    return forward, 2.5 * executed / (bf16_peak * backward_fraction)


GRAD_WIRE_BYTES = {MEGATRON: 4, FSDP: 4, HSDP: 4, DEEPSPEED: 2}


def bucketed(traffic: float, buckets: float, compute: float, latency: float = 0.0) -> float:
    """Exposed seconds of ``buckets`` equal collectives (``traffic`` seconds in all, plus ``latency`` for each
    bucket past the first) run one after another on a communication stream beside a pass of ``compute`` seconds
    that produces (gradients) or consumes (gathered parameters) them evenly.

    Bucket k of B is ready at k T / B and the stream is serial, so the last collective ends at
    max_k (k T / B + (B - k + 1) c / B): the exposed time is ``max(c / B, c - T (1 - 1/B))``. A long pass hides
    all but the last bucket (its gradients exist only when the backward ends; the first parameter bucket is
    needed before the forward starts); a short one exposes the traffic it cannot cover. The mechanism of
    PyTorch DDP's reducer (torch/csrc/distributed/c10d/reducer.cpp: a bucket's all-reduce is launched when its
    last gradient is ready, buckets in reverse order of the parameters), Megatron-core's
    ``param_and_grad_buffer.py`` buckets, FSDP2's per-module reduce-scatter and DeepSpeed's ipg buckets; a
    pass shorter than its buckets' traffic is what NVIDIA's Nsight traces of small-model data-parallel runs show
    as the exposed gradient sync after the last backward kernel."""
    if traffic <= 0:
        return 0.0
    b = max(1.0, buckets)
    c = traffic + (b - 1) * latency
    return max(c / b, c - compute * (1 - 1 / b))


def step_overhead(eff: Efficiency, links: Links, world: int) -> float:
    """The per-step cost no layer has: the gradient-norm all-reduce over every rank (Megatron-core
    ``get_grad_norm_fp32`` reduces the squared norms over the model- and data-parallel groups before
    ``clip_grad_norm``; torch's ``clip_grad_norm_`` over DTensor shards does the same), a latency-bound collective
    over the whole job, plus ``Efficiency.step_host_s``: the host-device synchronisations of the optimizer step
    (``total_norm.item()``), its launches and the data loader hand-off, which a per-layer term misses (a cost
    per step: the same for a 1B and a 9B model at the same layout)."""
    return comm.all_reduce(links, 8.0, world, 1) + eff.step_host_s


def zero3_tensors_per_layer(model: ModelSpec) -> int:
    """Parameter tensors of one transformer layer as a framework holds them: a fused QKV and an output
    projection, the MLP's two matrices (three gated), a bias with each when the model has biases, and two
    norms (weight, plus bias for LayerNorm). GPT-3: 4 x 2 + 2 x 2 = 12; Llama: 5 + 2 = 7."""
    matrices = 2 + (3 if model.gated_mlp else 2)
    norms = 2 * (2 if model.norm == "layernorm" else 1)
    return matrices * (2 if model.biases else 1) + norms


"""Bytes per gradient element on the wire: Megatron reduces its fp32 main gradients (unless
--grad-reduce-in-bf16), FSDP2's reduce_dtype=fp32 likewise; DeepSpeed reduces bf16/fp16 gradients."""


def _shape_costs(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    links: Links,
    cache: dict[tuple[object, ...], Any],
    bf16: bool = False,
) -> _LayerCosts:
    """The per-layer costs of ``p``'s (tp, cp, ep, micro-batch, sequence parallelism), once per ``cache``; ``bf16``:
    those of a layer kept in BF16 under an FP8 plan (bf16_end_layers)."""
    shape: tuple[object, ...] = (p.tp, p.cp, p.ep, p.micro_batch, p.sequence_parallel, bf16)
    costs = cache.get(shape)
    if costs is None:
        costs = cache[shape] = _layer_costs(model, fleet, bf16_training(training) if bf16 else training, p, eff, links)
    return costs


def _stage_micro_batch(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    links: Links,
    cache: dict[tuple[object, ...], Any] | None,
    layers: int,
    logits: bool,
    bf16: int = 0,
) -> _MicroBatch:
    """One micro-batch of a stage of ``layers`` layers (``logits``: with the output layer; ``bf16`` of them kept in
    BF16 under FP8, bf16_end_layers). ``cache`` reuses micro-batch times across layouts that differ only in ZeRO
    stage or offload."""
    if cache is None:
        return _micro_batch_time(model, fleet, training, p, eff, links, layers, logits, None, bf16)
    # Everything _micro_batch_time reads: pp and dp only through "pipelined" and "same node".
    pipelined = p.pp > 1
    same_node = p.tp * p.cp * p.dp * p.pp <= fleet.ranks_per_node
    key = (
        p.tp,
        p.cp,
        p.ep,
        p.micro_batch,
        p.sequence_parallel,
        p.vpp,
        p.recompute,
        layers,
        logits,
        pipelined,
        same_node,
        bf16,
    )
    found = cache.get(key)
    if found is None:
        costs = _shape_costs(model, fleet, training, p, eff, links, cache)
        bf16_costs = _shape_costs(model, fleet, training, p, eff, links, cache, bf16=True) if bf16 else None
        found = cache[key] = _micro_batch_time(
            model, fleet, training, p, eff, links, layers, logits, costs, bf16, bf16_costs
        )
    return found


def _slowest_stage(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    links: Links,
    cache: dict[tuple[object, ...], Any] | None,
) -> _MicroBatch:
    """One micro-batch of the slowest pipeline stage: the last (output layer), a full middle one, or under FP8 with
    BF16 end layers the first (its BF16 layers can outweigh the last stage's logits)."""
    edge, full = p.stage_layers(model.layers)
    last_layers = full if p.pp == 1 else edge
    last_bf16 = bf16_end_layers(training, p, last_layers, 2 if p.pp == 1 else 1)
    slowest = _stage_micro_batch(model, fleet, training, p, eff, links, cache, last_layers, True, last_bf16)
    if p.pp == 1:
        return slowest
    middle = _stage_micro_batch(model, fleet, training, p, eff, links, cache, full, False)
    if middle.total > slowest.total:
        slowest = middle
    first_bf16 = bf16_end_layers(training, p, edge, 1)
    if first_bf16:
        first = _stage_micro_batch(model, fleet, training, p, eff, links, cache, edge, False, first_bf16)
        if first.total > slowest.total:
            slowest = first
    return slowest


def pipeline_floor(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency,
    cache: dict[tuple[object, ...], Any] | None = None,
    enough: float = float("inf"),
) -> float:
    """A floor under ``step_time(...).total`` of ``p`` at every ZeRO stage and offload: (m + (p - 1)/v)
    micro-batches of the slowest stage (the micro-batches and the pipeline bubble) plus the per-step cost
    (step_overhead). The step adds data-parallel traffic and the optimizer's update, both >= 0, neither of which
    enters a micro-batch (whose time _micro_batch_time reads from neither the ZeRO stage nor the offload). With
    ``cache``, cheaper floors come first and the first above ``enough`` is returned: a full stage's layer compute
    alone (the same under every recompute mode), then that stage's whole micro-batch, then the slowest stage's.
    The search prunes with it (search.FLOOR_BOUND); tests/planner/test_search_floor.py checks it against the
    step."""
    links = None if cache is None else cache.get(("links",))  # ``cache`` is for one fleet and efficiency
    if links is None:
        links = comm.Links.of(fleet, eff.intra_node, eff.network)
        if cache is not None:
            cache[("links",)] = links
    world = p.tp * p.pp * p.grad_reduce_ranks
    per_step = None if cache is None else cache.get(("step_overhead", world))
    if per_step is None:
        per_step = step_overhead(eff, links, world)
        if cache is not None:
            cache[("step_overhead", world)] = per_step
    scale = p.grad_accum(training) + (p.pp - 1) / p.vpp
    # With one stage holding BF16 end layers there is no all-FP8 full stage to stand for the shortcuts' floors.
    if cache is not None and not (p.pp == 1 and bf16_end_layers(training, p, model.layers, 2)):
        _, full = p.stage_layers(model.layers)
        costs = _shape_costs(model, fleet, training, p, eff, links, cache)
        floor = scale * full * (costs.forward + costs.backward) + per_step
        if floor > enough:
            return floor
        # a full middle stage (with one stage: the only one, output layer included)
        floor = scale * _stage_micro_batch(model, fleet, training, p, eff, links, cache, full, p.pp == 1).total
        if floor + per_step > enough or p.pp == 1:
            return floor + per_step
    return scale * _slowest_stage(model, fleet, training, p, eff, links, cache).total + per_step


def step_time(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    p: ParallelConfig,
    eff: Efficiency | None = None,
    cache: dict[tuple[object, ...], Any] | None = None,
) -> StepTime:
    """``cache`` (one dict per model, fleet, training and efficiency, e.g. one search) reuses
    micro-batch times across layouts that differ only in ZeRO stage or offload."""
    eff = eff or efficiency_for(fleet)
    check_fp8_recipe(fleet, training)
    links = comm.Links.of(fleet, eff.intra_node, eff.network)
    m = p.grad_accum(training)
    edge, full = p.stage_layers(model.layers)
    last_layers = full if p.pp == 1 else edge
    slowest = _slowest_stage(model, fleet, training, p, eff, links, cache)
    # 1F1B: p - 1 stage-times of warm-up and cool-down; interleaved: chunks of 1/v of a stage.
    bubble_micro_batches = (p.pp - 1) / p.vpp

    # Data-parallel traffic of the stage with the most weights (the last: output layer).
    params = stage_params(model, p, training, last_layers, first=p.pp == 1, last=True)
    wire = GRAD_WIRE_BYTES[training.framework]
    dense_n = training.shard_ranks(p.grad_reduce_ranks, p.zero)
    expert_n = training.shard_ranks(p.expert_replicas, p.zero)
    dense_stride, expert_stride = p.tp, p.tp * p.ep

    def grads_all_reduce() -> float:
        return comm.all_reduce(links, wire * params.trainable_dense, dense_n, dense_stride) + comm.all_reduce(
            links, wire * params.trainable_expert, expert_n, expert_stride
        )

    def grads_reduce_scatter() -> float:
        return comm.reduce_scatter(links, wire * params.trainable_dense, dense_n, dense_stride) + comm.reduce_scatter(
            links, wire * params.trainable_expert, expert_n, expert_stride
        )

    def weights_all_gather() -> float:
        return comm.all_gather(links, WEIGHT_BYTES * params.dense, dense_n, dense_stride) + comm.all_gather(
            links, WEIGHT_BYTES * params.expert, expert_n, expert_stride
        )

    overlap = 1.0 if eff.dp_overlap else 0.0
    # How many collectives the framework splits a stage's data-parallel traffic into, each issued when its
    # share of the pass is done (``bucketed``): Megatron-core's DDP buckets of max(40M, 1M x dp x cp) parameters
    # (megatron/core/distributed/distributed_data_parallel.py, "larger DP sizes need larger buckets to ensure
    # collectives do not become latency-bound": at 512 ranks one bucket holds all of a 1-9B model's stage, whose
    # whole sync then follows its backward); FSDP's one unit per transformer block (torchtitan and llm-foundry wrap
    # each block with fully_shard / FSDP); DeepSpeed's ``reduce_bucket_size``. neuronx-distributed (Trainium)
    # shares Megatron's cost model but not its buckets: its sync hides behind the backward as it is computed.
    if training.framework == MEGATRON and p.zero < 2:
        bucket = max(MEGATRON_BUCKET_MIN, MEGATRON_BUCKET_PER_RANK * p.grad_reduce_ranks)
        if fleet.family == catalog.TRAINIUM or bucket <= 0:
            buckets = float("inf")
        else:
            buckets = float(ceil(params.trainable / bucket)) if params.trainable > 0 else 1.0
    elif training.framework == DEEPSPEED:
        buckets = float(ceil(params.trainable / DEEPSPEED_REDUCE_BUCKET)) if params.trainable > 0 else 1.0
    else:  # FSDP, HSDP, Megatron-FSDP (zero 2) and FSDP2 under Megatron (zero 3): one unit per block
        buckets = float(max(last_layers, 1))

    def hidden(traffic: float, compute: float, latency: float) -> float:
        """Exposed seconds of ``traffic`` split into ``buckets`` beside ``compute``; all of it without overlap."""
        if not overlap:
            return traffic
        if buckets == float("inf"):
            return max(0.0, traffic - compute)
        return bucketed(traffic, buckets, compute, latency)

    # The once-a-step collectives also hide behind the pipeline's warm-up (gathers) and cool-down (gradients):
    # Megatron-core launches each model chunk's gradient sync when that chunk's last backward is done
    # (``--overlap-grad-reduce`` with ``grad_sync_func`` per chunk in pipeline_parallel/schedules.py), so the
    # stage's idle bubble after it is time the sync runs in.
    bubble_half = bubble_micro_batches * slowest.total / 2
    forward_window, backward_window = slowest.forward + bubble_half, slowest.backward + bubble_half

    def ring_latency() -> float:
        return comm.ring_latency(links, dense_n, dense_stride) if buckets > 1 else 0.0

    if p.zero == 0:
        # One all-reduce after the last micro-batch, bucketed under its backward pass.
        latency = comm.all_reduce(links, 1.0, dense_n, dense_stride) if buckets > 1 else 0.0
        dp = hidden(grads_all_reduce(), backward_window, latency)
    elif p.zero == 1 or (p.zero == 2 and training.framework in (FSDP, HSDP)):
        # Distributed optimizer / ZeRO-1: gradients reduce-scattered once a step under the last
        # backward, updated weights all-gathered under the next step's first forward.
        latency = ring_latency()
        dp = hidden(grads_reduce_scatter(), backward_window, latency)
        dp += hidden(weights_all_gather(), forward_window, latency)
    elif p.zero == 2:
        # DeepSpeed ZeRO-2 and Megatron-FSDP optim_grads reduce-scatter every micro-batch (that is what
        # frees the gradients). The reduce-scatter runs on its own stream (DeepSpeed overlap_comm,
        # Megatron-FSDP's gradient stream) while the next micro-batch computes, so it hides behind a whole
        # micro-batch (forward and backward), not only the backward that produced it; the last micro-batch's
        # has only its own backward.
        scatter = grads_reduce_scatter()
        dp = (m - 1) * max(0.0, scatter - overlap * (slowest.forward + slowest.backward))
        dp += hidden(scatter, backward_window, ring_latency())
        dp += max(0.0, weights_all_gather() - overlap * forward_window)
    elif training.framework == DEEPSPEED and eff.deepspeed_2021:
        # DeepSpeed ZeRO-3 as Narayanan 2021 Table 2 measured it: a share of its traffic hides behind the pass
        # that runs meanwhile (fitted: zero3_traffic, zero3_overlap); the first layer's all-gather and the last
        # layer's reduce-scatter have nothing to hide behind.
        traffic = eff.zero3_traffic_for(training.framework)
        share = overlap * eff.zero3_overlap_for(training.framework)
        gather, scatter = weights_all_gather() / traffic, grads_reduce_scatter() / traffic
        edge_units = (gather + scatter) / max(last_layers, 1)
        dp = m * (
            max(0.0, gather - share * slowest.forward)
            + max(0.0, gather + scatter - share * slowest.backward)
            + min(edge_units, share * (slowest.forward + slowest.backward))
        )
        # It gathered and scattered parameter by parameter: `_allgather_params_coalesced`
        # (deepspeedai/DeepSpeed deepspeed/runtime/zero/partition_parameters.py, 2021) launched one all-gather
        # per parameter tensor and was, in its own docstring, a "blocking call"; so every tensor of every layer
        # paid a collective's latency three times per micro-batch and nothing hid it.
        tensors = zero3_tensors_per_layer(model) * last_layers
        dp += m * 3 * tensors * comm.ring_latency(links, dense_n, dense_stride)
    else:
        # ZeRO-3 / FSDP: weights gathered for every forward and backward, gradients scattered, per micro-batch,
        # each on its own stream beside the pass (``bucketed``). FSDP2: one all-gather and one reduce-scatter per
        # block, the next block's gather prefetched. DeepSpeed 0.10+ (stage3.py, partitioned_param_coordinator.py,
        # 0.19): one coalesced asynchronous all-gather per submodule fetched, issued ``stage3_prefetch_bucket_size``
        # ahead on the all-gather stream (a window of at least one parameter: the stream never idles while
        # compute waits), gradients reduce-scattered in ``reduce_bucket_size`` buckets on the reduce stream.
        # The backward's gathers and scatters share the links; its last reduce bucket and the first
        # gather of each pass are exposed whatever the pass's length.
        gather, scatter = weights_all_gather(), grads_reduce_scatter()
        if not overlap:
            dp = m * (2 * gather + scatter)
        else:
            latency = comm.ring_latency(links, dense_n, dense_stride)
            layers = max(last_layers, 1)
            if training.framework == DEEPSPEED:
                gathers = float(zero3_tensors_per_layer(model) * layers)
                scatters = float(ceil(params.trainable / DEEPSPEED_REDUCE_BUCKET)) if params.trainable > 0 else 1.0
            else:
                gathers = scatters = float(layers)
            forward = bucketed(gather, gathers, slowest.forward, latency)
            both = gather + scatter + (gathers - 1 + scatters - 1) * latency
            backward = max(gather / gathers + scatter / scatters, both - slowest.backward * (1 - 1 / scatters))
            dp = m * (forward + backward)
        replicas = p.grad_reduce_ranks // dense_n
        if replicas > 1:  # HSDP: the gradient shards all-reduced across replicas under the last backward
            replica_sync = comm.all_reduce(links, wire * params.trainable_dense / dense_n, replicas, p.tp * dense_n)
            dp += max(0.0, replica_sync - overlap * slowest.backward)

    trainable_shard = params.trainable / (dense_n if p.zero >= 1 else 1)
    if p.offload_optimizer:
        link = eff.host_link_gbytes_per_s * 1e9
        optimizer = (GRAD_BYTES + WEIGHT_BYTES) * trainable_shard / link + trainable_shard / eff.host_adam_params_per_s
    else:
        optimizer = ADAMW_HBM_BYTES_PER_PARAM * trainable_shard / (fleet.rank_hbm_bytes_per_s * eff.hbm)

    optimizer += step_overhead(eff, links, p.tp * p.pp * p.grad_reduce_ranks)

    return StepTime(
        compute=m * slowest.busy,
        tp_comm=m * slowest.tp,
        cp_comm=m * slowest.cp,
        ep_comm=m * slowest.ep,
        pp_p2p=m * slowest.p2p,
        pp_bubble=bubble_micro_batches * slowest.total,
        dp_comm=dp,
        optimizer=optimizer,
        offload=m * slowest.offload,
    )
