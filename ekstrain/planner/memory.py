"""Memory per rank: model states (per framework), activations (Korthikanti) and buffers, worst stage.

Model states per trainable parameter depend on whose bookkeeping runs (``state_bytes_per_param``):

* DeepSpeed: Rajbhandari et al. 2020 (ZeRO, arXiv 1910.02054) section 3: 2 bytes of bf16 weights,
  2 of bf16 gradients and K = 12 of fp32 master weights, momentum and variance; ZeRO stage 1/2/3
  shards the optimizer / +gradients / +weights over the data-parallel ranks.
* Megatron-LM: bf16 weights (2) and fp32 main gradients (4, ``--accumulate-allreduce-grads-in-fp32``
  default) plus 12 of fp32 main weights, momentum and variance: 18 B/param, or ``6 + 12/d`` with
  the distributed optimizer (Megatron-LM README, "Distributed Optimizer" table, "bf16 param,
  fp32 grads" row). ZeRO 2 is Megatron-FSDP's ``optim_grads``: ``2 + 16/d`` (gradients sharded too).
* FSDP (PyTorch FSDP2 with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), also what
  Megatron's ``--use-torch-fsdp2`` runs): fp32 sharded parameters (4), fp32 gradients (4), Adam
  m and v (8) = 16/d; the bf16 copy of the layer being computed is a buffer.

Activations follow Korthikanti et al. 2022 (arXiv 2205.05198) Table 2, in bytes per layer:
``sbh(10 + 24/t + 5as/(ht))`` with TP, ``sbh(34/t + 5as/(ht))`` with TP+SP, the ``5as/h`` term
dropped by selective recompute, ``2sbh`` with full recompute. The 34 is split as the paper does
(attention 11, MLP 19, LayerNorms 4) and generalised term by term to GQA (K and V scale with
kv_heads/heads), any MLP width f = ffn/h (19 = 2 + 2f + 2f + 1), gated MLPs (a third f-wide
tensor) and MoE (the expert tensors scale with top_k); every generalisation reduces to the paper's
numbers for MHA, f = 4, ungated, dense.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ekstrain.planner.fleet import GIB, Fleet
from ekstrain.planner.models import ModelSpec
from ekstrain.planner.parallel import EVERY_SECOND_BLOCK, FULL, NONE, SELECTIVE, SELECTIVE_OP, ParallelConfig
from ekstrain.planner.training import DEEPSPEED, FSDP, HSDP, MEGATRON, TrainingSpec

WEIGHT_BYTES = 2
"""bf16 weights (also under fp8 training: Transformer Engine casts per GEMM and keeps bf16 weights)."""
GRAD_BYTES = 2
OPTIMIZER_BYTES = 12
"""ZeRO's K for mixed-precision Adam(W): fp32 master weights, momentum and variance."""
FP32_BYTES = 4
ADAM_MOMENTS_BYTES = 8
"""fp32 momentum and variance (FSDP's optimizer state; its fp32 master is the sharded weight)."""
ACTIVATION_BYTES = 2
LOGIT_BYTES = 4
"""Megatron computes the cross-entropy on fp32 logits (Korthikanti's 4sbv/t term)."""
EAGER_LOSS_LOGIT_BYTES = 10
"""PyTorch stacks outside Megatron (torchtitan, transformers' ``LlamaForCausalLM`` under FSDP or DeepSpeed,
fms-fsdp, Composer) upcast the bf16 logits and call ``F.cross_entropy``: log-softmax keeps its fp32 result for the
backward (``_log_softmax_backward_data`` reads the output, torch autograd's derivatives.yaml), whose fp32 gradient
and then its bf16 copy for the output GEMM exist at the backward's start: 4 + 4 + 2 bytes a logit at the peak (the
forward's bf16 logits, fp32 copy and log-softmax result are the same 10). Megatron's fused vocab-parallel
cross-entropy works in place on one fp32 tensor (LOGIT_BYTES)."""
CUDA_CONTEXT_GIB = 0.5
"""Device memory the CUDA context, the CUDA libraries' handles and workspaces (cuBLAS, cuDNN) and the caching
allocator's first segments take before any tensor: ~0.5 GiB on A100/H100 with CUDA's lazy module loading
(``CUDA_MODULE_LOADING=LAZY``, the default PyTorch sets since 1.13 / CUDA 11.7; eager loading of every kernel took
1-2 GiB). The Neuron runtime's reservation is taken as the same."""
NCCL_BUFFSIZE = 4 * 2**20
NCCL_LL128_BUFFSIZE = 120 * 640 * 8 * 8
NCCL_LL_BUFFSIZE = 8 * 512 * 8 * 16
"""NCCL's per-connection receive buffers, bytes, one per protocol (NVIDIA/nccl src/include/comm.h: DEFAULT_BUFFSIZE
1 << 22 for Simple, overridable by ``NCCL_BUFFSIZE``; DEFAULT_LL128_BUFFSIZE = ELEMS_PER_THREAD 120 x 640 threads x
NCCL_STEPS 8 x 8 bytes; DEFAULT_LL_BUFFSIZE = 8 lines x 512 threads x 8 steps x 16-byte lines)."""
NCCL_CHANNELS = 16
"""Channels a communicator connects (NCCL picks 2-32 by topology; 16 is what an 8-GPU NVLink node's rings use
with InfiniBand/EFA between nodes): each channel has a receive buffer per protocol from its ring peer."""
HEADROOM = 0.90
"""The share of a rank's HBM a plan may use and still count as fitting with room to spare: the fragmentation
allowance. What it covers is the caching allocator's fragmentation the mechanism does not fix in advance (free
holes pinned between live blocks, which expandable segments do not merge either) and memory stragglers and spikes;
the CUDA context and NCCL's buffers (``runtime_bytes``) and the allocator's page rounding (``allocator_bytes``) are
itemised in the total it is applied to. One rule, ``within_headroom``, for search (pruning, ranking.py) and
evaluate (``Plan.within_headroom``, the JSON's ``within_headroom``), on the same ``MemoryBreakdown.total``."""
ALLOCATOR_LARGE_PAGE = 20 * 2**20
ALLOCATOR_SMALL_PAGE = 2 * 2**20
"""Physical page sizes PyTorch's CUDA caching allocator maps into an expandable segment: 20 MiB for the large pool
(blocks > 1 MiB), 2 MiB for the small pool (c10/cuda/CUDACachingAllocator.cpp ``ExpandableSegment``,
``kLargeBuffer`` and ``kSmallBuffer``; ``expandable_segments_page_size`` overrides them). ekstrain's GPU jobs run
with ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` (assembly/jobs/env.py), under which a pool's free blocks
in one segment always merge, so what the allocator reserves over what is allocated at the peak is the unfilled
tail of the last page of each (pool, stream) segment (PyTorch devlog "When does fragmentation occur in the CUDA
caching allocator?", E. Yang, 2026-06-01: 8 x 16 MiB map 7 pages, 140 MiB for 128 MiB). Block sizes round to 512
bytes (``kMinBlockSize``): < 0.01 % of tensors this size, not itemised. Without expandable segments each
``cudaMalloc`` segment is its own island (1-10 MiB requests take a 20 MiB segment, larger ones round to 2 MiB) and
measured fragmentation of LLM training is 15 % of reserved memory on average, up to 33 % (GMLake, Guo et al.,
ASPLOS 2024, arXiv 2401.08156, eight LLMs on A100 80GB): above the headroom, which is why the jobs set it."""
ALLOCATOR_STREAMS_BASE = 1
"""The compute stream's segments; a rank that overlaps data-parallel traffic allocates on its communication
stream too (the gathered or reduced buckets: FSDP2's all-gather stream, DeepSpeed's reduce stream), one segment
per (pool, stream) pair."""


