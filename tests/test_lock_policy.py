"""`--lock check` fails only when the lock is contradicted (same key, other answer) or a chart was bumped without
its answers; a stack's values edit (a new key for a recorded release and chart) is computed and said, not failed."""

from __future__ import annotations

import pathlib

from ekstrain.tooling import lock, lock_policy


def entry(release: str, *noop: str, chart: str = "chart 1.0") -> lock.Entry:
    return lock.Entry(release, chart, tuple(noop))


def test_a_values_edit_is_computed_and_said_not_stale() -> None:
    # GIVEN the lock for prod; WHEN one partition's maxNodes changes, kube-prometheus-stack's values get a new key
    recorded = {"k-prom": entry("obs--kps"), "k-slurm": entry("slurm--slurm")}
    computed = {"k-prom-2": entry("obs--kps"), "k-slurm-2": entry("slurm--slurm")}
    stale, notes = lock_policy.check(recorded, computed)
    # THEN nothing is stale (no lock commit needed) and both are named as computed now
    assert stale == []
    assert notes == ["obs--kps (chart 1.0)", "slurm--slurm (chart 1.0)"]
    # AND said on one line
    assert lock_policy.note_line(notes) == (
        "note: 2 releases' answers computed (values changed, not in the lock; no lock commit needed): "
        "obs--kps (chart 1.0), slurm--slurm (chart 1.0)"
    )
    # AND the old lock's strict comparison called both stale
    old = lock.Lock(pathlib.Path("x")).with_stack("prod", recorded)
    assert len(old.differences("prod", computed)) == 4


def test_a_contradicted_answer_or_a_chart_bump_is_stale() -> None:
    recorded = {"k1": entry("a--a"), "k2": entry("b--b")}
    computed = {"k1": entry("a--a", "x.y"), "k3": entry("b--b", chart="chart 2.0"), "k4": entry("new--release")}
    stale, notes = lock_policy.check(recorded, computed)
    assert stale == [
        "a--a: recorded [], computed ['x.y']",
        "b--b: chart changed (chart 1.0 -> chart 2.0) and its answers are not recorded",
    ]
    assert notes == ["new--release (chart 1.0)"]
