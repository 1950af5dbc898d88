"""House rules read from the tree: comments give reasons (not issue numbers), references name files that exist."""

from __future__ import annotations

import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
# This project's issues are numbered below 100; upstream citations keep their `#NNNN` form and are not matched.
OWN_ISSUE = re.compile(r"\b[Ii]ssues? \d{1,2}\b(?! ?[-:/]\d)")
OWN_MODULE = re.compile(r"(?<![\w./-])((?:ekstrain|infra|components|stacks|assembly|cli|scripts|tests)/[\w/]+\.py)\b")
OWN_DOC = re.compile(r"(?<![\w./-])(docs/[\w-]+\.(?:md|svg))\b")
# Paths in upstream repositories that the code cites by their own name (not files of this checkout).
UPSTREAM_DOCS = {
    "docs/performance.md",
    "docs/performance-summary.md",
    "docs/performance-summary-archive.md",
    "docs/service_controller.md",  # kubernetes/cloud-provider-aws
}
EXAMPLE_PATHS = {"ekstrain/x.py"}  # a placeholder in a docstring's example


def tracked(*patterns: str) -> list[pathlib.Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.split()]


def issue_citations(text: str) -> list[str]:
    return [m.group(0) for m in OWN_ISSUE.finditer(text)]


def test_GIVEN_the_code_WHEN_comments_are_read_THEN_none_cites_one_of_our_issue_numbers() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for p in tracked("*.py", "*.sh", "Makefile")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if issue_citations(line)
    ]
    assert found == []


def test_GIVEN_a_comment_citing_an_issue_WHEN_checked_THEN_it_is_found_and_upstream_citations_are_not() -> None:
    cited = "issue " + "45"  # built so that this file does not cite one itself
    assert issue_citations(f"# the DRA race ({cited})") == [cited]
    upstream = "issue" + " #24678"  # an upstream tracker's number keeps its '#'
    assert issue_citations(f"# terraform-provider-aws {upstream} serialises them") == []
    assert issue_citations("# kubernetes-sigs/karpenter#1234") == []


def test_GIVEN_our_files_WHEN_they_name_a_module_or_page_of_this_checkout_THEN_it_exists() -> None:
    stale = []
    for p in tracked("*.py", "*.md", "*.yaml", "*.sh", "Makefile"):
        if p.is_relative_to(ROOT / "tests"):
            continue  # tests name files they create under tmp_path
        for pattern in (OWN_MODULE, OWN_DOC):
            for ref in pattern.findall(p.read_text()):
                if ref not in UPSTREAM_DOCS | EXAMPLE_PATHS and not (ROOT / ref).exists():
                    stale.append(f"{p.relative_to(ROOT)} names {ref}")
    assert stale == []


def test_GIVEN_the_marker_table_WHEN_read_THEN_every_entry_names_a_test_module_that_exists() -> None:
    from tests.support import markers

    entries = [*markers.BROWSER, *markers.NEEDS_HELM, *markers.SLOW]
    assert len(entries) == len(set(entries))
    assert [e for e in entries if not (ROOT / e.split("::")[0]).is_file()] == []
