"""Capacity Block windows: when a block's instances exist, when Karpenter drains them, and when the job templates'
checkpoint signal comes.

Sources:

- EC2 Capacity Blocks for ML (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html):
  "You can use all the instances you reserved until 30 minutes before the end time of the Capacity Block. With
  30 minutes left ... we begin terminating any instances that are running in the Capacity Block", and an
  EventBridge event 10 minutes before that.
- Karpenter (aws/karpenter-provider-aws designs/capacity-block-support.md "Interruption", shipped in v1.6 and in
  the v1.14.1 this platform pins): Karpenter drains a block's nodes 10 minutes before EC2 begins reclaiming, i.e.
  40 minutes before the end date it reads from ``ec2:DescribeCapacityReservations``; it launches only into an
  ``active`` reservation, so the block's NodePool has no capacity before the block's start.

The checkpoint signal is this platform's: a job rendered for a partition whose block has
``checkpointSignalMinutes`` carries ``EKSTRAIN_CHECKPOINT_AT`` (RFC 3339, UTC, the block's end minus those
minutes) and ``EKSTRAIN_CAPACITY_END``; the training loop (Megatron's ``--exit-duration-in-mins``, a PyTorch
Lightning or HF Trainer callback, or any loop that compares the clock) saves a checkpoint and exits 0 at that
time. The time is absolute, so it holds across restarts and needs no controller to deliver it. Karpenter's drain
(SIGTERM, then ``terminationGracePeriodSeconds``) is the backstop, too short for a 920 GiB checkpoint.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

EC2_RECLAIM_MINUTES = 30
"""EC2 begins terminating a block's instances this many minutes before its end time."""
KARPENTER_DRAIN_MINUTES = EC2_RECLAIM_MINUTES + 10
"""Karpenter drains a block's nodes this many minutes before its end time."""
CHECKPOINT_AT_ENV = "EKSTRAIN_CHECKPOINT_AT"
CAPACITY_END_ENV = "EKSTRAIN_CAPACITY_END"


@dataclass(frozen=True)
class Window:
    partition: str
    start: dt.datetime
    end: dt.datetime
    signal_minutes: int | None

    @property
    def drain_at(self) -> dt.datetime:
        return self.end - dt.timedelta(minutes=KARPENTER_DRAIN_MINUTES)

    @property
    def signal_at(self) -> dt.datetime | None:
        return None if self.signal_minutes is None else self.end - dt.timedelta(minutes=self.signal_minutes)

    @property
    def usable_hours(self) -> float:
        """From the start to Karpenter's drain."""
        return (self.drain_at - self.start).total_seconds() / 3600


def stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def signal_too_late(signal_minutes: int, save_seconds: int) -> str | None:
    """The signal must leave room to write one checkpoint before Karpenter's drain; None when it does."""
    need = KARPENTER_DRAIN_MINUTES + math.ceil(save_seconds / 60)
    if signal_minutes >= need:
        return None
    return (
        f"{signal_minutes} min before the end leaves less than one checkpoint's save ({save_seconds} s) before "
        f"Karpenter drains the nodes {KARPENTER_DRAIN_MINUTES} min before the end; give at least {need}"
    )


def job_fits(window: Window, planned_hours: float, start: dt.datetime | None = None) -> str | None:
    """Why a gang of ``planned_hours`` started at ``start`` (@default the block's start) cannot finish before the
    drain without a checkpoint signal, or None. With a signal the job is warned, not refused (it checkpoints and
    resumes in the next capacity)."""
    begin = max(start or window.start, window.start)
    left = (window.drain_at - begin).total_seconds() / 3600
    if planned_hours <= left:
        return None
    return (
        f"the job plans {planned_hours:g} h but the Capacity Block for {window.partition} is drained at "
        f"{stamp(window.drain_at)} ({left:.1f} h after it can start, {KARPENTER_DRAIN_MINUTES} min before the block "
        f"ends at {stamp(window.end)})"
    )


def summary_lines(windows: list[Window], runs: dict[str, list[str]]) -> list[str]:
    """SUMMARY's "Capacity Block windows" section: each window, its drain and signal, and what runs in it."""
    if not windows:
        return []
    out = ["", "## Capacity Block windows", ""]
    out.append(
        f"Karpenter drains a block's nodes {KARPENTER_DRAIN_MINUTES} min before its end (EC2 reclaims from "
        f"{EC2_RECLAIM_MINUTES} min before); jobs on the partition carry {CHECKPOINT_AT_ENV} and save then."
    )
    out.append("")
    for w in windows:
        signal = (
            f"checkpoint signal {stamp(w.signal_at)} ({w.signal_minutes} min before the end)"
            if w.signal_at is not None
            else "no checkpoint signal (jobs lose the work since their last checkpoint at the drain)"
        )
        what = ", ".join(runs.get(w.partition, [])) or "nothing scheduled here"
        out.append(
            f"- {w.partition}: {stamp(w.start)} to {stamp(w.end)} ({w.usable_hours:.1f} h usable); drain "
            f"{stamp(w.drain_at)}; {signal}; runs: {what}"
        )
    return out
