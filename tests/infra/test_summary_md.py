"""SUMMARY.md is Markdown a viewer shows: every table parses as a GFM table (markdown-it-py, CommonMark + the table
extension), every column has a legend, no secret is shown, and it says what the stack costs."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt
from support.renders import Renders

from ekstrain.infra import summary_md


@pytest.fixture(scope="module")
def summary(renders: Renders) -> str:
    out, code = renders.run("prod")
    assert code in (0, 1)  # 1: no upstream schemas (a plain clone): the summary is written all the same
    return (out / "SUMMARY.md").read_text()


def _table_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    fenced = False
    previous = ""
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("|"):
            if previous.startswith("|"):
                blocks[-1].append(line)
            else:
                blocks.append([line])
        previous = line if not fenced else ""
    return blocks


def test_every_table_of_summary_is_a_gfm_table_with_a_legend(summary: str) -> None:
    blocks = _table_blocks(summary)
    assert len(blocks) >= 6  # partitions, cost, components, cloud resources, checks, images (creation order)
    tokens = MarkdownIt("commonmark").enable("table").parse(summary)
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    # THEN each block of `|` lines is one table, with as many body rows as the source has
    assert len(tables) == len(blocks)
    for start, block in zip(tables, blocks, strict=True):
        end = next(i for i in range(start, len(tokens)) if tokens[i].type == "table_close")
        rows = sum(1 for t in tokens[start:end] if t.type == "tr_open")
        assert rows == len(block) - 1, block[0]  # the delimiter row is no row
        heads = [c.strip() for c in block[0].strip("|").split("|")]
        # AND every column is explained in the legend after it
        after = summary.split(block[-1], 1)[1].split("\n## ", 1)[0]
        assert "Columns:" in after, block[0]
        for head in heads:
            assert f"- **{head}**: " in after, (head, block[0])
    # AND the prose is lines a viewer shows (tables and fenced blocks aside)
    prose = [ln for ln in summary.splitlines() if not ln.startswith(("|", "  ", "{", "}", '"'))]
    assert max(len(ln) for ln in prose) <= 400


def test_summary_masks_secrets_and_states_the_cost(summary: str) -> None:
    # GIVEN prod's offline fakes for its generated passwords THEN none is shown, each output says [secret]
    assert not re.search(r"offline-[0-9a-f]{16,}", summary)
    for key in ("grafanaAdminPassword", "slurmAccountingPassword", "kubeconfig"):
        assert f'"{key}": "[secret]"' in summary
    cost = summary.split("## Cost", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"- budget: \$[\d,]+ a month", cost)
    standing = int(re.search(r"- standing \(.*\): \$([\d,]+) a month", cost)[1].replace(",", ""))  # type: ignore[index]
    at_max = int(re.search(r"- at maxNodes .*: \$([\d,]+) a month", cost)[1].replace(",", ""))  # type: ignore[index]
    assert 0 < standing < at_max
    for item in ("EKS control plane", "NAT gateways", "system node group", "FSx for Lustre", "EFS model store"):
        assert f"| {item} |" in cost


def test_cells_are_one_line_and_escape_pipes() -> None:
    text = summary_md.table([{"a": "x|y", "b": "line\nbreak"}, {"a": "", "b": 3}])
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    cells = [t.content for t in tokens if t.type == "inline"]
    assert cells == ["a", "b", "x|y", "line break", "-", "3"]


def test_mask_hides_marked_values_and_credential_names() -> None:
    masked = summary_md.mask(
        {"apiPassword": "p", "nested": {"token": "t", "url": "u", "list": ["s3cr3t", "ok"]}}, {"s3cr3t"}
    )
    assert masked == {
        "apiPassword": "[secret]",
        "nested": {"token": "[secret]", "url": "u", "list": ["[secret]", "ok"]},
    }