def allocator_bytes(streams: int) -> float:
    """Reserved over allocated at the peak under expandable segments: at most one unfilled large and small page per
    allocating stream (ALLOCATOR_LARGE_PAGE)."""
    return streams * (ALLOCATOR_LARGE_PAGE + ALLOCATOR_SMALL_PAGE)


def within_headroom(total: float, capacity: float) -> bool:
    """The headroom rule (HEADROOM), in one form: search and evaluate both ask it, so a boundary plan is accepted by
    both or by neither (``total / capacity <= 0.9`` and ``total <= 0.9 * capacity`` differ in the last bit for some
    capacities)."""
    return total <= HEADROOM * capacity


def runtime_bytes(communicators: int) -> float:
    """Device memory that is not a tensor of the model: the CUDA context (CUDA_CONTEXT_GIB) and NCCL's buffers,
    NCCL_CHANNELS x (Simple + LL128 + LL) receive buffers for each communicator the rank is in (the layout's groups
    of more than one rank and the world group; ``NCCL_RUNTIME_CONNECT``, on by default since NCCL 2.22, connects
    only what is used, which these are)."""
    per_communicator = NCCL_CHANNELS * (NCCL_BUFFSIZE + NCCL_LL128_BUFFSIZE + NCCL_LL_BUFFSIZE)
    return CUDA_CONTEXT_GIB * GIB + communicators * per_communicator


