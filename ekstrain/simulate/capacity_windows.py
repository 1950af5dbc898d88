"""Capacity Block windows in ``ekstrain simulate --timeline``: a partition's capacity exists only from a block's
start to its end, and running jobs get the checkpoint signal before the end.

The rules, each with the source it models:

- EC2 Capacity Blocks for ML (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html): the
  instances are usable until 30 minutes before the block's end time; then EC2 terminates them
  (:data:`ekstrain.layout.capacity_windows.EC2_RECLAIM_MINUTES`).
- Karpenter v1.6+ (aws/karpenter-provider-aws designs/capacity-block-support.md, "Interruption"; the
  capacity-block support Karpenter v1.14.1 ships): it does not wait for the EventBridge warning, it drains a
  block's nodes 10 minutes before EC2 begins reclaiming, 40 minutes before the end date
  (:data:`ekstrain.layout.capacity_windows.KARPENTER_DRAIN_MINUTES`), and launches into a reservation only while it is
  active (a block is ``scheduled`` before its start, so nothing launches before it).
- The checkpoint signal (:mod:`ekstrain.layout.capacity_windows`): ``checkpointSignalMinutes`` before the end the job
  templates' ``EKSTRAIN_CHECKPOINT_AT`` time is reached; the training loop saves a checkpoint and exits cleanly
  (the controller restarts it later without counting a failure). Modeled: at the signal every running job on the
  block's nodes stops progressing, writes one checkpoint (``Mix.checkpoint_save_seconds``) and leaves its nodes,
  so no work past that checkpoint is lost. Without a signal, Karpenter's drain kills the job and the work since its
  last periodic checkpoint is lost: a PROBLEM.

A mix file gives the windows in hours from the start::

    capacityBlocks:
      - {partition: gpu-h100, start: 0, end: 12, checkpointSignalMinutes: 60}
      - {partition: gpu-h100, start: 13, end: 36, checkpointSignalMinutes: 60}   # the next block bought

A partition with blocks has capacity only inside them (its NodePool selects only the blocks' reservations).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ekstrain.layout.capacity_windows import KARPENTER_DRAIN_MINUTES
from ekstrain.simulate.timeline_state import CapacityBlock as CapacityBlock

if TYPE_CHECKING:
    from ekstrain.simulate.engine import Cluster
    from ekstrain.simulate.nodes import Node
    from ekstrain.simulate.timeline_state import Job, SimNode, TimelineState


def _clock(minute: int) -> str:
    return f"{minute // 60}:{minute % 60:02d}"


def partition_of(candidate: Node) -> str:
    return next(iter(candidate.labels.get("ekstrain.io/partition", {candidate.pool})))


def blocks_of(t: TimelineState, partition: str) -> list[CapacityBlock]:
    return [b for b in t.mix.capacity_blocks if b.partition == partition]


def closed(t: TimelineState, candidate: Node) -> str | None:
    """Why Karpenter cannot launch the candidate now: its partition has Capacity Blocks and none is active and
    before its drain (None when it can launch)."""
    blocks = blocks_of(t, partition_of(candidate))
    if not blocks or any(b.start <= t.now < b.drain_at for b in blocks):
        return None
    nxt = min((b.start for b in blocks if b.start > t.now), default=None)
    when = f"; the next block starts at {_clock(nxt)}" if nxt is not None else "; no later block"
    return f"no active Capacity Block for partition {partition_of(candidate)}{when}"


def _running_on(t: TimelineState, block: CapacityBlock) -> list[tuple[Job, list[SimNode]]]:
    out = []
    for job in t.jobs:
        if job.state != "running" or job.kind == "standing":
            continue
        nodes = [n for _, n in job.bound if n.state != "gone" and partition_of(n.candidate) == block.partition]
        if nodes:
            out.append((job, nodes))
    return out


def tick(t: TimelineState) -> None:
    """Called at the top of every timeline minute: the checkpoint signal, the clean exit after its save, and
    Karpenter's drain of the block's nodes."""
    save = max(1, math.ceil(t.mix.checkpoint_save_seconds / 60))
    for b in t.mix.capacity_blocks:
        if b.start == t.now:
            t.block_events.append(f"{_clock(t.now)} Capacity Block for {b.partition} active (ends {_clock(b.end)})")
        if b.signal_at == t.now:
            jobs = _running_on(t, b)
            t.block_events.append(
                f"{_clock(t.now)} checkpoint signal to {len(jobs)} job(s) on {b.partition}, {b.signal_minutes} min "
                f"before the block ends at {_clock(b.end)}"
            )
            for job, _ in jobs:
                t.signalled[job.name] = (t.now + save, job.progress)
                job.events.append(
                    f"{_clock(t.now)} checkpoint signal (Capacity Block ends {_clock(b.end)}): saving at "
                    f"{job.progress:.0f} min ({t.mix.checkpoint_save_seconds} s)"
                )
        for name, (done, at_progress) in list(t.signalled.items()):
            if done != t.now:
                continue
            del t.signalled[name]
            job = next(j for j in t.jobs if j.name == name)
            if job.state != "running":
                continue
            if not job.resumes:
                t.problems.append(
                    f"{job.name}: checkpoint signal before the Capacity Block end but it does not resume "
                    f"({job.resume_why}): {at_progress:.0f} min of training start over"
                )
            # the save holds the GPUs; the checkpoint is of the state at the signal
            job.progress = job.last_checkpoint = at_progress if job.resumes else 0.0
            # Its pods would start again on the block's nodes (they stay until the drain), see the time past
            # EKSTRAIN_CHECKPOINT_AT and exit: it makes no progress on this block, so it waits for the block's end.
            parts = {partition_of(n.candidate) for _, n in job.bound}
            ending = [
                bb.end
                for bb in t.mix.capacity_blocks
                if bb.partition in parts and bb.signal_at is not None and bb.signal_at <= t.now < bb.end
            ]
            t.release(job)
            job.state, job.started_at = "waiting", None
            job.not_before = max([t.now + t.mix.restart_minutes, *ending])
            job.events.append(
                f"{_clock(t.now)} checkpoint written at {at_progress:.0f} min, exited cleanly; waits for capacity"
            )
        if b.drain_at == t.now:
            drained = [n for n in t.nodes if n.state != "gone" and partition_of(n.candidate) == b.partition]
            t.block_events.append(
                f"{_clock(t.now)} Karpenter drains {len(drained)} node(s) of {b.partition}, "
                f"{KARPENTER_DRAIN_MINUTES} min before the block ends at {_clock(b.end)}"
            )
            for job, _ in _running_on(t, b):
                # Killed mid-step by the drain: whatever it trained since its last checkpoint is gone, and a save
                # started at SIGTERM does not fit the grace period (Timeline.kill_node says so).
                lost = job.progress - (job.last_checkpoint if job.resumes else 0.0)
                t.problems.append(
                    f"{job.name}: running when Karpenter drained the Capacity Block for {b.partition} "
                    f"({KARPENTER_DRAIN_MINUTES} min before its end at {_clock(b.end)}) with no checkpoint signal: "
                    f"{lost:.0f} min of training past its last checkpoint lost (set checkpointSignalMinutes)"
                )
                job.hit_by_fault = True
            for n in drained:
                t.kill_node(n, f"Capacity Block for {b.partition} ends at {_clock(b.end)}: Karpenter drained", True)


def lines(t: TimelineState) -> list[str]:
    """The report's BLOCK lines."""
    return [f"BLOCK {e}" for e in t.block_events]


