"""Enumerate every valid layout for a fleet, prune what does not divide or fit, rank by step time.

Pruning order keeps the search small: degrees that do not divide are never built; a (tp, cp, pp,
dp, ep, vpp, zero) branch is dropped when even its leanest member (full recompute, micro-batch 1)
does not fit; micro-batches are tried in increasing order and stop at the first that does not
fit (memory only grows with the micro-batch). Two options are not enumerated because they are
dominated in this model: sequence parallelism is always on when tp > 1 (same traffic, less
memory, Korthikanti 4.2.2), and selective recompute is skipped under FlashAttention (the scores it
would drop are never stored, so it only adds FLOPs).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from math import gcd, isqrt
from typing import Any

from ekstrain.facts import catalog
from ekstrain.planner import frameworks, inputs
from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import Fleet
from ekstrain.planner.memory import MemoryBreakdown, within_headroom, worst_stage_memory
from ekstrain.planner.models import ModelSpec
from ekstrain.planner.parallel import FULL, NONE, RECOMPUTE_MODES, SELECTIVE, ZERO_STAGES, ParallelConfig
from ekstrain.planner.perf import Efficiency, efficiency_for, pipeline_floor, step_flops, step_time
from ekstrain.planner.plan import Plan
from ekstrain.planner.ranking import rank
from ekstrain.planner.software import DEFAULT_SOFTWARE, Software
from ekstrain.planner.training import DEEPSPEED, FSDP, HSDP, MEGATRON, TrainingSpec

FRAMEWORK_ZERO_STAGES = {MEGATRON: (1, 2, 3), DEEPSPEED: ZERO_STAGES, FSDP: (0, 2, 3), HSDP: (3,)}
"""Stages worth searching under each framework. Megatron's distributed optimizer (ZeRO-1: its fp32
gradient buffer stays whole) dominates plain DDP: less memory, and its fp32 reduce-scatter plus bf16
all-gather move 3/4 of the bytes of DDP's fp32 all-reduce. Megatron's ZeRO-2 is Megatron-FSDP's
``optim_grads`` (gradients sharded too, reduce-scattered every micro-batch; memory.state_bytes_per_param),
the sharding Meta ran Llama 3 405B with (arXiv 2407.21783 section 3.3.1: "we shard the optimizer states
and gradients, but for model shards we do not reshard after forward"). It is only tried where the
distributed optimizer does not fit within the headroom (``LOWER_STAGE_FIRST``). FSDP has no ZeRO-1.
``evaluate`` accepts every stage."""
LOWER_STAGE_FIRST = {MEGATRON: 2}
"""The lowest ZeRO stage that, per framework, only adds traffic over the stage below it: tried for a
(micro-batch, recompute) only when no lower stage fits it within the headroom. Megatron's ZeRO-2
reduce-scatters every micro-batch where ZeRO-1 does so once a step; ZeRO-3 (3 for every framework)
gathers weights on top."""
CP_HOPELESS = 2.0
"""A TP degree stops raising CP once its best plan (within the headroom) got slower from one CP degree to
the next and is this many times slower than the best plan so far: raising CP only paid while it relieved
memory. Ring attention's exposed K/V traffic grows as each rank's chunk of the sequence shrinks
(comm.ring_step against a chunk's attention, which falls with its square), so a larger CP degree does not
win back a factor of two. A pruning rule of the search, not of the model (Mixtral on 16,384 GPUs at 4k
tokens otherwise prices CP 2,048: two tokens a rank); ``max_cp`` still bounds CP outright."""
TOP_MARGIN = 0.05
"""With ``top`` plans asked for, a TP degree also stops raising CP once its best plan got slower with CP and is
more than this beyond the ``top``-th fastest plan within the headroom so far (for a CP 1 plan, the ``top``-th
fastest CP 1 plan: the CP-worth rule, ranking.CP_WORTH, may rank every CP 1 plan before faster CP plans); past
that, the ranking's only reordering is within ties (ranking.TIE, 2 %), so a plan that far behind is not
returned. ``test_cp_pruning_keeps_the_top_ten`` compares the result with the unpruned search."""
PRUNE_OFF = False
"""Tests switch the ``top`` pruning rules (TOP_MARGIN, MICRO_BATCH_HOPELESS, FLOOR_RULE, FLOOR_BOUND) off to compare
with the full search."""
MICRO_BATCH_HOPELESS = "micro-batch"
"""A layout's larger micro-batches (one recompute mode, ZeRO stage and degrees) stop once a micro-batch made the
step slower than the one before and it is TOP_MARGIN past the ``top``-th fastest plan within the headroom: past
the fastest micro-batch, a larger one only adds pipeline bubble (Narayanan's (p - 1) / m with fewer
micro-batches m) and data-parallel traffic exposed behind a shorter backward, while its GEMMs are already as
efficient as they get, so the step does not get faster again. ``test_cp_pruning_keeps_the_top_ten`` checks it."""


FLOOR_BOUND = "floor bound"
"""A layout block (tp, cp, pp, dp, ep, vpp: every ZeRO stage, offload, recompute mode and micro-batch of it) is not
priced when, for each micro-batch and recompute mode it may run, perf.pipeline_floor (the slowest stage's
micro-batches and bubble plus the per-step cost: a floor under the step at any ZeRO stage) is past the ``top`` bound
of its CP class (TOP_MARGIN: 5 % past the ``top``-th fastest plan within the headroom so far, CP 1 plans against CP
1 plans) and no lower than the best plan within the headroom of its (tp, cp) so far. Then each of its plans, within
the headroom or not, has ``top`` plans within the headroom ranked before it: their key is no larger in the ranking's
first two rules and they lie more than a tie (ranking.TIE, 2 %) faster, whatever the fastest plan the ties are
counted from. It is not the fastest plan and cannot change ranking._cp_needed (a faster plan of its CP class is
there, or a faster CP 1 plan within the headroom); it would not enter the leaders, nor lower the best of its (tp,
cp) (CP_HOPELESS decides as before); and what its micro-batch and ZeRO rules learn (MICRO_BATCH_HOPELESS,
FLOOR_RULE, the covered pairs) stays inside the block. The bounds only tighten as the search goes on. So the search
returns what it returns with the block priced, plan for plan; tests/planner/test_search_floor.py compares it with
the unpruned search. The same holds for a block's micro-batches past the largest one that is not past both bounds:
the block is priced up to that one. Its rules walk micro-batches in increasing order and what a larger one teaches
them (a memory break, a covered pair, a recompute floor) only bears on that micro-batch or larger ones."""
FLOOR_SLACK = 1e-9
"""The floor is a product where the step is a sum: rounding may put it an ulp above the step."""


FLOOR_RULE = "floor"
"""Within one layout (degrees and ZeRO stage), a micro-batch is not priced under a heavier recompute mode when the
same micro-batch under a lighter one (the same traffic, fewer FLOPs) was already past the ``top`` bound
(TOP_MARGIN): its step time is a floor under the heavier one's. Not across ZeRO stages: Megatron's ZeRO-2
reduce-scatters bf16 gradients where its distributed optimizer reduce-scatters fp32 ones, so with one or two
micro-batches a step ZeRO-2 is the faster (DeepSeek-V3 on 16,384 GPUs: its best plan)."""


@dataclass
class Priced:
    """What the search tells the enumeration about the layout it last yielded: its step time, and the bound past
    which a slower one is not returned (inf while fewer than ``top`` plans are within the headroom)."""

    bound: Callable[[bool], float]
    """bound(cp_1): the bound for a plan of CP 1 (True) or of CP > 1 (False)."""
    last: float = float("inf")
    alive_up_to: Callable[[ParallelConfig, list[str], list[int]], int | None] | None = None
    """alive_up_to(block, recompute modes, micro-batches): the largest of a layout block's micro-batches (its
    degrees, at every ZeRO stage and recompute mode) whose plans may change the search's result, 0 if none may
    (FLOOR_BOUND); None: no bound yet."""


_SPECS: dict[TrainingSpec, TrainingSpec] = {}
NEURON_ZERO_STAGES = (0, 1)
"""neuronx-distributed shards the optimizer (ZeRO-1) and no further; it has no context parallelism."""


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """Divisors of ``n`` in increasing order, in O(sqrt n) (n reaches 2^24 for a batch)."""
    small = [d for d in range(1, isqrt(n) + 1) if n % d == 0]
    large = [n // d for d in reversed(small) if d * d != n]
    return tuple(small + large)


def _valid(parallel: ParallelConfig, model: ModelSpec, fleet: Fleet, training: TrainingSpec) -> bool:
    try:
        parallel.validate(model, fleet, training)
    except PlanError:
        return False
    return True


def _unlaunchable(parallel: ParallelConfig, training: TrainingSpec) -> bool:
    """A layout the framework's launcher refuses: DeepSpeed's PipelineEngine asserts ZeRO stage < 2
    ("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism", deepspeed/runtime/pipe/engine.py),
    so its best plan must not be one. Megatron-core offloads activations (``--cpu-offloading-num-layers``) only
    without pipeline parallelism (TransformerConfig's check; emit.py refuses it the same way)."""
    if training.framework == MEGATRON and training.software.activation_offload_layers and parallel.pp > 1:
        return True
    return training.framework == DEEPSPEED and parallel.pp > 1 and parallel.zero >= 2


def _offload_launchable(recompute: str, training: TrainingSpec) -> bool:
    """Recompute modes the launcher takes with activation offload: Megatron-core none (TransformerConfig refuses
    offload with recompute), DeepSpeed any but none (it offloads checkpoints: ``cpu_checkpointing``)."""
    if not training.software.activation_offload_layers:
        return True
    if training.framework == MEGATRON:
        return recompute == NONE
    if training.framework == DEEPSPEED:
        return recompute != NONE
    return True


def candidate_layouts(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    *,
    zero_stages: Iterable[int],
    recompute_modes: Iterable[str],
    allow_offload: bool,
    max_cp: int,
    max_micro_batch: int | None,
    cp_hopeless: Callable[[int, int], bool] | None = None,
    tp_degrees: Iterable[int] | None = None,
    priced: Priced | None = None,
) -> Iterator[tuple[ParallelConfig, MemoryBreakdown]]:
    """Every valid layout whose memory fits, with that memory, in no particular order. ``cp_hopeless(tp,
    cp)``, asked before each larger CP degree of a TP degree, ends that TP degree's CP degrees. ``tp_degrees``:
    the TP degrees tried (default: those dividing a node). ``priced``: the step time the caller gave the layout
    last yielded, which ends a recompute mode's larger micro-batches (MICRO_BATCH_HOPELESS)."""
    n, capacity = fleet.ranks, fleet.rank_memory_bytes
    dominated_from = LOWER_STAGE_FIRST.get(training.framework, 3)
    modes = [
        r
        for r in recompute_modes
        if not (r == SELECTIVE and training.flash_attention) and _offload_launchable(r, training)
    ]
    zero_options = [(z, False) for z in zero_stages] + (
        [(z, True) for z in zero_stages if z >= 1] if allow_offload else []
    )
    for tp in reversed(divisors(fleet.ranks_per_node)) if tp_degrees is None else tp_degrees:
        for cp in divisors(n // tp):
            if cp > max_cp or (cp > 1 and cp_hopeless is not None and cp_hopeless(tp, cp)):
                break
            for pp in divisors(n // (tp * cp)):
                dp = n // (tp * cp * pp)
                if training.global_batch % dp:
                    continue
                ep_options = divisors(gcd(model.experts, dp * cp)) if model.is_moe else (1,)
                base = ParallelConfig(
                    tp=tp, pp=pp, dp=dp, micro_batch=1, cp=cp, sequence_parallel=tp > 1, recompute=FULL
                )
                if not _valid(base, model, fleet, training):
                    continue  # tp, cp or pp does not divide the model: no ep/vpp/zero variant will
                _, full = base.stage_layers(model.layers)
                vpp_options = divisors(full) if pp > 1 else (1,)
                per_replica = training.global_batch // dp
                for ep in ep_options:
                    for vpp in vpp_options:
                        limit = max_micro_batch
                        if priced is not None and priced.alive_up_to is not None:
                            block = ParallelConfig(
                                tp=tp, pp=pp, dp=dp, micro_batch=1, cp=cp, ep=ep, vpp=vpp, sequence_parallel=tp > 1
                            )
                            micro_batches = [
                                b
                                for b in divisors(per_replica)
                                if (max_micro_batch is None or b <= max_micro_batch)
                                and (vpp == 1 or (per_replica // b) % pp == 0)
                            ]
                            cap = priced.alive_up_to(block, modes, micro_batches)
                            if cap == 0:
                                continue  # FLOOR_BOUND: every plan of the block is slower than the bound
                            if cap is not None:
                                limit = cap  # FLOOR_BOUND: every plan of a larger micro-batch is
                        # (micro-batch, recompute) pairs that fit within the headroom at a lower,
                        # non-offloaded ZeRO stage: ZeRO-3 or offload there would only add traffic.
                        covered: set[tuple[int, str]] = set()
                        for zero, offload in zero_options:
                            lean = ParallelConfig(
                                tp=tp,
                                pp=pp,
                                dp=dp,
                                micro_batch=1,
                                cp=cp,
                                ep=ep,
                                vpp=vpp,
                                zero=zero,
                                recompute=FULL,
                                sequence_parallel=tp > 1,
                                offload_optimizer=offload,
                            )
                            if not _valid(lean, model, fleet, training) or _unlaunchable(lean, training):
                                continue
                            lean_memory = worst_stage_memory(model, lean, training)
                            if lean_memory.total > capacity:
                                continue  # model states alone do not fit: prune the branch
                            dominated = covered if (zero >= dominated_from or offload) else set()
                            for candidate, memory in _fitting_micro_batches(
                                model,
                                fleet,
                                training,
                                lean,
                                modes,
                                limit,
                                dominated,
                                lean_memory,
                                priced,
                            ):
                                if zero < 3 and not offload and within_headroom(memory.total, capacity):
                                    # a stage below ZeRO-3 covering the pair makes ZeRO-3 (and Megatron's
                                    # ZeRO-2 over its ZeRO-1) only more traffic
                                    covered.add((candidate.micro_batch, candidate.recompute))
                                yield candidate, memory


def _fitting_micro_batches(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    lean: ParallelConfig,
    modes: list[str],
    max_micro_batch: int | None,
    dominated: set[tuple[int, str]],
    lean_memory: MemoryBreakdown | None = None,
    priced: Priced | None = None,
) -> Iterator[tuple[ParallelConfig, MemoryBreakdown]]:
    """Fitting (recompute, micro-batch) variants of ``lean``, lightest recompute first. A heavier
    recompute mode is skipped for a micro-batch a lighter one already fits within the headroom:
    same traffic, more FLOPs, and the headroom rule no longer needs its memory."""
    per_replica = training.global_batch // lean.dp
    capacity = fleet.rank_memory_bytes
    light_enough: set[int] = set()
    floors: dict[int, float] = {}  # per micro-batch: the step time under the lighter recompute modes (FLOOR_RULE)
    for recompute in modes:
        previous = float("inf")
        for micro_batch in divisors(per_replica):
            if max_micro_batch is not None and micro_batch > max_micro_batch:
                break
            if micro_batch in light_enough or (micro_batch, recompute) in dominated:
                continue
            floor = floors.get(micro_batch, 0.0)
            if priced is not None and floor > priced.bound(lean.cp == 1):
                continue  # FLOOR_RULE: slower than the same micro-batch under a lighter recompute, past the bound
            candidate = ParallelConfig(
                tp=lean.tp,
                pp=lean.pp,
                dp=lean.dp,
                micro_batch=micro_batch,
                cp=lean.cp,
                ep=lean.ep,
                vpp=lean.vpp,
                zero=lean.zero,
                recompute=recompute,
                sequence_parallel=lean.sequence_parallel,
                offload_optimizer=lean.offload_optimizer,
            )
            if lean_memory is not None and micro_batch == 1 and recompute == FULL:
                memory = lean_memory  # the branch's leanest member, computed when the branch was checked
            else:
                memory = worst_stage_memory(model, candidate, training)
            if memory.total > capacity:
                break  # larger micro-batches need more memory still
            if within_headroom(memory.total, capacity):
                light_enough.add(micro_batch)
            # The rest of validate() was checked on ``lean``; what the micro-batch changes is
            # interleaving's rule that micro-batches per step divide by pp.
            if lean.vpp == 1 or (per_replica // micro_batch) % lean.pp == 0:
                yield candidate, memory
                if priced is not None:  # the search has priced it (priced.last) before asking for the next
                    floors[micro_batch] = max(floor, priced.last)
                    if priced.last > previous and priced.last > priced.bound(lean.cp == 1):
                        break  # MICRO_BATCH_HOPELESS
                    previous = priced.last


@dataclass(frozen=True)
class SearchSpace:
    """What the search enumerates beyond the layout degrees: the ZeRO stages (None: the framework's,
    FRAMEWORK_ZERO_STAGES), recompute modes, ZeRO-Offload, bounds on CP and the micro-batch, TP across nodes,
    and how many plans come back (None: all)."""

    zero_stages: tuple[int, ...] | None = None
    recompute_modes: tuple[str, ...] = RECOMPUTE_MODES
    allow_offload: bool = False
    max_cp: int | None = None
    max_micro_batch: int | None = None
    cross_node_tp: bool = True
    """Try TP wider than a node (whole nodes, its collectives on the network: comm.Links.layout) when no layout
    with TP inside a node fits within the headroom. Megatron-core accepts any TP degree dividing the world
    (TP 16 over two 8-GPU nodes runs, slowly); such a layout is slower than one that relieves memory with PP or CP
    wherever one fits, so it is tried only where none does."""
    top: int | None = None


DEFAULT_SPACE = SearchSpace()


def cross_node_tp_degrees(model: ModelSpec, fleet: Fleet) -> tuple[int, ...]:
    """TP degrees spanning whole nodes (2, 3, ... nodes) that divide the heads: parallel.validate's rule."""
    per_node = fleet.ranks_per_node
    return tuple(per_node * k for k in divisors(fleet.nodes) if k > 1 and model.heads % (per_node * k) == 0)


def search(
    model: ModelSpec,
    fleet: Fleet,
    global_batch: int,
    seq_len: int,
    *,
    precision: str = "bf16",
    lora_rank: int = 0,
    flash_attention: bool = True,
    framework: str = MEGATRON,
    efficiency: Efficiency | None = None,
    zero_stages: Iterable[int] | None = None,
    recompute_modes: Iterable[str] = RECOMPUTE_MODES,
    allow_offload: bool = False,
    max_cp: int | None = None,
    max_micro_batch: int | None = None,
    top: int | None = None,
    unfused: tuple[str, ...] = (),
    tp_comm_overlap: bool | None = None,
    software: Software | None = None,
    cross_node_tp: bool = True,
) -> list[Plan]:
    """The keyword form of :func:`search_specs` (the library's original call): builds the TrainingSpec and the
    SearchSpace from the keywords. ``unfused``: the elementwise ops the stack runs as separate eager kernels
    (training.EAGER_PYTORCH); () = fused. ``framework``: any name of frameworks.py."""
    training = TrainingSpec(
        global_batch,
        seq_len,
        precision=precision,
        lora_rank=lora_rank,
        flash_attention=flash_attention,
        framework=frameworks.cost_model(framework),  # any name of the one vocabulary (frameworks.py)
        unfused=unfused,
        tp_comm_overlap=tp_comm_overlap,
        software=software or DEFAULT_SOFTWARE,
    )
    space = SearchSpace(
        zero_stages=None if zero_stages is None else tuple(zero_stages),
        recompute_modes=tuple(recompute_modes),
        allow_offload=allow_offload,
        max_cp=max_cp,
        max_micro_batch=max_micro_batch,
        cross_node_tp=cross_node_tp,
        top=top,
    )
    return search_specs(model, fleet, training, space, efficiency)


def search_specs(
    model: ModelSpec,
    fleet: Fleet,
    training: TrainingSpec,
    space: SearchSpace = DEFAULT_SPACE,
    efficiency: Efficiency | None = None,
) -> list[Plan]:
    """All fitting plans of ``model`` on ``fleet`` for ``training`` within ``space``, fastest first (ties: less
    memory first). Raises PlanError if none fits."""
    # One object per distinct spec: the memory and time caches (lru_cache) then match it by identity instead of
    # comparing every field of an equal spec from an earlier search on every lookup.
    if len(_SPECS) > 256:
        _SPECS.clear()  # bounded: a long-lived process plans many shapes
    training = _SPECS.setdefault(training, training)
    framework = training.framework
    inputs.check_lora_rank(model, training.lora_rank)
    neuron = fleet.family == catalog.TRAINIUM
    zero_stages = space.zero_stages
    if zero_stages is None:
        zero_stages = NEURON_ZERO_STAGES if neuron else FRAMEWORK_ZERO_STAGES[framework]
    max_cp = space.max_cp
    if max_cp is None:
        max_cp = 1 if neuron else fleet.ranks
    fleet.rank_peak_flops(training.precision)  # fail fast on fp8 without an fp8 peak
    plans: list[Plan] = []
    eff = efficiency or efficiency_for(fleet)
    cache: dict[tuple[object, ...], Any] = {}
    flops = {mode: step_flops(model, training, mode) for mode in RECOMPUTE_MODES}
    # The best step time within the headroom so far, overall and per (tp, cp): CP_HOPELESS below.
    best_overall = [float("inf")]
    best_at: dict[tuple[int, int], float] = {}
    capacity = fleet.rank_memory_bytes

    # The ``space.top`` fastest step times within the headroom so far (a max-heap of negatives): a TP degree whose
    # best got slower with CP and lies past the slowest of them, a tie's width aside, has no later CP degree that
    # ranks among the plans returned (CP_HOPELESS).
    leaders: list[float] = []
    # The same of CP 1 plans only: below ranking.CP_MIN_SEQ the ranking may put every CP 1 plan before faster CP
    # plans (CP not needed), so a CP 1 plan is measured against the CP 1 plans (never looser than all plans'
    # bound once CP is needed, since that top-th is then at least as fast).
    leaders_cp1: list[float] = []

    def cp_hopeless(tp: int, cp: int) -> bool:
        tried = sorted(c for (t, c) in best_at if t == tp and c < cp)
        if len(tried) < 2:
            return False
        last, before = best_at[(tp, tried[-1])], best_at[(tp, tried[-2])]
        return last > before and last > min(CP_HOPELESS * best_overall[0], top_bound(False))

    def top_bound(cp_1: bool) -> float:
        heap = leaders_cp1 if cp_1 else leaders
        if space.top and len(heap) >= space.top and not PRUNE_OFF:
            return (1 + TOP_MARGIN) * -heap[0]
        return float("inf")

    def lead(heap: list[float], time: float, top: int) -> None:
        if len(heap) < top:
            heapq.heappush(heap, -time)
        elif time < -heap[0]:
            heapq.heapreplace(heap, -time)

    def alive_up_to(block: ParallelConfig, modes: list[str], micro_batches: list[int]) -> int | None:
        # FLOOR_BOUND: the plans of a micro-batch (any ZeRO stage, offload, recompute mode) are past the bound of
        # their CP class and no faster than the best plan within the headroom of their (tp, cp) so far. Larger
        # micro-batches first: all of them past the bound skip the block, the largest not past it caps the block.
        bound = top_bound(block.cp == 1)
        best = best_at.get((block.tp, block.cp))
        if best is None or bound == float("inf"):
            return None
        enough = max(bound, best) / (1 - FLOOR_SLACK)  # the floor's cheaper forms are enough past this
        for micro_batch in reversed(micro_batches):
            for recompute in modes:
                candidate = ParallelConfig(
                    tp=block.tp,
                    pp=block.pp,
                    dp=block.dp,
                    micro_batch=micro_batch,
                    cp=block.cp,
                    ep=block.ep,
                    vpp=block.vpp,
                    recompute=recompute,
                    sequence_parallel=block.sequence_parallel,
                )
                floor = pipeline_floor(model, fleet, training, candidate, eff, cache, enough) * (1 - FLOOR_SLACK)
                if floor <= bound or floor < best:
                    return micro_batch
        return 0

    priced = Priced(top_bound, alive_up_to=alive_up_to)
    passes: list[tuple[int, ...] | None] = [None]
    if space.cross_node_tp and not neuron:
        passes.append(cross_node_tp_degrees(model, fleet))
    for tp_degrees in passes:
        if tp_degrees is not None and (best_overall[0] < float("inf") or not tp_degrees):
            break  # a layout with TP inside a node fits within the headroom: TP across nodes is only slower
        for parallel, memory in candidate_layouts(
            model,
            fleet,
            training,
            zero_stages=tuple(zero_stages),
            recompute_modes=space.recompute_modes,
            allow_offload=space.allow_offload,
            max_cp=max_cp,
            max_micro_batch=space.max_micro_batch,
            cp_hopeless=cp_hopeless,
            tp_degrees=tp_degrees,
            priced=priced,
        ):
            time = step_time(model, fleet, training, parallel, eff, cache)
            priced.last = time.total
            plans.append(Plan(model, fleet, training, parallel, memory, time, flops[parallel.recompute]))
            if within_headroom(memory.total, capacity):
                key = (parallel.tp, parallel.cp)
                best_at[key] = min(best_at.get(key, float("inf")), time.total)
                best_overall[0] = min(best_overall[0], time.total)
                if space.top:
                    lead(leaders, time.total, space.top)
                    if parallel.cp == 1:
                        lead(leaders_cp1, time.total, space.top)
    if not plans:
        raise PlanError(
            f"{model.name} does not fit on {fleet.nodes} x {fleet.name} "
            f"({fleet.ranks} ranks of {fleet.rank_memory_bytes / 2**30:.0f} GiB) at global batch "
            f"{training.global_batch} x {training.seq_len} with any layout"
        )
    return rank(plans, space.top)