DEEPSPEED_REDUCE_BUCKET = 500_000_000
DEEPSPEED_PREFETCH_BUCKET = 50_000_000
"""DeepSpeed's ``reduce_bucket_size`` and ``stage3_prefetch_bucket_size`` defaults in elements (perf.py cites them)."""


def state_bytes_per_param(framework: str, zero: int, shards: int) -> tuple[float, float, float]:
    """(weight, gradient, optimizer) bytes one rank holds per trainable parameter (module docstring)."""
    n = max(shards, 1)
    if framework == DEEPSPEED:
        return (
            WEIGHT_BYTES / (n if zero >= 3 else 1),
            GRAD_BYTES / (n if zero >= 2 else 1),
            OPTIMIZER_BYTES / (n if zero >= 1 else 1),
        )
    if zero >= 3 or (framework in (FSDP, HSDP) and zero >= 1):
        # FSDP full shard (zero 3) or SHARD_GRAD_OP (fsdp zero 1/2: weights stay whole).
        weights = FP32_BYTES / (n if zero >= 3 else 1)
        return weights, FP32_BYTES / n, ADAM_MOMENTS_BYTES / n
    if framework in (FSDP, HSDP):  # DDP with autocast: fp32 weights, fp32 gradients, fp32 m and v
        return FP32_BYTES, FP32_BYTES, ADAM_MOMENTS_BYTES
    # Megatron: bf16 weights, fp32 main gradients, distributed optimizer for zero 1; zero 2 is
    # Megatron-FSDP's ``optim_grads`` (optimizer states and gradients sharded, weights whole: "similar to
    # ZeRO-2", megatron_fsdp ShardingStrategy), the sharding Meta ran Llama 3 405B with ("we shard the
    # optimizer states and gradients, but for model shards we do not reshard after forward", arXiv
    # 2407.21783 section 3.3.1).
    return WEIGHT_BYTES, FP32_BYTES / (n if zero == 2 else 1), OPTIMIZER_BYTES / (n if zero >= 1 else 1)


