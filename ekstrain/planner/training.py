"""What is trained: batch, sequence, precision, optimizer, full fine-tune or LoRA."""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from ekstrain.planner import inputs
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import BF16, FP8
from ekstrain.planner.software import DEFAULT_SOFTWARE, Software
from ekstrain.planner.spec_hash import cached_fields_hash

ADAMW = "adamw"
MEGATRON = "megatron"
DEEPSPEED = "deepspeed"
FSDP = "fsdp"
HSDP = "hsdp"
FRAMEWORKS = (MEGATRON, DEEPSPEED, FSDP, HSDP)
"""Whose bookkeeping the model states follow (memory.state_bytes_per_param). Neuron's NxD keeps
Megatron's layout (bf16 weights, fp32 gradients and optimizer, ZeRO-1). ``hsdp`` is PyTorch FSDP2
with a 2-D mesh (HYBRID_SHARD): ZeRO-3 within groups of ``hsdp_shard`` data-parallel ranks,
replicated across groups."""
UNFUSED_NORM = "norm"
UNFUSED_ROPE = "rope"
UNFUSED_ROPE_MATRIX = "rope-matrix"
UNFUSED_ACTIVATION = "activation"
UNFUSED_LAYOUT = "layout"
UNFUSED_OPS = (UNFUSED_NORM, UNFUSED_ROPE, UNFUSED_ROPE_MATRIX, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
"""Elementwise work eager PyTorch runs as several kernels where Megatron's fused kernels (and torch.compile)
run one (perf.elementwise_passes counts each): an RMSNorm written as tensor ops, RoPE through fp32 (as a
complex product, or as fms's 2 x 2 rotation matrices: ``rope-matrix``), SwiGLU's
silu and product apart, and the layout copies around SDPA (its output's ``.contiguous()``, GQA's repeated K/V)."""
EAGER_PYTORCH = (UNFUSED_NORM, UNFUSED_ROPE, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
"""``plan --eager``: a Llama-style model in eager PyTorch, no torch.compile, as torchtitan's model code writes it
(an RMSNorm as tensor ops, RoPE as an fp32 complex product, SwiGLU in two kernels, SDPA's layout copies); the
calibration's torchtitan 70B rows run exactly these (calibration._TITAN_EAGER_RMSNORM)."""
HSDP_SHARD = 8
"""Default HSDP shard group: the 8 GPUs of a p4d/p5/p6 node (torchtitan's
``data_parallel_shard_degree`` set to the node size), so its all-gathers stay on NVLink."""


@dataclass(frozen=True)
class TrainingSpec:
    """``global_batch`` counts sequences of ``seq_len`` tokens.

    ``lora_rank`` = 0 is a full fine-tune (or pre-training); r > 0 freezes the base weights and
    trains rank-r adapters on every linear layer of every transformer layer.
    ``flash_attention`` = True means the s x s attention scores are never stored (FlashAttention,
    Dao et al. 2022), so the ``5as/h`` term of Korthikanti's formulas vanishes; Narayanan 2021 and
    Korthikanti 2022 predate it, so their calibration uses False.
    """

    global_batch: int
    seq_len: int
    precision: str = BF16
    optimizer: str = ADAMW
    lora_rank: int = 0
    flash_attention: bool = True
    framework: str = MEGATRON
    hsdp_shard: int = HSDP_SHARD
    """HSDP only: data-parallel ranks one replica's shards span."""
    attention_kernel: str | None = None
    """The fused attention kernel (attention.py names); None = the one the framework runs on the generation
    (attention.kernel_for). Calibration rows set it where a source names another (llm-foundry: Triton)."""
    unfused: tuple[str, ...] = ()
    """UNFUSED_OPS the stack runs in eager PyTorch (calibration rows, from each source's model code); () = fused,
    as Megatron-core, Transformer Engine and torch.compile run them (what the planner's search assumes)."""
    tp_comm_overlap: bool | None = None
    """The stack overlaps TP collectives with GEMMs (Megatron-core ``--tp-comm-overlap``: Transformer Engine
    userbuffers). A software switch, not a property of the chip: None = the framework's default, on for the
    Megatron family (NeMo's and Megatron-Bridge's recipes set ``tp_comm_overlap``, and the H100/B200 constants
    are fitted on them; plain Megatron-LM leaves the flag off: pass False), off for FSDP, HSDP and DeepSpeed
    (no userbuffers). ``Efficiency.tp_overlap`` is the share it hides where it is on."""
    software: Software = DEFAULT_SOFTWARE
    """The stack's switches (software.py; presets per framework: frameworks.PRESETS), which the emitters write
    into the launch line. Its ``tp_comm_overlap`` and ``eager`` fill ``tp_comm_overlap`` and ``unfused`` when
    those are left at their defaults, so what is priced and what is launched are one setting."""

    @property
    def overlaps_tp_comm(self) -> bool:
        return self.framework == MEGATRON if self.tp_comm_overlap is None else self.tp_comm_overlap

    __hash__ = cached_fields_hash

    def __post_init__(self) -> None:
        if self.tp_comm_overlap is None and self.software.tp_comm_overlap is not None:
            object.__setattr__(self, "tp_comm_overlap", self.software.tp_comm_overlap)  # frozen: resolved once
        if self.software.eager and not self.unfused:
            object.__setattr__(self, "unfused", EAGER_PYTORCH)
        if self.framework not in FRAMEWORKS:
            raise PlanError(f"framework must be one of {', '.join(FRAMEWORKS)}, got {self.framework!r}")
        if self.global_batch < 1 or self.seq_len < 1:
            raise PlanError("global batch and sequence length must be >= 1")
        if self.precision not in (BF16, FP8):
            raise PlanError(f"precision must be {BF16} or {FP8}, got {self.precision!r}")
        if set(self.unfused) - set(UNFUSED_OPS):
            raise PlanError(f"unfused ops must be among {', '.join(UNFUSED_OPS)}, got {self.unfused!r}")
        if {UNFUSED_ROPE, UNFUSED_ROPE_MATRIX} <= set(self.unfused):
            raise PlanError(f"{UNFUSED_ROPE} and {UNFUSED_ROPE_MATRIX} are two implementations of one op; name one")
        if self.optimizer != ADAMW:
            raise PlanError(f"only the {ADAMW} optimizer is modelled, got {self.optimizer!r}")
        if self.lora_rank < 0:
            raise PlanError("LoRA rank must be >= 0")
        # The bounds ekstrain/planner/inputs.py gives the flags, for library callers too (a 10^30 batch would
        # make the divisor search run for minutes).
        for what, value, high in (
            ("global batch", self.global_batch, inputs.MAX_GLOBAL_BATCH),
            ("sequence length", self.seq_len, inputs.MAX_SEQ_LEN),
            ("LoRA rank", self.lora_rank, inputs.MAX_LORA_RANK),
        ):
            if value > high:
                shown = str(value) if value < 10**24 else f"of {len(str(value))} digits"
                raise PlanError(f"{what} {shown} is past the planner's bound of {high:,}")

    @classmethod
    def from_tokens(cls, global_batch_tokens: int, seq_len: int, **options: object) -> TrainingSpec:
        if global_batch_tokens % seq_len:
            raise PlanError(f"global batch of {global_batch_tokens} tokens is not a multiple of seq_len {seq_len}")
        return cls(global_batch_tokens // seq_len, seq_len, **options)  # type: ignore[arg-type]

    def shard_ranks(self, grad_reduce_ranks: int, zero: int) -> int:
        """Ranks the weights, gradients and optimizer states are sharded over: every data-parallel
        rank, or under HSDP at ZeRO-3 the shard group (the largest divisor of both)."""
        if self.framework == HSDP and zero >= 3:
            return gcd(grad_reduce_ranks, self.hsdp_shard)
        return grad_reduce_ranks

    @property
    def tokens_per_step(self) -> int:
        return self.global_batch * self.seq_len

    @property
    def is_lora(self) -> bool:
        return self.lora_rank > 0
