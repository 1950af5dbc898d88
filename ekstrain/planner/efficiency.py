"""Achieved fractions of hardware peaks, per accelerator generation: the time model's constants.

Fitted on the published runs in ``calibration.py`` (fit set; the held-out rows are never used for
fitting, and tests check each stored value equals its fit): ``matmul`` per generation
(``matmul_fp8`` the same value: one GEMM efficiency for both precisions, validation._fit_matmul),
and per framework the ``software`` factor and DeepSpeed's ZeRO-3 ``zero3_traffic`` and
``zero3_overlap``. Attention runs at published kernel throughputs (attention.py). The other
constants are fixed from the sources cited at each field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from ekstrain.planner.fleet import FP8, Fleet


@dataclass(frozen=True)
class Efficiency:
    matmul: float = 0.68
    """Fraction of dense BF16 peak large GEMMs sustain end to end in training (fitted; cuBLAS alone
    reaches ~0.8 on A100, the rest is launch and framework gaps the model does not itemise). Small
    per-rank GEMMs lose more through tile quantization and the memory roofline (perf._gemm)."""
    matmul_fp8: float | None = None
    """The same against the FP8 peak (FP8 GEMMs reach a lower fraction: scaling, casts and the
    BF16 GEMMs that stay); None = ``matmul``."""
    software: tuple[tuple[str, float], ...] = ()
    """Per framework, the fraction of Megatron-LM's GEMM throughput its software stack reaches
    (fused kernels, launch gaps, eager vs compiled): fitted on that framework's rows in
    calibration.py, 1.0 for Megatron (the generations are fitted on Megatron-family runs) and for
    frameworks without rows. Set per user with ``ekstrain plan calibrate --measured``."""
    hbm: float = 0.80
    """Fraction of HBM bandwidth elementwise kernels reach (STREAM-like copies reach 0.87-0.93 of
    the H100/H200 datasheet figures in Azure's published ND H100 v5 / H200 v5 runs)."""
    elementwise_traffic: float = 1.5
    """HBM bytes LayerNorm/activation/dropout kernels move per forward pass, per byte of stored
    activations (fitted on Narayanan Table 1 in the first calibration and kept): Megatron's fused kernels.
    Stacks that run some of them in eager PyTorch scale it by perf.elementwise_passes (counted, not fitted)."""
    intra_node: float = 0.80
    """NCCL bus bandwidth on NVLink / NeuronLink as a fraction of the one-direction link figure
    (nccl-tests all_reduce_perf busbw ~ 360 GB/s of 450 on HGX H100, ~ 230 of 300 on A100)."""
    network: float = 0.80
    """Bus bandwidth on EFA / InfiniBand as a fraction of the rank's share of the node's NICs."""
    dp_overlap: bool = True
    """Gradient reduce-scatter / all-reduce runs under the backward pass and the parameter
    all-gather under the forward (Megatron --overlap-grad-reduce/--overlap-param-gather, DDP
    buckets, FSDP prefetch). Megatron-LM as of Narayanan 2021 did not overlap."""
    tp_overlap: float = 0.0
    """Fraction of TP collectives hidden behind GEMMs when the stack turns the overlap on
    (``TrainingSpec.tp_comm_overlap``, --tp-comm-overlap): fitted 0.8 on the NeMo/Megatron-Bridge Hopper and
    Blackwell recipes that turn it on; 0 on A100 and Trainium (their rows' TP traffic is priced in full)."""
    deepspeed_2021: bool = False
    """DeepSpeed's ZeRO-3 as Narayanan et al. 2021 Table 2 ran it (blocking gathers parameter by parameter): priced
    with the fitted ``zero3_traffic`` / ``zero3_overlap`` and one collective latency per tensor. False (every plan
    of today's DeepSpeed, 0.10+): priced from its code, asynchronous coalesced gathers on their own stream
    prefetched ``stage3_prefetch_bucket_size`` ahead and gradients reduced in ``reduce_bucket_size`` buckets
    under the backward (``overlap_comm``, on by default at stage 3), at NCCL's ring bandwidth (perf.py)."""
    step_host_s: float = 0.0
    """Seconds per step no device work hides: the optimizer step's host-device synchronisations (Megatron-core's
    ``clip_grad_norm`` and found-inf ``.item()``, torchtitan's loss ``.item()``), its Python and kernel launches, the
    data loader hand-off (perf.step_overhead). One value for every source, fitted with the GEMM efficiencies
    (validation.fit_constants), not a constant per source."""
    host_link_gbytes_per_s: float = 25.0
    """Per-rank PCIe bandwidth for ZeRO-Offload and activation offload (PCIe Gen4 x16 ~ 25 GB/s; p5's Gen5 links
    are faster); uncalibrated."""
    host_adam_params_per_s: float = 1.0e9
    """DeepSpeed CPU-Adam throughput per rank (ZeRO-Offload order of magnitude); uncalibrated."""

    def matmul_for(self, precision: str) -> float:
        return self.matmul_fp8 if precision == FP8 and self.matmul_fp8 is not None else self.matmul

    zero3_traffic: tuple[tuple[str, float], ...] = ()
    """Per framework, the fraction of the collective model's bandwidth its ZeRO-3/FSDP parameter
    all-gathers and gradient reduce-scatters reach (1.0 = NCCL's ring, comm.py): fitted where a
    framework has ZeRO-3 rows (calibration.py)."""
    zero3_overlap: tuple[tuple[str, float], ...] = ()
    """Per framework, the fraction of the concurrent pass's time its ZeRO-3 traffic hides behind
    (1.0 = all of it; FSDP2's prefetch of the next layer), fitted like ``zero3_traffic``."""

    def software_for(self, framework: str) -> float:
        """HSDP is FSDP2's software on a 2-D mesh: it takes FSDP's factor unless it has its own."""
        if framework == "hsdp" and "hsdp" not in dict(self.software):
            framework = "fsdp"
        return _lookup(self.software, framework)

    def zero3_traffic_for(self, framework: str) -> float:
        return _lookup(self.zero3_traffic, framework)

    def zero3_overlap_for(self, framework: str) -> float:
        return _lookup(self.zero3_overlap, framework)


@lru_cache(maxsize=1024)
def _lookup(entries: tuple[tuple[str, float], ...], framework: str) -> float:
    """A framework's entry (1.0 when it has none); cached: the search asks for it per layout."""
    return dict(entries).get(framework, 1.0)


FRAMEWORK_SOFTWARE = (("fsdp", 1.001),)
"""PyTorch FSDP stacks: 1.001 of Megatron's GEMM throughput (0.992 before the per-step cost and the bucketed
overlap), fitted on torchtitan's Llama 2 13B row (FSDP2, eager, SDPA), llm-foundry's A100 80GB MPT table
(Composer FSDP FULL_SHARD) and fms-fsdp's March 2024 table (FSDP1 FULL_SHARD/HYBRID_SHARD, eager; A100 and H100)
together (calibration.py); the same factor on every generation. The eager stacks' unfused elementwise kernels are priced
apart (perf.elementwise_passes, the calibration's fifth round; 0.987 when the factor absorbed them)."""
ZERO3_TRAFFIC = (("deepspeed", 0.48),)
ZERO3_OVERLAP = (("deepspeed", 0.04),)
"""DeepSpeed ZeRO-3 as Narayanan 2021 Table 2 measured it (GPT-3 175B on 384-1536 A100): its
all-gathers and reduce-scatters reach 0.48 of NCCL's ring bandwidth and hide behind 0.04 of the
concurrent pass, on top of one collective latency per parameter tensor (perf.py; fitted together
on a 0.04 grid, validation.fit_constants; the 530B rows held out). FSDP keeps 1.0/1.0 (prefetch of the next
layer); only the first all-gather and last reduce-scatter stay exposed."""
STEP_HOST_S = 0.04
"""Efficiency.step_host_s as fitted on every fit row of every source together (validation.fit_constants: 0-0.2 s in
10 ms steps; 40 ms). Its left-out refits per source are what docs/planner.md's leave-one-source-out table rests on."""
A100 = Efficiency(
    matmul=0.726,
    software=FRAMEWORK_SOFTWARE,
    zero3_traffic=ZERO3_TRAFFIC,
    zero3_overlap=ZERO3_OVERLAP,
    step_host_s=STEP_HOST_S,
)
"""Fitted on Narayanan et al. 2021 Tables 1 and 2 (PTD-P) (docs/planner.md, Calibration)."""
H100 = replace(A100, matmul=0.525, matmul_fp8=0.525, tp_overlap=0.8)
"""One GEMM efficiency for BF16 and FP8, fitted on the Llama 3 405B runs (at Meta's memory-balanced vpp 8
and ZeRO-2 sharding, section 3.3 of the paper) and NeMo 24.07's DGX-H100 FP8 table (7 rows since the calibration's
fourth round recorded its Llama 2 rows: 0.516 before) together
(validation._fit_matmul). FP8's smaller-than-peak speed-up is the cast traffic (perf.FP8_CAST_BYTES) and
the BF16 attention and output layer, not a lower GEMM efficiency; fitted apart the two were 0.516 (Meta,
BF16) and 0.558 (NVIDIA, FP8), which put the predicted FP8/BF16 speed-up on llm-foundry's paired runs
8 % above what it measured (docs/planner.md). tp_overlap 0.8: Transformer Engine's userbuffer overlap,
on in NeMo's Hopper recipes; chosen from {0, 0.5, 0.8} on the fit rows (fit MAE 7.8 % -> 5.8 %), the
held-out rows agreeing (8.2 -> 6.5 %)."""
H200 = replace(H100)
"""Same SM as H100 (only HBM capacity and bandwidth differ, which the fleet carries): H100's
constants; marked uncalibrated (bands.py)."""
B200 = replace(A100, matmul=0.538, matmul_fp8=0.538, tp_overlap=0.8)
"""FP8 fitted on Megatron-Bridge 25.09's DGX-B200 table. No public B200 BF16 dense-LLM run was
found: BF16 takes the FP8 fraction (as on H100, where the two fits agree within 1 %; the rule every
generation without rows of one precision follows, validation.fit_constants), unvalidated."""
TRAINIUM1 = replace(A100, matmul=0.432, tp_overlap=0.0)
"""Fitted on the Neuron SDK's trn1.32xlarge NxD tables (releases 2.15/2.16 and 2.20; 2.24 never
fitted). tp_overlap 0: TP collectives over NeuronLink are priced in full, none hidden under compute.
Chosen from {0, 0.25, 0.5, 0.8, 1} on the fit rows with the matmul efficiency refitted at each: fit MAE
4.1 / 5.8 / 8.3 / 11.9 / 14.6 %, the held-out rows agreeing (13.3 / 14.0 / 15.0 / 16.7 / 19.5 %). The
first release's 0.8 was chosen on its two fit rows; the TP32 rows of Neuron 2.20 (Llama 3 8B at TP32:
+37 % at 0.8, +5 % at 0) are what decide it."""
TRAINIUM2 = replace(TRAINIUM1)
"""No public Trainium2 training throughput was found: Trainium1's constants, marked uncalibrated."""

MAMF: dict[str, float] = {"a100": 0.859, "h100": 0.801, "h200": 0.801, "b200": 0.776}
"""Maximum achievable matmul FLOPS as a fraction of the dense BF16 peak (the best large GEMM a
generation's cuBLAS reaches): stas00/ml-engineering compute/accelerator/README.md, "Maximum Achievable
Matmul FLOPS comparison table" (A100 SXM 267.9/312, H100 SXM 792.1/989) and the B200 table of the same
book (1745/2250). Trainium has no published figure. validation.fit_constants scales a generation
without training rows by it (generation prior = MAMF x the mean fitted fraction of MAMF the others
reach end to end), so what carries to a new chip is the chip's GEMM ceiling, not another chip's fit."""

GENERATIONS: dict[str, Efficiency] = {
    "a100": A100,
    "h100": H100,
    "h200": H200,
    "b200": B200,
    "trainium1": TRAINIUM1,
    "trainium2": TRAINIUM2,
}
DEFAULT_EFFICIENCY = A100
MEGATRON_2021 = replace(A100, dp_overlap=False)
"""The software of Narayanan Table 1: same hardware efficiencies, no DP overlap."""


def efficiency_for(fleet: Fleet) -> Efficiency:
    """The calibrated constants of the fleet's generation (A100's when it has none)."""
    return GENERATIONS.get(fleet.generation, DEFAULT_EFFICIENCY)
