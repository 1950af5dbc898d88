"""``build/<stack>/index.html``: the render at a glance, drawn from the render itself.

The architecture figure is the program's own component tree as the engine recorded it (infra/offline.py
Recording: each top-level component with the AWS resources and Helm releases registered beneath it); the
creation stages are the dependency graph's stages the render computed (infra/verify/order.py stage_rows);
partitions, checks and files are what write() produced (infra/render.py).
"""

from __future__ import annotations

import collections
import pathlib
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ekstrain.pages import shell, topology

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn
    from matplotlib.figure import Figure

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
PAGE_NAME = "index.html"
ARCHITECTURE = "architecture.svg"
XML_HEAD = '<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'


def components(rec: Any) -> list[dict[str, Any]]:
    """One entry per top-level component: its type, name, AWS resource types (count) and Helm releases."""
    tops: dict[str, dict[str, Any]] = {}
    for r in rec.records:
        if r.type == "pulumi:pulumi:Stack" or r.type.startswith("pulumi:providers:"):
            continue
        top = rec.top_component(r)
        entry = tops.setdefault(
            top.urn, {"type": top.type, "name": top.name, "aws": collections.Counter(), "helm": [], "k8s": 0}
        )
        if not r.custom:
            continue
        if r.type == HELM_RELEASE:
            entry["helm"].append(str(r.inputs.get("name") or r.name))
        elif r.type.startswith("kubernetes:"):
            entry["k8s"] += 1
        else:
            entry["aws"][r.type] += 1
    # The engine registers resources concurrently, so the recording's order is not stable: the types and releases
    # are put in name order, so that the figure (most_common keeps ties in insertion order) is the same each run.
    for entry in tops.values():
        entry["aws"] = collections.Counter(dict(sorted(entry["aws"].items())))
        entry["helm"].sort()
    return sorted(tops.values(), key=lambda e: (-sum(e["aws"].values()) - len(e["helm"]), e["name"]))


def _short(type_token: str) -> str:
    """``aws:ec2/subnet:Subnet`` -> ``ec2 Subnet``; ``random:index/randomPassword:RandomPassword`` -> ``random
    RandomPassword``."""
    pkg, _, rest = type_token.partition(":")
    module, _, kind = rest.rpartition(":")
    mod = module.split("/")[0]
    mod = pkg if mod in ("", "index") else mod
    return f"{mod} {kind}"


def architecture_figure(comps: list[dict[str, Any]], salt: str) -> str:
    """The components figure as inline SVG (drawn once per process for the same components: shell.drawn)."""
    return shell.drawn(comps, salt, lambda: _architecture(comps))


def _architecture(comps: list[dict[str, Any]]) -> Figure:
    from matplotlib.patches import FancyBboxPatch

    cols = 3
    shown = [c for c in comps if c["aws"] or c["helm"] or c["k8s"]]
    boxes = []
    for c in shown:
        lines = [f"{n} x {_short(t)}" for t, n in c["aws"].most_common(6)]
        if len(c["aws"]) > 6:
            lines.append(f"+{sum(c['aws'].values()) - sum(n for _, n in c['aws'].most_common(6))} more AWS")
        lines += [f"helm: {h}" for h in c["helm"][:5]] + (
            [f"+{len(c['helm']) - 5} more releases"] if len(c["helm"]) > 5 else []
        )
        if c["k8s"]:
            lines.append(f"{c['k8s']} Kubernetes objects")
        boxes.append((c, lines))
    rows = [boxes[i : i + cols] for i in range(0, len(boxes), cols)]
    heights = [max(len(lines) for _, lines in row) + 2 for row in rows] or [1]
    total = sum(heights) + len(rows)
    fig = shell.figure(13, max(2.0, total * 0.19))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, cols)
    ax.set_ylim(total, 0)
    ax.axis("off")
    y = 0.5
    for row, h in zip(rows, heights, strict=True):
        for i, (c, lines) in enumerate(row):
            color = "#e8f0fe" if c["aws"] else "#e7f6ec"
            ax.add_patch(
                FancyBboxPatch(
                    (i + 0.03, y), 0.94, h, boxstyle="round,pad=0.02", facecolor=color, edgecolor="#5b6b8c", lw=1
                )
            )
            ax.text(i + 0.06, y + 0.9, f"{c['name']}", fontsize=10, fontweight="bold", va="center")
            ax.text(i + 0.06, y + 1.9, "\n".join(lines), fontsize=8, va="top", family="monospace", linespacing=1.35)
            ax.text(i + 0.94, y + 0.9, _short(c["type"]), fontsize=7, ha="right", va="center", color="#6b7280")
        y += h + 1
    return fig


def stages_figure(order_rows: Sequence[dict[str, Any]], salt: str) -> str:
    """The creation stages as inline SVG (drawn once per process for the same rows: shell.drawn)."""
    return shell.drawn(list(order_rows), salt, lambda: _stages(order_rows))


