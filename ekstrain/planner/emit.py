"""Launcher settings from a Plan: DeepSpeed JSON, torchrun, Megatron-LM, NeMo and neuronx-distributed.

Each emitter only translates the plan's decisions; none re-derives a degree. What cannot be
expressed in a framework raises PlanError instead of emitting something subtly different.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ekstrain import catalog
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import FP8
from ekstrain.planner.parallel import FULL, SELECTIVE

if TYPE_CHECKING:
    from ekstrain.planner.plan import Plan

DEEPSPEED_BUCKET_BYTES = 500_000_000
"""reduce/allgather bucket elements: DeepSpeed's own default (5e8)."""


def deepspeed_config(plan: Plan) -> dict[str, Any]:
    """A ``ds_config.json``. TP/PP/CP come from the model code (Megatron-DeepSpeed), not from here;
    DeepSpeed checks ``train_batch_size = micro * grad_accum * dp``."""
    zero: dict[str, Any] = {
        "stage": plan.zero,
        "overlap_comm": True,
        "contiguous_gradients": True,
        "reduce_bucket_size": DEEPSPEED_BUCKET_BYTES,
    }
    if plan.zero >= 1:
        zero["allgather_bucket_size"] = DEEPSPEED_BUCKET_BYTES
    if plan.parallel.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    config: dict[str, Any] = {
        "train_batch_size": plan.training.global_batch,
        "train_micro_batch_size_per_gpu": plan.micro_batch,
        "gradient_accumulation_steps": plan.grad_accum,
        "bf16": {"enabled": True},
        "zero_optimization": zero,
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
        "gradient_clipping": 1.0,
    }
    if plan.recompute != "none":
        config["activation_checkpointing"] = {
            "partition_activations": plan.sequence_parallel,
            "contiguous_memory_optimization": False,
        }
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


def megatron_args(plan: Plan) -> list[str]:
    """Megatron-LM (megatron-core) ``pretrain_gpt.py`` parallelism arguments.

    ZeRO 1 and 2 map to ``--use-distributed-optimizer`` (it shards optimizer states and reduce-scatters
    gradients), ZeRO 3 to ``--use-torch-fsdp2``; uneven stages to the first/last-stage layer counts."""
    p = plan
    args = [
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
        "--seq-length",
        str(p.training.seq_len),
        "--bf16",
    ]
    edge, full = p.parallel.stage_layers(p.model.layers)
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
    if p.zero in (1, 2):
        args.append("--use-distributed-optimizer")
    elif p.zero == 3:
        args.append("--use-torch-fsdp2")
    if p.parallel.offload_optimizer:
        args += ["--optimizer-cpu-offload"]
    if p.training.precision == FP8:
        args += ["--fp8-format", "hybrid"]
    return args + _recompute_megatron(plan)


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
    ]
    if p.zero >= 1:
        overrides.append("model.optim.name=distributed_fused_adam")
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
    return args
