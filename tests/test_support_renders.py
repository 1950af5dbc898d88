"""tests/support/renders.py: the session's shared renders wait for each other and run a program once."""

from __future__ import annotations

import sys
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


def test_a_render_without_a_lock_flag_is_the_sessions_passed_check_render(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN render_cli.main replaced by one that records its flags, prints, and fails the check of dev only
    from ekstrain.cli import render as render_cli

    calls: list[list[str]] = []

    def main(argv: list[str]) -> int:
        calls.append(argv[argv.index("--out") + 2 :])
        stack = argv[argv.index("--stack") + 1]
        print(f"out {stack} {argv[-1]}")
        print(f"err {stack}", file=sys.stderr)
        return 1 if stack == "dev" and "check" in argv else 0

    monkeypatch.setattr(render_cli, "main", main)
    shared = renders.Renders(lambda name: tmp_path / name)
    # WHEN prod is asked for with and without --lock check, in either order
    assert shared.run("prod") == shared.run("prod", "--lock", "check")
    # THEN one render ran (the check), and its output is what both read
    assert calls == [["--lock", "check"]]
    assert shared.printed("prod") == shared.printed("prod", "--lock", "check") == ("out prod check\n", "err prod\n")
    # AND a failing check (a stale lock) is not handed out for a use render: that renders as asked
    out, code = shared.run("dev")
    assert code == 0 and calls[1:] == [["--lock", "check"], []]
    assert shared.printed("dev") == ("out dev " + str(out) + "\n", "err dev\n")
