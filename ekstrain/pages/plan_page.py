"""``ekstrain plan search|evaluate ... --html FILE``: the candidates and the chosen plan as pictures.

The candidates chart puts every plan the search ranked (ekstrain/planner/search.py: all fit) at its predicted
step time and memory per device, with the device's capacity as a line; for each candidate that recomputes
activations, the same layout without recomputation is evaluated too (ekstrain/planner/plan.py evaluate), which
is where "does not fit" shows: recomputation is what trades time for memory.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ekstrain.pages import shell
from ekstrain.planner.errors import PlanError
from ekstrain.planner.parallel import NONE
from ekstrain.planner.plan import Plan, evaluate

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn
    from matplotlib.figure import Figure

GIB = 2**30
TABLE_ROWS = 20
TIME_LABELS = {
    "compute": "compute",
    "tp_comm": "TP traffic",
    "cp_comm": "CP traffic",
    "ep_comm": "EP all-to-all",
    "pp_p2p": "PP point-to-point",
    "pp_bubble": "pipeline bubble",
    "dp_comm": "exposed DP/ZeRO traffic",
}


def without_recompute(
    plans: Sequence[Plan], model: Any, fleet: Any, global_batch: int, seq_len: int, options: dict[str, Any]
) -> list[Plan]:
    """The same layouts with recompute none (those not already among ``plans``): the memory it saves."""
    seen = {p.summary() for p in plans}
    out = []
    for p in plans:
        if p.recompute == NONE:
            continue
        try:
            q = evaluate(
                model,
                fleet,
                global_batch,
                seq_len,
                tp=p.tp,
                pp=p.pp,
                dp=p.dp,
                cp=p.cp,
                ep=p.ep,
                vpp=p.vpp,
                micro_batch=p.micro_batch,
                recompute=NONE,
                sequence_parallel=p.sequence_parallel,
                zero=p.zero,
                offload_optimizer=p.parallel.offload_optimizer,
                **options,
            )
        except PlanError:
            continue
        if q.summary() not in seen:
            seen.add(q.summary())
            out.append(q)
    return out


def candidates_figure(ranked: Sequence[Plan], extra: Sequence[Plan], chosen: Plan) -> str:
    """Every ranked plan (all fit) and the same layouts without recomputation, at memory and step time. The axes
    are clipped to the region of the ranked plans (and the device's capacity), so the fitting plans and the
    chosen star are spread out; points outside it are counted in the legend, not drawn squeezed. Drawn once per
    process for the same plans (shell.drawn: plans are frozen dataclasses, their repr is every field)."""
    ranked, extra = list(ranked), list(extra)
    return shell.drawn((ranked, extra, chosen), "plan-candidates", lambda: _candidates(ranked, extra, chosen))


def _candidates(ranked: Sequence[Plan], extra: Sequence[Plan], chosen: Plan) -> Figure:
    fig = shell.figure(11, 5)
    ax = fig.add_subplot()
    mem = [p.memory.total / GIB for p in ranked]
    times = sorted(p.step_time_s for p in ranked)
    capacity = chosen.fleet.rank_memory_bytes / GIB
    x_lo, x_hi = min(mem) * 0.95, max(max(mem), capacity) * 1.05
    # the slowest tenth of the ranking would flatten the rest: the chart shows up to its 90th percentile
    y_lo = times[0] * 0.95
    y_hi = max(times[min(len(times) - 1, int(len(times) * 0.9))], chosen.step_time_s) * 1.05
    inside = lambda p: x_lo <= p.memory.total / GIB <= x_hi and y_lo <= p.step_time_s <= y_hi  # noqa: E731
    groups = [
        ([p for p in ranked if p is not chosen], f"ranked, fits ({len(ranked)})", "o", "#4c78a8"),
        ([p for p in extra if p.fits], "without recomputation, fits", "o", "#9ecae9"),
        ([p for p in extra if not p.fits], "without recomputation, does not fit", "x", "#e45756"),
    ]
    for plans, label, marker, colour in groups:
        shown = [p for p in plans if inside(p)]
        if not plans:
            continue
        off = len(plans) - len(shown)
        if "ranked" not in label:
            label += f" ({len(plans)})"
        ax.scatter(
            [p.memory.total / GIB for p in shown],
            [p.step_time_s for p in shown],
            s=28,
            marker=marker,
            color=colour,
            alpha=0.75,
            label=label + (f"; {off} outside the axes" if off else ""),
        )
    ax.scatter(
        [chosen.memory.total / GIB],
        [chosen.step_time_s],
        s=260,
        marker="*",
        color="#f58518",
        edgecolor="black",
        zorder=5,
        label=f"chosen: {chosen.summary()}" + ("" if chosen.fits else " (does not fit)"),
    )
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.axvline(capacity, color="#b3261e", ls="--", lw=1)
    ax.annotate(
        f"device memory {capacity:.0f} GiB",
        (capacity, 1.0),
        xycoords=("data", "axes fraction"),
        fontsize=8,
        color="#b3261e",
        ha="right",
        va="bottom",
    )
    ax.set_xlabel("memory per device (GiB)")
    ax.set_ylabel("predicted step time (s)")
    ax.grid(color="#eee")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False, ncol=2)
    return fig


def breakdown_figure(plan: Plan) -> str:
    """The chosen plan's memory and step time by part (drawn once per process for the same plan: shell.drawn)."""
    return shell.drawn(plan, "plan-breakdown", lambda: _breakdown(plan))


def _breakdown(plan: Plan) -> Figure:
    fig = shell.figure(11, 3.2)
    mem_ax, time_ax = fig.subplots(1, 2)
    memory = {k: v for k, v in plan.memory.gib().items() if k != "total"}
    left = 0.0
    palette = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2"]
    for i, (k, v) in enumerate(memory.items()):
        mem_ax.barh([0], [v], left=left, color=palette[i % len(palette)], label=f"{k} {v:.1f}")
        left += v
    mem_ax.axvline(plan.fleet.rank_memory_bytes / GIB, color="#b3261e", ls="--", lw=1, label="device memory")
    mem_ax.set_yticks([])
    mem_ax.set_xlabel(f"GiB per device ({plan.memory.stage})")
    mem_ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, frameon=False)
    parts = {TIME_LABELS.get(k, k): v for k, v in plan.time.parts().items() if v > 0}
    left = 0.0
    for i, (k, v) in enumerate(parts.items()):
        time_ax.barh([0], [v], left=left, color=palette[i % len(palette)], label=f"{k} {v:.3f}")
        left += v
    time_ax.set_yticks([])
    time_ax.set_xlabel("seconds per step")
    time_ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, frameon=False)
    return fig


