"""``ekstrain plan search|evaluate ... --html FILE``: the candidates and the chosen plan as pictures.

The candidates chart puts every plan the search ranked (ekstrain/planner/search.py: all fit) at its predicted
step time and memory per device, with the device's capacity as a line; for each candidate that recomputes
activations, the same layout without recomputation is evaluated too (ekstrain/planner/plan.py evaluate), which
is where "does not fit" shows: recomputation is what trades time for memory.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from typing import Any

from ekstrain.pages import shell
from ekstrain.planner.errors import PlanError
from ekstrain.planner.parallel import NONE
from ekstrain.planner.plan import Plan, evaluate

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


def candidates_figure(plans: Sequence[Plan], chosen: Plan) -> str:
    fig = shell.figure(11, 5)
    ax = fig.add_subplot()
    fits = [p for p in plans if p.fits and p is not chosen]
    over = [p for p in plans if not p.fits and p is not chosen]
    if fits:
        ax.scatter(
            [p.memory.total / GIB for p in fits],
            [p.step_time_s for p in fits],
            s=28,
            color="#4c78a8",
            alpha=0.75,
            label=f"fits ({len(fits)})",
        )
    if over:
        ax.scatter(
            [p.memory.total / GIB for p in over],
            [p.step_time_s for p in over],
            s=30,
            marker="x",
            color="#e45756",
            label=f"does not fit ({len(over)})",
        )
    ax.scatter(
        [chosen.memory.total / GIB],
        [chosen.step_time_s],
        s=220,
        marker="*",
        color="#f58518",
        edgecolor="black",
        zorder=5,
        label=f"chosen: {chosen.summary()}" + ("" if chosen.fits else " (does not fit)"),
    )
    capacity = chosen.fleet.rank_memory_bytes / GIB
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
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), frameon=False)
    return shell.svg(fig, "plan-candidates")


def breakdown_figure(plan: Plan) -> str:
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
    return shell.svg(fig, "plan-breakdown")


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
    memory = {k: f"{v:.2f}" for k, v in chosen.memory.gib().items()}
    times = {TIME_LABELS.get(k, k): f"{v:.4f}" for k, v in chosen.time.parts().items()}
    sections = [
        shell.section(
            f"Candidates: step time against memory per device ({len(candidates)})",
            '<p class="muted">Blue: layouts the search ranked (all fit); red x: the same layouts without activation '
            "recomputation, where that does not fit; star: the chosen plan.</p>",
            f"<figure>{candidates_figure(candidates, chosen)}</figure>",
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
