"""Launcher settings from a Plan: DeepSpeed JSON, torchrun, Megatron-LM, NeMo and neuronx-distributed.

Each emitter only translates the plan's decisions; none re-derives a degree. What cannot be
expressed in a framework raises PlanError instead of emitting something subtly different.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.facts import catalog
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import FP8
from ekstrain.planner.models import LAYERNORM, ModelSpec
from ekstrain.planner.parallel import FULL, NONE, SELECTIVE

if TYPE_CHECKING:
    from ekstrain.planner.plan_shape import PlanShape as Plan  # what emitters read; plan.py imports this module

DEEPSPEED_BUCKET_BYTES = 500_000_000
"""reduce/allgather bucket elements: DeepSpeed's own default (5e8)."""
DEEPSPEED_PREFETCH_BUCKET = 50_000_000
"""ZeRO-3 ``stage3_prefetch_bucket_size`` elements: DeepSpeed v0.19.5's default (5e7, ZeroConfig.prefetch_bucket_size,
deepspeed/runtime/zero/config.py)."""


@dataclass(frozen=True)
class Schedule:
    """Optimizer schedule every emitter writes (Llama 3 / GPT-3 paper values). The plan does not decide
    these; users override them by appending arguments (``ekstrain job render ... -- --lr 1e-4``: the
    last occurrence of an argparse option wins) or editing the DeepSpeed JSON."""

    train_iters: int = 100_000
    lr: float = 3.0e-4
    min_lr: float = 3.0e-5
    warmup_iters: int = 2_000
    weight_decay: float = 0.1
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1.0e-8
    clip_grad: float = 1.0


SCHEDULE = Schedule()
ROPE_BASE = 500_000
"""Rotary base of Llama 3 (the catalog's rotary models); GPT/BERT use learned positions (max_positions > 0)."""


def deepspeed_config(plan: Plan) -> dict[str, Any]:
    """A ``ds_config.json``. TP/PP/CP come from the model code (Megatron-DeepSpeed), not from here;
    DeepSpeed checks ``train_batch_size = micro * grad_accum * dp``."""
    sw = plan.training.software
    bucket = sw.bucket_params or DEEPSPEED_BUCKET_BYTES
    zero: dict[str, Any] = {
        "stage": plan.zero,
        # DeepSpeed v0.19.5 defaults overlap_comm to true at stage 3 only (ZeroConfig.overlap_comm_valid,
        # deepspeed/runtime/zero/config.py); the plan states it at every stage, as priced.
        "overlap_comm": sw.overlaps_grad_reduce,
        "contiguous_gradients": True,
        "reduce_bucket_size": bucket,
    }
    if plan.zero >= 1:
        zero["allgather_bucket_size"] = bucket
    if plan.zero >= 3:
        zero["stage3_prefetch_bucket_size"] = sw.prefetch_bucket_params or DEEPSPEED_PREFETCH_BUCKET
    if sw.activation_offload_layers and plan.recompute == "none":
        raise PlanError(
            "DeepSpeed offloads activations only as checkpoints (activation_checkpointing.cpu_checkpointing): "
            "it needs recompute; drop --activation-offload-layers"
        )
    if plan.parallel.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    config: dict[str, Any] = {
        "train_batch_size": plan.training.global_batch,
        "train_micro_batch_size_per_gpu": plan.micro_batch,
        "gradient_accumulation_steps": plan.grad_accum,
        "bf16": {"enabled": True},
        "zero_optimization": zero,
        # Concrete values: "auto" is resolved only by the Hugging Face Trainer integration, and plain
        # deepspeed.initialize rejects it.
        "optimizer": {
            "type": "AdamW",
            "params": {
                "lr": SCHEDULE.lr,
                "betas": [SCHEDULE.adam_beta1, SCHEDULE.adam_beta2],
                "eps": SCHEDULE.adam_eps,
                "weight_decay": SCHEDULE.weight_decay,
            },
        },
        "scheduler": {
            "type": "WarmupDecayLR",
            "params": {
                "warmup_min_lr": 0.0,
                "warmup_max_lr": SCHEDULE.lr,
                "warmup_num_steps": SCHEDULE.warmup_iters,
                "total_num_steps": SCHEDULE.train_iters,
            },
        },
        "gradient_clipping": SCHEDULE.clip_grad,
        "steps_per_print": 10,
        "wall_clock_breakdown": False,
    }
    if plan.recompute != "none":
        config["activation_checkpointing"] = {
            "partition_activations": plan.sequence_parallel or bool(sw.activation_offload_layers),
            "contiguous_memory_optimization": False,
        }
        if sw.activation_offload_layers:
            # cpu_checkpointing moves the partitioned checkpoints to the host (DeepSpeed's activation
            # checkpointing config: it requires partition_activations).
            config["activation_checkpointing"]["cpu_checkpointing"] = True
    return config


