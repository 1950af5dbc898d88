"""Class every difference between two recordings as create / update / replace / delete, and flag the risky ones.

A resource is the same resource when its key (URN without stack) is the same, or when the new one
lists the old key in ``aliases``. Inputs are compared leaf by leaf; a changed leaf under a
replace-on-change path (``rules.REPLACE_ON_CHANGE``) is a replacement, and a replacement changes
the physical id every other input holding it sees, so it cascades (a subnet's new id replaces its
EFS mount target, whose ``subnetId`` is replace-on-change).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ekstrain.diff import rules, upgrade
from ekstrain.diff.model import Resource, index

CREATE, UPDATE, REPLACE, DELETE = "create", "update", "replace", "delete"
ACTIONS = (CREATE, UPDATE, REPLACE, DELETE)

STATEFUL = "stateful"
TRAINING_NODES = "training-nodes"
CONFLICT = "conflict"
REFUSED = "refused"
CRDS = "crds"
FLAG_CATEGORIES = {
    STATEFUL: "replace or delete of a stateful resource",
    TRAINING_NODES: "drifts or deletes training nodes",
    CONFLICT: "fails on a fixed name: the replacement is created before the old one is deleted",
    REFUSED: "the API server or the engine refuses the change",
    CRDS: "CRDs Helm does not upgrade, or deletes with every custom resource of their kinds",
}
_MIN_ID = 8
"""Physical ids shorter than this are not searched for in other inputs (no false cascades on short strings)."""


@dataclass(frozen=True)
class Flag:
    category: str
    message: str


@dataclass(frozen=True)
class Change:
    key: str
    type: str
    name: str
    action: str
    changed: tuple[str, ...] = ()
    replace_because: tuple[str, ...] = ()
    renamed_from: str = ""
    flags: tuple[Flag, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "type": self.type,
            "name": self.name,
            "action": self.action,
            "changed": list(self.changed),
            "replaceBecause": list(self.replace_because),
            "renamedFrom": self.renamed_from,
            "flags": [{"category": f.category, "message": f.message} for f in self.flags],
        }


@dataclass
class Diff:
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    upgrade: list[str] = field(default_factory=list)
    """A Kubernetes minor upgrade in order (ekstrain/diff/upgrade.py); empty when the version is unchanged."""

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)

    def of(self, action: str) -> list[Change]:
        return [c for c in self.changes if c.action == action]

    def flags(self) -> list[tuple[Change, Flag]]:
        return [(c, f) for c in self.changes for f in c.flags]

    def summary(self) -> dict[str, int]:
        return {a: self.count(a) for a in ACTIONS} | {"unchanged": self.unchanged}


def leaf_changes(old: Any, new: Any, path: str = "") -> Iterator[str]:
    """Dotted paths (``a.b[0].c``) of every leaf that differs; a container present on one side only is walked."""
    if isinstance(old, Mapping) or isinstance(new, Mapping):
        if not (isinstance(old, Mapping) or old is None) or not (isinstance(new, Mapping) or new is None):
            yield path
            return
        o, n = old or {}, new or {}
        for k in sorted(set(o) | set(n)):
            yield from leaf_changes(o.get(k), n.get(k), f"{path}.{k}" if path else str(k))
        return
    if isinstance(old, list) and isinstance(new, list):
        for i in range(max(len(old), len(new))):
            yield from leaf_changes(old[i] if i < len(old) else None, new[i] if i < len(new) else None, f"{path}[{i}]")
        return
    if old != new:
        yield path


def _pattern(rule: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(rule).replace(r"\[\*\]", r"\[\d+\]") + r"(?:$|[.\[])")


def matching(paths: Sequence[str], rule_paths: Sequence[str]) -> tuple[str, ...]:
    """The changed paths at or under one of ``rule_paths``."""
    patterns = [_pattern(r) for r in rule_paths]
    return tuple(p for p in paths if any(pat.match(p) for pat in patterns))


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")
    elif isinstance(value, str):
        yield path, value


def as_sets(type_: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """``inputs`` with the type's set-typed inputs (``rules.SET_INPUTS``, dotted for nested blocks such as
    ``vpcConfig.subnetIds``) in a canonical order."""
    paths = rules.SET_INPUTS.get(type_, ())
    if not paths:
        return inputs
    out: dict[str, Any] = dict(inputs)
    for path in paths:
        *parents, leaf = path.split(".")
        node: Any = out
        for key in parents:
            if not isinstance(node.get(key), dict):
                node = None
                break
            node[key] = dict(node[key])  # copy on the way down: never sort the caller's lists
            node = node[key]
        if isinstance(node, dict) and isinstance(node.get(leaf), list):
            node[leaf] = sorted(node[leaf], key=lambda v: json.dumps(v, sort_keys=True))
    return out


def _physical_ids(r: Resource) -> set[str]:
    ids = {f"<ref {r.urn}>"}
    if r.custom:
        ids |= {str(r.outputs[k]) for k in ("id", "arn") if len(str(r.outputs.get(k) or "")) >= _MIN_ID}
    return ids


def _get(inputs: Mapping[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _identity_kept(type_: str, old: Resource, new: Resource) -> bool:
    keys = rules.UNIQUE_IDENTITY.get(type_)
    if keys is None:
        return False
    if type_ == "kubernetes:helm.sh/v3:Release":
        return True
    return all(_get(old.inputs, k) is not None and _get(old.inputs, k) == _get(new.inputs, k) for k in keys)


def _smaller(new: Any, old: Any) -> bool:
    return isinstance(new, (int, float)) and isinstance(old, (int, float)) and new < old


def _held_by_budget(node_pool: Mapping[str, Any] | None) -> bool:
    budgets = _get(node_pool or {}, "spec.disruption.budgets") or []
    return any(
        str(b.get("nodes")) == "0" and ("Drifted" in (b.get("reasons") or ["Drifted"])) and not b.get("schedule")
        for b in budgets
        if isinstance(b, Mapping)
    )


def _flags(
    action: str,
    type_: str,
    old: Resource | None,
    new: Resource | None,
    changed: Sequence[str],
    node_pools: Mapping[str, Mapping[str, Any]],
) -> tuple[Flag, ...]:
    out: list[Flag] = []
    r = new or old
    assert r is not None
    what = rules.STATEFUL_TYPES.get(type_)
    if what and action in (REPLACE, DELETE):
        kept = old is not None and old.retain_on_delete
        out.append(
            Flag(
                STATEFUL,
                f"{action} of {what}"
                + (": retained in AWS (retainOnDelete), the stack forgets it" if kept and action == DELETE else ""),
            )
        )
    if action in (REPLACE, DELETE) and old is not None and old.protect:
        out.append(Flag(REFUSED, f"{action} of a protected resource: the engine stops until `pulumi state unprotect`"))
    if type_ in rules.TRAINING_NODE_TYPES:
        if action in (REPLACE, DELETE):
            out.append(
                Flag(TRAINING_NODES, f"{action} of a {type_.rsplit(':', 1)[-1]}: its nodes are drained and deleted")
            )
        elif action == UPDATE:
            drift = matching(changed, rules.KARPENTER_DRIFT[type_])
            if drift:
                pool = r.inputs if type_.endswith(":NodePool") else node_pools.get(str(_get(r.inputs, "metadata.name")))
                held = _held_by_budget(pool) if pool is not None else False
                window = upgrade.window_text(pool) if pool is not None and not held else ""
                out.append(
                    Flag(
                        TRAINING_NODES,
                        f"Karpenter drift ({', '.join(drift[:3])}{', ...' if len(drift) > 3 else ''}): "
                        "nodes are replaced"
                        + ('; held by the NodePool\'s drift budget `nodes: "0"` (roll between jobs)' if held else "")
                        + (f"; {window}" if window.startswith("rolls in the window") else ""),
                    )
                )
    if (
        action == REPLACE
        and old is not None
        and new is not None
        and not new.delete_before_replace
        and _identity_kept(type_, old, new)
    ):
        ident = ", ".join(rules.UNIQUE_IDENTITY[type_]) or "the chart's cluster-scoped object names"
        out.append(Flag(CONFLICT, f"create-before-delete on a fixed identity ({ident}): the create fails"))
    if action == UPDATE:
        refused = matching(changed, rules.REFUSED_ON_CHANGE.get(type_, ()))
        if refused:
            out.append(Flag(REFUSED, f"immutable field(s) {', '.join(refused)}: the API server refuses the update"))
    if type_ == "kubernetes:helm.sh/v3:Release":
        chart = rules.chart_name(str(r.inputs.get("chart", "")))
        where = rules.CHART_CRDS.get(chart)
        if where and action == UPDATE and "version" in changed and where[0] == rules.CRDS_DIR:
            out.append(Flag(CRDS, f"{chart}: Helm does not upgrade the CRDs in its crds/ directory (runbook: upgrade)"))
        if where and action == DELETE and rules.deletes_crds_with_release(chart):
            out.append(
                Flag(
                    CRDS,
                    f"{chart}: deleting the release deletes its CRDs {', '.join(where[1])} and every object of them",
                )
            )
    return tuple(out)


def compare(old: Sequence[Resource], new: Sequence[Resource]) -> Diff:
    """Every change from ``old`` to ``new``, in the new program's order (deletes last, in the old order)."""
    old_by, new_by = index(old), index(new)
    matched: dict[str, str] = {k: k for k in new_by if k in old_by}  # new key -> old key
    for k, r in new_by.items():
        if k in matched:
            continue
        for ak in r.aliases:
            if ak in old_by and ak not in new_by and ak not in matched.values():
                matched[k] = ak
                break
    old_matched = set(matched.values())
    # EC2NodeClass name -> the NodePool using it (its drift budget holds the class's drift too)
    node_pools = {
        str(_get(r.inputs, "spec.template.spec.nodeClassRef.name")): r.inputs
        for r in new
        if r.type == "kubernetes:karpenter.sh/v1:NodePool"
    }

    def diffed(k: str, paths: Sequence[str]) -> list[str]:
        ignored = matching(paths, new_by[k].ignore_changes)
        return [p for p in paths if p not in ignored]

    changed: dict[str, list[str]] = {
        k: diffed(
            k, list(leaf_changes(as_sets(new_by[k].type, old_by[ok].inputs), as_sets(new_by[k].type, new_by[k].inputs)))
        )
        for k, ok in matched.items()
    }
    replaced: set[str] = set()

    def replace_because(k: str) -> tuple[str, ...]:
        r, o = new_by[k], old_by[matched[k]]
        shrunk = tuple(
            p
            for p in rules.REPLACE_ON_DECREASE.get(r.type, ())
            if p in changed[k] and _smaller(_get(r.inputs, p), _get(o.inputs, p))
        )
        return matching(changed[k], rules.replace_paths(r.type, r.custom)) + shrunk

    frontier = {k for k in matched if replace_because(k)}
    while frontier:  # a replacement gives a new physical id to every input that holds the old one
        replaced |= frontier
        ids = set().union(*(_physical_ids(old_by[matched[k]]) for k in frontier))
        frontier = set()
        for k in matched:
            if k in replaced:
                continue
            hits = [p for p, s in _strings(new_by[k].inputs) if any(i in s for i in ids)]
            fresh = [p for p in diffed(k, hits) if p not in changed[k]]
            if fresh:
                changed[k] += fresh
                if replace_because(k):
                    frontier.add(k)

    diff = Diff()
    for k, r in new_by.items():
        if k not in matched:
            diff.changes.append(
                Change(k, r.type, r.name, CREATE, flags=_flags(CREATE, r.type, None, r, (), node_pools))
            )
            continue
        o = old_by[matched[k]]
        paths = tuple(sorted(set(changed[k])))
        renamed = matched[k] if matched[k] != k else ""
        if not paths and not renamed:
            diff.unchanged += 1
            continue
        if not paths:  # an alias only moves the state: no provider call
            diff.changes.append(Change(k, r.type, r.name, UPDATE, renamed_from=renamed))
            continue
        action = REPLACE if k in replaced else UPDATE
        diff.changes.append(
            Change(
                k,
                r.type,
                r.name,
                action,
                changed=paths,
                replace_because=replace_because(k) if action == REPLACE else (),
                renamed_from=renamed,
                flags=_flags(action, r.type, o, r, paths, node_pools),
            )
        )
    for k, o in old_by.items():
        if k not in old_matched:
            diff.changes.append(
                Change(k, o.type, o.name, DELETE, flags=_flags(DELETE, o.type, o, None, (), node_pools))
            )
    diff.upgrade = upgrade.lines(old, new)
    return diff
