"""A Kubernetes minor upgrade between two sides of ``ekstrain diff``: the control plane, the add-on updates, the
system node group, and which NodePools drift and in which window they roll (rules in ``ekstrain/diff/rules.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ekstrain.diff import rules
from ekstrain.diff.model import Resource

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def _get(inputs: Mapping[str, Any], path: str) -> Any:
    node: Any = inputs
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _by_name(
    resources: Sequence[Resource], types: Mapping[str, Any] | tuple[str, ...]
) -> dict[tuple[str, str], Resource]:
    return {(r.type, r.name): r for r in resources if r.type in types}


def window_text(pool: Mapping[str, Any]) -> str:
    """When a NodePool's drifted nodes roll, read from its Drifted budgets."""
    budgets = [b for b in _get(pool, "spec.disruption.budgets") or [] if isinstance(b, Mapping)]
    drifted = [b for b in budgets if "Drifted" in (b.get("reasons") or ["Drifted"])]
    always = [str(b.get("nodes")) for b in drifted if not b.get("schedule")]
    closed = [b for b in drifted if b.get("schedule") and str(b.get("nodes")) == "0"]
    if not drifted:
        return "no Drifted budget: Karpenter's default (10% of the nodes at a time, any time)"
    if "0" in always:
        return 'held: Drifted budget `nodes: "0"` with no window, rolls only when an operator lifts it'
    if closed:
        b = closed[0]
        minute, hour, _, _, dow = str(b["schedule"]).split()
        period = 24 * 60 if dow == "*" else 7 * 24 * 60
        closes = (0 if dow == "*" else int(dow) * 1440) + int(hour) * 60 + int(minute)
        shut = sum(int(n) * (60 if u == "h" else 1) for n, u in re.findall(r"([0-9]+)([hm])", str(b.get("duration"))))
        opens = (closes + shut) % period
        day = "daily" if dow == "*" else f"weekly from day {opens // 1440} (0 = Sunday)"
        return (
            f"rolls in the window {(opens // 60) % 24:02d}:{opens % 60:02d}-{int(hour):02d}:{int(minute):02d} UTC "
            f'{day}, {", ".join(always) or "unbounded"} of its free drifted nodes at a time (budget `nodes: "0"` '
            f"schedule `{b['schedule']}` for {b.get('duration')} outside it)"
        )
    return f"any time, {', '.join(always)} node(s) at a time (no window)"


def lines(old: Sequence[Resource], new: Sequence[Resource]) -> list[str]:
    """The upgrade, in the documented order; empty when the Kubernetes version did not change."""
    types = rules.KUBERNETES_VERSION_INPUT
    before, after = _by_name(old, types), _by_name(new, types)
    versions = [
        (str(_get(before[k].inputs, types[k[0]])), str(_get(r.inputs, types[k[0]])))
        for k, r in after.items()
        if k in before and _get(before[k].inputs, types[k[0]]) != _get(r.inputs, types[k[0]])
    ]
    if not versions:
        return []
    src, dst = versions[0]
    out = [f"1. control plane: Kubernetes {src} -> {dst} (UpdateClusterVersion, in place)"]
    addons = []
    old_addons = _by_name(old, rules.ADDON_VERSION_INPUT)
    for k, r in _by_name(new, rules.ADDON_VERSION_INPUT).items():
        was = _get(old_addons[k].inputs, "addonVersion") if k in old_addons else None
        now = _get(r.inputs, "addonVersion")
        if was != now:
            addons.append(f"{r.inputs.get('addonName', r.name)} {was or '(new)'} -> {now}")
    out.append("2. add-ons (UpdateAddon): " + ("; ".join(sorted(addons)) or "none changes"))
    groups = []
    old_groups = _by_name(old, rules.NODE_GROUP_VERSION_INPUTS)
    for k, r in _by_name(new, rules.NODE_GROUP_VERSION_INPUTS).items():
        changed = [
            f"{p} {_get(old_groups[k].inputs, p) if k in old_groups else '(new)'} -> {_get(r.inputs, p)}"
            for p in rules.NODE_GROUP_VERSION_INPUTS[r.type]
            if k not in old_groups or _get(old_groups[k].inputs, p) != _get(r.inputs, p)
        ]
        if changed:
            groups.append(f"{r.name}: {', '.join(changed)}")
    out.append("3. system node group (UpdateNodegroupVersion, rolling): " + ("; ".join(groups) or "unchanged"))
    pools = [r for r in new if r.type == NODEPOOL]
    out.append(f"4. Karpenter: {len(pools)} NodePool(s) drift (their EC2NodeClass's AMI alias resolves the {dst} AMI):")
    out += [f"   - {_get(r.inputs, 'metadata.name') or r.name}: {window_text(r.inputs)}" for r in pools]
    return out
