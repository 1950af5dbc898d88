"""The no-op values check after an edit of sizes or counts: only what the edit changed is checked again.

A release's no-op answer (``charts.noop_leaves``: the values keys whose removal leaves every rendered object
unchanged) costs one ``helm template`` per key the release sets: Slurm's 144 keys are ~140 renders, most of a
render's time when its values changed. An edit of a partition's ``maxNodes`` changes one leaf of them
(``nodesets.<p>.partition.configMap.MaxNodes: '16' -> '17'``) and the node range of its NodeSet's switch in
``configFiles.topology.conf``, a file that differs in numbers alone. When ekstrain.lock.json records an answer for
the same release whose values differ only in such sizes or counts, each of the same kind (the same type and unit,
zero or not on both sides: ``lock.same_kind_of_size``), this module checks the changed keys again (two renders: the new
values with and without each key) and keeps the recorded answer when every changed key answers as it did; any
other outcome (a changed key that now changes nothing or now matters, or one at the chart's default, or under a
key the answer names) computes the whole answer.

What it keeps is an inference, not a render: a chart that compares a size to a threshold between the two values
(``if gt .Values.replicas 16``) could make another key matter or not. Hence only in ``--lock use`` (a user's
render); ``--lock check`` and ``--lock write`` (CI, the committed lock) compute every answer whole.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from ekstrain.infra.verify import charts
from ekstrain.tooling import lock


def made_of(release: charts.Release, kube_version: str, api_versions: Iterable[str]) -> dict[str, Any]:
    """What a lock entry records of what ``release``'s no-op key is made of (``lock.Entry`` tools, basis, rest,
    sizes), from ``charts.noop_key`` itself: with the values left out (basis) and with only the chart (tools)."""
    apis = sorted(api_versions)
    rest, sizes = lock.values_shape(release.values)
    chart_only = charts.Release("", "chart", release.chart, release.version, "default")
    return {
        "tools": charts.noop_key(chart_only, "", []),
        "basis": charts.noop_key(dataclasses.replace(release, values={}), kube_version, apis),
        "rest": rest,
        "sizes": sizes,
    }


def kept_answer(
    release: charts.Release,
    kube_version: str,
    api_versions: Iterable[str],
    recorded: tuple[str, ...],
    changed: list[str],
    old_sizes: dict[str, str],
) -> list[str] | None:
    """``recorded`` (the answer for the values before the edit) when every key of ``changed`` still answers as
    it did with the new values; None: compute the whole answer (``charts.noop_leaves``)."""
    apis = sorted(api_versions)
    defaults = charts.chart_defaults(release)
    noop = set(recorded)
    paths = [lock.size_path(c) for c in changed]
    for path, dotted in zip(paths, changed, strict=True):
        default = charts.value_at(defaults, path)
        if default is not charts.MISSING and default in (
            charts.value_at(release.values, path),
            json.loads(old_sizes[dotted]),
        ):
            return None  # at the chart's default on one side: not a key the check looks at there
        if any(path[: len(n.split("."))] == tuple(n.split(".")) and n != dotted for n in noop):
            return None  # under a key the answer names as a whole
    base = charts.template(release, kube_version, apis, crds=False)
    for path, dotted in zip(paths, changed, strict=True):
        try:
            variant = charts.template(
                release, kube_version, apis, charts.without(release.values, path), crds=False, keep=False
            )
            same = charts.same_objects(base, variant, release)
        except RuntimeError:  # the chart refuses to render without it: it matters
            same = False
        if same != (dotted in noop):
            return None
    return sorted(recorded)
