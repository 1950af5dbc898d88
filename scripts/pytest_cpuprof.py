"""A pytest plugin: CPU seconds of each test (its own and its waited-for child processes'), one TSV per process.

    CPUPROF_DIR=build/cpuprof PYTEST_ADDOPTS="-p scripts.pytest_cpuprof" make test

Each process (the controller, each xdist worker) writes ``$CPUPROF_DIR/<worker or main>.tsv``: a first line
``#session  self  children  self-at-exit`` for the whole process, then ``test id  self  children  wall`` per test.
Child CPU is counted when the child is waited for (getrusage RUSAGE_CHILDREN), so a test's subprocesses land on it.
Where the suite's CPU goes, measured: what `make bench BENCH_ARGS=--tests-only` sums up in one figure.
"""

from __future__ import annotations

import os
import pathlib
import resource
import time
from collections.abc import Generator

import pytest

_rows: list[tuple[str, float, float, float]] = []
_start: tuple[float, float] = (0.0, 0.0)


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def pytest_sessionstart(session: pytest.Session) -> None:
    global _start
    _start = _cpu()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    before, started = _cpu(), time.perf_counter()
    yield
    after = _cpu()
    _rows.append((item.nodeid, after[0] - before[0], after[1] - before[1], time.perf_counter() - started))


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = pathlib.Path(os.environ.get("CPUPROF_DIR", "build/cpuprof"))
    out.mkdir(parents=True, exist_ok=True)
    end = _cpu()
    lines = [f"#session\t{end[0] - _start[0]:.2f}\t{end[1] - _start[1]:.2f}\t{end[0]:.2f}"]
    lines += [f"{test}\t{own:.3f}\t{children:.3f}\t{wall:.3f}" for test, own, children, wall in _rows]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (out / f"{worker}.tsv").write_text("\n".join(lines) + "\n")
