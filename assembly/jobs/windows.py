"""A job on a Capacity Block partition: the checkpoint signal it carries and whether its planned run fits the
block's window (ekstrain/layout/capacity_windows.py has the EC2 and Karpenter sources).

- Every job rendered for a partition whose block has ``checkpointSignalMinutes`` gets ``EKSTRAIN_CHECKPOINT_AT``
  (the block's end minus those minutes, UTC) and ``EKSTRAIN_CAPACITY_END``: the training loop saves and exits 0 at
  that time, before Karpenter drains the nodes 40 min before the end.
- ``--hours`` (``RunSpec.planned_hours``) longer than the time from the job's start (now, or the block's start if
  later) to the drain: refused without a signal (the drain would lose the work since the last checkpoint), a
  warning with one (the job checkpoints and resumes in the next capacity).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from ekstrain.assembly.jobs.spec import JobRequestError, RunSpec
from ekstrain.layout import capacity_windows

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig


def window_of(cfg: StackConfig, partition: str) -> tuple[int, capacity_windows.Window] | None:
    for i, part in enumerate(cfg.partitions):
        cr = part.capacity_reservation
        if part.name == partition and part.capacity_block and cr is not None and cr.start and cr.end:
            return i, capacity_windows.Window(part.name, cr.start, cr.end, cr.checkpoint_signal_minutes)
    return None


def signal_env(cfg: StackConfig, partition: str) -> dict[str, str]:
    found = window_of(cfg, partition)
    if found is None or found[1].signal_at is None:
        return {}
    w = found[1]
    return {
        capacity_windows.CHECKPOINT_AT_ENV: capacity_windows.stamp(w.signal_at),  # type: ignore[arg-type]
        capacity_windows.CAPACITY_END_ENV: capacity_windows.stamp(w.end),
    }


def check(spec: RunSpec, cfg: StackConfig, now: dt.datetime | None = None) -> str | None:
    """A warning (the job will be stopped by the signal and resume later), or None; raises JobRequestError when the
    planned run outlives the window without a checkpoint signal."""
    found = window_of(cfg, spec.partition)
    if found is None or spec.planned_hours is None:
        return None
    i, w = found
    why = capacity_windows.job_fits(w, spec.planned_hours, now or dt.datetime.now(dt.timezone.utc))
    if why is None:
        return None
    key = f"ekstrain:partitions[{i}] ({w.partition}).capacityReservation.checkpointSignalMinutes"
    if w.signal_minutes is None:
        raise JobRequestError(
            f"--hours: {why}, and the block gives no checkpoint signal, so the drain loses the work since the last "
            f"checkpoint; fix: set {key} (the job then saves and exits before the drain), or lower --hours"
        )
    return (
        f"--hours: {why}; the job gets the checkpoint signal at {capacity_windows.stamp(w.signal_at)} "  # type: ignore[arg-type]
        "(EKSTRAIN_CHECKPOINT_AT), saves and exits; it resumes only when the partition has capacity again "
        "(the next block's window in the stack)"
    )
