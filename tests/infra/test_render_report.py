"""The render's structured result (infra/report.py): what the CLI prints comes from checks.json, not from
re-reading SUMMARY.md's tables."""

from __future__ import annotations

import json
import pathlib

import pytest

from ekstrain.infra import report
from ekstrain.infra.verify import Check


def _rows() -> list[dict[str, object]]:
    ran = Check("a: b", 3, problems=["p1", "p2"], warnings=["w | x"])
    skipped = Check("helm template: every release renders", what="releases", note="helm not found: NOT checked")
    return [ran.as_json(ran=True), skipped.as_json(ran=False)]


def test_report_round_trips_every_field(tmp_path: pathlib.Path) -> None:
    report.write(tmp_path, "prod", 42, "1 manifests, 2 Helm releases rendering 3 objects", _rows())
    got = report.load(tmp_path)
    assert (got.stack, got.resources, got.kubernetes) == (
        "prod",
        42,
        "1 manifests, 2 Helm releases rendering 3 objects",
    )
    assert [c.name for c in got.failed] == ["a: b"] and got.failed[0].warnings == ("w | x",)
    assert [c.note for c in got.not_run] == ["helm not found: NOT checked"] and got.passed == []
    assert got.check("helm template").what == "releases"
    with pytest.raises(KeyError):
        got.check("no such check")


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        json.dumps({"version": 0, "checks": []}),
        json.dumps({"version": report.VERSION, "stack": "s", "resources": 1, "kubernetes": "", "checks": [{"x": 1}]}),
        json.dumps([1, 2]),
    ],
)
def test_a_damaged_report_is_one_clean_error(tmp_path: pathlib.Path, body: str) -> None:
    (tmp_path / report.FILE).write_text(body)
    with pytest.raises(report.ReportError, match=report.FILE):
        report.load(tmp_path)


def test_a_missing_report_is_one_clean_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(report.ReportError, match="checks.json"):
        report.load(tmp_path)
