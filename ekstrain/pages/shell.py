"""The pages' shared shell: one HTML document with inline CSS, tables, and matplotlib figures as inline SVG.

Charts are drawn with matplotlib's object API (``matplotlib.figure.Figure``, no pyplot global state) and saved
with its SVG backend (https://matplotlib.org/stable/api/backend_svg_api.html, matplotlib 3.x): text stays text
(``svg.fonttype: none``) and ids are salted per figure so several figures on one page do not collide.
"""

from __future__ import annotations

import html
import io
import pathlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ekstrain.files import filememo, outputs

if TYPE_CHECKING:  # matplotlib loads when a page is drawn, not when a module importing this one does
    from matplotlib.figure import Figure

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2b45;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;opacity:.85}main{padding:8px 24px 40px;max-width:1400px}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;margin:16px 0;padding:12px 16px}
h2{font-size:16px;margin:4px 0 10px}table{border-collapse:collapse;font-size:13px;width:100%}
th,td{border-bottom:1px solid #e6e9ef;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
main,section{box-sizing:border-box}section{max-width:100%}
th{background:#f0f2f6;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b3261e;font-weight:600}.ok{color:#1b7f3b;font-weight:600}.muted{color:#6b7280}
figure{margin:8px 0;overflow-x:auto}figure svg{max-width:100%;height:auto}ul{margin:4px 0;padding-left:20px}
code{background:#f0f2f6;padding:0 3px;border-radius:3px}
"""


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def svg(fig: Figure, salt: str) -> str:
    """``fig`` as an inline ``<svg>`` element (no XML declaration or DOCTYPE, which are invalid inside HTML)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": salt, "text.parse_math": False}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


DRAWN_KEEP = 16
"""Figures kept by :func:`drawn` (the latest used): a render draws four, a few kilobytes to some hundred each."""
_drawn: filememo.Recent[str] = filememo.Recent(DRAWN_KEEP)
_DEFAULT_REPR = re.compile(r" at 0x[0-9a-fA-F]+>")


def drawn(inputs: Any, salt: str, draw: Callable[[], Figure]) -> str:
    """``svg(draw(), salt)``, drawn once per process for the same ``inputs`` and ``salt``; ``draw`` must read
    nothing but ``inputs`` and constants. Drawing is most of a render's CPU once the program has run and helm's
    answers are cached (matplotlib lays out every label's glyphs twice for ``bbox_inches="tight"``: ~40 % of a warm
    dev render), and a process that renders the same stack again (the tests, a script rendering twice) draws the
    same pictures. The key is the inputs' ``repr``: their values, types and order (the drawings follow the order);
    inputs whose repr is an address (``<... object at 0x...>``) are drawn every time, never kept."""
    key = repr((inputs, salt))
    if _DEFAULT_REPR.search(key):  # an address can be reused by another object after this one is freed: no memo
        return svg(draw(), salt)
    kept = _drawn.get(key)
    return kept if kept is not None else _drawn.put(key, svg(draw(), salt))


def figure(width: float, height: float) -> Figure:
    """A figure whose text is plain text: labels carry user names (jobs, partitions, reasons) in which ``$...$``
    would otherwise be parsed as mathtext and a stray ``$`` or ``^{`` raise while drawing. ``text.parse_math`` is
    read when each Text is made (matplotlib 3.5+, ``Text(parse_math=...)``), so it is off before any is made here
    and while the figure is saved (:func:`svg`); the pages never draw math."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams["text.parse_math"] = False

    fig = Figure(figsize=(width, height), dpi=96)
    fig.set_facecolor("white")
    return fig


def heading(key: str) -> str:
    """A column head for people: ``usdPerHourAtMax`` -> ``USD per hour at max``, ``maxNodes`` -> ``max nodes``."""
    if not re.fullmatch(r"[a-z][A-Za-z0-9]*", key):
        return key  # already words ("HBM GiB", "type")
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).lower().split(" ")
    text = " ".join({"usd": "USD", "efa": "EFA", "az": "AZ", "gpu": "GPU"}.get(w, w) for w in words)
    return text[:1].upper() + text[1:]


def table(rows: Sequence[Mapping[str, Any]], numeric: Iterable[str] = ()) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    cols = list(rows[0])
    nums = set(numeric)
    head = "".join(f"<th>{esc(heading(c))}</th>" for c in cols)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{esc(r.get(c, ""))}</td>' if c in nums else f"<td>{esc(r.get(c, ''))}</td>" for c in cols
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section(title: str, *parts: str) -> str:
    return f"<section><h2>{esc(title)}</h2>{''.join(parts)}</section>"


def page(title: str, subtitle: str, sections: Iterable[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header><main>{''.join(sections)}</main></body></html>\n"
    )


RESOURCE_URL = re.compile(r"""<(?!a\b)[a-z]+\b[^>]*\b(?:src|href|xlink:href)\s*=\s*["']?\s*(?:https?:)?//""", re.I)


def network_references(text: str) -> list[str]:
    """Elements other than plain ``<a>`` links that would fetch from the network (scripts, styles, images,
    fonts), plus any ``<script src>`` and CSS ``url(http...)``/``@import``: a page must have none."""
    found = [m.group(0) for m in RESOURCE_URL.finditer(text)]
    found += re.findall(r"<script\b[^>]*\bsrc\s*=", text, re.I)
    found += re.findall(r"url\(\s*['\"]?\s*(?:https?:)?//[^)]*\)|@import\b", text, re.I)
    return found


def write(path: pathlib.Path, text: str, flag: str = "--html") -> pathlib.Path:
    """Write a page through the write guard (ekstrain/files/outputs.py): never a stack file or a directory."""
    target = outputs.check_file(flag, path)
    outputs.write_file(flag, target, text)
    return path
