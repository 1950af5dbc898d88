"""Narayanan et al. 2021 Table 1 (arXiv 2104.04473): the published runs the time model is fitted to.

The runs used Selene (DGX A100 80 GB: 8 GPUs, NVSwitch, 8 x 200 Gb/s HDR InfiniBand per node),
full activation recomputation, no sequence parallelism, and TFLOP/s counted with Eq. 3 (hardware
FLOPs including the recomputed forward). The paper does not print micro-batch sizes; we assume 1
and the plain (non-interleaved) 1F1B schedule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from statistics import mean
from typing import Any

from ekstrain.facts import catalog
from ekstrain.planner.attention import FA_TRITON
from ekstrain.planner.efficiency import GENERATIONS, MEGATRON_2021, Efficiency
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import BF16, FP8, Fleet
from ekstrain.planner.models import NARAYANAN_TABLE1_MODELS, ModelSpec, _gpt, _llama, get_model
from ekstrain.planner.parallel import EVERY_SECOND_BLOCK, FULL, NONE, SELECTIVE_OP
from ekstrain.planner.perf import step_flops
from ekstrain.planner.plan import Plan, evaluate
from ekstrain.planner.training import (
    UNFUSED_ACTIVATION,
    UNFUSED_LAYOUT,
    UNFUSED_NORM,
    UNFUSED_ROPE,
    UNFUSED_ROPE_MATRIX,
    TrainingSpec,
)

SEQ_LEN = 2048
GPUS_PER_NODE = 8


def selene(nodes: int) -> Fleet:
    """DGX A100 80 GB as in Narayanan 2021 section 5 (A100 figures as ekstrain.facts.catalog.A100_80)."""
    return Fleet(
        "selene-dgx-a100",
        nodes,
        GPUS_PER_NODE,
        peak_tflops_bf16=312,
        hbm_gib=80,
        hbm_gbytes_per_s=2039,
        intra_node_gbytes_per_s=600,
        generation="a100",
        inter_node_gbits_per_s=8 * 200,
    )


@dataclass(frozen=True)
class Table1Row:
    model: ModelSpec
    tp: int
    pp: int
    gpus: int
    global_batch: int
    published_tflops_per_gpu: float
    """Hardware TFLOP/s per GPU as printed (Eq. 3 convention, includes recompute)."""

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    def plan(self, efficiency: Efficiency = MEGATRON_2021) -> Plan:
        return evaluate(
            self.model,
            selene(self.gpus // GPUS_PER_NODE),
            self.global_batch,
            SEQ_LEN,
            tp=self.tp,
            pp=self.pp,
            dp=self.dp,
            micro_batch=1,
            recompute=FULL,
            flash_attention=False,
            efficiency=efficiency,
        )

    def error(self, efficiency: Efficiency = MEGATRON_2021) -> float:
        """Relative error of the predicted hardware TFLOP/s per GPU against the published figure."""
        return self.plan(efficiency).hardware_tflops_per_gpu / self.published_tflops_per_gpu - 1


_PUBLISHED = (
    (1, 1, 32, 512, 137),
    (2, 1, 64, 512, 138),
    (4, 1, 128, 512, 142),
    (8, 1, 256, 1024, 135),
    (8, 2, 512, 1536, 138),
    (8, 4, 1024, 1792, 140),
    (8, 8, 1536, 2304, 148),
    (8, 16, 1920, 2160, 155),
    (8, 35, 2520, 2520, 163),
    (8, 64, 3072, 3072, 163),
)
TABLE1: tuple[Table1Row, ...] = tuple(
    Table1Row(m, *row) for m, row in zip(NARAYANAN_TABLE1_MODELS, _PUBLISHED, strict=True)
)


def report(efficiency: Efficiency = MEGATRON_2021) -> str:
    """Markdown table of predicted vs published throughput, one line per Table 1 row."""
    lines = [
        "| Model | TP | PP | GPUs | Batch | Published TFLOP/s | Predicted | Error | Predicted MFU | Memory GiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in TABLE1:
        plan = row.plan(efficiency)
        lines.append(
            f"| {row.model.name} | {row.tp} | {row.pp} | {row.gpus} | {row.global_batch} | "
            f"{row.published_tflops_per_gpu:.0f} | {plan.hardware_tflops_per_gpu:.1f} | "
            f"{row.error(efficiency):+.1%} | {plan.mfu:.1%} | {plan.memory.total / 2**30:.1f} |"
        )
    return "\n".join(lines)


# --- per-generation calibration ----------------------------------------------------------------
FIT = "fit"
VALIDATION = "validation"


@dataclass(frozen=True)
class Measurement:
    """One published training run, as printed where the source prints it; what it leaves out
    (micro-batch, recompute, schedule) is stated in ``assumed``."""

    generation: str
    split: str
    """``fit`` rows set the generation's matmul efficiency; ``validation`` rows are never fitted."""
    source: str
    model: str
    instance: str
    gpus: int
    global_batch: int
    seq_len: int
    tp: int
    pp: int
    cp: int
    vpp: int
    micro_batch: int
    zero: int
    recompute: str
    precision: str
    framework: str
    published_tokens_per_s_per_device: float
    """Tokens per second per GPU (per Trainium chip), as published or converted as ``assumed`` says."""
    assumed: str = ""
    attention_kernel: str | None = None
    """The attention kernel the source ran where it is not its framework's default (attention.py)."""
    unfused: tuple[str, ...] = ()
    """Elementwise ops the source's stack ran in eager PyTorch (training.UNFUSED_OPS; perf.elementwise_passes),
    read from its model code and config, recorded before its errors were computed."""

    @property
    def legacy(self) -> bool:
        """Megatron-LM 2021 on Selene: no DP overlap, no FlashAttention (as Table 1)."""
        return self.instance == SELENE

    @property
    def nodes(self) -> int:
        per_node = (
            GPUS_PER_NODE
            if self.instance in (SELENE, MOSAICML_A100, IBM_H100, META_H100)
            else HF_A100_PER_NODE
            if self.instance == HF_A100
            else catalog.get(self.instance).accelerator_count
        )
        return self.gpus // per_node

    def plan(self, efficiency: Efficiency | None = None) -> Plan:
        if self.legacy:
            # 2021 software: Megatron-LM did not overlap DP traffic; DeepSpeed ZeRO-3 prefetched.
            fleet = selene(self.nodes)
            efficiency = replace(
                efficiency or MEGATRON_2021, dp_overlap=self.framework == _DEEPSPEED, deepspeed_2021=True
            )
        elif self.instance == MOSAICML_A100:
            fleet = replace(selene(self.nodes), name=MOSAICML_A100)
        elif self.instance == IBM_H100:
            fleet = replace(Fleet.from_instance("p5.48xlarge", self.nodes), name=IBM_H100, inter_node_gbits_per_s=800)
        elif self.instance == META_H100:
            fleet = replace(
                Fleet.from_instance("p5.48xlarge", self.nodes),
                name=META_H100,
                peak_tflops_bf16=META_H100_PEAK,
                peak_tflops_fp8=2 * META_H100_PEAK,
                hbm_gib=94,
                hbm_gbytes_per_s=2400,
            )
        elif self.instance == HF_A100:
            fleet = replace(selene(1), name=HF_A100, accelerators_per_node=HF_A100_PER_NODE, nodes=self.nodes)
        else:
            fleet = Fleet.from_instance(self.instance, self.nodes)
        dp = fleet.ranks // (self.tp * self.pp * self.cp)
        return evaluate(
            model_for(self.model, self.seq_len),
            fleet,
            self.global_batch,
            self.seq_len,
            tp=self.tp,
            pp=self.pp,
            dp=dp,
            cp=self.cp,
            vpp=self.vpp,
            micro_batch=self.micro_batch,
            recompute=self.recompute,
            sequence_parallel=self.tp > 1 and not self.legacy,  # 2021 Megatron-LM had no SP
            zero=self.zero,
            precision=self.precision,
            framework=self.framework,
            flash_attention=not self.legacy,
            efficiency=efficiency,
            attention_kernel=self.attention_kernel,
            unfused=self.unfused,
        )

    def error(self, efficiency: Efficiency | None = None) -> float:
        predicted = self.plan(efficiency).tokens_per_s / self.gpus
        return predicted / self.published_tokens_per_s_per_device - 1


