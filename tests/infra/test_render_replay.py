"""A warm render replays the stored one only while nothing it reads has changed (infra/replay.py)."""

from __future__ import annotations

import pathlib
import shutil

import pytest
from conftest import REPO, needs_upstream
from support.renders import Renders

from ekstrain.cli import render as render_cli
from ekstrain.infra import render, replay


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@needs_upstream
def test_an_unchanged_render_is_replayed(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], renders: Renders
) -> None:
    # replays on as by default (unset: a value of EKSTRAIN_REPLAY is part of the key, infra/replay.py)
    monkeypatch.delenv("EKSTRAIN_REPLAY", raising=False)
    renders("prod")  # the session's render of prod, stored: the first render below replays it
    argv = ["--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml")]
    # GIVEN a render of prod (replayed or not: the cache may hold one already)
    assert render_cli.main([*argv, "--out", str(tmp_path / "first")]) == 0
    first = capsys.readouterr()
    # WHEN rendered again with nothing changed THEN the program does not run, and the same tree and summary result
    ran = []
    real = render.run_program
    monkeypatch.setattr(render, "run_program", lambda *a, **k: ran.append(1) or real(*a, **k))
    assert render_cli.main([*argv, "--out", str(tmp_path / "second")]) == 0
    second = capsys.readouterr()
    assert ran == [] and "replayed the stored render" in second.err
    # (the short stdout summary ends with where this run's SUMMARY.md is)
    assert second.out.replace(str(tmp_path / "second"), str(tmp_path / "first")) == first.out
    assert _tree(tmp_path / "second") == _tree(tmp_path / "first")
    # AND a changed stack file is another key; so is --preview
    stack_file = tmp_path / "Pulumi.prod.yaml"
    shutil.copy(REPO / "Pulumi.prod.yaml", stack_file)
    before = replay.key("prod", stack_file, False)
    assert replay.key("prod", stack_file, True) != before
    stack_file.write_text(stack_file.read_text() + "\n# a comment\n")
    assert replay.key("prod", stack_file, False) != before


def test_a_changed_file_read_besides_the_key_renders_again(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    out.mkdir()
    # GIVEN a render that read a file outside the checkout's package, the upstream dir and the cache (a key file)
    extra = tmp_path / "elsewhere" / "login.pub"
    extra.parent.mkdir()
    extra.write_text("ssh-ed25519 AAAA one\n")
    reads = replay.start(out)
    extra.read_text()
    (out / "SUMMARY.md").write_text("summary")
    replay.save("k" * 40, reads, out, "summary", [], 3, 1.5)
    # THEN it replays while that file is unchanged, into any directory
    again = replay.load("k" * 40, tmp_path / "again")
    assert again is not None and again.summary == "summary" and again.resources == 3
    assert (tmp_path / "again" / "SUMMARY.md").read_text() == "summary"
    # AND not once it changed
    extra.write_text("ssh-ed25519 AAAA two\n")
    assert replay.load("k" * 40, tmp_path / "third") is None


def test_the_replay_switch_is_not_part_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # EKSTRAIN_REPLAY switches the store, it is no input of the render: unset and "1" share an entry; another
    # EKSTRAIN_ variable is an input and a key of its own
    stack_file = REPO / "Pulumi.prod.yaml"
    monkeypatch.delenv("EKSTRAIN_REPLAY", raising=False)
    unset = replay.key("prod", stack_file, False)
    monkeypatch.setenv("EKSTRAIN_REPLAY", "1")
    assert replay.key("prod", stack_file, False) == unset
    monkeypatch.setenv("EKSTRAIN_SOMETHING_ELSE", "x")
    assert replay.key("prod", stack_file, False) != unset
