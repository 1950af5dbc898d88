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
    """Decoder (causal) self-attention; False for encoders (BERT), whose attention is the full square."""
    """Dropout layers in training (GPT-2/3, BERT: 0.1). Llama 1-3 and Mixtral pre-train without
    dropout (Touvron et al. 2023, arXiv 2302.13971; the released configs' attention_dropout 0.0),
    so no masks are stored: Korthikanti's 34 becomes 32, the 5as/h scores term 2as/h."""

    def __post_init__(self) -> None:
        positive = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "experts", "top_k")
        for key in positive:
            if getattr(self, key) < 1:
                raise PlanError(f"model {self.name!r}: {key} must be >= 1, got {getattr(self, key)}")
        if self.hidden % self.heads:
            raise PlanError(f"model {self.name!r}: hidden {self.hidden} is not divisible by heads {self.heads}")
        if self.heads % self.kv_heads:
            raise PlanError(f"model {self.name!r}: heads {self.heads} not divisible by kv_heads {self.kv_heads}")
        if self.top_k > self.experts:
            raise PlanError(f"model {self.name!r}: top_k {self.top_k} exceeds experts {self.experts}")
        if self.norm not in (LAYERNORM, RMSNORM):
            raise PlanError(f"model {self.name!r}: norm must be {LAYERNORM!r} or {RMSNORM!r}")

    # --- shapes -------------------------------------------------------------------------------
    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        """Width of K (and of V): kv_heads * head_dim; equals hidden without GQA."""
        return self.kv_heads * self.head_dim

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
    def attention_params(self) -> int:
        """Q, K, V and output projections of one layer, with their biases if any."""
        h, kv = self.hidden, self.kv_dim
        weights = h * (h + 2 * kv) + h * h
        return weights + ((h + 2 * kv) + h if self.biases else 0)

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
        """Parameters of one layer that every data-parallel rank replicates (not the experts)."""
        return self.attention_params + 2 * self.norm_params + self.router_params

    @cached_property
    def layer_params(self) -> int:
        """All parameters of one transformer layer."""
        return self.dense_layer_params + self.experts * self.expert_params

    @cached_property
    def active_layer_params(self) -> int:
        """Parameters one token passes through in a layer (top_k experts)."""
        return self.dense_layer_params + self.top_k * self.expert_params

    @cached_property
    def matmul_params_per_token(self) -> int:
        """Weights of one layer that one token multiplies: attention + top_k experts + router.

        Biases and norms are elementwise work, not matmuls, and are excluded from FLOP counts."""
        h, kv = self.hidden, self.kv_dim
        return h * (h + 2 * kv) + h * h + self.top_k * self.mlp_matrices * h * self.ffn_hidden + self.router_params

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
        return self.layers * self.layer_params + self.embedding_params + self.output_params

    @cached_property
    def active_params(self) -> int:
        """Parameters touched per token (MoE: top_k of the experts)."""
        return self.layers * self.active_layer_params + self.embedding_params + self.output_params

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
