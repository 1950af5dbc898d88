"""``ekstrain simulate --timeline MIX --html FILE``: the timeline as pictures.

``Recorder`` is the simulator's own ``Timeline`` (ekstrain/simulate/timeline.py) with three observations added:
after each simulated minute it notes every node's state (launching, busy, idle, unhealthy) and every job's, and
each failure it handles (a restart or the end of the job). Nothing it simulates changes: its Report is the one
``simulate_timeline`` returns, and the page's dollars are the Report's own ``idle_usd``.
"""

from __future__ import annotations

import collections
from typing import Any

from ekstrain.pages import shell
from ekstrain.simulate.timeline import ACCELERATORS, Job, Report, SimNode, Timeline, job_line

STATE_COLOURS = {
    "busy": "#4c78a8",
    "idle": "#f58518",
    "launching": "#bab0ac",
    "unhealthy": "#e45756",
}
JOB_COLOURS = {"waiting": "#e0e4ea", "running": "#54a24b"}


def partition_of(n: SimNode) -> str:
    return next(iter(n.candidate.labels.get("ekstrain.io/partition", {n.pool})))


class Recorder(Timeline):
    """The timeline, recording what the page draws (per minute: nodes' and jobs' states; failures)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node_states: dict[int, list[tuple[int, str]]] = collections.defaultdict(list)
        self.job_states: dict[str, list[tuple[int, str]]] = collections.defaultdict(list)
        self.failures: list[tuple[int, str, str]] = []
        self.idle_usd_at: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)

    def fail(self, job: Job, why: str) -> None:
        self.failures.append((self.now, job.name, why))
        super().fail(job, why)

    def account(self) -> None:
        super().account()
        for part, usd in self.idle_usd.items():
            self.idle_usd_at[part].append((self.now, sum(usd.values())))

    def step(self) -> None:
        super().step()
        minute = self.now - 1
        running = {j.name for j in self.jobs if j.state == "running"}
        for n in self.nodes:
            if n.state == "gone":
                continue
            if n.state in ("launching", "unhealthy"):
                state = n.state
            else:
                state = "busy" if any(h in running for h in n.holders) else "idle"
            self.node_states[n.ident].append((minute, state))
        for j in self.jobs:
            if j.kind != "standing" and j.state in JOB_COLOURS and j.arrival.at <= minute:
                self.job_states[j.name].append((minute, j.state))


def segments(samples: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """Per-minute samples -> (start, minutes, state) runs."""
    out: list[tuple[int, int, str]] = []
    for minute, state in samples:
        if out and out[-1][2] == state and out[-1][0] + out[-1][1] == minute:
            out[-1] = (out[-1][0], out[-1][1] + 1, state)
        else:
            out.append((minute, 1, state))
    return out


def _legend(ax: Any, colours: dict[str, str], hatched: str = "") -> None:
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=k) for k, c in colours.items()]
    if hatched:
        handles.append(Patch(facecolor=colours["idle"], edgecolor="white", hatch="///", label=hatched))
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
        frameon=False,
    )


def _faults(ax: Any, tl: Recorder) -> None:
    for f in tl.mix.faults:
        ax.axvline(f.at / 60, color="#b3261e", lw=1, ls="--")
        ax.annotate(
            f"{f.kind}\n({f.job})",
            (f.at / 60, 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            color="#b3261e",
            va="bottom",
            ha="center",
        )


def nodes_figure(tl: Recorder, hours: float) -> str:
    nodes = sorted((n for n in tl.nodes if n.ident in tl.node_states), key=lambda n: (partition_of(n), n.ident))
    fig = shell.figure(13, 0.9 + 0.18 * max(4, len(nodes)))
    ax = fig.add_subplot()
    for row, n in enumerate(nodes):
        for start, length, state in segments(tl.node_states[n.ident]):
            ax.broken_barh(
                [(start / 60, length / 60)],
                (row - 0.4, 0.8),
                facecolors=STATE_COLOURS[state],
                hatch="///" if state == "idle" and _accelerated(n) else None,
                edgecolor="white" if state == "idle" else None,
                lw=0,
            )
    ax.set_yticks(range(len(nodes)))
    ax.set_yticklabels([f"{partition_of(n)} · {n.candidate.instance.name} #{n.ident}" for n in nodes], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, hours)
    ax.set_xlabel("hours since the start of the mix")
    ax.grid(axis="x", color="#eee")
    _faults(ax, tl)
    _legend(ax, STATE_COLOURS, hatched="idle, paid accelerators")
    return shell.svg(fig, "tl-nodes")


def _accelerated(n: SimNode) -> bool:
    return any(n.candidate.capacity.get(r) for r in ACCELERATORS)


def jobs_figure(tl: Recorder, report: Report, hours: float) -> str:
    jobs = [j for j in report.jobs if j.kind != "standing"]
    fig = shell.figure(13, 0.9 + 0.3 * max(3, len(jobs)))
    ax = fig.add_subplot()
    for row, j in enumerate(jobs):
        for start, length, state in segments(tl.job_states.get(j.name, [])):
            ax.broken_barh([(start / 60, length / 60)], (row - 0.35, 0.7), facecolors=JOB_COLOURS[state])
        for minute, name, _why in tl.failures:
            if name == j.name:
                ax.plot(minute / 60, row, marker="X", color="#b3261e", ms=8)
        if j.state == "finished" and j.ended_at is not None:
            ax.plot(j.ended_at / 60, row, marker="|", color="#1b7f3b", ms=12)
    ax.set_yticks(range(len(jobs)))
    ax.set_yticklabels([f"{j.name} [{j.kind}]" for j in jobs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, hours)
    ax.set_xlabel("hours (X: a failure the controller restarted or ended the job on; |: finished)")
    ax.grid(axis="x", color="#eee")
    _faults(ax, tl)
    _legend(ax, JOB_COLOURS)
    return shell.svg(fig, "tl-jobs")


def waits_figure(report: Report) -> str:
    jobs = [j for j in report.jobs if j.kind != "standing"]
    reasons = sorted({r for j in jobs for r in j.waited})
    fig = shell.figure(13, 0.9 + 0.3 * max(3, len(jobs)) + 0.25 * len(reasons))
    ax = fig.add_subplot()
    left = [0.0] * len(jobs)
    palette = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#ff9da6", "#9d755d"]
    for i, reason in enumerate(reasons):
        widths = [j.waited.get(reason, 0) for j in jobs]
        ax.barh(range(len(jobs)), widths, left=left, color=palette[i % len(palette)], label=reason[:90])
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(jobs)))
    ax.set_yticklabels([j.name for j in jobs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("minutes waited, by the reason the scheduler gave")
    if reasons:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), fontsize=7, frameon=False, ncol=1)
    return shell.svg(fig, "tl-waits")


def idle_figure(tl: Recorder, report: Report, hours: float) -> str:
    fig = shell.figure(13, 3.2)
    ax = fig.add_subplot()
    for part, series in sorted(tl.idle_usd_at.items()):
        total = sum(report.idle_usd.get(part, {}).values())
        ax.fill_between(
            [m / 60 for m, _ in series], [v for _, v in series], step="post", alpha=0.35, label=f"{part}: ${total:,.0f}"
        )
    ax.set_xlim(0, hours)
    ax.set_xlabel("hours")
    ax.set_ylabel("idle paid capacity, cumulative USD")
    ax.legend(fontsize=8, frameon=False, loc="upper left")
    ax.grid(color="#eee")
    return shell.svg(fig, "tl-idle")


def html(tl: Recorder, report: Report, title: str) -> str:
    hours = tl.mix.minutes / 60
    idle_rows = [
        {
            "partition": part,
            "why idle": cat,
            "accelerator-hours": f"{minutes / 60:.1f}",
            "USD": f"{report.idle_usd.get(part, {}).get(cat, 0.0):,.0f}",
        }
        for part, cats in sorted(report.idle.items())
        for cat, minutes in sorted(cats.items())
        if minutes
    ]
    failures = fault_rows(tl, report)
    finished = sum(j.state == "finished" for j in report.jobs)
    problems = "".join(f'<li class="bad">{shell.esc(p)}</li>' for p in report.problems)
    sections = [
        shell.section(
            "Nodes per partition over time",
            '<p class="muted">One row per node Karpenter (or the system node group) ran; orange: up and idle, '
            "hatched where its accelerators are paid for; dashed red: an injected fault.</p>",
            f"<figure>{nodes_figure(tl, hours)}</figure>",
        ),
        shell.section("Jobs", f"<figure>{jobs_figure(tl, report, hours)}</figure>"),
        shell.section("Each job's wait, by reason", f"<figure>{waits_figure(report)}</figure>"),
        shell.section(
            f"Idle paid capacity: ${sum(sum(u.values()) for u in report.idle_usd.values()):,.0f}",
            f"<figure>{idle_figure(tl, report, hours)}</figure>",
            shell.table(idle_rows, numeric=("accelerator-hours", "USD")),
        ),
        shell.section(
            "Faults and restarts",
            shell.table(failures),
            "".join(f"<p>{shell.esc(f)}</p>" for f in report.faults),
        ),
        shell.section(
            f"{finished} jobs finished, {len(report.problems)} problems",
            f"<ul>{problems}</ul>" if problems else '<p class="ok">no problems</p>',
            "<ul>"
            + "".join(f"<li>{shell.esc(job_line(j))}</li>" for j in report.jobs if j.kind != "standing")
            + "</ul>",
        ),
    ]
    return shell.page(title, f"{hours:.0f} simulated hours · ekstrain simulate --timeline", sections)


def fault_rows(tl: Recorder, report: Report) -> list[dict[str, str]]:
    """One row per fault of the mix, in time order, with what it did: the failures it caused, or why it did nothing
    (the job had no node then, or it waits for the next launch); then restarts no fault of the mix caused."""
    clock = lambda m: f"{m // 60}:{m % 60:02d}"  # noqa: E731
    used: set[int] = set()
    rows: list[dict[str, str]] = []
    for f in sorted(tl.mix.faults, key=lambda f: (f.at, f.job)):
        caused = [i for i, (m, name, _) in enumerate(tl.failures) if m == f.at and i not in used and name == f.job] or [
            i for i, (m, _, _) in enumerate(tl.failures) if m == f.at and i not in used
        ]
        used.update(caused)
        missed = next((p for p in report.problems if p.startswith(f"fault {f.kind} at {clock(f.at)}: {f.job}")), None)
        what = (
            "; ".join(f"{tl.failures[i][1]}: {tl.failures[i][2]}" for i in caused)
            if caused
            else f"not injected: {missed.split(': ', 1)[1]}"
            if missed
            else "armed: it acts on the job's next node launch (see the job's events)"
        )
        rows.append({"at": clock(f.at), "fault": f.kind, "job": f.job, "what happened": what})
    rows += [
        {"at": clock(m), "fault": "-", "job": name, "what happened": why}
        for i, (m, name, why) in enumerate(tl.failures)
        if i not in used
    ]
    return rows


def run_and_write(cluster: Any, mix: Any, path: Any, title: str) -> Report:
    """Simulate ``mix`` on ``cluster`` (the same Report as ``simulate_timeline``) and write its page to ``path``."""
    import pathlib

    tl = Recorder(cluster, mix)
    report = tl.run()
    shell.write(pathlib.Path(path), html(tl, report, title))
    return report
