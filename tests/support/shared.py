"""Values computed once per test session and shared by its pytest-xdist workers.

A session fixture is per process: under `pytest -n 2` each worker computed it again (prod's offline recording ~3 s
of CPU, dev's ~2 s, the planner's leave-one-source-out validation ~7 s). The first process of the session to need a
value computes it and stores it in the session's own temporary directory (pytest makes a new one per session and
gives every worker a directory inside it); the others wait on a lock and read it. The store is this session's, so it
never outlives the code that wrote it; a value that does not pickle is simply not shared.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import pickle
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def session_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The directory every process of this session shares: an xdist worker's basetemp is ``popen-<worker id>``
    inside the controller's (pytest-xdist 3.8, workermanage.py WorkerController.setup). A pytest that a test starts
    inherits PYTEST_XDIST_WORKER but has a basetemp of its own, whose parent is no session's: it keeps to its own."""
    base = tmp_path_factory.getbasetemp()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return base.parent if worker and base.name == f"popen-{worker}" else base


def once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, run by the first process of the session that asks for ``name``; the others read its result."""
    root = session_dir(tmp_path_factory)
    stored = root / f"shared-{name}.pickle"
    with (root / f"shared-{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if stored.exists():
                value: T = pickle.loads(stored.read_bytes())
                return value
            value = compute()
            try:
                data = pickle.dumps(value)
            except (pickle.PicklingError, TypeError, AttributeError):
                return value
            partial = stored.with_suffix(f".{os.getpid()}")
            partial.write_bytes(data)
            partial.replace(stored)
            return value
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