def _row(i: int, p: Plan) -> dict[str, Any]:
    return {
        "#": i,
        "layout": p.summary(),
        "fits": "yes" if p.fits else "no",
        "memory GiB": f"{p.memory.total / GIB:.1f}",
        "step s": f"{p.step_time_s:.3f} ±{p.error_band.fraction:.0%}",
        "MFU": f"{p.mfu:.1%}",
        "limits": p.explain(),
    }


def html(ranked: Sequence[Plan], chosen: Plan, extra: Sequence[Plan], title: str) -> str:
    candidates = [*ranked, *extra]
    memory = {k: f"{v:.1f}" for k, v in chosen.memory.gib().items()}
    times = {TIME_LABELS.get(k, k): f"{v:.3f}" for k, v in chosen.time.parts().items()}
    sections = [
        shell.section(
            f"Candidates: step time against memory per device ({len(candidates)})",
            '<p class="muted">Blue: layouts the search ranked (all fit); light blue and red x: the same layouts '
            "without activation recomputation, where that fits and where it does not; star: the chosen plan. The "
            "axes cover the ranked plans; the legend counts the points outside them.</p>",
            f"<figure>{candidates_figure(ranked, extra, chosen)}</figure>",
        ),
        shell.section(
            f"Chosen plan: {chosen.summary()}",
            f"<p>{'fits' if chosen.fits else '<span class=bad>does not fit</span>'}: "
            f"{chosen.memory.total / GIB:.1f} of {chosen.fleet.rank_memory_bytes / GIB:.1f} GiB per device; step "
            f"{chosen.step_time_s:.3f} s ±{chosen.error_band.fraction:.0%} ({shell.esc(chosen.error_band.basis)}); "
            f"MFU {chosen.mfu:.1%}</p>",
            f"<figure>{breakdown_figure(chosen)}</figure>",
            shell.table([memory]),
            shell.table([times]),
        ),
        shell.section(
            f"Ranked plans (first {min(len(ranked), TABLE_ROWS)} of {len(ranked)})",
            shell.table([_row(i, p) for i, p in enumerate(ranked[:TABLE_ROWS], 1)]),
        ),
    ]
    subtitle = f"{chosen.model.name} on {chosen.fleet.ranks} devices · ekstrain planner (docs/planner.md)"
    return shell.page(title, subtitle, sections)


def write(
    path: str,
    ranked: Sequence[Plan],
    model: Any,
    fleet: Any,
    global_batch: int,
    seq_len: int,
    options: dict[str, Any],
    title: str,
) -> pathlib.Path:
    """The page of ``ranked`` (the first is the chosen plan) into ``path``."""
    extra = without_recompute(ranked, model, fleet, global_batch, seq_len, options)
    return shell.write(pathlib.Path(path), html(ranked, ranked[0], extra, title))
