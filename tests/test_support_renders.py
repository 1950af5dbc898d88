"""tests/support/renders.py: the session's shared renders wait for each other and run a program once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from support import renders

from ekstrain.infra import render


def test_a_second_holder_of_the_same_lock_waits_for_the_first(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path))
    order: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        with renders.held("k"):
            first_in.set()
            time.sleep(0.3)
            order.append("first out")

    def second() -> None:
        first_in.wait()
        with renders.held("k"):
            order.append("second in")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order == ["first out", "second in"]


def test_serialising_wraps_once_and_leaves_renders_without_replay_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the real entry point replaced by a recorder (conftest wrapped the real one already: unwrap for the test)
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(render, "render_or_replay", lambda *a, **k: calls.append(a) or "done")
    renders.serialise_renders()
    wrapped = render.render_or_replay
    renders.serialise_renders()
    assert render.render_or_replay is wrapped and getattr(wrapped, "serialised", False)
    # WHEN replays are off THEN the call passes straight through (no key, no lock)
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")
    assert wrapped("file", "prod", False, lock_mode="use") == "done" and calls == [("file", "prod", False)]


def test_a_program_runs_once_per_config_inside_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(render, "run_program", lambda flat, secrets, stack, preview=False: ran.append(stack) or stack)
    with renders.programs_run_once():
        assert render.run_program({"a": "1"}, [], "dev") == "dev"
        assert render.run_program({"a": "1"}, [], "dev") == "dev"
        assert render.run_program({"a": "2"}, [], "dev") == "dev"
    assert ran == ["dev", "dev"]  # the second call of the same config was handed the first's recording
    render.run_program({"a": "1"}, [], "dev")
    assert ran == ["dev", "dev", "dev"]  # outside the block every call runs
