"""Order fitting plans as an experienced engineer would pick them, and say why each one is not first.

Rules, in order:

1. Memory headroom: a plan above ``memory.HEADROOM`` (90 %) of HBM ranks after every plan below it
   (allocator fragmentation, NCCL buffers and stragglers eat the rest in practice).
2. Context parallelism only when the sequence needs it: below ``CP_MIN_SEQ`` (32k) tokens, if any
   CP = 1 plan fits within the headroom and is within ``CP_WORTH`` (10 %) of the best CP plan,
   plans with CP > 1 rank after the CP = 1 plans. NVIDIA's
   long-sequence table (NeMo docs/source/performance/performance_long_sequence.md, Llama 2 7B on
   DGX-H100) uses CP 1 up to 16k and CP 2-32 from 32k; Llama 3 405B used CP 1 at 8k and CP 16 at
   128k (arXiv 2407.21783, Table 4).
3. Step time, in buckets of ``TIE`` (2 %): differences smaller than the model's own error are ties.
4. On ties, the simpler plan: the smaller CP, fewer parallel dimensions in use, less
   recomputation, lower ZeRO stage, smaller degrees, then the faster and the leaner.

The search keeps TP inside a node unless no such layout fits within the headroom (``SearchSpace.cross_node_tp``);
``evaluate`` also prices TP over whole nodes.
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from math import floor, log

from ekstrain.planner.memory import HEADROOM, within_headroom
from ekstrain.planner.parallel import FULL, NONE, SELECTIVE
from ekstrain.planner.plan import Plan

TIE = 0.02
CP_MIN_SEQ = 32768
CP_WORTH = 0.10
"""Below CP_MIN_SEQ, CP is still worth it when it saves more than this (the size of the model's
held-out error band on H100, bands.py): e.g. Llama 3 405B at 16k with 1,024 sequences per step,
where no CP = 1 layout can interleave its pipeline."""
RECOMPUTE_COST = {NONE: 0, SELECTIVE: 1, FULL: 2}


def _used(plan: Plan) -> float:
    return plan.memory.total / plan.fleet.rank_memory_bytes


def _dimensions(plan: Plan) -> int:
    p = plan.parallel
    return sum(d > 1 for d in (p.tp, p.pp, p.cp, p.ep, p.vpp))


def rank(plans: list[Plan], top: int | None = None) -> list[Plan]:
    """``plans`` sorted by the rules above (the first ``top`` of them, or all), each carrying
    ``notes``: why it is not first."""
    if not plans:
        return []
    fastest = min(p.step_time_s for p in plans)
    cp_needed = _cp_needed(plans)

    def key(plan: Plan) -> tuple[float, ...]:
        p, step, total = plan.parallel, plan.step_time_s, plan.memory.total
        return (
            float(not within_headroom(total, plan.fleet.rank_memory_bytes)),
            float(p.cp > 1 and not cp_needed),
            float(floor(log(step / fastest) / log(1 + TIE))),
            float(p.cp),
            float(_dimensions(plan)),
            float(RECOMPUTE_COST[p.recompute]),
            float(p.zero),
            float(p.tp * p.pp * p.cp * p.ep * p.vpp),
            step,
            total,
        )

    # nsmallest: the first ``top`` in the same order, without sorting the tens of thousands the search priced
    ordered = heapq.nsmallest(top, plans, key=key) if top else sorted(plans, key=key)
    best = ordered[0]
    return [best] + [replace(p, notes=tuple(_why_not_first(p, best, cp_needed))) for p in ordered[1:]]


def _cp_needed(plans: list[Plan]) -> bool:
    """CP is needed at CP_MIN_SEQ tokens and more, when no CP = 1 plan fits within the headroom, or
    when the best such plan is more than CP_WORTH slower than the best CP plan."""
    if plans[0].training.seq_len >= CP_MIN_SEQ:
        return True
    without = [p.step_time_s for p in plans if p.cp == 1 and p.within_headroom]
    with_cp = [p.step_time_s for p in plans if p.cp > 1 and p.within_headroom]
    return not without or (bool(with_cp) and min(without) > (1 + CP_WORTH) * min(with_cp))


def _why_not_first(plan: Plan, best: Plan, cp_needed: bool) -> list[str]:
    reasons = []
    slower = plan.step_time_s / best.step_time_s - 1
    if slower >= 0.0005:
        reasons.append(f"+{slower:.1%} step time")
    elif slower <= -0.0005:
        reasons.append(f"{slower:.1%} step time")
    if not plan.within_headroom:
        reasons.append(f"{_used(plan):.0%} of HBM (> {HEADROOM:.0%})")
    if plan.cp > 1 and not cp_needed:
        reasons.append(f"CP{plan.cp} not needed at {plan.training.seq_len} tokens")
    p, b = plan.parallel, best.parallel
    if RECOMPUTE_COST[p.recompute] > RECOMPUTE_COST[b.recompute]:
        reasons.append(f"{p.recompute} recompute")
    if p.zero > b.zero:
        reasons.append(f"ZeRO-{p.zero}")
    differs = [
        f"{name} {getattr(p, name)} (vs {getattr(b, name)})"
        for name in ("tp", "pp", "cp", "ep", "vpp", "micro_batch")
        if getattr(p, name) != getattr(b, name)
    ]
    if differs and (len(reasons) == 0 or abs(slower) < TIE):
        reasons.append("layout: " + ", ".join(differs))
    return reasons or ["same layout, more memory"]
