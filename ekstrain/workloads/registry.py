"""The workload kinds, in the order they are matched (a Notebook is a Pod with KubeSpawner's label: first).

:func:`register` adds a kind (a test's toy kind, or a new module's ``KIND``); the readers only ever ask this
module. The order of the kinds that build jobs is the order ``ekstrain job render`` lists their controllers in
its "use --scheduler ..." hint.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ekstrain.workloads import apps, job, mpijob, pod, pytorchjob, ray, sbatch, slinky, trainjob, volcano
from ekstrain.workloads.base import WorkloadKind, api_group

KINDS: list[WorkloadKind] = [
    mpijob.KIND,
    pytorchjob.KIND,
    trainjob.KIND,
    volcano.KIND,
    ray.RAYJOB,
    ray.RAYCLUSTER,
    sbatch.KIND,
    pod.NOTEBOOK,
    pod.KIND,
    job.KIND,
    apps.DEPLOYMENT,
    apps.STATEFULSET,
    apps.REPLICASET,
    slinky.NODESET,
    slinky.LOGINSET,
]


def register(kind: WorkloadKind) -> WorkloadKind:
    """Add ``kind`` (matched after the kinds before it); returns it. A scheduler name may be claimed once."""
    taken = {s for k in KINDS for s in k.schedulers}
    clash = taken & set(kind.schedulers)
    if clash:
        raise ValueError(f"scheduler {sorted(clash)[0]!r} is already built by another workload kind")
    KINDS.append(kind)
    return kind


def unregister(kind: WorkloadKind) -> None:
    KINDS.remove(kind)


def lookup(obj: dict[str, Any]) -> WorkloadKind | None:
    """The kind of ``obj``: the first whose :meth:`~WorkloadKind.matches` accepts it; None when none does."""
    return next((k for k in KINDS if k.matches(obj)), None)


def shape_of(obj: dict[str, Any]) -> WorkloadKind | None:
    """The kind whose input checks apply to ``obj`` before its apiVersion is trusted: a ``Job`` with ``tasks``
    is checked as Volcano's, one without as batch's (the simulator's reader; its message names the path)."""
    for k in KINDS:
        claims = getattr(k, "claims_shape", None)
        if claims(obj) if claims is not None else k.matches(obj):
            return k
    return None


def by_scheduler(name: str) -> WorkloadKind:
    """The kind ``ekstrain job render --scheduler name`` builds; KeyError when no kind claims it."""
    for k in KINDS:
        if name in k.schedulers:
            return k
    raise KeyError(name)


def schedulers() -> Iterator[tuple[str, WorkloadKind]]:
    for k in KINDS:
        for s in k.schedulers:
            yield s, k


def crd_of(obj: dict[str, Any]) -> str | None:
    """``<plural>.<group>`` of the CRD that must be installed for ``obj`` (None: built in or not a workload)."""
    k = lookup(obj)
    return k.crd if k is not None and api_group(obj) == k.group else None


def gang_flags() -> dict[str, str]:
    """Operator flag -> the kind whose pods it hands to Volcano as one PodGroup."""
    return {k.gang_flag: k.kind for k in KINDS if k.gang_flag}


def rank_labels() -> tuple[str, ...]:
    """Every kind's rank labels, once each, in registry order (the log agent tries them in that order)."""
    return tuple(dict.fromkeys(label for k in KINDS for label in k.rank_labels))


def replace_on_change() -> dict[str, tuple[str, ...]]:
    """Pulumi type -> replacing inputs, of the kinds the platform applies itself (ekstrain/diff/rules.py)."""
    out: dict[str, tuple[str, ...]] = {}
    for k in KINDS:
        out.update(k.replace_on_change)
    return out
