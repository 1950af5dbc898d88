"""What the simulator's :class:`~ekstrain.simulate.timeline.Timeline` and its collaborators (placement.py,
volcano_admission.py, faults.py, health_loops.py, idle_accounting.py, timeline_report.py) share: the fault kinds,
the accelerator resources, and the clock's format."""

from __future__ import annotations

FAULT_KINDS = (
    "node-lost",
    "node-unhealthy",
    "health-notice",
    "spot-interruption",
    "insufficient-capacity",
    "preflight-fails",
    "preflight-hangs",
    "preflight-fails-pool",
    "condition-flap",
)
"""``preflight-fails``: the next node Karpenter launches for the job is sick from the start
(ekstrain/payloads/health_gate.py:
its pre-flight fails, the guard taints it NoExecute and deletes it ``HOLD_SECONDS`` later). The platform's own loops
(:meth:`Timeline.loop_fault`): ``preflight-hangs``: a check of the next node launched for the job never returns;
``preflight-fails-pool``: every node of the job's NodePool fails its pre-flight for ``windowHours`` (then the cause is
fixed and, if the breaker held the pool, the operator resumes it); ``condition-flap``: the job's node reports
NetworkingReady=False for ``minutes``, then True again."""
LOOP_FAULTS = ("preflight-hangs", "preflight-fails-pool", "condition-flap")
ACCELERATORS = ("nvidia.com/gpu", "aws.amazon.com/neuron")
NEVER = 10**9
"""``consolidateAfter: Never`` in minutes (ekstrain/simulate/mix.py: reserved partitions keep empty nodes)."""


def _clock(minute: int | None) -> str:
    return "-" if minute is None else f"{minute // 60}:{minute % 60:02d}"