_LLAMA3 = "Llama 3 herd paper (arXiv 2407.21783) Table 4"
_NEMO_2407 = "NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, FP8)"
_BRIDGE = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md"
_BRIDGE_NOW = "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md"
_TITAN_A100 = "pytorch/torchtitan docs/performance.md (64 A100 80GB, FSDP2)"
_TITAN_H200 = "pytorch/torchtitan benchmarks/llama3_8b_h200_2025-06_torchtitan.md"
_NEURON = "aws-neuron-sdk general/benchmarks/trn1/training_data_decoder.csv (Neuron 2.15/2.16)"
_NEURON_220 = "aws-neuron-sdk general/benchmarks/trn1/training_data_decoder.csv (Neuron 2.20, commit 5ccac8f3)"
_NEURON_224 = "aws-neuron-sdk general/benchmarks/trn1/training_data_decoder.csv (Neuron 2.24, commit 90a7fe4b)"
_FOUNDRY = "mosaicml/llm-foundry scripts/train/benchmarking/README.md"
_FOUNDRY_A100 = _FOUNDRY + " A100 80GB (FSDP)"
_FOUNDRY_H100 = _FOUNDRY + " H100 80GB BF16 (FSDP)"
_FOUNDRY_H100_FP8 = _FOUNDRY + " H100 80GB FP8 (FSDP)"
_TITAN_H100_2412 = "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md (BF16 rows)"
_HF_DS_FSDP = "huggingface/blog deepspeed-to-fsdp-and-back.md Table 3 (2024-06-13, 4 A100)"
_FMS = "foundation-model-stack/fms-fsdp README.md"
_FMS_MAR24 = _FMS + " (commit 5e522b4, 2024-03-13, eager)"
_FMS_MAY24 = _FMS + " (commit ed74fd5, 2024-05-09, torch.compile)"
_TITAN_EAGER = (UNFUSED_ROPE, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
_TITAN_EAGER_RMSNORM = (UNFUSED_NORM, *_TITAN_EAGER)
"""torchtitan as of its A100 page (commit 157a12c5, Apr 2024; ``compile = false`` in every train config):
torchtitan/models/llama/model.py runs RoPE through fp32 complex numbers, ``F.silu(self.w1(x)) * self.w3(x)``,
``repeat_kv`` and SDPA's output ``.contiguous()`` as separate kernels. llama3_8b.toml and llama2_13b.toml set
``norm_type = "fused_rmsnorm"`` (its Triton RMSNorm, one kernel each way); llama2_70b.toml and llama3_70b.toml
set ``"rmsnorm"``, torchtitan/models/norms.py's RMSNorm written as tensor ops."""
_FMS_EAGER = (UNFUSED_NORM, UNFUSED_ROPE_MATRIX, UNFUSED_ACTIVATION, UNFUSED_LAYOUT)
"""fms-fsdp's March 2024 rows (eager; ibm-fms as of 2024-03-13, foundation-model-stack commit f29e546d):
``LayerNormParameterized(use_high_precision_pow=True)`` (fms/modules/layernorm.py, RMSNorm as tensor ops),
``RotaryEmbedding.adjusted_qk`` through 2 x 2 fp32 rotation matrices (fms/modules/positions.py),
``GatedLinearUnit``'s ``self.a(self.wg(x)) * self.w1(x)`` (fms/modules/feedforward.py), K/V ``expand(...).flatten``
at GQA and SDPA's output ``.transpose(2, 1).contiguous()`` (fms/modules/attention.py). llm-foundry's MPT
(``low_precision_layernorm`` = one ``F.layer_norm``, which the benchmark's submit_benchmarks.py sets, with FSDP
mixed precision ``PURE``, bf16 activations; one GeLU kernel, learned positions) has nothing a fused stack
would save; the torch.compile rows (fms-fsdp May 2024, torchtitan H200) and the Megatron family none."""
ADDED_IN_V4 = (_NEURON_220, _NEURON_224, _FOUNDRY_A100, _FOUNDRY_H100, _FOUNDRY_H100_FP8)
"""Sources added by the second round of calibration (reports show the first round's sources apart)."""
ADDED_IN_ROUND4 = (_FMS_MAR24, _FMS_MAY24)
"""Sources added by the fourth round of calibration."""
ADDED_IN_ROUND7 = (_TITAN_H100_2412, _HF_DS_FSDP)
"""Sources added by the seventh round (per-step cost, bucketed overlap, DeepSpeed ZeRO-3 from its code): both
validation only, never fitted, roles decided before their errors were computed."""
_MEGATRON = "megatron"
_FSDP = "fsdp"
_DEEPSPEED = "deepspeed"


def _llama3_tokens(tflops: float, seq_len: int) -> float:
    """Meta prints model TFLOP/s per GPU with causal attention counted as half of the square (the
    planner's published MFU convention, perf.py): tokens/s = TFLOP/s / those FLOPs per token."""
    flops = step_flops(get_model("llama3-405b"), TrainingSpec(1, seq_len), NONE)
    return tflops * 1e12 / (flops.model_causal / seq_len)


SELENE = "selene"
IBM_H100 = "ibm-h100-800g"
"""The fms-fsdp README's H100 cluster, "H100 96 GPUs with 800 Gbps": H100 SXM 80 GB nodes (p5's GPU figures)
with 800 Gb/s per node between nodes, as printed (p5 has 3,200)."""
META_H100 = "meta-grand-teton-h100-96gb"
"""torchtitan's Dec 2024 benchmark cluster (benchmarks/llama3_h100_202412_torchtitan.md): Grand Teton hosts of 8 H100
"96GB HBM2e with 2.4 TB/sec", NVLink, "400 Gb/s per GPU" RDMA, "default 500W power limit". The page says its
"peak TFLOPs number is between SXM and NVL, and we don't know its exact value": META_H100_PEAK takes the middle
of that range (SXM 989, NVL 835 dense BF16 TFLOP/s), an assumption; 94 GiB of the 96 GB usable."""
META_H100_PEAK = (989 + 835) / 2
HF_A100 = "hf-blog-4xa100-80gb"
"""The Hugging Face blog's "four A100 GPUs" (IBM's, who ran it: A100 80GB SXM, one node, NVLink)."""
HF_A100_PER_NODE = 4
MOSAICML_A100 = "mosaicml-a100-80gb"
"""MosaicML's A100 80GB nodes (llm-foundry benchmark tables: 8 GPUs, "1600 Gbps node-node interconnect
(RoCE)"): Selene's figures (8 x 200 Gb/s per node), modern software."""


def _mpt(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """MPT as llm-foundry's benchmark sweep ran it (scripts/train/yamls/pretrain/mpt-*.yaml): GPT-style
    4h MLP, vocabulary 50,368, tied embeddings, no dropout; the sweep's models carry biases, LayerNorm
    biases and a learned position table of the run's sequence length (its NumParams column: MPT-7B at
    2048 tokens = 6,658,859,008 = our count exactly, tests/planner/test_calibration.py)."""
    return replace(_gpt(name, layers, hidden, heads, vocab=50368), dropout=False)


CALIBRATION_MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _mpt("mpt-1b", 24, 2048, 16),
        _mpt("mpt-3b", 32, 2560, 20),
        _mpt("mpt-7b", 32, 4096, 32),
        _mpt("mpt-13b", 40, 5120, 40),
        _mpt("mpt-30b", 48, 7168, 56),
        _mpt("mpt-70b", 80, 8192, 64),
        # fms-fsdp's "34b" variant (fms_fsdp/utils/config_utils.py get_model_config, commit 5e522b4): LLaMAConfig
        # with emb_dim 8192, 64 heads, 8 KV heads, 48 layers, hidden_grow_factor 22016/8192, vocab 32,000.
        _llama("fms-llama-34b", 48, 8192, 64, 8, 22016, vocab=32000),
    )
}
"""Models that only calibration rows use (not offered by ``--model``)."""


