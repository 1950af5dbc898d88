"""Transformer shapes: the ModelSpec dataclass, its parameter counts and the built-in catalog.

Parameter counting follows Narayanan et al. 2021 (arXiv 2104.04473) Eq. 2 for GPT-style models,
``P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h))``, generalised to grouped-query attention (GQA),
gated MLPs (SwiGLU), RMSNorm, untied embeddings and mixture-of-experts (MoE) layers. The only
addition to Eq. 2 for GPT is the final LayerNorm (2h), which the paper leaves out.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from ekstrain.planner import inputs
from ekstrain.planner.errors import PlanError
from ekstrain.planner.spec_hash import cached_fields_hash

LAYERNORM = "layernorm"
RMSNORM = "rmsnorm"


@dataclass(frozen=True)
class ModelSpec:
    """A decoder (or encoder) transformer as the planner sees it.

    ``experts`` = 1 means a dense model; with ``experts`` > 1 every layer's MLP is an MoE layer whose
    tokens each visit ``top_k`` experts. ``max_positions`` > 0 means a learned position table of that
    many rows (GPT, BERT); 0 means rotary positions with no parameters (Llama, Mixtral).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    gated_mlp: bool
    tied_embeddings: bool
    experts: int = 1
    top_k: int = 1
    biases: bool = False
    norm: str = RMSNORM
    max_positions: int = 0
    dropout: bool = False
    causal: bool = True
    head_dim: int = 0
    """Width of one attention head (0: hidden / heads). Qwen3 and GPT-OSS set it apart from hidden / heads
    (Qwen3-235B-A22B: 64 heads of 128 on hidden 4,096; GPT-OSS: 64 of 64 on 2,880; their config.json
    ``head_dim``). Under MLA it is the non-rotary query/key part (``qk_nope_head_dim``)."""
    kv_lora_rank: int = 0
    """Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434 section 2.1; DeepSeek-V3 config.json): the
    rank K and V are compressed to (512); 0 = ordinary (GQA/MQA/MHA) attention."""
    q_lora_rank: int = 0
    """MLA's query compression rank (DeepSeek-V3: 1,536; 0 = queries projected straight from hidden)."""
    qk_rope_head_dim: int = 0
    """MLA's decoupled rotary part of each query/key head (64), its key shared by all heads."""
    v_head_dim: int = 0
    """MLA's value head width (128; 0 = head_dim)."""
    shared_experts: int = 0
    """Experts every token visits besides its top_k routed ones (DeepSeek-V3: 1), each ffn_hidden wide."""
    dense_layers: int = 0
    """Leading layers with a dense MLP of ``dense_ffn_hidden`` instead of experts (DeepSeek-V3
    ``first_k_dense_replace`` = 3, intermediate_size 18,432)."""
    dense_ffn_hidden: int = 0
    """MLP width of those dense layers (0 = ffn_hidden). For MoE models ``ffn_hidden`` is one expert's width
    (``moe_intermediate_size``: expert granularity)."""
    capacity_factor: float = 0.0
    """Expert capacity as a multiple of the balanced load, inputs padded to it (Megatron-core
    ``--moe-expert-capacity-factor`` with ``--moe-pad-expert-input-to-capacity``; GShard, arXiv 2006.16668):
    expert GEMMs and activations scale by it. 0 = dropless, balanced routing."""
    """Decoder (causal) self-attention; False for encoders (BERT), whose attention is the full square."""
    """Dropout layers in training (GPT-2/3, BERT: 0.1). Llama 1-3 and Mixtral pre-train without
    dropout (Touvron et al. 2023, arXiv 2302.13971; the released configs' attention_dropout 0.0),
    so no masks are stored: Korthikanti's 34 becomes 32, the 5as/h scores term 2as/h."""

    __hash__ = cached_fields_hash

    def __post_init__(self) -> None:
        positive = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "experts", "top_k")
        for key in positive:
            if getattr(self, key) < 1:
                raise PlanError(f"model {self.name!r}: {key} must be >= 1, got {getattr(self, key)}")
        if not self.head_dim:
            if self.hidden % self.heads:
                raise PlanError(f"model {self.name!r}: hidden {self.hidden} is not divisible by heads {self.heads}")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)  # frozen: resolved once
        if self.dense_layers >= self.layers and self.is_moe:
            raise PlanError(f"model {self.name!r}: dense_layers {self.dense_layers} leaves no MoE layer")
        if not 0 <= self.capacity_factor <= 64:
            raise PlanError(f"model {self.name!r}: capacity_factor must be 0 (dropless) to 64")
        if self.heads % self.kv_heads:
            raise PlanError(f"model {self.name!r}: heads {self.heads} not divisible by kv_heads {self.kv_heads}")
        if self.top_k > self.experts:
            raise PlanError(f"model {self.name!r}: top_k {self.top_k} exceeds experts {self.experts}")
        if self.norm not in (LAYERNORM, RMSNORM):
            raise PlanError(f"model {self.name!r}: norm must be {LAYERNORM!r} or {RMSNORM!r}")

    # --- shapes -------------------------------------------------------------------------------
    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def q_dim(self) -> int:
        """Width of Q (and of K under MLA, whose keys are up-projected per head): heads x query head width."""
        return self.heads * (self.head_dim + self.qk_rope_head_dim)

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): kv_heads * head_dim; equals hidden without GQA. MLA: K per head after the
        up-projection (what attention and ring CP move)."""
        return self.q_dim if self.is_mla else self.kv_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """K plus V widths a token carries into attention (what ring CP passes): 2 kv_dim, or MLA's K and V."""
        return self.kv_dim + (self.v_dim if self.is_mla else self.kv_dim)

    @property
    def v_dim(self) -> int:
        """Width of the attention output (the out-projection's input): heads x value head width."""
        return self.heads * (self.v_head_dim or self.head_dim)

    @property
    def score_width(self) -> int:
        """Q K^T's contraction width plus P V's output width, summed over heads: 2 h for ordinary attention
        with heads x head_dim = h; DeepSeek-V3's MLA: 128 x 192 + 128 x 128."""
        return self.q_dim + self.v_dim

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def dense_mlp_params(self) -> int:
        """Weights of a dense-first layer's MLP (DeepSeek-V3's first three), biases aside."""
        return self.mlp_matrices * self.hidden * (self.dense_ffn_hidden or self.ffn_hidden)

    @property
    def routed_per_token(self) -> float:
        """Expert MLPs one token's work runs through per MoE layer: top_k routed (times the padding to
        capacity) plus the shared ones."""
        return self.top_k * max(1.0, self.capacity_factor) + self.shared_experts

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def ffn_ratio(self) -> float:
        """ffn_hidden / hidden: 4 for GPT, 3.5 for Llama 3 8B."""
        return self.ffn_hidden / self.hidden

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one expert's MLP: 3 when gated (gate, up, down), else 2."""
        return 3 if self.gated_mlp else 2

    # --- parameter counts (elements) ------------------------------------------------------------
    @cached_property
    def attention_matmul_params(self) -> int:
        """Projection weights of one layer's attention (Q, K, V, out). MLA (DeepSeek-V2 section 2.1.2-3): Q
        down (h x q_lora) and up (q_lora x heads (nope + rope)), KV down (h x (kv_lora + rope)) and up
        (kv_lora x heads (nope + v)), out (heads v x h)."""
        h = self.hidden
        if not self.is_mla:
            return h * (self.q_dim + 2 * self.kv_dim) + self.v_dim * h
        q = self.q_lora_rank * (h + self.q_dim) if self.q_lora_rank else h * self.q_dim
        kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank * (
            self.heads * self.head_dim + self.v_dim
        )
        return q + kv + self.v_dim * h

    @cached_property
    def attention_params(self) -> int:
        """Q, K, V and output projections of one layer, with their biases if any (MLA: and its two latent
        RMSNorms)."""
        h, kv = self.hidden, self.kv_dim
        latent_norms = self.q_lora_rank + self.kv_lora_rank
        return self.attention_matmul_params + latent_norms + ((self.q_dim + 2 * kv) + h if self.biases else 0)

    @cached_property
    def expert_params(self) -> int:
        """One expert's MLP (the whole MLP of a dense layer), with biases if any."""
        h, f = self.hidden, self.ffn_hidden
        weights = self.mlp_matrices * h * f
        return weights + ((self.mlp_matrices - 1) * f + h if self.biases else 0)

    @property
    def norm_params(self) -> int:
        """One normalisation layer: scale (and bias for LayerNorm)."""
        return 2 * self.hidden if self.norm == LAYERNORM else self.hidden

    @cached_property
    def router_params(self) -> int:
        return self.hidden * self.experts if self.is_moe else 0

    @cached_property
    def dense_layer_params(self) -> int:
        """Parameters of one (MoE) layer that every data-parallel rank replicates (not the routed experts):
        attention, norms, router and the shared experts."""
        return (
            self.attention_params + 2 * self.norm_params + self.router_params + self.shared_experts * self.expert_params
        )

    @cached_property
    def layer_params(self) -> int:
        """All parameters of one transformer layer (of an MoE layer, the largest, when some are dense)."""
        return self.dense_layer_params + self.experts * self.expert_params

    @cached_property
    def active_layer_params(self) -> int:
        """Parameters one token passes through in a layer (top_k experts)."""
        return self.dense_layer_params + self.top_k * self.expert_params

    @cached_property
    def _dense_first_layer_params(self) -> int:
        """One of the leading dense layers of an MoE model: attention, norms, a dense MLP."""
        mlp = self.dense_mlp_params + (
            (self.mlp_matrices - 1) * (self.dense_ffn_hidden or self.ffn_hidden) + self.hidden if self.biases else 0
        )
        return self.attention_params + 2 * self.norm_params + mlp

    @cached_property
    def matmul_params_per_token(self) -> float:
        """Weights of one layer that one token multiplies: attention + top_k and shared experts + router,
        averaged over the layers when the first ones are dense.

        Biases and norms are elementwise work, not matmuls, and are excluded from FLOP counts."""
        experts = (self.top_k + self.shared_experts) * self.mlp_matrices * self.hidden * self.ffn_hidden
        if not self.is_moe:
            return self.attention_matmul_params + experts
        moe = experts + self.router_params
        mlp = (self.moe_layers * moe + self.dense_layers * self.dense_mlp_params) / self.layers
        return self.attention_matmul_params + mlp

    @cached_property
    def embedding_params(self) -> int:
        """Token table plus learned position table (if any)."""
        return self.vocab * self.hidden + self.max_positions * self.hidden

    @cached_property
    def output_params(self) -> int:
        """Final norm plus the output projection when it is not tied to the token table."""
        return self.norm_params + (0 if self.tied_embeddings else self.vocab * self.hidden)

    @cached_property
    def total_params(self) -> int:
        layers = self.moe_layers * self.layer_params if self.is_moe else self.layers * self.layer_params
        dense_first = self.dense_layers * self._dense_first_layer_params if self.is_moe else 0
        return layers + dense_first + self.embedding_params + self.output_params

    @cached_property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: top_k of the experts)."""
        if not self.is_moe:
            return self.total_params
        dense_first = self.dense_layers * self._dense_first_layer_params
        return self.moe_layers * self.active_layer_params + dense_first + self.embedding_params + self.output_params

    # --- I/O ----------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "--model-json") -> ModelSpec:
        """A model from a JSON object: every key checked for type and bounds (``MODEL_BOUNDS``)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            shown = ", ".join(repr(k)[:40] for k in unknown[:5])
            raise PlanError(f"{source}: unknown keys {shown}; the keys are {', '.join(sorted(known))}")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise PlanError(f"{source}: missing keys {', '.join(missing)} (docs/planner.md, --model-json)")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key in MODEL_BOUNDS:
                low, high = MODEL_BOUNDS[key]
                values[key] = inputs.check_integer(source, key, value, low, high)
            elif key in _FLOATS:
                low_f, high_f = _FLOATS[key]
                if isinstance(value, bool) or not isinstance(value, int | float) or not low_f <= value <= high_f:
                    raise PlanError(
                        f"{source}: {key} must be a number from {low_f:g} to {high_f:g}, got {json.dumps(value)[:60]}"
                    )
                values[key] = float(value)
            elif key in _FLAGS:
                if not isinstance(value, bool):
                    raise PlanError(f"{source}: {key} must be true or false, got {json.dumps(value)[:60]}")
                values[key] = value
            else:
                values[key] = inputs.check_string(source, key, value)
        try:
            return cls(**values)
        except PlanError as error:
            raise PlanError(f"{source}: {error}") from None

    @classmethod
    def from_json(cls, path: str | Path) -> ModelSpec:
        """Read the ``--model-json`` file: keys as in the CLI contract (experts/top_k optional)."""
        return cls.from_dict(inputs.read_json_object(path, "model"), f"--model-json {str(path)!r}")


