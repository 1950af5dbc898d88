"""Software switches of a training stack: what it is told to do, not what the chip is.

Each switch is priced where the cost model reads it (TrainingSpec carries them) and written by the emitter of
the framework that launches the plan (emit.py), so ``job render`` runs what was priced. The stack presets that
set them per framework and version are frameworks.PRESETS.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.planner.errors import PlanError

FP8_DELAYED = "delayed"
FP8_TENSORWISE = "tensorwise"
FP8_MXFP8 = "mxfp8"
FP8_BLOCKWISE = "blockwise"
FP8_RECIPES: tuple[str, ...] = (FP8_DELAYED, FP8_TENSORWISE, FP8_MXFP8, FP8_BLOCKWISE)
"""Transformer Engine FP8 scaling recipes by Megatron-core's names (``TransformerConfig.fp8_recipe``,
megatron/core/transformer/transformer_config.py, Megatron-LM core_v0.15.0rc7-2333-gd98e8a64): ``delayed``
(amax history), ``tensorwise`` (per-tensor current scaling), ``mxfp8`` (Blackwell), ``blockwise``."""
MAX_BUCKET = 1 << 40
"""Elements of a gradient or prefetch bucket: far above any model's parameter count."""


@dataclass(frozen=True)
class Software:
    """The switches of a training stack that change its speed or memory, as the stack spells them.

    Defaults are ``None`` = what the framework does when the flag is left alone (its preset, PRESETS)."""

    tp_comm_overlap: bool | None = None
    """TP collectives overlapped with GEMMs (Megatron-core ``--tp-comm-overlap``, Transformer Engine userbuffers).
    None: on for the Megatron family (NVIDIA's recipes set it), off for FSDP, HSDP and DeepSpeed."""
    fp8_recipe: str = FP8_DELAYED
    """Scaling recipe when the precision is FP8 (FP8_RECIPES; Megatron-core's default is ``delayed``). Priced by
    the HBM traffic of its casts and current scaling's TP amax all-reduces (perf.FP8_RECIPE_CAST_BYTES,
    AMAX_REDUCTIONS_PER_PASS); ``mxfp8`` only on Blackwell (perf.check_fp8_recipe)."""
    fp8_bf16_layers: int = 0
    """Transformer layers kept in BF16 at each end of the model under FP8 (Megatron-core ``--first-last-layers-bf16
    --num-layers-at-start-in-bf16 N --num-layers-at-end-in-bf16 N``); 0 = every layer's GEMMs in FP8. Priced with
    the BF16 layer costs on the stages holding the ends (perf.bf16_end_layers)."""
    activation_offload_layers: int = 0
    """Layers whose activations are offloaded to host memory (Megatron-core ``--cpu-offloading-num-layers``).
    Priced: their stored activations leave the device (memory.offloaded_layers) and the host copies the pass cannot
    hide are exposed (perf.offload_exposed)."""
    eager: bool = False
    """The model runs in eager PyTorch without torch.compile (training.EAGER_PYTORCH: its elementwise kernels
    counted one by one); FSDP, HSDP and DeepSpeed scripts only (Megatron and NxD run their own fused code)."""
    overlap_grad_reduce: bool | None = None
    """Gradient reduce-scatter/all-reduce overlapped with the backward (Megatron ``--overlap-grad-reduce``,
    DeepSpeed ``overlap_comm``). None: on (NVIDIA's recipes set it; ekstrain's DeepSpeed JSON sets it)."""
    overlap_param_gather: bool | None = None
    """The distributed optimizer's parameter all-gather overlapped with the next forward (Megatron
    ``--overlap-param-gather``). None: on where the gradient reduce is overlapped."""
    bucket_params: int | None = None
    """Gradient bucket in elements (Megatron ``--ddp-bucket-size``: default max(40M, 1M x dp) parameters;
    DeepSpeed ``reduce_bucket_size`` and ``allgather_bucket_size``: default 5e8). None: the framework's default."""
    prefetch_bucket_params: int | None = None
    """DeepSpeed ZeRO-3 ``stage3_prefetch_bucket_size`` in elements (default 5e7, deepspeed/runtime/zero/config.py
    v0.19.5). None: the default."""

    def __post_init__(self) -> None:
        if self.fp8_recipe not in FP8_RECIPES:
            raise PlanError(f"--fp8-recipe must be one of {', '.join(FP8_RECIPES)}, got {self.fp8_recipe!r}")
        for flag, value in (
            ("--fp8-bf16-layers", self.fp8_bf16_layers),
            ("--activation-offload-layers", self.activation_offload_layers),
        ):
            if not 0 <= value <= 10_000:
                raise PlanError(f"{flag} must be 0 to 10,000 layers, got {value}")
        for flag, bucket in (
            ("--bucket-size", self.bucket_params),
            ("--prefetch-bucket-size", self.prefetch_bucket_params),
        ):
            if bucket is not None and not 1 <= bucket <= MAX_BUCKET:
                raise PlanError(f"{flag} must be 1 to {MAX_BUCKET:,} elements, got {bucket}")

    @property
    def overlaps_grad_reduce(self) -> bool:
        return self.overlap_grad_reduce is not False

    @property
    def overlaps_param_gather(self) -> bool:
        return self.overlaps_grad_reduce if self.overlap_param_gather is None else self.overlap_param_gather

    def to_json(self) -> dict[str, object]:
        """The switches as the plan JSON states them (TP overlap: TrainingSpec.overlaps_tp_comm)."""
        return {
            "fp8_recipe": self.fp8_recipe,
            "fp8_bf16_layers": self.fp8_bf16_layers,
            "activation_offload_layers": self.activation_offload_layers,
            "eager": self.eager,
            "overlap_grad_reduce": self.overlaps_grad_reduce,
            "overlap_param_gather": self.overlaps_param_gather,
            "bucket_params": self.bucket_params,
            "prefetch_bucket_params": self.prefetch_bucket_params,
        }


DEFAULT_SOFTWARE = Software()