def model_for(name: str, seq_len: int) -> ModelSpec:
    """A calibration row's model: MPT's learned position table is as long as the run's sequence."""
    if name in CALIBRATION_MODELS:
        return replace(CALIBRATION_MODELS[name], max_positions=seq_len)
    return get_model(name)


def _table2_tokens(model: str, global_batch: int, hardware_tflops: float) -> float:
    """Narayanan Table 2 prints hardware TFLOP/s (Eq. 3, full recompute): tokens/s per GPU."""
    training = TrainingSpec(global_batch, SEQ_LEN, flash_attention=False)
    flops = step_flops(get_model(model), training, FULL)
    return hardware_tflops * 1e12 / (flops.hardware / training.tokens_per_step)


def _neuron(seq_per_s: float, seq_len: int, nodes: int) -> float:
    return seq_per_s * seq_len / (nodes * 16)  # per Trainium chip; 16 chips per trn1.32xlarge


# One row per entry reads as a table: keep the formatter out of it.
# fmt: off
MEASUREMENTS: tuple[Measurement, ...] = (
    # H100, BF16: Llama 3 405B pre-training on Meta's 16K H100 (400 Gb/s per GPU, like p5).
    Measurement("h100", FIT, _LLAMA3, "llama3-405b", "p5.48xlarge", 8192, 2048, 8192, 8, 16, 1, 8, 1, 2,
                "none", "bf16", _MEGATRON, _llama3_tokens(430, 8192),
                "section 3.3.2: the memory-balanced interleaved schedule, one layer per virtual stage (vpp 8: "
                "126 layers + embedding + loss in 16 x 8 slots, the end chunks hold no layer); section 3.3.1: "
                "optimizer states and gradients sharded over DP, weights not (zero 2); no recompute and causal "
                "attention FLOPs are not printed"),
    Measurement("h100", FIT, _LLAMA3, "llama3-405b", "p5.48xlarge", 16384, 2048, 8192, 8, 16, 1, 8, 1, 2,
                "none", "bf16", _MEGATRON, _llama3_tokens(400, 8192), "as above"),
    Measurement("h100", VALIDATION, _LLAMA3, "llama3-405b", "p5.48xlarge", 16384, 128, 131072, 8, 16, 16, 8,
                1, 2, "none", "bf16", _MEGATRON, _llama3_tokens(380, 131072), "as above; 16M tokens/step"),
    # H100, FP8 (NeMo 24.07 fit; Megatron-Bridge 25.09 held out).
    Measurement("h100", FIT, _NEMO_2407, "llama3-8b", "p5.48xlarge", 8, 128, 8192, 1, 1, 2, 1, 1, 1, "none",
                "fp8", _MEGATRON, 12036),
    Measurement("h100", FIT, _NEMO_2407, "llama3-70b", "p5.48xlarge", 64, 128, 8192, 4, 4, 2, 5, 1, 1, "none",
                "fp8", _MEGATRON, 1533),
    Measurement("h100", FIT, _NEMO_2407, "gpt3-175b", "p5.48xlarge", 128, 256, 2048, 4, 8, 1, 6, 1, 1, "none",
                "fp8", _MEGATRON, 726),
    Measurement("h100", FIT, _NEMO_2407, "gpt3-175b", "p5.48xlarge", 512, 2048, 2048, 4, 8, 1, 6, 2, 1, "none",
                "fp8", _MEGATRON, 782),
    # The same table's Llama 2 rows (sequence 4096), recorded with the source's role
    # (fit) before their errors were computed; its Nemotron rows have no model here, its GPT3-5B/20B rows no
    # recorded shape.
    Measurement("h100", FIT, _NEMO_2407, "llama2-7b", "p5.48xlarge", 8, 128, 4096, 1, 1, 1, 1, 1, 1, "none",
                "fp8", _MEGATRON, 16847),
    Measurement("h100", FIT, _NEMO_2407, "llama2-13b", "p5.48xlarge", 16, 128, 4096, 1, 4, 1, 10, 1, 1, "none",
                "fp8", _MEGATRON, 8646),
    Measurement("h100", FIT, _NEMO_2407, "llama2-70b", "p5.48xlarge", 64, 128, 4096, 4, 4, 1, 20, 1, 1, "none",
                "fp8", _MEGATRON, 1707),
    Measurement("h100", VALIDATION, _BRIDGE + " 25.09 DGX-H100", "llama3-8b", "p5.48xlarge", 8, 128, 8192, 1, 1,
                1, 1, 1, 3, "none", "fp8", _MEGATRON, 14079, "FSDP 8 = zero 3"),
    Measurement("h100", VALIDATION, _BRIDGE + " 25.09 DGX-H100", "llama3-70b", "p5.48xlarge", 64, 128, 8192, 4,
                8, 1, 5, 1, 1, "none", "fp8", _MEGATRON, 1619),
    Measurement("h100", VALIDATION, _BRIDGE + " 25.09 DGX-H100", "llama3-405b", "p5.48xlarge", 1024, 512, 8192,
                8, 8, 2, 8, 1, 1, "none", "fp8", _MEGATRON, 302),
    # Never fitted: Megatron-Bridge 25.11's DGX-H100 table (docs/performance-summary.md, "25.11 NeMo
    # Container"), a newer container of the same recipes; FSDP 1 = zero 3.
    Measurement("h100", VALIDATION, _BRIDGE_NOW + " 25.11 DGX-H100", "llama3-8b", "p5.48xlarge", 8, 128, 8192, 1,
                1, 1, 1, 1, 3, "none", "fp8", _MEGATRON, 14451, "FSDP 1 = zero 3"),
    Measurement("h100", VALIDATION, _BRIDGE_NOW + " 25.11 DGX-H100", "llama3-70b", "p5.48xlarge", 64, 128, 8192, 4,
                8, 1, 5, 1, 1, "none", "fp8", _MEGATRON, 1602),
    Measurement("h100", VALIDATION, _BRIDGE_NOW + " 25.11 DGX-H100", "llama3-405b", "p5.48xlarge", 1024, 512,
                8192, 8, 8, 2, 8, 1, 1, "none", "fp8", _MEGATRON, 292),
    # H200: held out entirely; it runs on H100's fitted constants.
    # The runs' llama3_8b.toml (torchtitan 6b11290c, Jun 2025) sets selective_ac_option "op": the same
    # every-second-mm policy (torchtitan/models/llama3/infra/parallelize.py), parallel.SELECTIVE_OP.
    Measurement("h200", VALIDATION, _TITAN_H200, "llama3-8b", "p5e.48xlarge", 32, 64, 8192, 1, 1, 1, 1, 2, 3,
                SELECTIVE_OP, "fp8", _FSDP, 10938, "torch.compile + float8; per-op selective AC"),
    Measurement("h200", VALIDATION, _TITAN_H200, "llama3-8b", "p5e.48xlarge", 64, 128, 8192, 1, 1, 1, 1, 2, 3,
                SELECTIVE_OP, "fp8", _FSDP, 10753, "as above"),
    # B200, FP8: Megatron-Bridge 25.09 fit, 25.11 (same recipes, newer container) held out.
    Measurement("b200", FIT, _BRIDGE + " 25.09 DGX-B200", "llama3-8b", "p6-b200.48xlarge", 8, 128, 8192, 1, 1,
                1, 1, 2, 1, "none", "fp8", _MEGATRON, 29994),
    Measurement("b200", FIT, _BRIDGE + " 25.09 DGX-B200", "llama3-405b", "p6-b200.48xlarge", 128, 64, 8192, 4,
                8, 2, 8, 1, 1, "none", "fp8", _MEGATRON, 664),
    Measurement("b200", VALIDATION, _BRIDGE + " 25.11 DGX-B200", "llama3-8b", "p6-b200.48xlarge", 8, 128, 8192,
                1, 1, 1, 1, 2, 1, "none", "fp8", _MEGATRON, 30624),
    Measurement("b200", VALIDATION, _BRIDGE + " 25.11 DGX-B200", "llama3-405b", "p6-b200.48xlarge", 128, 64,
                8192, 4, 8, 2, 8, 1, 1, "none", "fp8", _MEGATRON, 661),
    # A100 fit with Narayanan Table 1 above: Narayanan Table 2 (PTD-P rows, same software,
    # model-parallel size 96 = TP8 x PP12 and 280 = TP8 x PP35), then torchtitan FSDP2.
    *(
        Measurement("a100", FIT, "Narayanan et al. 2021 Table 2 (PTD-P)", model, SELENE, gpus, batch,
                    SEQ_LEN, 8, pp, 1, 1, 1, 0, "full", "bf16", _MEGATRON, _table2_tokens(model, batch, tflops),
                    "micro-batch 1 as printed; hardware TFLOP/s converted with Eq. 3")
        for model, pp, batch, gpus, tflops in (
            ("gpt3-175b", 12, 1536, 384, 153),
            ("gpt3-175b", 12, 1536, 768, 149),
            ("gpt3-175b", 12, 1536, 1536, 141),
            ("gpt-529.6b", 35, 2240, 560, 171),
            ("gpt-529.6b", 35, 2240, 1120, 167),
            ("gpt-529.6b", 35, 2240, 2240, 159),
        )
    ),
    # torchtitan FSDP2 on 64 A100 80GB, local batch 1.
    # Llama 3 8B ran torchtitan's per-op selective AC (the page's "selective op"; train_configs/llama3_8b.toml
    # of that commit: mode "selective", selective_ac_option "op"), which recomputes every second mm
    # (parallel.SELECTIVE_OP). The page's own Llama 2 13B rows price it: 1,904 tok/s with it, 2,162 without.
    Measurement("a100", VALIDATION, _TITAN_A100, "llama3-8b", "p4de.24xlarge", 64, 64, 8192, 1, 1, 1, 1, 1, 3,
                SELECTIVE_OP, "bf16", _FSDP, 2973, "selective-op AC as torchtitan's policy recomputes it",
                unfused=_TITAN_EAGER),
    Measurement("a100", VALIDATION, _TITAN_A100, "llama3-70b", "p4de.24xlarge", 64, 64, 8192, 1, 1, 1, 1, 1, 3,
                "full", "bf16", _FSDP, 331, unfused=_TITAN_EAGER_RMSNORM),
    # Llama 2 rows of the same page: 13B without activation checkpointing sets the FSDP software
    # factor (fit); 70B with full AC is held out. Sequence 4096, local batch 2.
    Measurement("a100", FIT, _TITAN_A100, "llama2-13b", "p4de.24xlarge", 64, 128, 4096, 1, 1, 1, 1, 2, 3,
                "none", "bf16", _FSDP, 2162, "no AC, as printed", unfused=_TITAN_EAGER),
    Measurement("a100", VALIDATION, _TITAN_A100, "llama2-70b", "p4de.24xlarge", 64, 128, 4096, 1, 1, 1, 1, 2,
                3, "full", "bf16", _FSDP, 353, unfused=_TITAN_EAGER_RMSNORM),
    # DeepSpeed ZeRO-3 (2021) on Selene, Narayanan Table 2: GPT-3 175B sets DeepSpeed's ZeRO-3
    # traffic efficiency and overlap (fit); the 530B rows are held out.
    *(
        Measurement("a100", split, "Narayanan et al. 2021 Table 2 (ZeRO-3)", model, SELENE, gpus, batch,
                    SEQ_LEN, 1, 1, 1, 1, micro_batch, 3, "full", "bf16", _DEEPSPEED,
                    _table2_tokens(model, batch, tflops),
                    "fp16 as bf16; full recompute (Eq. 3 counts it); hardware TFLOP/s converted with Eq. 3")
        for split, model, gpus, batch, micro_batch, tflops in (
            (FIT, "gpt3-175b", 384, 1536, 4, 144),
            (FIT, "gpt3-175b", 768, 1536, 2, 88),
            (FIT, "gpt3-175b", 1536, 1536, 1, 44),
            (VALIDATION, "gpt-529.6b", 640, 2560, 4, 138),
            (VALIDATION, "gpt-529.6b", 1120, 2240, 2, 98),
            (VALIDATION, "gpt-529.6b", 2240, 2240, 1, 48),
        )
    ),
    # Trainium1 (trn1.32xlarge, NxD, BF16 + fp32 optimizer): GBS 1024, MBS 1, ZeRO-1.
    Measurement("trainium1", FIT, _NEURON, "llama2-7b", "trn1.32xlarge", 16 * 16, 1024, 4096, 8, 1, 1, 1, 1, 1,
                "none", "bf16", _MEGATRON, _neuron(93.3, 4096, 16), "selective recompute taken as none"),
    Measurement("trainium1", FIT, _NEURON, "llama2-70b", "trn1.32xlarge", 32 * 16, 1024, 4096, 32, 4, 1, 1, 1, 1,
                "none", "bf16", _MEGATRON, _neuron(15.34, 4096, 32),
                "selective recompute taken as none: the tutorial's script runs sequence parallelism and selective "
                "activation checkpointing (training_llama2_tp_pp.rst; run_llama3_70B_tp_pp.sh: "
                "--use_selective_checkpoint 1 --use_flash_attention 1)"),
    Measurement("trainium1", VALIDATION, _NEURON, "llama2-13b", "trn1.32xlarge", 32 * 16, 1024, 4096, 8, 4, 1, 1,
                1, 1, "none", "bf16", _MEGATRON, _neuron(85.65, 4096, 32), "selective recompute taken as none"),
    # NeMo-Megatron on Neuron: aws-neuron/neuronx-nemo-megatron nemo/examples/nlp/language_modeling/gpt_175b.sh
    # (commit 87acba2b) sets ACT_CHKPNT_GRANULARITY=selective, which test.sh passes as
    # model.activations_checkpoint_granularity: Korthikanti's selective recompute (the attention core), not
    # the full recompute test.sh defaults to.
    Measurement("trainium1", VALIDATION, _NEURON, "gpt3-175b", "trn1.32xlarge", 32 * 16, 1024, 2048, 32, 8, 1,
                1, 1, 1, "selective", "bf16", _MEGATRON, _neuron(13.3, 2048, 32),
                "NeMo-Megatron, selective recompute as gpt_175b.sh sets it"),
    # Trainium1, a second and third release of the same page (aws-neuron/aws-neuron-sdk history): Neuron 2.20
    # (Sep 2024; NxD, Llama 2 at 4k and Llama 3.1 at 8k, new layouts: Llama 2 13B/70B at PP8) sets Trainium1's
    # efficiency with the 2.15/2.16 rows; Neuron 2.24 (Jun 2025) is never fitted. Topologies in NeuronCores,
    # 32 cores per trn1.32xlarge, and they multiply to the nodes' cores (e.g. TP32 DP4 PP8 = 1,024 = 32 nodes).
    *(
        Measurement("trainium1", split, source, model, "trn1.32xlarge", nodes * 16, 1024, seq, tp, pp, 1, 1, 1, 1,
                    recompute, "bf16", _MEGATRON, _neuron(seq_per_s, seq, nodes),
                    "full recompute" if recompute == "full" else "selective recompute taken as none")
        for split, source, model, nodes, tp, pp, seq, seq_per_s, recompute in (
            (FIT, _NEURON_220, "llama2-7b", 16, 8, 1, 4096, 101.3, "none"),
            (FIT, _NEURON_220, "llama2-13b", 32, 8, 8, 4096, 84.0, "none"),
            (FIT, _NEURON_220, "llama2-70b", 32, 32, 8, 4096, 14.2, "none"),
            (FIT, _NEURON_220, "llama3-8b", 32, 32, 1, 8192, 49.47, "none"),
            (FIT, _NEURON_220, "llama3-70b", 32, 32, 8, 8192, 7.59, "none"),
            (VALIDATION, _NEURON_224, "llama3-8b", 32, 32, 1, 8192, 47.95, "none"),
            (VALIDATION, _NEURON_224, "llama3-70b", 32, 32, 8, 8192, 7.94, "none"),
        )
    ),
    # PyTorch FSDP (FULL_SHARD) in MosaicML Composer, llm-foundry's MPT benchmark tables, every row of a model
    # of 1B parameters or more: (model, sequence, GPUs, micro-batch, grad accumulation, activation
    # checkpointing = full recompute, published tokens/s per GPU). The A100 80GB table sets FSDP's software
    # factor with torchtitan's row; the H100 tables are never fitted (H100's fleet: p5's 3,200 Gb/s; the table
    # does not print the network, and all but a few rows run on one node). Attention: FlashAttention in Triton
    # (the tables came with llm-foundry commit b2a43a14, Oct 2023, whose submit_benchmarks.py sets attn_impl
    # from --attn_impl, default "triton", which sweep.sh never passes; attention.FA_TRITON).
    *(
        Measurement(generation, split, source, f"mpt-{size}", instance, gpus, micro * accum * gpus, seq, 1, 1, 1,
                    1, micro, 3, "full" if checkpointing else "none", precision, _FSDP, tokens,
                    "FULL_SHARD; activation checkpointing = full recompute", FA_TRITON)
        for generation, split, source, instance, precision, table in (
            ("a100", FIT, _FOUNDRY_A100, MOSAICML_A100, "bf16", (
                ("70b", 2048, 64, 8, 4, 1, 410), ("70b", 2048, 32, 2, 16, 1, 373),
                ("30b", 8192, 8, 1, 21, 1, 574), ("30b", 4096, 8, 1, 21, 1, 814), ("30b", 2048, 8, 3, 21, 1, 916),
                ("30b", 1024, 8, 6, 21, 1, 946), ("30b", 512, 8, 12, 21, 1, 967),
                ("13b", 32768, 8, 1, 3, 1, 1016), ("13b", 16384, 8, 3, 3, 1, 1431), ("13b", 8192, 8, 5, 3, 1, 1795),
                ("13b", 4096, 8, 10, 3, 1, 2060), ("13b", 2048, 8, 2, 3, 0, 2262), ("13b", 1024, 8, 40, 3, 1, 2330),
                ("7b", 65536, 8, 1, 2, 1, 1013), ("7b", 32768, 8, 2, 2, 1, 1672), ("7b", 16384, 8, 4, 2, 1, 2453),
                ("7b", 8192, 8, 8, 2, 1, 3206), ("7b", 4096, 8, 16, 2, 1, 3684), ("7b", 2048, 8, 6, 2, 0, 4641),
                ("7b", 1024, 8, 64, 2, 1, 4357),
                ("3b", 65536, 8, 1, 2, 1, 1767), ("3b", 32768, 8, 3, 6, 1, 3029), ("3b", 16384, 8, 1, 6, 0, 5529),
                ("3b", 8192, 8, 3, 6, 0, 7695), ("3b", 4096, 8, 5, 6, 0, 9457), ("3b", 2048, 8, 10, 2, 0, 10811),
                ("3b", 1024, 8, 20, 6, 0, 11580), ("3b", 512, 8, 40, 6, 0, 12127),
                ("1b", 65536, 8, 1, 2, 1, 3044), ("1b", 32768, 8, 1, 4, 0, 6275), ("1b", 16384, 8, 2, 4, 0, 9956),
                ("1b", 8192, 8, 3, 4, 0, 13814), ("1b", 4096, 8, 7, 4, 0, 17807), ("1b", 2048, 8, 14, 4, 0, 20513),
                ("1b", 1024, 8, 18, 4, 0, 22112), ("1b", 512, 8, 56, 4, 0, 23148),
            )),
            ("h100", VALIDATION, _FOUNDRY_H100, "p5.48xlarge", "bf16", (
                ("70b", 2048, 64, 8, 4, 1, 1039), ("70b", 2048, 32, 2, 16, 1, 882),
                ("30b", 8192, 8, 1, 21, 1, 1384), ("30b", 4096, 8, 1, 21, 1, 1802),
                ("30b", 2048, 32, 14, 3, 1, 2308), ("30b", 2048, 16, 10, 3, 1, 2263),
                ("30b", 2048, 8, 3, 21, 1, 2002), ("30b", 1024, 8, 6, 21, 1, 2084),
                ("13b", 32768, 8, 1, 3, 1, 1976), ("13b", 16384, 8, 3, 3, 1, 2985), ("13b", 4096, 8, 10, 3, 1, 4717),
                ("13b", 2048, 64, 2, 1, 0, 4800), ("13b", 2048, 32, 2, 1, 0, 4811), ("13b", 2048, 16, 2, 1, 0, 4767),
                ("13b", 2048, 8, 2, 1, 0, 4792), ("13b", 1024, 8, 40, 3, 1, 5502),
                ("7b", 65536, 8, 1, 2, 1, 1956), ("7b", 32768, 8, 2, 2, 1, 3318), ("7b", 8192, 8, 8, 2, 1, 6935),
                ("7b", 4096, 8, 16, 2, 1, 8611), ("7b", 2048, 8, 6, 1, 0, 10643), ("7b", 1024, 8, 64, 2, 1, 10203),
                ("3b", 65536, 8, 1, 2, 1, 3262), ("3b", 32768, 8, 3, 6, 1, 5873), ("3b", 16384, 8, 1, 6, 0, 11152),
                ("3b", 8192, 8, 3, 6, 0, 16578), ("3b", 4096, 8, 5, 6, 0, 20964), ("3b", 2048, 64, 6, 3, 0, 22525),
                ("3b", 2048, 32, 6, 3, 0, 23021), ("3b", 2048, 16, 10, 3, 0, 24142), ("3b", 1024, 8, 20, 6, 0, 27046),
                ("3b", 512, 8, 40, 6, 0, 27965),
                ("1b", 65536, 8, 1, 2, 1, 5506), ("1b", 32768, 8, 1, 4, 0, 12025), ("1b", 16384, 8, 2, 4, 0, 19649),
                ("1b", 8192, 8, 3, 4, 0, 29157), ("1b", 4096, 8, 7, 4, 0, 38535), ("1b", 2048, 64, 20, 1, 0, 44402),
                ("1b", 2048, 32, 20, 1, 0, 45130), ("1b", 2048, 16, 20, 1, 0, 46037),
                ("1b", 2048, 8, 14, 1, 0, 45455), ("1b", 1024, 8, 18, 4, 0, 48910), ("1b", 512, 8, 56, 4, 0, 52275),
            )),
            ("h100", VALIDATION, _FOUNDRY_H100_FP8, "p5.48xlarge", "fp8", (
                ("3b", 32768, 8, 3, 6, 1, 5856), ("3b", 8192, 8, 3, 6, 0, 19146), ("3b", 2048, 8, 10, 6, 0, 30586),
                ("3b", 512, 8, 40, 6, 0, 36527), ("1b", 32768, 8, 1, 4, 0, 12580), ("1b", 8192, 8, 2, 4, 0, 32010),
                ("1b", 512, 8, 56, 4, 0, 70315),
            )),
        )
        for size, seq, gpus, micro, accum, checkpointing, tokens in table
    ),
    # IBM and PyTorch's fms-fsdp (PyTorch FSDP1 on Llama 2 shapes, SDPA FlashAttention-2, bf16, sequence 4096,
    # batch 2 per GPU and no gradient accumulation: train_config and train_utils.train of each commit), its
    # README table "Training throughput benchmarks": 128 A100 80GB with 400 Gbps (p4de's figures) and 96 H100
    # with 800 Gbps (IBM_H100). "HSDP" = HYBRID_SHARD, shards within a node (framework hsdp); "FSDP" =
    # FULL_SHARD (zero 3). Mixed precision bfSixteen (param, reduce and buffer dtype bf16:
    # fms_fsdp/policies/mixed_precision.py), gradients reduced in bf16 (not itemised: FSDP's fp32 wire is priced).
    # Roles decided before either table's errors were computed: the March 2024 table (the PyTorch blog
    # "Maximizing training throughput using PyTorch FSDP", 2024-03-13, prints the same figures; eager, as the
    # other FSDP fit rows) fits FSDP's software factor; the May 2024 table (torch.compile) is never fitted.
    *(
        Measurement(generation, FIT, _FMS_MAR24, model, instance, gpus, 2 * gpus, 4096, 1, 1, 1, 1, 2, 3,
                    recompute, "bf16", framework, tokens, note, unfused=_FMS_EAGER)
        for generation, instance, gpus, figures in (
            ("a100", "p4de.24xlarge", 128, (3700, 1800, 700, 370)),
            ("h100", IBM_H100, 96, (7500, 3800, 1550, 800)),
        )
        for (model, framework, recompute, note), tokens in zip((
            ("llama2-7b", "hsdp", NONE, "HSDP, no AC, as printed"),
            ("llama2-13b", _FSDP, EVERY_SECOND_BLOCK,
             "\"Selective AC\": every second LLaMABlock checkpointed (ac_handler.py every_xth_item; not printed: the "
             "table's HFU/MFU, 0.59/0.51 on A100 and 0.40/0.35 on H100, is 1 + (1/2)/3 within its rounding; "
             "every third block's 1 + 1/9 and every block's 4/3 are not)"),
            ("fms-llama-34b", _FSDP, FULL, "Full AC, as printed"),
            ("llama2-70b", _FSDP, FULL, "Full AC, as printed"),
        ), figures, strict=True)
    ),
    # The same README two months later, "numbers are updated with torch.compile": only its 7B rows (HSDP, no AC)
    # are recorded. Its 13B/34B/70B rows say "Selective AC" without the ratio, and the table's HFU/MFU columns
    # imply different ratios on A100 and H100 (13B: 0.69/0.61 vs 0.46/0.43; 70B: 0.74/0.55 vs 0.47/0.38) though
    # the README says both ran "the exact same scripts and configurations", so their layout is not known.
    # torchtitan's Dec 2024 H100 page, its BF16 rows (Tables 1 and 3; the Float8 and async-TP rows are not recorded):
    # Llama 3.1 8B, FSDP2, local batch 2, "Selective activation checkpointing" (llama3_8b.toml: selective_ac_option
    # "op", parallel.SELECTIVE_OP), sequence 8192 (llama3_8b.toml's seq_len). Eager rows as torchtitan's model code
    # runs them (calibration._TITAN_EAGER, its fused RMSNorm); the torch.compile rows fused.
    *(
        Measurement("h100", VALIDATION, _TITAN_H100_2412, "llama3-8b", META_H100, gpus, 2 * gpus, 8192, 1, 1, 1, 1,
                    2, 3, SELECTIVE_OP, "bf16", _FSDP, tokens, note, unfused=unfused)
        for gpus, tokens, note, unfused in (
            (8, 5762, "Table 1, FSDP (eager); printed memory 82.4 GiB", _TITAN_EAGER),
            (8, 6667, "Table 1, FSDP + torch.compile; printed memory 77.0 GiB", ()),
            (128, 5605, "Table 3, FSDP (eager); printed memory 67.0 GiB", _TITAN_EAGER),
            (128, 6514, "Table 3, FSDP + torch.compile; printed memory 62.0 GiB", ()),
        )
    ),
    # Hugging Face's "From DeepSpeed to FSDP and Back Again" Table 3: IBM Granite 7B (Llama 2 7B's shape) on four A100,
    # "Batch size of 8", bf16; DeepSpeed ZeRO-3 and FSDP FULL_SHARD. Sequence 4096 is derived, not printed: tokens/s per
    # device x 4 x the printed step time = 131,200 = 4 x 8 x 4,096. Assumed: batch 8 is one micro-batch per device (no
    # accumulation), with the Trainer's gradient checkpointing (8 x 4,096 tokens of a 7B model's activations do not fit
    # 80 GB without it), transformers' eager Llama code (RMSNorm as tensor ops, rotate-half RoPE, SiLU and product
    # apart, SDPA's layout copies) and DeepSpeed's defaults (overlap_comm, prefetch and reduce buckets).
    *(
        Measurement("a100", VALIDATION, _HF_DS_FSDP, "llama2-7b", HF_A100, 4, 32, 4096, 1, 1, 1, 1, 8, 3, "full",
                    "bf16", framework, tokens, "batch 8 per device; sequence 4096 derived from the step time",
                    unfused=_TITAN_EAGER_RMSNORM)
        for framework, tokens in ((_DEEPSPEED, 3094.5), (_FSDP, 3158.7))
    ),
    Measurement("a100", VALIDATION, _FMS_MAY24, "llama2-7b", "p4de.24xlarge", 128, 256, 4096, 1, 1, 1, 1, 2, 3,
                NONE, "bf16", "hsdp", 4550, "HSDP, torch.compile, no AC, as printed"),
    Measurement("h100", VALIDATION, _FMS_MAY24, "llama2-7b", IBM_H100, 96, 192, 4096, 1, 1, 1, 1, 2, 3,
                NONE, "bf16", "hsdp", 9600, "as above"),
)
# fmt: on


