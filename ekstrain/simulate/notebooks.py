"""Notebook cold starts in ``ekstrain simulate --timeline``: a server KubeSpawner gives up on is a problem.

KubeSpawner waits ``start_timeout`` seconds for the user's pod to run, pending and image pull included, then stops
the server and deletes the pod (jupyterhub spawner.py ``Spawner.start_timeout``, kubespawner spawner.py ``start``:
``exponential_backoff(..., timeout=self.start_timeout)``); Karpenter's node for it is launched anyway and idles
until consolidation. The timeline plays the node (launch + health gate); this adds the image pull on a node
launched for the notebook (:mod:`ekstrain.layout.cold_start`) and compares the sum with the timeout the render gave the
profile (the mix file's notebook pod carries it: ekstrain/simulate/mix.py ``notebook_pod``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ekstrain.facts import catalog
from ekstrain.layout import cold_start
from ekstrain.simulate import match

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, TimelineState

START_TIMEOUT_KEY = "x-ekstrain-start-timeout-seconds"
"""Where a mix's notebook pod object carries its profile's KubeSpawner ``start_timeout`` (simulation only: a key
beside the pod's fields, never rendered)."""


def family(job: Job) -> str:
    for g in job.workload.groups:
        req = match.pod_requests(g.spec)
        if req.get("aws.amazon.com/neuron"):
            return catalog.TRAINIUM
        if req.get("nvidia.com/gpu"):
            return catalog.GPU
    return "cpu"


def start_timeout(job: Job) -> int:
    return int(job.arrival.obj.get(START_TIMEOUT_KEY, 300))


def cold(job: Job) -> bool:
    """It waited for a node launched for it (so the image is pulled on a fresh node)."""
    return any("Karpenter launching" in why for why in job.waited)


def queued_minutes(job: Job) -> int:
    """Minutes its pod waited for its Volcano queue to admit it (the partition full, not a cold start)."""
    if job.admitted_at is None:
        return 0
    return job.admitted_at - job.arrival.at


def start_minutes(job: Job) -> int | None:
    """From admission to a running server: the wait for a node (the timeline's) + the image pull on a cold node."""
    if job.first_started_at is None or job.admitted_at is None:
        return None
    pull = cold_start.pull_minutes(family(job)) if cold(job) else 0
    extra = cold_start.NEURON_SINGLEUSER_MINUTES if family(job) == catalog.TRAINIUM else 0
    return job.first_started_at - job.admitted_at + pull + extra


def timeouts(tl: TimelineState) -> tuple[list[str], list[str]]:
    """(PROBLEM lines, NOTEBOOK lines). A problem: a notebook whose cold start after admission (node launch + health
    gate + image pull) outlasts KubeSpawner's start_timeout, the defect a timeout below the partition's cold start
    causes (the hub deletes the pod while Karpenter's node comes up, and that node idles). A NOTEBOOK line: one that
    waited longer than start_timeout for its queue (the partition full): KubeSpawner gives it up and the user spawns
    again later; no node was launched for it (the timeline still plays it as started when admitted)."""
    problems, notes = [], []
    for j in tl.jobs:
        if j.kind != "notebook":
            continue
        limit = math.ceil(start_timeout(j) / 60)
        queued = queued_minutes(j)
        if queued > limit:
            notes.append(
                f"NOTEBOOK {j.name}: waited {queued} min for its queue (partition full), KubeSpawner gives up after "
                f"{limit} min: the user spawns again when the partition has room"
            )
            continue
        took = start_minutes(j)
        if took is None and j.admitted_at is not None and tl.now - j.admitted_at > limit:
            problems.append(f"{j.name}: notebook timed out: not running {limit} min after admission (start_timeout)")
        elif took is not None and took > limit:
            problems.append(
                f"{j.name}: notebook timed out: its server needs {took} min on a cold {family(j)} partition (node "
                f"launch + health gate + image pull), KubeSpawner's start_timeout is {limit} min: the hub deletes "
                "the pod and the node it launched idles"
            )
    return problems, notes