def model_state_bytes(
    params: float,
    zero: int,
    shards: int,
    trainable: float | None = None,
    offload_optimizer: bool = False,
    framework: str = DEEPSPEED,
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) in bytes on one rank.

    ``params`` are the rank's weights before ZeRO sharding, ``shards`` the data-parallel ranks they
    are sharded over, ``trainable`` the subset that has gradients and optimizer states (LoRA; the
    frozen rest is bf16). The default framework is the ZeRO paper's accounting.
    """
    trainable = params if trainable is None else trainable
    w, g, o = state_bytes_per_param(framework, zero, shards)
    frozen = WEIGHT_BYTES * (params - trainable) / (shards if zero >= 3 else 1)
    optimizer = 0.0 if offload_optimizer else o * trainable
    return frozen + w * trainable, g * trainable, optimizer


@lru_cache(maxsize=65536)
def layer_activation_bytes(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    tp: int = 1,
    cp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = NONE,
    flash_attention: bool = False,
) -> float:
    """Activation bytes one layer stores for one micro-batch (Korthikanti Table 2, generalised).

    With CP each rank keeps s/cp of the tokens, and its attention scores cover its s/cp queries
    against all s keys, hence ``5 a s / h`` with the full s.
    """
    sbh = seq_len / cp * micro_batch * model.hidden
    if recompute == FULL:
        return 2 * sbh / (tp if sequence_parallel else 1)
    if recompute == SELECTIVE_OP:
        return _op_sac_bytes(model, seq_len / cp * micro_batch, tp, sequence_parallel)
    f = model.ffn_ratio
    masks = 1.0 if model.dropout else 0.0
    # Replicated across TP ranks unless SP: 2 LayerNorm inputs (4), QKV and MLP inputs (2 + 2),
    # attention and MLP dropout masks (1 + 1, only with dropout).
    replicated = 8.0 + 2 * masks
    # Split by TP: Q (2), K and V (4 at MHA), out-projection input (2); MLP activation input and
    # output (2f + 2f), plus the second branch of a gated MLP (2f); MoE tokens visit top_k experts.
    # Q, K, V and the out-projection's input at their own widths (Qwen3's head_dim x heads is 2 h; MLA's K
    # per head after the up-projection); the paper's 2 + 4 kv/a + 2 when heads x head_dim = h.
    h = model.hidden
    attention_io = (2 * model.q_dim + 4 * model.kv_dim + 2 * model.v_dim) / h
    if model.is_mla:
        # K and V differ in width; the up-projections' inputs (the latents and the shared rotary key) are kept too
        latents = model.q_lora_rank + model.kv_lora_rank + model.qk_rope_head_dim
        attention_io = (2 * model.q_dim + 2 * model.kv_dim + 4 * model.v_dim + 2 * latents) / h
    # Routed (padded to capacity) plus shared experts; a dense-first layer when it stores more (DeepSeek-V3).
    mlp = (6 if model.gated_mlp else 4) * f * (model.routed_per_token if model.is_moe else 1)
    if model.is_moe and model.dense_layers:
        mlp = max(mlp, (6 if model.gated_mlp else 4) * (model.dense_ffn_hidden or model.ffn_hidden) / h)
    split = attention_io + mlp
    # Attention scores: softmax output (2), dropout mask (1) and dropout output (2) per a*s*s*b.
    per_score = 2 + 3 * masks
    stored_scores = not (recompute == SELECTIVE or flash_attention)
    scores = per_score * model.heads * seq_len / model.hidden if stored_scores else 0.0
    if sequence_parallel:
        return sbh * (replicated + split + scores) / tp
    return sbh * (replicated + (split + scores) / tp)


def _op_sac_bytes(model: ModelSpec, tokens: float, tp: int, sequence_parallel: bool) -> float:
    """What torchtitan's per-op selective checkpointing keeps of a layer (parallel.SELECTIVE_OP): a checkpointed
    block stores its input and the outputs its policy marks MUST_SAVE, and recomputes everything else in the
    backward (torch.utils.checkpoint ``create_selective_checkpoint_contexts``). torchtitan's ``_custom_policy``
    (torchtitan/models/llama3/infra/parallelize.py; parallelize_llama.py in 2024) saves the ops of its
    ``_save_list`` (mm, the SDPA kernels, reduce-scatter) except every second mm: of a Llama layer's mms in call
    order (wq, wk, wv, wo, w1, w3, w2) it keeps wq, wv, w1 and w2's outputs, plus SDPA's output; norms, RoPE, SiLU
    and the products are recomputed. Column-parallel outputs are split by TP; the block input (and the row-parallel
    outputs, reduce-scattered) by TP only with SP. bf16."""
    f = model.ffn_hidden * (model.routed_per_token if model.is_moe else 1)
    mlp = [f, f, model.hidden] if model.gated_mlp else [f, model.hidden]
    outputs = [model.q_dim, model.kv_dim, model.kv_dim, model.hidden, *mlp]
    saved = outputs[0::2]  # the 1st, 3rd, ... mm: "every second mm" is recomputed
    row_parallel = sum(width for i, width in enumerate(outputs) if i % 2 == 0 and width == model.hidden and i > 0)
    column = sum(saved) - row_parallel + model.v_dim  # + SDPA's output
    replicated = model.hidden + row_parallel  # the block input and reduced outputs
    return ACTIVATION_BYTES * tokens * (column / tp + replicated / (tp if sequence_parallel else 1))


def interleaved_passes_in_flight(pp: int, vpp: int, micro_batches: int, stage: int) -> int:
    """Chunk forward passes stage ``stage`` holds at its peak under Megatron-core's interleaved
    1F1B (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving,
    core_r0.9+): warm-up 2(p - i - 1) + (v - 1) p passes (all m v when m = p), then one more forward
    before the first backward frees one."""
    total = micro_batches * vpp
    if micro_batches == pp:
        return total
    return min(total, 2 * (pp - stage - 1) + (vpp - 1) * pp + 1)


def held_layers(p: ParallelConfig, model_layers: int, micro_batches: int, stage: int) -> float:
    """Layer-micro-batches of activations stage ``stage`` holds at its peak.

    1F1B: stage i holds min(p - i, m) micro-batches of its layers (Korthikanti 4.2.3). Interleaved:
    the passes of ``interleaved_passes_in_flight`` in schedule order (micro-batches in groups of p
    per chunk), each holding its chunk's layers; the first chunk of the first stage and the last
    chunk of the last stage are the short ones of an uneven split. This is exact where
    Korthikanti's ``L (1 + (p-1)/(p v))`` assumes equal chunks and m > p."""
    return _held_layers(p.pp, p.vpp, model_layers, micro_batches, stage, *p.stage_layers(model_layers))


