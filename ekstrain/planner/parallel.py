"""A parallel layout and the rules that make it valid: the one place divisibility is decided.

Rank order is Megatron-core's default ``tp-cp-ep-dp-pp`` (tensor parallel innermost): a TP group is
``tp`` consecutive ranks, a CP group spans ``tp*cp``, a DP group ``tp*cp*dp``, and pipeline
neighbours are ``tp*cp*dp`` ranks apart. EP is carved out of DP (as in Megatron-core and DeepSpeed-MoE):
experts are split ``ep`` ways and each expert is replicated ``dp*cp/ep`` times.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import Fleet
from ekstrain.planner.models import ModelSpec
from ekstrain.planner.training import TrainingSpec

NONE = "none"
SELECTIVE = "selective"
FULL = "full"
RECOMPUTE_MODES = (NONE, SELECTIVE, FULL)
SELECTIVE_OP = "selective-op"
"""torchtitan's selective per-op activation checkpointing (``activation_checkpoint.mode = "selective"``,
``selective_ac_option = "op"``): it saves the outputs of matmuls and SDPA "except every second mm", so of a
Llama layer's seven mms (wq, wk, wv, wo, w1, w3, w2 in call order) wk, wo and w3 are recomputed in the
backward, with every op that is not an mm or SDPA (norms, RoPE, SiLU, products) (pytorch/torchtitan
torchtitan/parallelisms/parallelize_llama.py, ``_custom_policy``, commit 157a12c5, Apr 2024). The layer
stores what no recompute stores less those three outputs. Not searched and not a CLI choice: the published
torchtitan runs that used it are recorded with it (calibration.py)."""
EVERY_SECOND_BLOCK = "full-every-2nd"
"""Full recompute of every second transformer block, the others keeping all their activations:
foundation-model-stack/fms-fsdp ``fms_fsdp/policies/ac_handler.py`` as of commit 5e522b4 (Mar 2024),
``apply_fsdp_checkpointing(model, every_xth_item)`` wraps every ``every_xth_item``-th ``LLaMABlock`` in a
non-reentrant checkpoint wrapper (its README's "Selective AC"). Priced as half the layers recomputing their
forward and storing only their input, half storing everything. Not searched and not a CLI choice: the
published runs that used it are recorded with it (calibration.py)."""
ACCEPTED_RECOMPUTE = (*RECOMPUTE_MODES, SELECTIVE_OP, EVERY_SECOND_BLOCK)
ZERO_STAGES = (0, 1, 2, 3)
MAX_SHORT_STAGES = 2
"""Layers that do not divide by pp are absorbed by making the first and last stage one layer
shorter (Llama 3 405B: 126 layers on 16 stages of 8, 7 at both ends); when more are short, the two end
stages share what the full middle stages leave (ParallelConfig.stage_layers)."""


@dataclass(frozen=True)
class ParallelConfig:
    tp: int
    pp: int
    dp: int
    micro_batch: int
    cp: int = 1
    ep: int = 1
    vpp: int = 1
    """Virtual pipeline chunks per rank (Megatron interleaved 1F1B); 1 = plain 1F1B."""
    zero: int = 0
    """0 = plain DP; 1/2/3 = ZeRO stage (Megatron distributed optimizer = 1, FSDP full shard = 3)."""
    recompute: str = NONE
    sequence_parallel: bool = False
    offload_optimizer: bool = False
    """ZeRO-Offload: optimizer states and the update live on the host (needs zero >= 1)."""

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    def degrees(self) -> dict[str, int]:
        """The integer layout knobs, under the names of the JSON plan contract."""
        return {
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "cp": self.cp,
            "ep": self.ep,
            "vpp": self.vpp,
            "micro_batch": self.micro_batch,
        }

    @property
    def grad_reduce_ranks(self) -> int:
        """Ranks holding a replica of a dense weight: CP ranks see different tokens of the same
        sequences, so gradients are reduced and ZeRO-sharded over dp * cp."""
        return self.dp * self.cp

    @property
    def expert_replicas(self) -> int:
        return self.grad_reduce_ranks // self.ep

    def stage_layers(self, layers: int) -> tuple[int, int]:
        """(layers on the first and last stage, layers on each full stage) of one pipeline rank.

        Up to MAX_SHORT_STAGES layers short, the two end stages are each one layer shorter. More short (DeepSeek-V3:
        61 layers on 16 stages) and the middle stages hold ``full`` while the two ends share the rest, the first
        taking the larger half: Megatron-core's ``--decoder-first-pipeline-num-layers`` and
        ``--decoder-last-pipeline-num-layers`` (megatron/training/arguments.py, core_v0.15.0rc7-2333-gd98e8a64;
        ``TransformerConfig.num_layers_in_first/last_pipeline_stage``). Both ends are then priced at the first's
        count: at most one layer more than the last stage holds."""
        full = -(-layers // self.pp)
        short = full * self.pp - layers
        if short <= MAX_SHORT_STAGES or self.pp < 3:
            return full - (1 if short else 0), full
        rest = layers - full * (self.pp - 2)
        return -(-rest // 2), full

    def end_stage_layers(self, layers: int) -> tuple[int, int]:
        """(layers on the first stage, layers on the last stage) as launched (emit.py's first/last-stage flags)."""
        edge, full = self.stage_layers(layers)
        if self.pp == 1:
            return full, full
        return edge, layers - edge - full * (self.pp - 2)

    def validate(self, model: ModelSpec, fleet: Fleet, training: TrainingSpec) -> None:
        """Raise PlanError naming the first rule this layout breaks."""
        for key, value in self.degrees().items():
            if value < 1:
                raise PlanError(f"{key} must be >= 1, got {value}")
        if self.ranks != fleet.ranks:
            raise PlanError(
                f"tp*pp*dp*cp = {self.tp}*{self.pp}*{self.dp}*{self.cp} = {self.ranks} "
                f"but the fleet has {fleet.ranks} ranks ({fleet.nodes} x {fleet.ranks_per_node})"
            )
        if self.tp > fleet.ranks_per_node and self.tp % fleet.ranks_per_node:
            # TP wider than a node spans whole nodes (Megatron's rank order puts TP innermost), its collectives
            # then cross the network (comm.Links.layout); the search keeps TP inside a node, evaluate prices both.
            raise PlanError(
                f"tp {self.tp} exceeds the {fleet.ranks_per_node} ranks of one node and does not span whole nodes: "
                f"use a tp that divides {fleet.ranks_per_node} or is a multiple of it"
            )
        # tp may exceed kv_heads when it is a multiple of them: each K/V head is then replicated
        # tp/kv_heads times (neuronx-distributed's GQA replication; Llama 2 70B runs at TP32 on trn1).
        if model.heads % self.tp or (model.kv_heads % self.tp and self.tp % model.kv_heads):
            raise PlanError(
                f"tp {self.tp} must divide heads {model.heads} and divide or be a multiple of kv_heads {model.kv_heads}"
            )
        if model.ffn_hidden % self.tp or model.vocab % self.tp or (model.dense_ffn_hidden % self.tp):
            raise PlanError(f"tp {self.tp} does not divide ffn_hidden {model.ffn_hidden} and vocab {model.vocab}")
        if training.seq_len % (2 * self.cp) and self.cp > 1:
            # Megatron's load-balanced causal CP cuts each sequence into 2*cp chunks.
            raise PlanError(f"seq_len {training.seq_len} is not divisible by 2*cp = {2 * self.cp}")
        if self.sequence_parallel and training.seq_len % (self.tp * self.cp):
            raise PlanError(f"sequence parallelism needs seq_len divisible by tp*cp = {self.tp * self.cp}")
        if self.ep > 1 and not model.is_moe:
            raise PlanError(f"ep {self.ep} needs an MoE model; {model.name} is dense")
        if model.experts % self.ep or self.grad_reduce_ranks % self.ep:
            raise PlanError(f"ep {self.ep} must divide experts {model.experts} and dp*cp {self.grad_reduce_ranks}")
        if self.pp > model.layers:
            raise PlanError(f"pp {self.pp} exceeds the {model.layers} layers")
        edge, full = self.stage_layers(model.layers)
        short = full * self.pp - model.layers
        first, last = self.end_stage_layers(model.layers)
        if (short and self.pp < 2) or min(first, last) < 1 or (short > MAX_SHORT_STAGES and self.pp < 3):
            raise PlanError(
                f"{model.layers} layers do not split into {self.pp} stages "
                f"(the middle stages hold {full} each, leaving the first and last stage {first} and {last})"
            )
        if short > MAX_SHORT_STAGES and self.vpp > 1:
            # Uneven ends beyond one layer short are launched with --decoder-first/last-pipeline-num-layers, which
            # the planner prices without interleaving (the chunks of the end stages would differ in size).
            raise PlanError(
                f"{model.layers} layers over {self.pp} stages leave the end stages {first} and {last} layers: "
                "priced without interleaving; use vpp 1 or a pp whose stages are at most one layer short"
            )
        if self.vpp > 1 and (self.pp < 2 or full % self.vpp or (short == 1 and full == self.vpp)):
            # Uneven stages stay expressible: each rank runs vpp chunks of full/vpp layers and the
            # first chunk of the first stage and the last chunk of the last stage are one layer short
            # (Llama 3 405B: 126 layers, pp 16, vpp 2 -> chunks of 4, the two end chunks of 3). This is
            # Meta's memory-balanced split (arXiv 2407.21783 section 3.3.2: "we reduce one Transformer
            # layer each from the first and the last stages ... the first model chunk on the first stage
            # has only the embedding, and the last model chunk on the last stage has only output
            # projection and loss"), Megatron-core's --account-for-embedding-in-pipeline-split and
            # --account-for-loss-in-pipeline-split: with chunks of one layer (vpp = layers per stage) the
            # two end chunks hold no transformer layer at all.
            raise PlanError(
                f"vpp {self.vpp} needs pp >= 2 and the {full} layers of a full stage divisible by vpp "
                f"(into chunks of 2 or more when only one end stage is a layer short)"
            )
        if training.global_batch % (self.dp * self.micro_batch):
            raise PlanError(
                f"global batch {training.global_batch} is not divisible by dp*micro_batch = "
                f"{self.dp}*{self.micro_batch}"
            )
        if self.vpp > 1 and self.grad_accum(training) % self.pp:
            # Megatron's interleaved schedule runs micro-batches in groups of pp.
            raise PlanError(
                f"vpp {self.vpp} needs micro-batches per step ({self.grad_accum(training)}) divisible by pp {self.pp}"
            )
        if self.zero not in ZERO_STAGES:
            raise PlanError(f"zero must be one of {ZERO_STAGES}, got {self.zero}")
        if self.recompute not in ACCEPTED_RECOMPUTE:
            raise PlanError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {self.recompute!r}")
        if self.sequence_parallel and self.tp == 1:
            raise PlanError("sequence parallelism needs tp > 1")
        if self.offload_optimizer and self.zero == 0:
            raise PlanError("optimizer offload needs zero >= 1")

    def grad_accum(self, training: TrainingSpec) -> int:
        """Micro-batches per pipeline per step (m in Narayanan's bubble (p-1)/m)."""
        return training.global_batch // (self.dp * self.micro_batch)
