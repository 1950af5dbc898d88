"""`make test` (as CI runs it) fails on a skipped test that is not on tests/allowed-skips.txt."""

from __future__ import annotations

import os
import pathlib
import subprocess
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


def _pytest(tmp_path: pathlib.Path, no_skips: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_sample.py"
    test.write_text("import pytest\n\ndef test_ok():\n    pass\n\ndef test_skipped():\n    pytest.skip('no tool')\n")
    env = {**os.environ, "EKSTRAIN_NO_SKIPS": no_skips, "PYTHONPATH": f"{REPO / 'tests'}:{REPO / 'policy'}"}
    env.pop("PYTEST_ADDOPTS", None)  # the outer run's plugins (a profiler's -p) are not this sample's
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider", str(test)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def test_a_skip_fails_the_run_under_make_test(tmp_path: pathlib.Path) -> None:
    # GIVEN a suite with one skip, WHEN run as `make test` runs it THEN it fails, naming the test
    strict = _pytest(tmp_path, "1")
    assert strict.returncode == 1, strict.stdout
    assert "skipped that CI must run" in strict.stdout and "test_sample.py::test_skipped" in strict.stdout
    # AND outside `make test` the same suite passes
    assert _pytest(tmp_path, "0").returncode == 0