_REQUIRED = ("name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "gated_mlp", "tied_embeddings")
_FLAGS = ("gated_mlp", "tied_embeddings", "biases", "dropout", "causal")
_FLOATS = {"capacity_factor": (0.0, 64.0)}
MODEL_BOUNDS: dict[str, tuple[int, int]] = {
    "layers": (1, 10_000),
    "hidden": (1, 1 << 20),
    "heads": (1, 1 << 16),
    "kv_heads": (1, 1 << 16),
    "ffn_hidden": (1, 1 << 22),
    "vocab": (1, 1 << 24),
    "experts": (1, 1 << 14),
    "top_k": (1, 1 << 14),
    "max_positions": (0, inputs.MAX_SEQ_LEN),
    "head_dim": (0, 1 << 16),
    "kv_lora_rank": (0, 1 << 20),
    "q_lora_rank": (0, 1 << 20),
    "qk_rope_head_dim": (0, 1 << 16),
    "v_head_dim": (0, 1 << 16),
    "shared_experts": (0, 1 << 10),
    "dense_layers": (0, 10_000),
    "dense_ffn_hidden": (0, 1 << 22),
}
"""Whole-number keys and their bounds: 100x the largest published dense and MoE shapes (Llama 3
405B: 126 layers, hidden 16,384, 128k vocab; DeepSeek-V3: 256 routed experts)."""


def _gpt(name: str, layers: int, hidden: int, heads: int, seq_len: int = 2048, vocab: int = 51200) -> ModelSpec:
    """GPT-2/3 style (Narayanan Table 1): 4h GeLU MLP, biases, LayerNorm, learned positions, tied."""
    return ModelSpec(
        name,
        layers,
        hidden,
        heads,
        heads,
        4 * hidden,
        vocab,
        gated_mlp=False,
        tied_embeddings=True,
        biases=True,
        norm=LAYERNORM,
        max_positions=seq_len,
        dropout=True,
    )


def _llama(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    ffn: int,
    vocab: int = 128256,
    experts: int = 1,
    top_k: int = 1,
) -> ModelSpec:
    """Llama / Mixtral style: SwiGLU, no biases, RMSNorm, rotary positions, untied output layer."""
    return ModelSpec(
        name,
        layers,
        hidden,
        heads,
        kv_heads,
        ffn,
        vocab,
        gated_mlp=True,
        tied_embeddings=False,
        experts=experts,
        top_k=top_k,
    )


# Narayanan et al. 2021 Table 1 (V = 51,200, s = 2048); names carry the published parameter count.
NARAYANAN_TABLE1_MODELS: tuple[ModelSpec, ...] = (
    _gpt("gpt-1.7b", 24, 2304, 24),
    _gpt("gpt-3.6b", 30, 3072, 32),
    _gpt("gpt-7.5b", 36, 4096, 32),
    _gpt("gpt-18.4b", 40, 6144, 48),
    _gpt("gpt-39.1b", 48, 8192, 64),
    _gpt("gpt-76.1b", 60, 10240, 80),
    _gpt("gpt-145.6b", 80, 12288, 96),
    _gpt("gpt-310.1b", 96, 16384, 128),
    _gpt("gpt-529.6b", 105, 20480, 128),
    _gpt("gpt-1008b", 128, 25600, 160),
)

MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        *NARAYANAN_TABLE1_MODELS,
        _gpt("gpt3-175b", 96, 12288, 96),  # Brown et al. 2020 Table 2.1
        _llama("llama3-8b", 32, 4096, 32, 8, 14336),  # Llama 3 herd paper (arXiv 2407.21783) Table 3
        _llama("llama3-70b", 80, 8192, 64, 8, 28672),
        _llama("llama3-405b", 126, 16384, 128, 8, 53248),
        # Touvron et al. 2023 (Llama 2, arXiv 2307.09288) Table 1 / released configs: MHA for 7B/13B.
        _llama("llama2-7b", 32, 4096, 32, 32, 11008, vocab=32000),
        _llama("llama2-13b", 40, 5120, 40, 40, 13824, vocab=32000),
        _llama("llama2-70b", 80, 8192, 64, 8, 28672, vocab=32000),
        _llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, vocab=32000, experts=8, top_k=2),  # arXiv 2401.04088
        # DeepSeek-V3 (arXiv 2412.19437; deepseek-ai/DeepSeek-V3 config.json): MLA, 1 shared + 256 routed experts
        # of 2,048, top 8, the first 3 layers dense (18,432). 671B total, 37B active (the 14B multi-token
        # prediction module is not counted, as the report's 671B does not count it).
        ModelSpec(
            "deepseek-v3",
            61,
            7168,
            128,
            128,
            2048,
            129280,
            gated_mlp=True,
            tied_embeddings=False,
            experts=256,
            top_k=8,
            head_dim=128,
            kv_lora_rank=512,
            q_lora_rank=1536,
            qk_rope_head_dim=64,
            v_head_dim=128,
            shared_experts=1,
            dense_layers=3,
            dense_ffn_hidden=18432,
        ),
        # Qwen3-235B-A22B (Qwen/Qwen3-235B-A22B config.json; Qwen3 technical report arXiv 2505.09388 Table 2):
        # head_dim 128 on hidden 4,096 with 64 query and 4 KV heads, 128 experts of 1,536, top 8. The per-head
        # q/k RMSNorm (2 x 128 per layer) is left out: 24k parameters.
        ModelSpec(
            "qwen3-235b-a22b",
            94,
            4096,
            64,
            4,
            1536,
            151936,
            gated_mlp=True,
            tied_embeddings=False,
            experts=128,
            top_k=8,
            head_dim=128,
        ),
        # GPT-OSS-120B (openai/gpt-oss-120b config.json; model card arXiv 2508.10925): head_dim 64 on hidden
        # 2,880, 64 query and 8 KV heads, biases, 128 experts of 2,880, top 4. Its alternating 128-token sliding
        # window and attention sinks are not modelled (attention priced as full causal).
        ModelSpec(
            "gpt-oss-120b",
            36,
            2880,
            64,
            8,
            2880,
            201088,
            gated_mlp=True,
            tied_embeddings=False,
            experts=128,
            top_k=4,
            head_dim=64,
            biases=True,
        ),
        # BioNeMo MolMIM-small (6-layer encoder + 6-layer decoder, hidden 512, 8 heads, 128 SMILES tokens,
        # regex vocabulary 523) as one 12-layer dense stack: the decoder's cross-attention is not modelled.
        _gpt("molmim-70m", 12, 512, 8, seq_len=128, vocab=523),
        # Devlin et al. 2018; the 2-row token-type table and the pooler are not modelled.
        ModelSpec(
            "bert-large",
            24,
            1024,
            16,
            16,
            4096,
            30522,
            gated_mlp=False,
            tied_embeddings=True,
            biases=True,
            norm=LAYERNORM,
            max_positions=512,
            dropout=True,
            causal=False,
        ),
    )
}


def get_model(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(MODELS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PlanError(f"unknown model {name!r}{hint}; fix: pass --model one of {', '.join(MODELS)}") from None
