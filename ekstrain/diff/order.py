"""The order ``pulumi destroy`` deletes in: the reverse of creation, from the recorded dependency graph.

The engine deletes a resource only after everything that depends on it (its ``dependsOn`` and input
dependencies) and every child of it are deleted. ``destroy_order`` is one such order, stable (ties
broken by registration order, reversed), so tests can assert what goes before what.
"""

from __future__ import annotations

from collections.abc import Sequence

from ekstrain.diff.model import Resource


def destroy_order(resources: Sequence[Resource]) -> list[Resource]:
    """``resources`` in a deletion order the engine may use; ValueError on a dependency cycle."""
    by_urn = {r.urn: r for r in resources}
    # needs[x] = what must be deleted before x: its dependents and its children.
    needs: dict[str, set[str]] = {r.urn: set() for r in resources}
    for r in resources:
        for d in {*r.dependencies, r.parent}:
            if d in by_urn and d != r.urn:
                needs[d].add(r.urn)
    position = {r.urn: i for i, r in enumerate(resources)}
    done: list[Resource] = []
    left = dict(needs)
    while left:
        ready = sorted((u for u, n in left.items() if not n & left.keys()), key=lambda u: -position[u])
        if not ready:
            raise ValueError(f"dependency cycle among {sorted(left)[:5]}")
        for u in ready:
            done.append(by_urn[u])
            del left[u]
    return done


def before(order: Sequence[Resource], first: Resource, then: Resource) -> bool:
    index = {r.urn: i for i, r in enumerate(order)}
    return index[first.urn] < index[then.urn]