@lru_cache(maxsize=65536)
def _held_layers(pp: int, vpp: int, model_layers: int, micro_batches: int, stage: int, edge: int, full: int) -> float:
    if vpp == 1:
        layers = edge if pp > 1 and stage in (0, pp - 1) else full
        return float(layers * min(pp - stage, micro_batches))
    sizes = [full // vpp] * vpp
    if edge < full and stage == 0:
        sizes[0] -= 1
    if edge < full and stage == pp - 1:
        sizes[-1] -= 1
    passes = interleaved_passes_in_flight(pp, vpp, micro_batches, stage)
    groups, rest = divmod(passes, pp)  # pass k runs chunk (k // pp) % vpp
    rounds, partial = divmod(groups, vpp)
    return float(pp * (rounds * sum(sizes) + sum(sizes[:partial])) + rest * sizes[partial % vpp])


@dataclass(frozen=True)
class StageParams:
    """Parameter elements one rank of a pipeline stage holds, split by how they are replicated."""

    dense: float
    """Attention, norms, router, embeddings: replicated over dp * cp."""
    expert: float
    """Expert MLPs (all of a dense model's MLP is counted in ``dense``)."""
    trainable_dense: float
    trainable_expert: float

    @property
    def total(self) -> float:
        return self.dense + self.expert

    @property
    def trainable(self) -> float:
        return self.trainable_dense + self.trainable_expert


def lora_params_per_layer(model: ModelSpec, rank: int, experts_per_rank: float) -> tuple[float, float]:
    """(attention, expert MLP) LoRA adapter elements of one layer: r * (in + out) per linear."""
    h, kv, f = model.hidden, model.kv_dim, model.ffn_hidden
    attention = rank * ((h + h) + 2 * (h + kv) + (h + h))
    return attention, rank * model.mlp_matrices * (h + f) * experts_per_rank


def stage_params(
    model: ModelSpec, parallel: ParallelConfig, training: TrainingSpec, layers: int, first: bool, last: bool
) -> StageParams:
    """Weights on one rank of a stage of ``layers`` layers. Norm and bias vectors are counted as
    TP-split like their matrices (Megatron replicates them; they are < 0.1 % of a layer)."""
    return _stage_params(model, training.lora_rank, parallel.tp, parallel.ep, layers, first, last)


@lru_cache(maxsize=65536)
def _stage_params(
    model: ModelSpec, lora_rank: int, tp: int, ep: int, layers: int, first: bool, last: bool
) -> StageParams:
    experts_per_rank = model.experts / ep if model.is_moe else 0
    dense_per_layer = model.dense_layer_params + (0 if model.is_moe else model.expert_params)
    dense = layers * dense_per_layer / tp
    expert = layers * experts_per_rank * model.expert_params / tp
    if first:
        dense += model.embedding_params / tp
    if last:
        dense += model.output_params / tp
        if model.tied_embeddings and not first:
            dense += model.vocab * model.hidden / tp  # the last stage keeps its own copy of the tied table
    if not lora_rank:
        return StageParams(dense, expert, dense, expert)
    attention_lora, expert_lora = lora_params_per_layer(model, lora_rank, experts_per_rank)
    if not model.is_moe:
        attention_lora, expert_lora = attention_lora + expert_lora, 0.0
    lora_dense, lora_expert = layers * attention_lora / tp, layers * expert_lora / tp
    return StageParams(dense + lora_dense, expert + lora_expert, lora_dense, lora_expert)


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on one rank of one pipeline stage."""

    stage: str
    params: float
    grads: float
    optimizer: float
    activations: float
    buffers: float
    activation_bytes_per_layer: float = 0.0
    """Bytes one layer stores for one micro-batch (Korthikanti Table 2, generalised)."""
    layers_in_flight: float = 0.0
    """Layer-micro-batches whose activations are held at the peak (layers x in-flight micro-batches,
    times the interleaving factor on the first stage, less the layers offloaded to the host): activations = the two
    multiplied."""
    allocator: float = 0.0
    """What the caching allocator reserves over what the tensors take (allocator_bytes)."""

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.activations + self.buffers + self.allocator

    def gib(self) -> dict[str, float]:
        return {
            "params": self.params / GIB,
            "grads": self.grads / GIB,
            "optimizer": self.optimizer / GIB,
            "activations": self.activations / GIB,
            "buffers": self.buffers / GIB,
            "allocator": self.allocator / GIB,
            "total": self.total / GIB,
        }


def stage_memory(model: ModelSpec, parallel: ParallelConfig, training: TrainingSpec, index: int) -> MemoryBreakdown:
    """Memory of a rank of pipeline stage ``index`` (0 = first, holds the embedding)."""
    return _stage_memory(model, parallel, training, index, *_per_layer(model, parallel, training))


def _per_layer(model: ModelSpec, p: ParallelConfig, training: TrainingSpec) -> tuple[float, float]:
    """(activation bytes a layer stores per micro-batch, bytes of the layer being recomputed)."""
    args = (model, training.seq_len, p.micro_batch, p.tp, p.cp, p.sequence_parallel)
    everything = layer_activation_bytes(*args, NONE, training.flash_attention)
    if p.recompute == EVERY_SECOND_BLOCK:  # half the layers store their input only, half everything
        stored = (layer_activation_bytes(*args, FULL, training.flash_attention) + everything) / 2
    else:
        stored = layer_activation_bytes(*args, p.recompute, training.flash_attention)
    # Recomputing a layer materialises its full activations for the current micro-batch.
    recomputing = everything if p.recompute in (FULL, EVERY_SECOND_BLOCK, SELECTIVE_OP) else 0.0
    return stored, recomputing


def _stage_memory(
    model: ModelSpec,
    p: ParallelConfig,
    training: TrainingSpec,
    index: int,
    per_layer: float,
    recomputing: float,
) -> MemoryBreakdown:
    states, in_flight_layers, buffers = _stage_parts(model, p, training, index, recomputing)
    return MemoryBreakdown(
        f"stage {index}",
        *states,
        per_layer * in_flight_layers,
        buffers,
        per_layer,
        in_flight_layers,
        allocator_bytes(allocating_streams(p, training)),
    )


def allocating_streams(p: ParallelConfig, training: TrainingSpec) -> int:
    """Streams with their own allocator segments (ALLOCATOR_STREAMS_BASE): the compute stream, plus the
    communication stream where data-parallel traffic overlaps the passes."""
    overlapped = p.grad_reduce_ranks > 1 and training.software.overlaps_grad_reduce
    return ALLOCATOR_STREAMS_BASE + (1 if overlapped else 0)


def offloaded_layers(training: TrainingSpec, layers: int) -> int:
    """Layers of a stage whose stored activations live on the host (``Software.activation_offload_layers``):
    Megatron-core's TransformerBlock (megatron/core/transformer/transformer_block.py) hands
    ``cpu_offloading_num_layers`` and ``num_layers`` to Transformer Engine's ``get_cpu_offload_context``, which
    offloads the tensors saved for backward of the first N layer groups (transformer_engine/pytorch/cpu_offload.py,
    ``tensor_push``: ``current_group < num_offload_group``); DeepSpeed's ``cpu_checkpointing`` moves every
    checkpoint to the host (deepspeed/runtime/activation_checkpointing/checkpointing.py), whatever N says."""
    n = training.software.activation_offload_layers
    if not n:
        return 0
    return layers if training.framework == DEEPSPEED else min(n, layers)


def stored_per_layer(model: ModelSpec, p: ParallelConfig, training: TrainingSpec) -> float:
    """Activation bytes a layer keeps per micro-batch under the layout's recompute (what an offload moves)."""
    return _per_layer(model, p, training)[0]


def _stage_parts(
    model: ModelSpec, p: ParallelConfig, training: TrainingSpec, index: int, recomputing: float
) -> tuple[tuple[float, float, float], float, float]:
    """(model states, layer-micro-batches in flight, buffers) of stage ``index``, before any dataclass is built."""
    states, static = _stage_states(model, training, p.tp, p.pp, p.cp, p.dp, p.ep, p.zero, p.offload_optimizer, index)
    in_flight_layers = held_layers(p, model.layers, p.grad_accum(training), index)
    if training.software.activation_offload_layers:
        # The offloaded layers' activations leave the device for every micro-batch the stage holds: of the stage's
        # layer-micro-batches in flight, the share those layers are (exact at PP 1, the only layout Megatron-core
        # offloads with; TE's double buffer reloads a layer while the next one's backward runs, past the peak).
        edge, full = p.stage_layers(model.layers)
        layers = edge if p.pp > 1 and index in (0, p.pp - 1) else full
        if layers:
            in_flight_layers *= 1 - offloaded_layers(training, layers) / layers
    buffers = static + recomputing
    if index == p.pp - 1:
        per_logit = LOGIT_BYTES if training.framework == MEGATRON else EAGER_LOSS_LOGIT_BYTES
        buffers += per_logit * training.seq_len / p.cp * p.micro_batch * model.vocab / p.tp
    return states, in_flight_layers, buffers


@lru_cache(maxsize=65536)
def _stage_states(
    model: ModelSpec,
    training: TrainingSpec,
    tp: int,
    pp: int,
    cp: int,
    dp: int,
    ep: int,
    zero: int,
    offload: bool,
    index: int,
) -> tuple[tuple[float, float, float], float]:
    """((weights, gradients, optimizer states), buffers that do not depend on the micro-batch) of a rank of
    stage ``index``: the same for every micro-batch and recompute mode of a layout, so the search computes
    them once per layout."""
    p = ParallelConfig(tp=tp, pp=pp, dp=dp, micro_batch=1, cp=cp, ep=ep, zero=zero, offload_optimizer=offload)
    edge_layers, full_layers = p.stage_layers(model.layers)
    first, last = index == 0, index == p.pp - 1
    layers = edge_layers if p.pp > 1 and (first or last) else full_layers
    params = stage_params(model, p, training, layers, first, last)
    framework = training.framework
    shards = training.shard_ranks(p.grad_reduce_ranks, p.zero)
    dw, dg, do = model_state_bytes(params.dense, p.zero, shards, params.trainable_dense, p.offload_optimizer, framework)
    ew = eg = eo = 0.0
    if params.expert:  # dense models have no expert weights: skip the second bookkeeping
        ew, eg, eo = model_state_bytes(
            params.expert,
            p.zero,
            training.shard_ranks(p.expert_replicas, p.zero),
            params.trainable_expert,
            p.offload_optimizer,
            framework,
        )
    communicators = 1 + sum(1 for degree in (tp, cp, pp, p.grad_reduce_ranks) if degree > 1) + (ep > 1)
    buffers = runtime_bytes(communicators)
    if p.zero == 2 and framework == MEGATRON and p.grad_reduce_ranks > 1:
        # Megatron-FSDP optim_grads keeps only the gradient shard, but a layer's gradient exists whole (bf16)
        # from its backward until its reduce-scatter has run (megatron/core/distributed/fsdp/src: buckets per
        # FSDP unit, one transformer layer): one layer's unsharded gradient is in flight at least.
        buffers += GRAD_BYTES * model.layer_params / p.tp / (p.ep if model.is_moe else 1)
    layer = model.layer_params / p.tp / (p.ep if model.is_moe else 1)
    if p.zero >= 3 and p.grad_reduce_ranks > 1 and framework == DEEPSPEED:
        # DeepSpeed ZeRO-3 as stage3.py allocates it (0.19): the gathered submodule being computed and the prefetch
        # window (stage3_prefetch_bucket_size elements, bf16), the contiguous-gradient ipg bucket of
        # reduce_bucket_size elements in the gradient dtype (bf16), and beside the bf16 gradient partition the
        # model states count, the fp32 gradient buffer of the largest sub-group (sub_group_size 1e12: the whole
        # partition) the optimizer steps on (``initialize_optimizer_states``: ``gradient_buffer``).
        buffers += WEIGHT_BYTES * (layer + min(DEEPSPEED_PREFETCH_BUCKET, layer))
        buffers += GRAD_BYTES * min(DEEPSPEED_REDUCE_BUCKET, params.trainable)
        buffers += FP32_BYTES * params.trainable / shards
    elif p.zero >= 3 and p.grad_reduce_ranks > 1:
        # Gathered weights of the layer being computed and of the prefetched next one (FSDP2's next block).
        buffers += 2 * WEIGHT_BYTES * layer
    return (dw + ew, dg + eg, do + eo), buffers


def candidate_stages(parallel: ParallelConfig, layers: int) -> tuple[int, ...]:
    """Stages that can be the most loaded: the first (most in flight, embedding), the last (logits,
    output layer) and, when the edge stages are one layer short, the second (almost as many in
    flight, one more layer)."""
    edge, full = parallel.stage_layers(layers)
    return _candidate_stages(parallel.pp, edge < full)


@lru_cache(maxsize=1024)
def _candidate_stages(pp: int, short_edges: bool) -> tuple[int, ...]:
    stages = {0, pp - 1}
    if short_edges and pp > 2:
        stages.add(1)
    return tuple(sorted(stages))


def worst_stage_memory(model: ModelSpec, parallel: ParallelConfig, training: TrainingSpec) -> MemoryBreakdown:
    per_layer, recomputing = _per_layer(model, parallel, training)
    worst, worst_total = -1, -1.0
    for index in candidate_stages(parallel, model.layers):  # totals first: one breakdown is built
        states, in_flight, buffers = _stage_parts(model, parallel, training, index, recomputing)
        total = sum(states) + per_layer * in_flight + buffers  # the allocator term is the same on every stage
        if total > worst_total:
            worst, worst_total = index, total
    return _stage_memory(model, parallel, training, worst, per_layer, recomputing)


def fits(memory: MemoryBreakdown, fleet: Fleet) -> bool:
    """Fits at all (100 % of HBM); the headroom rule is ``within_headroom``."""
    return memory.total <= fleet.rank_memory_bytes