def _rows(
    generation: str, split: str, precision: str | None = None, framework: str | None = _MEGATRON
) -> list[Measurement]:
    """Rows of one generation and split; by default Megatron-family rows only (what the matmul
    efficiencies are fitted on), ``framework=None`` for all."""
    return [
        m
        for m in MEASUREMENTS
        if m.generation == generation
        and m.split == split
        and precision in (None, m.precision)
        and framework in (None, m.framework)
    ]


def _with_matmul(base: Efficiency, precision: str, value: float) -> Efficiency:
    return replace(base, matmul_fp8=value) if precision == FP8 else replace(base, matmul=value)


def fit_error(generation: str, precision: str, value: float) -> float:
    """Mean absolute relative error of the fit rows with the matmul efficiency set to ``value``."""
    if generation == "a100" and precision == BF16:
        eff = _with_matmul(MEGATRON_2021, BF16, value)
        return mean(abs(row.error(eff)) for row in TABLE1)
    # One efficiency for both precisions (validation._fit_matmul): every Megatron-family fit row of the
    # generation, whichever precision ``precision`` names.
    eff = replace(GENERATIONS[generation], matmul=value, matmul_fp8=value)
    return mean(abs(row.error(eff)) for row in _rows(generation, FIT))


def _golden(error: Callable[[float], float], low: float, high: float) -> float:
    """The value in [low, high] minimising ``error`` (golden-section search, to 0.005)."""
    ratio = (5**0.5 - 1) / 2
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    at_c, at_d = error(c), error(d)
    while b - a > 0.005:  # one new evaluation per step: the kept inner point is the next step's other one
        if at_c <= at_d:
            b, d, at_d = d, c, at_c
            c = b - ratio * (b - a)
            at_c = error(c)
        else:
            a, c, at_c = c, d, at_d
            d = a + ratio * (b - a)
            at_d = error(d)
    return round((a + b) / 2, 3)