def torchrun_args(plan: Plan) -> list[str]:
    """Arguments before the training script; the job template provides the rendezvous endpoint."""
    return [
        f"--nnodes={plan.nodes}",
        f"--nproc-per-node={plan.workers_per_node}",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=$(MASTER_ADDR):$(MASTER_PORT)",
    ]


def torchrun_env(plan: Plan) -> dict[str, str]:
    """Environment the plan implies. Network (EFA/NCCL) variables belong to the job template."""
    env = {
        "NNODES": str(plan.nodes),
        "NPROC_PER_NODE": str(plan.workers_per_node),
        "WORLD_SIZE": str(plan.fleet.ranks),
    }
    if plan.fleet.family == catalog.TRAINIUM:
        env["NEURON_RT_NUM_CORES"] = str(plan.workers_per_node)
    elif plan.tp > 1 or plan.cp > 1:
        # Megatron-core needs one CUDA work queue so TP/CP communication kernels keep issue order.
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    return env


def _recompute_megatron(plan: Plan) -> list[str]:
    if plan.recompute == SELECTIVE:
        return ["--recompute-granularity", "selective"]
    if plan.recompute == FULL:
        return [
            "--recompute-granularity",
            "full",
            "--recompute-method",
            "uniform",
            "--recompute-num-layers",
            "1",
        ]
    return []


def megatron_model_args(plan: Plan) -> list[str]:
    """Megatron-LM ``pretrain_gpt.py`` model, sequence and optimizer arguments for ``plan.model``
    (megatron/training/arguments.py names). Tokenizer, data path and checkpoint dirs are the job's."""
    m, t = plan.model, plan.training
    args = [
        "--num-layers",
        str(m.layers),
        "--hidden-size",
        str(m.hidden),
        "--num-attention-heads",
        str(m.heads),
        "--ffn-hidden-size",
        str(m.dense_ffn_hidden or m.ffn_hidden),
    ]
    args += _megatron_attention_args(m)
    if m.gated_mlp:
        args.append("--swiglu")
    if m.max_positions:
        args += ["--position-embedding-type", "learned_absolute"]
    else:
        args += ["--position-embedding-type", "rope", "--rotary-base", str(ROPE_BASE)]
    args += ["--normalization", "LayerNorm" if m.norm == LAYERNORM else "RMSNorm"]
    if not m.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if not m.biases:
        args.append("--disable-bias-linear")
    args += _megatron_moe_args(m)
    args += [
        "--seq-length",
        str(t.seq_len),
        "--max-position-embeddings",
        str(max(m.max_positions, t.seq_len)),
        "--make-vocab-size-divisible-by",
        "128",
        "--attention-dropout",
        "0.0",
        "--hidden-dropout",
        "0.0",
        "--train-iters",
        str(SCHEDULE.train_iters),
        "--lr",
        str(SCHEDULE.lr),
        "--min-lr",
        str(SCHEDULE.min_lr),
        "--lr-decay-style",
        "cosine",
        "--lr-warmup-iters",
        str(SCHEDULE.warmup_iters),
        "--weight-decay",
        str(SCHEDULE.weight_decay),
        "--adam-beta1",
        str(SCHEDULE.adam_beta1),
        "--adam-beta2",
        str(SCHEDULE.adam_beta2),
        "--adam-eps",
        str(SCHEDULE.adam_eps),
        "--clip-grad",
        str(SCHEDULE.clip_grad),
        "--init-method-std",
        "0.02",
        "--log-interval",
        "10",
        "--save-interval",
        "1000",
        "--eval-interval",
        "1000",
        "--eval-iters",
        "10",
    ]
    return args


