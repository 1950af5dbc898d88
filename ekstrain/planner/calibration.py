"""Narayanan et al. 2021 Table 1 (arXiv 2104.04473): the published runs the time model is fitted to.

The runs used Selene (DGX A100 80 GB: 8 GPUs, NVSwitch, 8 x 200 Gb/s HDR InfiniBand per node),
full activation recomputation, no sequence parallelism, and TFLOP/s counted with Eq. 3 (hardware
FLOPs including the recomputed forward). The paper does not print micro-batch sizes; we assume 1
and the plain (non-interleaved) 1F1B schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.planner.fleet import Fleet
from ekstrain.planner.models import NARAYANAN_TABLE1_MODELS, ModelSpec
from ekstrain.planner.parallel import FULL
from ekstrain.planner.perf import MEGATRON_2021, Efficiency
from ekstrain.planner.plan import Plan, evaluate

SEQ_LEN = 2048
GPUS_PER_NODE = 8


def selene(nodes: int) -> Fleet:
    """DGX A100 80 GB as in Narayanan 2021 section 5 (A100 figures as ekstrain.catalog.A100_80)."""
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
        "| Model | TP | PP | GPUs | Batch | Published TFLOP/s | Predicted | Error | Predicted MFU "
        "| Memory GiB |",
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