def fit(generation: str, precision: str, low: float = 0.2, high: float = 0.98) -> float:
    """The matmul efficiency minimising the fit rows' mean absolute error. Validation rows play no part."""
    return _golden(lambda value: fit_error(generation, precision, value), low, high)


def _framework_fit_rows(framework: str) -> list[Measurement]:
    """A framework's fit rows; FSDP's include HSDP's (FSDP on a 2-D mesh takes FSDP's software factor)."""
    frameworks = (framework, "hsdp") if framework == _FSDP else (framework,)
    return [m for m in MEASUREMENTS if m.framework in frameworks and m.split == FIT]


def _with_framework(base: Efficiency, framework: str, field: str, value: float) -> Efficiency:
    entries = dict(getattr(base, field))
    entries[framework] = value
    updated: dict[str, Any] = {field: tuple(sorted(entries.items()))}
    return replace(base, **updated)


def with_software(base: Efficiency, framework: str, value: float) -> Efficiency:
    """``base`` with ``framework``'s software factor set to ``value``."""
    return _with_framework(base, framework, "software", value)


def software_from_step(
    plan_with: Callable[[Efficiency], Plan], base: Efficiency, framework: str, measured_s: float
) -> float:
    """The software factor at which the layout ``plan_with`` evaluates runs one step in
    ``measured_s`` (bisection: step time falls as the factor rises). Raises PlanError when no
    factor in [0.05, 4] explains the measurement (then the layout or the fleet is not what ran)."""
    low, high = 0.05, 4.0

    def step(value: float) -> float:
        return plan_with(with_software(base, framework, value)).step_time_s

    slowest, fastest = step(low), step(high)
    if not fastest <= measured_s <= slowest:
        raise PlanError(
            f"--measured {measured_s:g} s is outside what this layout can take on this fleet "
            f"({fastest:.3g}-{slowest:.3g} s for software factors {low}-{high}); check the layout, "
            "the fleet and that the time is seconds per step (all micro-batches)"
        )
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if step(middle) <= measured_s else (middle, high)
    return round((low + high) / 2, 4)