def parse(where: str, entries: Any, hours: float) -> list[CapacityBlock]:
    """A mix file's ``capacityBlocks`` (hours from the start), each mistake an InputError naming the key."""
    from ekstrain.simulate.inputs import InputError

    if not isinstance(entries, list):
        raise InputError(where, f"is a {type(entries).__name__}, not a list", "write blocks as `- {...}` lines")
    out = []
    for i, entry in enumerate(entries):
        at = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise InputError(at, f"is a {type(entry).__name__}", "write {partition: ..., start: 0, end: 12}")
        unknown = sorted(str(k) for k in entry if k not in ("partition", "start", "end", "checkpointSignalMinutes"))
        if unknown:
            raise InputError(
                at, f"unknown key(s) {', '.join(unknown)}", "use partition, start, end, checkpointSignalMinutes"
            )
        part = entry.get("partition")
        if not isinstance(part, str) or not part:
            raise InputError(f"{at}.partition", f"is {part!r}", "name the partition the block serves")
        times = []
        for key in ("start", "end"):
            v = entry.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= hours:
                raise InputError(f"{at}.{key}", f"is {v!r}", f"give hours from 0 to {hours:g}")
            times.append(int(round(v * 60)))
        if times[1] - times[0] <= KARPENTER_DRAIN_MINUTES:
            raise InputError(
                f"{at}.end",
                f"is {times[1] - times[0]} min after start, not more than Karpenter's {KARPENTER_DRAIN_MINUTES}-min "
                "drain before the end",
                "give an end later than start (Capacity Blocks last 1 to 182 days, or 1 to 14 days in hours)",
            )
        sig = entry.get("checkpointSignalMinutes")
        if sig is not None and (isinstance(sig, bool) or not isinstance(sig, int) or not sig > KARPENTER_DRAIN_MINUTES):
            raise InputError(
                f"{at}.checkpointSignalMinutes",
                f"is {sig!r}: the signal must come before Karpenter's drain, "
                f"{KARPENTER_DRAIN_MINUTES} min before the end",
                f"give whole minutes above {KARPENTER_DRAIN_MINUTES} (the save must finish before the drain)",
            )
        out.append(CapacityBlock(part, times[0], times[1], sig))
    return out


def with_spare(cluster: Cluster, spare: dict[str, int]) -> Cluster:
    """The cluster with each named NodePool's ``spec.limits`` raised by ``spare[pool]`` nodes' worth: ``nodes`` by
    the count, every other limited resource by that many of the candidate's capacity (a mix's ``spareNodes``: a
    reservation one node over the gang, e.g. 9 p5 for the 8-node gang, played without re-rendering the stack)."""
    if not spare:
        return cluster
    import dataclasses

    nodes = []
    for n in cluster.nodes:
        extra = spare.get(n.pool, 0)
        if extra and n.pool_limits:
            limits = {
                k: v + extra * (1.0 if k == "nodes" else n.capacity.get(k, 0.0)) for k, v in n.pool_limits.items()
            }
            n = dataclasses.replace(n, pool_limits=limits)
        nodes.append(n)
    return dataclasses.replace(cluster, nodes=nodes)