def _megatron_attention_args(m: ModelSpec) -> list[str]:
    """Attention shape flags (Megatron-LM core_v0.15.0rc7-2333-gd98e8a64: ``TransformerConfig.kv_channels`` and
    ``num_query_groups`` become ``--kv-channels``/``--num-query-groups``, megatron/training/argument_utils.py;
    MLA's in ``_add_mla_args``, megatron/training/arguments.py). MLA excludes GQA there (``assert not
    args.group_query_attention``): its keys and values come from the shared latent."""
    if m.is_mla:
        args = ["--multi-latent-attention"]
        if m.q_lora_rank:
            args += ["--q-lora-rank", str(m.q_lora_rank)]  # unset: queries projected straight from hidden
        return args + [
            "--kv-lora-rank",
            str(m.kv_lora_rank),
            "--qk-head-dim",
            str(m.head_dim),
            "--qk-pos-emb-head-dim",
            str(m.qk_rope_head_dim),
            "--v-head-dim",
            str(m.v_head_dim or m.head_dim),
        ]
    args = []
    if m.head_dim * m.heads != m.hidden:
        args += ["--kv-channels", str(m.head_dim)]  # Qwen3, GPT-OSS: heads x head_dim is not hidden
    if m.kv_heads != m.heads:
        args += ["--group-query-attention", "--num-query-groups", str(m.kv_heads)]
    return args


def _megatron_moe_args(m: ModelSpec) -> list[str]:
    """MoE flags (the same Megatron-LM version: ``_add_moe_args`` and TransformerConfig's ``moe_*`` fields): expert
    width apart from the dense MLP's, shared experts as one MLP of their summed width (Megatron-core's
    SharedExpertMLP), dense-first layers as a ``--moe-layer-freq`` pattern (1 = MoE layer), capacity padding;
    grouped GEMMs and the all-to-all dispatcher, as NVIDIA's MoE recipes run them."""
    if not m.is_moe:
        return []
    args = [
        "--num-experts",
        str(m.experts),
        "--moe-router-topk",
        str(m.top_k),
        "--moe-ffn-hidden-size",
        str(m.ffn_hidden),
        "--moe-grouped-gemm",
        "--moe-token-dispatcher-type",
        "alltoall",
    ]
    if m.shared_experts:
        args += ["--moe-shared-expert-intermediate-size", str(m.shared_experts * m.ffn_hidden)]
    if m.dense_layers:
        args += ["--moe-layer-freq", f"([0]*{m.dense_layers}+[1]*{m.moe_layers})"]
    if m.capacity_factor:
        args += ["--moe-expert-capacity-factor", f"{m.capacity_factor:g}", "--moe-pad-expert-input-to-capacity"]
    return args


def _megatron_software_args(p: Plan) -> list[str]:
    """The switches the plan was priced with (software.Software), as Megatron-LM spells them: ``--tp-comm-overlap``
    (ModelParallelConfig.tp_comm_overlap; Megatron asserts sequence parallelism with it), ``--overlap-grad-reduce``
    / ``--overlap-param-gather`` / ``--ddp-bucket-size`` (arguments.py's distributed group), FP8 format and
    recipe with the BF16 end layers (TransformerConfig.fp8 as ``--fp8-format``, ``fp8_recipe``,
    ``first_last_layers_bf16``), activation offload (``--cpu-offloading-num-layers``; TransformerConfig refuses
    it with pipeline parallelism or recompute)."""
    sw, args = p.training.software, []
    if p.training.overlaps_tp_comm and p.tp > 1 and p.sequence_parallel:
        args.append("--tp-comm-overlap")
    if p.parallel.grad_reduce_ranks > 1 and p.zero <= 2:
        if sw.overlaps_grad_reduce:
            args.append("--overlap-grad-reduce")
        if sw.overlaps_param_gather and p.zero in (1, 2):
            args.append("--overlap-param-gather")
        if sw.bucket_params is not None:
            args += ["--ddp-bucket-size", str(sw.bucket_params)]
    if p.training.precision == FP8:
        args += ["--fp8-format", "hybrid", "--fp8-recipe", sw.fp8_recipe]
        if sw.fp8_bf16_layers:
            n = str(sw.fp8_bf16_layers)
            args += ["--first-last-layers-bf16", "--num-layers-at-start-in-bf16", n, "--num-layers-at-end-in-bf16", n]
    if sw.activation_offload_layers:
        if p.pp > 1 or p.recompute != NONE or sw.activation_offload_layers >= p.model.layers:
            raise PlanError(
                "Megatron-core offloads activations (--cpu-offloading-num-layers) only without pipeline parallelism "
                "or recompute, and for fewer layers than the model has; drop --activation-offload-layers"
            )
        args += ["--cpu-offloading-num-layers", str(sw.activation_offload_layers)]
    return args