def fit_software(framework: str) -> float:
    """A framework's software factor (Efficiency.software) from its fit rows (same for every
    generation: it is the software, not the chip)."""
    rows = _framework_fit_rows(framework)

    def error(value: float) -> float:
        return mean(
            abs(m.error(_with_framework(GENERATIONS[m.generation], framework, "software", value))) for m in rows
        )

    return _golden(error, 0.3, 1.3)


ZERO3_GRID = tuple(round(0.02 * i, 2) for i in range(1, 51))


def fit_zero3(framework: str) -> tuple[float, float]:
    """(traffic efficiency, overlap) of a framework's ZeRO-3 traffic from its fit rows: a grid in
    steps of 0.02 over both (the two trade off, so golden-section search on one would not do)."""
    rows = _framework_fit_rows(framework)

    def error(traffic: float, overlap: float) -> float:
        eff = _with_framework(GENERATIONS["a100"], framework, "zero3_traffic", traffic)
        eff = _with_framework(eff, framework, "zero3_overlap", overlap)
        return mean(abs(m.error(eff)) for m in rows)

    best = min((error(t, o), t, o) for t in ZERO3_GRID for o in ZERO3_GRID)
    return best[1], best[2]


def fitted_keys() -> list[tuple[str, str]]:
    """(generation, precision) pairs whose matmul efficiency has fit rows."""
    keys = [("a100", BF16)]
    for m in MEASUREMENTS:
        if m.split == FIT and m.framework == _MEGATRON and (m.generation, m.precision) not in keys:
            keys.append((m.generation, m.precision))
    return keys


