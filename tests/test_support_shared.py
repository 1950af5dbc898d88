"""tests/support/shared.py: a value computed once per test session is read back equal by the session's other
processes, never by another session's."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from support import shared


class _Factory:
    """What shared.py uses of pytest's TempPathFactory: the process's basetemp."""

    def __init__(self, base: pathlib.Path) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.base = base

    def getbasetemp(self) -> pathlib.Path:
        return self.base


def test_an_xdist_worker_shares_its_controllers_directory_and_only_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert shared.session_dir(_Factory(tmp_path / "popen-gw3")) == tmp_path  # type: ignore[arg-type]
    # a pytest that a worker's test starts inherits the variable, not the layout: its own directory
    assert shared.session_dir(_Factory(tmp_path / "pytest-7")) == tmp_path / "pytest-7"  # type: ignore[arg-type]
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert shared.session_dir(_Factory(tmp_path / "popen-gw3")) == tmp_path / "popen-gw3"  # type: ignore[arg-type]


def test_the_second_worker_reads_the_first_ones_value(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def compute() -> dict[str, Any]:
        calls.append(1)
        return {"rows": (1.5, "a"), "nested": [{"x": None}]}

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    first = shared.once(_Factory(tmp_path / "popen-gw0"), "v", compute)  # type: ignore[arg-type]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    second = shared.once(_Factory(tmp_path / "popen-gw1"), "v", compute)  # type: ignore[arg-type]
    assert first == second and second is not first and len(calls) == 1
    # another session (another controller directory) computes its own
    shared.once(_Factory(tmp_path / "other" / "popen-gw1"), "v", compute)  # type: ignore[arg-type]
    assert len(calls) == 2


def test_a_value_that_does_not_pickle_is_computed_by_each_process(tmp_path: pathlib.Path) -> None:
    calls: list[int] = []

    def compute() -> Any:
        calls.append(1)
        return lambda: None

    factory = _Factory(tmp_path)
    assert callable(shared.once(factory, "f", compute))  # type: ignore[arg-type]
    assert callable(shared.once(factory, "f", compute))  # type: ignore[arg-type]
    assert len(calls) == 2 and not list(tmp_path.glob("*.pickle"))