def megatron_args(plan: Plan) -> list[str]:
    """Megatron-LM (megatron-core) ``pretrain_gpt.py`` arguments: the model's (megatron_model_args), then
    parallelism.

    ZeRO 1 maps to ``--use-distributed-optimizer`` (it shards optimizer states and reduce-scatters
    gradients), ZeRO 2 to Megatron-FSDP ``optim_grads`` (gradients sharded too), ZeRO 3 to
    ``--use-torch-fsdp2``; uneven stages to the first/last-stage layer counts, or with interleaving to
    Megatron-core's embedding/loss-in-split flags (Meta's memory-balanced pipeline)."""
    p = plan
    args = [
        *megatron_model_args(plan),
        "--tensor-model-parallel-size",
        str(p.tp),
        "--pipeline-model-parallel-size",
        str(p.pp),
        "--context-parallel-size",
        str(p.cp),
        "--expert-model-parallel-size",
        str(p.ep),
        "--micro-batch-size",
        str(p.micro_batch),
        "--global-batch-size",
        str(p.training.global_batch),
        "--bf16",
    ]
    edge, full = p.parallel.stage_layers(p.model.layers)
    balanced = p.pp > 1 and full * p.pp - p.model.layers == 2
    if balanced and p.vpp > 1:
        # Meta's memory-balanced split: embedding and loss each take one layer's slot, so the first chunk
        # of the first stage and the last chunk of the last stage hold one transformer layer fewer.
        args += ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"]
        args += ["--num-virtual-stages-per-pipeline-rank", str(p.vpp)]
    else:
        if p.pp > 1 and edge < full:
            args += [
                "--decoder-first-pipeline-num-layers",
                str(edge),
                "--decoder-last-pipeline-num-layers",
                str(p.model.layers - edge - full * (p.pp - 2)),
            ]
        if p.vpp > 1:
            args += ["--num-layers-per-virtual-pipeline-stage", str(full // p.vpp)]
    if p.sequence_parallel:
        args.append("--sequence-parallel")
    if p.zero == 1:
        args.append("--use-distributed-optimizer")
    elif p.zero == 2:
        # Megatron-FSDP, optimizer states and gradients sharded (ZeRO-2), with the flags the Megatron-FSDP
        # user guide requires (Megatron-LM docs/discussions/megatron-fsdp-user-guide, "Required Configurations").
        args += ["--use-megatron-fsdp", "--data-parallel-sharding-strategy", "optim_grads"]
        args += ["--no-gradient-accumulation-fusion", "--use-distributed-optimizer", "--ckpt-format", "fsdp_dtensor"]
    elif p.zero == 3:
        args.append("--use-torch-fsdp2")
    if p.parallel.offload_optimizer:
        args += ["--optimizer-cpu-offload"]
    return args + _megatron_software_args(p) + _recompute_megatron(plan)


def nemo_overrides(plan: Plan) -> list[str]:
    """NeMo (Megatron-based) Hydra overrides for the same plan."""
    p = plan
    overrides = [
        f"trainer.num_nodes={p.nodes}",
        f"trainer.devices={p.workers_per_node}",
        f"model.tensor_model_parallel_size={p.tp}",
        f"model.pipeline_model_parallel_size={p.pp}",
        f"model.context_parallel_size={p.cp}",
        f"model.expert_model_parallel_size={p.ep}",
        f"model.virtual_pipeline_model_parallel_size={p.vpp if p.vpp > 1 else 'null'}",
        f"model.sequence_parallel={str(p.sequence_parallel).lower()}",
        f"model.micro_batch_size={p.micro_batch}",
        f"model.global_batch_size={p.training.global_batch}",
        f"model.encoder_seq_length={p.training.seq_len}",
        f"model.max_position_embeddings={max(p.model.max_positions, p.training.seq_len)}",
        f"model.num_layers={p.model.layers}",
        f"model.hidden_size={p.model.hidden}",
        f"model.ffn_hidden_size={p.model.ffn_hidden}",
        f"model.num_attention_heads={p.model.heads}",
        f"model.num_query_groups={p.model.kv_heads}",
        f"model.normalization={'layernorm' if p.model.norm == LAYERNORM else 'rmsnorm'}",
        f"model.activation={'fast-swiglu' if p.model.gated_mlp else 'gelu'}",
        f"model.position_embedding_type={'learned_absolute' if p.model.max_positions else 'rope'}",
        f"model.share_embeddings_and_output_weights={str(p.model.tied_embeddings).lower()}",
        f"model.bias={str(p.model.biases).lower()}",
        "trainer.precision=bf16-mixed",
        f"trainer.max_steps={SCHEDULE.train_iters}",
        f"model.optim.lr={SCHEDULE.lr}",
        f"model.optim.weight_decay={SCHEDULE.weight_decay}",
        f"model.optim.betas=[{SCHEDULE.adam_beta1},{SCHEDULE.adam_beta2}]",
        f"model.optim.sched.warmup_steps={SCHEDULE.warmup_iters}",
        f"model.optim.sched.min_lr={SCHEDULE.min_lr}",
        f"trainer.gradient_clip_val={SCHEDULE.clip_grad}",
    ]
    m, sw = p.model, p.training.software
    if m.is_mla or m.shared_experts or m.dense_layers or m.capacity_factor:
        raise PlanError(
            f"{m.name}: NeMo's Hydra GPT config (megatron_gpt_config.yaml) has no keys for multi-head latent "
            "attention, shared experts, dense-first layers or a capacity factor; use --emit megatron"
        )
    if m.head_dim * m.heads != m.hidden:
        overrides.append(f"model.kv_channels={m.head_dim}")
    if m.is_moe:
        overrides += [f"model.num_moe_experts={m.experts}", f"model.moe_router_topk={m.top_k}"]
    if p.zero >= 1:
        overrides.append("model.optim.name=distributed_fused_adam")
        # the distributed optimizer's overlap switches (megatron_gpt_config.yaml optim: overlap_grad_sync,
        # overlap_param_sync)
        overrides += [
            f"model.optim.overlap_grad_sync={str(sw.overlaps_grad_reduce).lower()}",
            f"model.optim.overlap_param_sync={str(sw.overlaps_param_gather).lower()}",
        ]
    # Transformer Engine userbuffers: ub_tp_comm_overlap (megatron_gpt_config.yaml), with sequence parallelism
    overrides.append(f"model.ub_tp_comm_overlap={str(p.training.overlaps_tp_comm and p.sequence_parallel).lower()}")
    if p.training.precision == FP8:
        if sw.fp8_recipe != "delayed" or sw.fp8_bf16_layers:
            raise PlanError(
                "NeMo's Hydra GPT config scales FP8 with delayed scaling on every layer (fp8_amax_history_len); "
                f"--fp8-recipe {sw.fp8_recipe} or --fp8-bf16-layers needs --emit megatron"
            )
        overrides += ["model.fp8=true", "model.fp8_hybrid=true"]
    if p.recompute == SELECTIVE:
        overrides.append("model.activations_checkpoint_granularity=selective")
    elif p.recompute == FULL:
        overrides += [
            "model.activations_checkpoint_granularity=full",
            "model.activations_checkpoint_method=uniform",
            "model.activations_checkpoint_num_layers=1",
        ]
    return overrides


def neuron_args(plan: Plan) -> list[str]:
    """neuronx-distributed training-script arguments (the Llama examples' flag names).

    Degrees are in ranks, and a Neuron rank is one NeuronCore (see ekstrain.planner.fleet), so they
    pass through unchanged. NxD shards the optimizer (ZeRO-1) but has no ZeRO 2/3, CP or offload."""
    p = plan
    if p.zero > 1 or p.cp > 1 or p.parallel.offload_optimizer:
        raise PlanError("neuronx-distributed supports ZeRO-1 at most, no context parallelism and no offload")
    args = [
        "--tensor_parallel_size",
        str(p.tp),
        "--pipeline_parallel_size",
        str(p.pp),
        "--batch_size",
        str(p.micro_batch),
        "--grad_accum_usteps",
        str(p.grad_accum),
        "--num_microbatches",
        str(p.grad_accum),
        "--seq_len",
        str(p.training.seq_len),
        "--use_sequence_parallel",
        str(int(p.sequence_parallel)),
        "--use_selective_checkpoint",
        str(int(p.recompute == SELECTIVE)),
        "--activation_checkpoint",
        str(int(p.recompute == FULL)),
    ]
    if p.ep > 1:
        args += ["--expert_parallel_size", str(p.ep)]
    if p.zero == 1:
        args.append("--use_zero_1")
    args += [
        "--max_steps",
        str(SCHEDULE.train_iters),
        "--warmup_steps",
        str(SCHEDULE.warmup_iters),
        "--lr",
        str(SCHEDULE.lr),
        "--min_lr",
        str(SCHEDULE.min_lr),
        "--weight_decay",
        str(SCHEDULE.weight_decay),
        "--beta1",
        str(SCHEDULE.adam_beta1),
        "--beta2",
        str(SCHEDULE.adam_beta2),
        "--grad_clip",
        str(SCHEDULE.clip_grad),
        "--use_mix_precision",
        "1",
    ]
    return args