def errors_by(generation: str, framework: str | None, split: str) -> list[float]:
    """Absolute relative errors of one generation's rows of a split (all frameworks if None);
    the A100 Megatron fit set includes Narayanan Table 1."""
    errors = [abs(m.error()) for m in _rows(generation, split, framework=framework)]
    if generation == "a100" and split == FIT and framework in (None, _MEGATRON):
        errors += [abs(row.error()) for row in TABLE1]
    return errors


def _cell(errors: list[float]) -> str:
    return f"{len(errors)} | {mean(errors):.1%} | {max(errors):.1%}" if errors else "0 | - | -"


def generation_report() -> str:
    """Per generation and per (generation, framework): fit and held-out mean absolute error and the
    worst row, then every row."""
    header = "| Fit rows | Fit MAE | Fit worst | Validation rows | Validation MAE | Validation worst |"
    lines = [f"| Generation {header}", "|---|---:|---:|---:|---:|---:|---:|"]
    for generation in GENERATIONS:
        lines.append(
            f"| {generation} | {_cell(errors_by(generation, None, FIT))} | "
            f"{_cell(errors_by(generation, None, VALIDATION))} |"
        )
    lines += ["", f"| Generation | Framework {header}", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for generation in GENERATIONS:
        for framework in (_MEGATRON, _FSDP, "hsdp", _DEEPSPEED):
            fit_errors, held_out = errors_by(generation, framework, FIT), errors_by(generation, framework, VALIDATION)
            if fit_errors or held_out:
                lines.append(f"| {generation} | {framework} | {_cell(fit_errors)} | {_cell(held_out)} |")
    lines += [
        "",
        "| Generation | Split | Framework | Model | Devices | Layout | Precision | Published tok/s/dev | Predicted "
        "| Error |",
        "|---|---|---|---|---:|---|---|---:|---:|---:|",
    ]
    for m in MEASUREMENTS:
        plan = m.plan()
        layout = f"tp{m.tp} pp{m.pp} cp{m.cp} vpp{m.vpp} mb{m.micro_batch} z{m.zero} {m.recompute}"
        lines.append(
            f"| {m.generation} | {m.split} | {m.framework} | {m.model} | {m.gpus} | {layout} | {m.precision} | "
            f"{m.published_tokens_per_s_per_device:.0f} | {plan.tokens_per_s / m.gpus:.0f} | {m.error():+.1%} |"
        )
    return "\n".join(lines)


TABLE1_SOURCE = "Narayanan et al. 2021 Table 1"
TABLE1_ROWS: tuple[Measurement, ...] = tuple(
    Measurement(
        "a100",
        FIT,
        TABLE1_SOURCE,
        row.model.name,
        SELENE,
        row.gpus,
        row.global_batch,
        SEQ_LEN,
        row.tp,
        row.pp,
        1,
        1,
        1,
        0,
        "full",
        "bf16",
        _MEGATRON,
        _table2_tokens(row.model.name, row.global_batch, row.published_tflops_per_gpu),
        "micro-batch 1, plain 1F1B; hardware TFLOP/s converted with Eq. 3",
    )
    for row in TABLE1
)
ALL_ROWS: tuple[Measurement, ...] = TABLE1_ROWS + MEASUREMENTS
"""Every published run as a row: what validation.py leaves out source by source."""
