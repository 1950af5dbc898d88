"""What ``--lock check`` (CI) counts as stale in ekstrain.lock.json, apart from how the lock is read and written
(ekstrain/lock.py).

The lock only saves time: a missing answer is computed by the render either way. So an edit of a stack's values
(a partition's maxNodes, which sizes Prometheus's volume and Slurm's NodeSets) must not turn CI red and ask for a
lock commit: the answers for the new values are computed and said so. CI fails only where the lock records
something the render now contradicts:

- the same key (same chart files, helm, values, Kubernetes and API versions) with another answer: the check
  itself, or the chart or helm under an unchanged version string, changed;
- a release whose recorded chart version is not the one the stack now installs: the chart was bumped and its
  answers were not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping

from ekstrain.lock import Entry


def check(recorded: Mapping[str, Entry], computed: Mapping[str, Entry]) -> tuple[list[str], list[str]]:
    """(stale, notes): what fails ``--lock check``, and what it computed without failing (values edits)."""
    stale: list[str] = []
    notes: list[str] = []
    charts_recorded: dict[str, set[str]] = {}
    for entry in recorded.values():
        charts_recorded.setdefault(entry.release, set()).add(entry.chart)
    for key, entry in sorted(computed.items(), key=lambda kv: kv[1].release):
        if key in recorded:
            if tuple(recorded[key].noop) != tuple(entry.noop):
                stale.append(f"{entry.release}: recorded {list(recorded[key].noop)}, computed {list(entry.noop)}")
        elif charts_recorded.get(entry.release) and entry.chart not in charts_recorded[entry.release]:
            was = ", ".join(sorted(charts_recorded[entry.release]))
            stale.append(f"{entry.release}: chart changed ({was} -> {entry.chart}) and its answers are not recorded")
        else:
            notes.append(f"{entry.release} ({entry.chart}): not recorded for these values: computed now")
    return stale, notes
