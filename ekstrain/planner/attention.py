"""Attention kernel throughput per generation and kernel, from published kernel benchmarks.

A fused attention kernel's fraction of peak depends on the kernel family (FlashAttention-2,
FlashAttention-3, cuDNN), the generation, the sequence length (short sequences leave SMs idle and
pay the per-tile softmax prologue), causal masking (the diagonal tiles do masked work, so causal
reaches its plateau later and lower) and the head dimension (the inner GEMMs have K = head dim).

Published figures used (BF16, head dim 128, forward, TFLOP/s with a causal kernel credited half of
the square, as flash-attention's ``benchmarks/benchmark_flash_attention.py`` ``flops()`` counts):

* H100 SXM5: Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608v2) Figure 5, "Attention forward
  speed, head dim 128 (H100 80GB SXM5)", sequence lengths 512-16k, for FlashAttention-2, cuDNN and
  FlashAttention-3, with and without the causal mask (``H100_FORWARD``).
* A100: FlashAttention-2 (Dao 2023, arXiv 2307.08691) reaches "50-73 % of the theoretical maximum
  FLOPs/s on A100" in the forward pass (abstract, section 4.1); we take 73 % as the non-causal
  head-dim-128 plateau and H100 FlashAttention-2's shape over sequence length and causality (same
  kernel, measured in the same figure).
* Backward: FlashAttention-2 reports the backward slower than the forward (5 GEMMs against 2, plus
  recomputation of the scores; Dao 2023 section 3.2 and Figure 4-6); ``BACKWARD_RATIO`` = 0.8 of
  the forward throughput, for all kernels (FlashAttention-3's backward is 1.5-1.75x FA2's on H100,
  section 4.1, the same ratio to its forward). Not fitted.
* Head dimension: FlashAttention-3 Figure 5 gives head dim 256 ~ 4 % above 128 at 16k, and
  FlashAttention-2 Figure 4 head dim 64 ~ 15 % below 128; ``head_dim_factor`` interpolates
  hd / (hd + 32), normalised to 128 (0.83 at 64, 1.04 at 256 after the cap).

Which kernel runs is the framework's choice (``kernel_for``): Megatron-LM/NeMo use Transformer
Engine's cuDNN fused attention on Hopper and Blackwell and FlashAttention-2 on Ampere; PyTorch
FSDP stacks (torchtitan) and DeepSpeed use PyTorch's SDPA, whose flash backend is FlashAttention-2
on every GPU (torch 2.2-2.6 ``sdp_kernel`` docs). B200 has no published per-kernel table here: it
uses H100's fractions (uncalibrated). Trainium's NKI flash kernel has no published throughput
table: its attention runs at the generation's GEMM efficiency (``None`` here).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from math import log

FA2 = "fa2"
FA3 = "fa3"
CUDNN = "cudnn"
SEQ_POINTS = (512, 1024, 2048, 4096, 8192, 16384)
H100_PEAK_TFLOPS = 989
H100_FORWARD: dict[tuple[str, bool], tuple[float, ...]] = {
    # (kernel, causal): TFLOP/s at SEQ_POINTS (FlashAttention-3 paper, Figure 5, head dim 128).
    (FA2, False): (309, 350, 362, 368, 370, 370),
    (FA2, True): (191, 260, 298, 319, 333, 335),
    (CUDNN, False): (497, 574, 617, 609, 600, 595),
    (CUDNN, True): (315, 410, 484, 518, 529, 539),
    (FA3, False): (467, 565, 625, 638, 646, 648),
    (FA3, True): (292, 423, 521, 579, 602, 616),
}
FA_TRITON = "flash-triton"
"""FlashAttention written in Triton (flash-attention's ``flash_attn_triton.py``, the kernel MPT's
``attn_impl: triton`` runs): FlashAttention-2 is "1.3-2.5x faster than FlashAttention in Triton" (Dao
2023, arXiv 2307.08691, section 4.1, A100 forward and backward); this kernel runs at FA2's throughput
divided by ``FA2_OVER_TRITON``, the geometric middle of that range. Not fitted."""
FA2_OVER_TRITON = (1.3 * 2.5) ** 0.5
A100_FA2_PLATEAU = 0.73
"""FlashAttention-2's forward on A100, non-causal head dim 128 at long sequences (Dao 2023)."""
BACKWARD_RATIO = 0.8
HEAD_DIM_REFERENCE = 128


def kernel_for(generation: str, framework: str) -> str | None:
    """The attention kernel a framework runs on a generation (module docstring); None = Trainium."""
    if generation.startswith("trainium"):
        return None
    if generation in ("a100", ""):
        return FA2
    return CUDNN if framework == "megatron" else FA2


def _interpolate(points: tuple[float, ...], seq: float) -> float:
    """Piecewise linear in log(seq) between the published points; flat beyond 16k, and linear in
    seq below 512 (launch- and prologue-bound: half the tokens, half the throughput)."""
    if seq <= SEQ_POINTS[0]:
        return points[0] * seq / SEQ_POINTS[0]
    if seq >= SEQ_POINTS[-1]:
        return points[-1]
    i = bisect_left(SEQ_POINTS, seq)
    lo, hi = SEQ_POINTS[i - 1], SEQ_POINTS[i]
    t = log(seq / lo) / log(hi / lo)
    return points[i - 1] + t * (points[i] - points[i - 1])


def head_dim_factor(head_dim: int) -> float:
    return min(1.04, (head_dim / (head_dim + 32)) / (HEAD_DIM_REFERENCE / (HEAD_DIM_REFERENCE + 32)))


@lru_cache(maxsize=4096)
def forward_fraction(generation: str, kernel: str, head_dim: int, seq: float, causal: bool) -> float:
    """Fraction of the generation's dense BF16 peak the attention forward reaches (causal credited
    half of the square, i.e. per FLOP the kernel really computes)."""
    if kernel == FA_TRITON:
        return forward_fraction(generation, FA2, head_dim, seq, causal) / FA2_OVER_TRITON
    fraction = _interpolate(H100_FORWARD[(kernel, causal)], seq) / H100_PEAK_TFLOPS
    if generation == "a100":
        fraction *= A100_FA2_PLATEAU / (H100_FORWARD[(FA2, False)][-1] / H100_PEAK_TFLOPS)
    return fraction * head_dim_factor(head_dim)
