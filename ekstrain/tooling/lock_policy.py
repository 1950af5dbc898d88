"""What ``--lock check`` (CI) counts as stale in ekstrain.lock.json, apart from how the lock is read and written
(ekstrain/tooling/lock.py).

The lock only saves time: a missing answer is computed by the render either way. So an edit of a stack's values
(a partition's maxNodes, which sizes Prometheus's volume and Slurm's NodeSets) must not turn CI red and ask for a
lock commit: the answers for the new values are computed and said so. CI fails only where the lock records
something the render now contradicts:

- the same key (same chart files, helm, values, Kubernetes and API versions) with another answer: the check
  itself, or the chart or helm under an unchanged version string, changed;
- a release whose recorded chart files or helm version (an entry's ``tools``) are not the ones the render now
  uses: the chart was bumped or re-pinned, or helm was, and its answers were not recorded (an entry recorded
  without ``tools``: its chart version string is compared instead).

A key the lock does not hold for a release recorded with the same chart and helm is a values edit: computed,
and named on one line (:func:`note_line`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ekstrain.tooling.lock import Entry


def check(recorded: Mapping[str, Entry], computed: Mapping[str, Entry]) -> tuple[list[str], list[str]]:
    """(stale, notes): what fails ``--lock check``, and the releases it computed without failing (values edits:
    "release (chart)")."""
    stale: list[str] = []
    notes: list[str] = []
    charts_recorded: dict[str, set[str]] = {}
    tools_recorded: dict[str, set[str]] = {}
    for entry in recorded.values():
        charts_recorded.setdefault(entry.release, set()).add(entry.chart)
        if entry.tools:
            tools_recorded.setdefault(entry.release, set()).add(entry.tools)
    for key, entry in sorted(computed.items(), key=lambda kv: kv[1].release):
        tools = tools_recorded.get(entry.release)
        if key in recorded:
            if tuple(recorded[key].noop) != tuple(entry.noop):
                stale.append(f"{entry.release}: recorded {list(recorded[key].noop)}, computed {list(entry.noop)}")
        elif charts_recorded.get(entry.release) and entry.chart not in charts_recorded[entry.release]:
            was = ", ".join(sorted(charts_recorded[entry.release]))
            stale.append(f"{entry.release}: chart changed ({was} -> {entry.chart}) and its answers are not recorded")
        elif tools and entry.tools and entry.tools not in tools:
            stale.append(
                f"{entry.release} ({entry.chart}): the chart's files or helm changed (recorded "
                f"{', '.join(sorted(t[:12] for t in tools))}, now {entry.tools[:12]}) and its answers are not recorded"
            )
        else:
            notes.append(f"{entry.release} ({entry.chart})")
    return stale, notes


def note_line(notes: list[str]) -> str:
    """The one line ``--lock check`` prints for the releases whose answers it computed because a stack's values
    changed (no lock commit needed)."""
    count = f"{len(notes)} release's answers" if len(notes) == 1 else f"{len(notes)} releases' answers"
    return f"note: {count} computed (values changed, not in the lock; no lock commit needed): {', '.join(notes)}"
