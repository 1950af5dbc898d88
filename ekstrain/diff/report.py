"""``ekstrain diff`` output: Markdown for a pull-request comment, JSON for CI, and the exit code."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ekstrain.diff.compare import ACTIONS, FLAG_CATEGORIES, Diff

MAX_PATHS = 6
"""Changed inputs listed per resource in Markdown (JSON lists all)."""


def blocking(diff: Diff, allowed: Collection[str]) -> list[str]:
    """Flag categories present and not allowed (``--allow CATEGORY``)."""
    return sorted({f.category for _, f in diff.flags()} - set(allowed))


def exit_code(diff: Diff, allowed: Collection[str]) -> int:
    return 1 if blocking(diff, allowed) else 0


def to_json(diff: Diff, old_label: str, new_label: str, allowed: Collection[str]) -> dict[str, Any]:
    return {
        "old": old_label,
        "new": new_label,
        "summary": diff.summary(),
        "flagged": [
            {"key": c.key, "action": c.action, "category": f.category, "message": f.message} for c, f in diff.flags()
        ],
        "blocking": blocking(diff, allowed),
        "upgrade": diff.upgrade,
        "changes": [c.to_dict() for c in diff.changes],
    }


def markdown(diff: Diff, old_label: str, new_label: str, allowed: Collection[str]) -> str:
    s = diff.summary()
    lines = [
        f"## ekstrain diff: `{old_label}` -> `{new_label}`",
        "",
        "Offline preview (the program under the mock engine, replace rules from `ekstrain/diff/rules.py`); "
        "the real `pulumi preview` is authoritative for provider-side diffs.",
        "",
        " | ".join(f"{s[a]} to {a}" for a in ACTIONS) + f" | {s['unchanged']} unchanged",
        "",
        "### Flagged",
    ]
    flags = diff.flags()
    if not flags:
        lines.append("none")
    for category, title in FLAG_CATEGORIES.items():
        rows = [(c, f) for c, f in flags if f.category == category]
        if not rows:
            continue
        state = "allowed" if category in allowed else f"blocks (allow with `--allow {category}`)"
        lines += ["", f"**{category}**: {title} ({state})", ""]
        lines += [f"- {c.action} `{c.type}` `{c.name}`: {f.message}" for c, f in rows]
    if diff.upgrade:
        lines += ["", "### Kubernetes upgrade (documented order: docs/runbook-upgrade.md)", "", *diff.upgrade]
    lines += ["", "### Changes", ""]
    if not diff.changes:
        lines.append("no changes")
    else:
        lines += ["| action | type | name | inputs |", "|---|---|---|---|"]
        for c in diff.changes:
            shown = [f"`{p}`" + (" (replaces)" if p in c.replace_because else "") for p in c.changed[:MAX_PATHS]]
            more = f" +{len(c.changed) - MAX_PATHS} more" if len(c.changed) > MAX_PATHS else ""
            renamed = f"renamed from `{c.renamed_from}` " if c.renamed_from else ""
            lines.append(f"| {c.action} | `{c.type}` | `{c.name}` | {renamed}{', '.join(shown)}{more} |")
    return "\n".join(lines) + "\n"
