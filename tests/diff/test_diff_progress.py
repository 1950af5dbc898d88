"""`ekstrain diff` says on stderr what it is doing, and records both sides at once (under 5 s warm)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import threading
from typing import Any

import pytest
from conftest import REPO

from ekstrain.cli import diff as diff_cli
from ekstrain.diff import sides


def test_both_runs_the_two_sides_at_the_same_time() -> None:
    # Each side waits for the other: a serial run would time out at the barrier.
    barrier = threading.Barrier(2, timeout=10)

    def side(name: str) -> str:
        barrier.wait()
        return name

    assert sides.both(lambda: side("new"), lambda: side("old")) == ("new", "old")


def test_both_raises_the_error_of_a_side() -> None:
    def bad() -> str:
        raise sides.DiffInputError("--old-stack-file x: no such stack file")

    with pytest.raises(sides.DiffInputError, match="no such stack file"):
        sides.both(lambda: "new", bad)


def test_record_prints_progress_on_stderr_and_not_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    row = {"urn": "urn:pulumi:s::p::aws:s3/bucket:Bucket::b", "type": "aws:s3/bucket:Bucket", "name": "b"}

    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 0, stdout=json.dumps([row]), stderr="")

    monkeypatch.setattr(sides.subprocess, "run", fake_run)
    stack_file = tmp_path / "Pulumi.prod.yaml"
    stack_file.write_text((REPO / "Pulumi.prod.yaml").read_text())
    rows = sides.record(REPO, "prod", stack_file, "--stack-file", diff_cli.progress)
    assert [r.urn for r in rows] == [row["urn"]]
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == "ekstrain diff: recording --stack-file Pulumi.prod.yaml (the program under the offline engine)"
    assert lines[1].startswith("ekstrain diff: recorded --stack-file Pulumi.prod.yaml: 1 resources in ")
    assert len(lines) == 2
