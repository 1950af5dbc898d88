"""Workload objects -> the pods their controllers create (one PodGroup per role), read from each kind's
description in :mod:`ekstrain.workloads` (the registry: pod groups, gang, queue, restart budget)."""

from __future__ import annotations

from typing import Any

from ekstrain.simulate.inputs import sbatch_request
from ekstrain.workloads import registry
from ekstrain.workloads.base import MIN_MEMBER_ANNOTATION, QUEUE_ANNOTATION, VOLCANO, Context, PodGroup, Workload
from ekstrain.workloads.sbatch import SUFFIX

__all__ = [
    "MIN_MEMBER_ANNOTATION",
    "QUEUE_ANNOTATION",
    "VOLCANO",
    "PodGroup",
    "Workload",
    "context",
    "expand",
    "sbatch",
]


def context(runtimes: dict[str, dict[str, Any]] | None = None, gang_kinds: frozenset[str] = frozenset()) -> Context:
    return Context(runtimes or {}, gang_kinds, sbatch_request)


def sbatch(name: str, text: str) -> Workload:
    """An sbatch script on its own (``ekstrain simulate x.sbatch``) as the Slurm kind reads it."""
    w = registry.by_scheduler("slurm").expand({"kind": "ConfigMap", "data": {f"{name}{SUFFIX}": text}}, context())
    assert w is not None
    w.name = f"sbatch/{name}"
    return w


def expand(
    obj: dict[str, Any], runtimes: dict[str, dict[str, Any]], gang_kinds: frozenset[str] = frozenset()
) -> Workload | None:
    """The pods ``obj``'s controller creates, or None for objects that create none (ConfigMap, Service).
    ``gang_kinds``: the kinds whose operator the stack runs with Volcano gang scheduling."""
    kind = registry.lookup(obj)
    return kind.expand(obj, context(runtimes, gang_kinds)) if kind is not None else None
