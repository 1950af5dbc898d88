"""`make test` (as CI runs it) fails on a skipped test that is not on tests/allowed-skips.txt."""

from __future__ import annotations

import pathlib
import sys

import pytest
from conftest import LONGEST_FIRST, REPO, allowed_skips, unexpected_skips


def test_only_listed_patterns_may_skip() -> None:
    assert unexpected_skips(["tests/test_a.py::t", "tests/test_b.py::u"], ["tests/test_a.py::*"]) == [
        "tests/test_b.py::u"
    ]
    assert all("*" not in p or p.startswith("tests/") for p in allowed_skips())


def test_a_conditional_allowance_holds_only_while_its_path_is_missing() -> None:
    # GIVEN a skip allowed only while a tool beside the checkout is missing
    text = "tests/test_x.py::* -- needs the tool -- only while missing: {}\n"
    # WHEN the tool is there THEN the skip is not allowed (CI must run it); WHEN it is missing THEN it is
    assert allowed_skips(text.format("tests/conftest.py")) == []
    assert allowed_skips(text.format("no-such-dir/tool")) == ["tests/test_x.py::*"]
    # and the shipped real-eks allowance names the file the test needs
    real_eks = [ln for ln in (REPO / "tests" / "allowed-skips.txt").read_text().splitlines() if "real_eks" in ln]
    assert real_eks and real_eks[0].endswith("only while missing: ../shared/tools/real-eks/run.sh")


def test_each_longest_first_entry_names_a_test_that_exists(request: pytest.FixtureRequest) -> None:
    # The ordering list names tests by node id prefix; a renamed test would silently fall back to its place.
    for prefix in LONGEST_FIRST:
        path, _, function = prefix.partition("::")
        assert (REPO / path).is_file(), prefix
        assert not function or f"def {function}" in (REPO / path).read_text(), prefix
    # and under a full run they are the first tests collected
    names = [item.nodeid for item in request.session.items]
    if len(names) > 1000:
        assert names[0].startswith(LONGEST_FIRST[0]), names[:3]


def test_make_test_and_ci_turn_the_guard_on() -> None:
    assert "EKSTRAIN_NO_SKIPS=1" in (REPO / "Makefile").read_text()
    assert "make test" in (REPO / ".ci" / "run").read_text()


def _pytest(
    tmp_path: pathlib.Path, no_skips: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """The sample suite run by pytest with this suite's conftest as its plugin, as `make test` runs the suite: its exit
    code and what it printed. In this process (pytest.main): a pytest process of its own paid ~1.5 CPU-s a run
    importing the conftest's dependencies again; the hook reads only the environment and the run's reports."""
    test = tmp_path / "test_sample.py"
    test.write_text("import pytest\n\ndef test_ok():\n    pass\n\ndef test_skipped():\n    pytest.skip('no tool')\n")
    with monkeypatch.context() as patch:
        patch.setenv("EKSTRAIN_NO_SKIPS", no_skips)
        patch.delenv("PYTEST_ADDOPTS", raising=False)  # the outer run's plugins (a profiler's -p) are not this sample's
        patch.setattr(sys, "path", list(sys.path))
        patch.chdir(tmp_path)
        capsys.readouterr()
        args = ["-q", "-p", "conftest", "-p", "no:cacheprovider", "--import-mode=importlib", str(test)]
        code = int(pytest.main(args))
        return code, capsys.readouterr().out


def test_a_skip_fails_the_run_under_make_test(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a suite with one skip, WHEN run as `make test` runs it THEN it fails, naming the test
    code, out = _pytest(tmp_path, "1", monkeypatch, capsys)
    assert code == 1, out
    assert "skipped that CI must run" in out and "test_sample.py::test_skipped" in out
    # AND outside `make test` the same suite passes
    assert _pytest(tmp_path, "0", monkeypatch, capsys)[0] == 0