def _stages(order_rows: Sequence[dict[str, Any]]) -> Figure:
    fig = shell.figure(10, 0.35 * max(3, len(order_rows)) + 0.8)
    ax = fig.add_subplot()
    stages = [int(r["stage"]) for r in order_rows]
    counts = [int(r["resources"]) for r in order_rows]
    ax.barh(stages, counts, color="#4c78a8")
    for s, n in zip(stages, counts, strict=True):
        ax.text(n, s, f" {n}", va="center", fontsize=8)
    ax.set_yticks(stages)
    ax.set_yticklabels([f"stage {s}" for s in stages], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("resources the engine can create in parallel in this stage (first `pulumi up`)")
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _files(out: pathlib.Path) -> str:
    groups: dict[str, list[pathlib.Path]] = collections.defaultdict(list)
    for f in sorted(p for p in out.rglob("*") if p.is_file() and p.name != PAGE_NAME):
        rel = f.relative_to(out)
        groups[rel.parts[0] if len(rel.parts) > 1 else ""].append(rel)
    parts = []
    for group, files in sorted(groups.items()):
        links = "".join(
            f'<li><a href="{shell.esc(urllib.parse.quote(f.as_posix()))}">{shell.esc(f.as_posix())}</a></li>'
            for f in files
        )
        if group:
            parts.append(
                f"<details><summary>{shell.esc(group)}/ ({len(files)} files)</summary><ul>{links}</ul></details>"
            )
        else:
            parts.insert(0, f"<ul>{links}</ul>")
    return "".join(parts)


def _checks(checks: Sequence[Any]) -> str:
    rows = [
        {
            "check": c.name,
            "checked": f"{c.checked} {c.what}",
            "problems": len(c.problems),
            "warnings": len(c.warnings),
            "note": c.note or "-",
        }
        for c in checks
    ]
    problems = [f"{c.name}: {p}" for c in checks for p in c.problems]
    warnings = [f"{c.name}: {w}" for c in checks for w in c.warnings]
    verdict = (
        f'<p class="bad">{len(problems)} problem(s)</p>'
        if problems
        else f'<p class="ok">0 problems in {len(checks)} checks</p>'
    )
    listed = "".join(f'<li class="bad">{shell.esc(p)}</li>' for p in problems)
    listed += "".join(f"<li>warning: {shell.esc(w)}</li>" for w in warnings)
    return verdict + shell.table(rows, numeric=("problems", "warnings")) + (f"<ul>{listed}</ul>" if listed else "")


def html(
    out: pathlib.Path,
    stack: str,
    cfg: Any,
    rec: Any,
    checks: Sequence[Any],
    order_rows: Sequence[dict[str, Any]],
    partition_rows: Sequence[dict[str, Any]],
) -> str:
    comps = components(rec)
    architecture = architecture_figure(comps, f"{stack}-arch")
    releases = [r for r in rec.records if r.type == HELM_RELEASE]
    aws = sum(1 for r in rec.records if r.custom and not r.type.startswith("kubernetes:"))
    sections = [
        shell.section(
            f"Architecture: {len(comps)} components, {aws} cloud resources, {len(releases)} Helm releases",
            '<p class="muted">The VPC, its AZs and subnets, the control plane, NodePools, storage and schedulers, '
            "drawn from this render (docs/architecture.svg is prod's).</p>",
            f"<figure>{topology.figure(rec, cfg, f'{stack}-topology')}</figure>",
        ),
        shell.section(
            "Components",
            '<p class="muted">Each box is a top-level component of the program, with the AWS resources and Helm '
            "releases registered beneath it (blue: creates cloud resources; green: Kubernetes only).</p>",
            f"<figure>{architecture}</figure>",
        ),
        shell.section(
            "Creation stages",
            f"<figure>{stages_figure(order_rows, f'{stack}-stages')}</figure>" if order_rows else "",
            shell.table(list(order_rows), numeric=("stage", "resources")),
        ),
        shell.section("Partitions", shell.table(list(partition_rows))),
        shell.section(
            "Helm releases",
            shell.table(
                [
                    {
                        "release": r.inputs.get("name", r.name),
                        "chart": r.inputs.get("chart", ""),
                        "version": r.inputs.get("version", ""),
                        "namespace": r.inputs.get("namespace", ""),
                        "component": rec.top_component(r).name,
                    }
                    for r in releases
                ]
            ),
        ),
        shell.section("Checks", _checks(checks)),
        shell.section("Files", _files(out)),
    ]
    subtitle = (
        f"stack {stack} · cluster {cfg.cluster.name} · region {cfg.region} · Kubernetes "
        f"{cfg.cluster.kubernetes_version} · offline render (mock engine), full report in SUMMARY.md"
    )
    return shell.page(f"ekstrain render: {stack}", subtitle, sections)


def write(
    out: pathlib.Path,
    stack: str,
    cfg: Any,
    rec: Any,
    checks: Sequence[Any],
    order_rows: Sequence[dict[str, Any]],
    partition_rows: Sequence[dict[str, Any]],
) -> pathlib.Path:
    """Write ``out/architecture.svg`` (the topology picture, ekstrain/pages/topology.py; docs/architecture.svg is
    prod's, ``make architecture``) and ``out/index.html`` (after SUMMARY.md, so
    the page links every file the render wrote)."""
    shell.write(out / ARCHITECTURE, XML_HEAD + topology.figure(rec, cfg, f"{stack}-arch"))
    return shell.write(out / PAGE_NAME, html(out, stack, cfg, rec, checks, order_rows, partition_rows))
