"""docs/index.md: links every page in docs/ and the architecture picture (which exists and is an SVG the pages
code wrote); the README links the index."""

from __future__ import annotations

import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
INDEX = REPO / "docs" / "index.md"


def links(text: str) -> set[str]:
    return {m.split("#", 1)[0] for m in re.findall(r"\]\(([^)\s]+)\)", text)}


def test_the_index_links_every_doc() -> None:
    linked = links(INDEX.read_text())
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"index.md"}
    assert pages, "docs/ has pages"
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"
    for target in linked:
        if not target.startswith(("http://", "https://")):
            assert (INDEX.parent / target).exists(), f"docs/index.md links a missing file: {target}"


def test_the_index_shows_the_architecture_drawn_from_a_render() -> None:
    assert "(architecture.svg)" in INDEX.read_text()
    svg = (REPO / "docs" / "architecture.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "Matplotlib" in svg
    for component in ("network", "cluster", "karpenter", "fsx"):  # prod's top-level components
        assert f">{component}<" in svg or f"{component}</text>" in svg, component


def test_the_index_has_a_troubleshooting_table_and_the_readme_links_it() -> None:
    text = INDEX.read_text()
    section = text.split("## Troubleshooting", 1)[1]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    assert len(rows) >= 10, rows
    for phrase in (
        "--upstream-dir DIR",
        "--helm PATH",
        "pip install 'ekstrain[render]'",
        "apt-get install -y chromium",
    ):
        assert phrase in section, phrase
    assert "docs/index.md" in (REPO / "README.md").read_text()
