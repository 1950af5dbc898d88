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


def test_the_program_a_render_ran_is_the_sessions_program(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN render_cli.main replaced by one that runs the program as the render does (the shipped stack file; a
    # preview run and another config first), and run_program by a recorder
    from ekstrain.cli import render as render_cli
    from ekstrain.stacks.loader import read_stack_file

    ran: list[tuple[str, bool, str]] = []

    def run_program(flat: dict[str, str], secrets: list[str], stack: str, preview: bool = False) -> Any:
        ran.append((stack, preview, flat.get("marker", "")))
        return f"recording {len(ran)}"

    monkeypatch.setattr(render, "run_program", run_program)

    def main(argv: list[str]) -> int:
        stack = argv[argv.index("--stack") + 1]
        flat, secrets = read_stack_file(renders.REPO / f"Pulumi.{stack}.yaml")
        render.run_program(flat, secrets, stack, preview=True)
        render.run_program({**flat, "marker": "edited"}, secrets, stack)
        render.run_program(flat, secrets, stack)
        return 0

    monkeypatch.setattr(render_cli, "main", main)
    shared = renders.Renders(lambda name: tmp_path / name)
    # WHEN dev renders, then its program is asked for
    shared.run("dev")
    # THEN it is the render's run of the shipped file (not the preview or the edited one), and nothing ran again
    assert shared.program("dev") == "recording 3"
    assert ran == [("dev", True, ""), ("dev", False, "edited"), ("dev", False, "")]
    # AND outside a render the wrapper is gone; a stack whose render ran no program (replayed) runs it when asked
    assert render.run_program is run_program
    monkeypatch.setattr(render_cli, "main", lambda argv: 0)
    shared.run("prod")
    assert shared.program("prod") == "recording 4" and ran[-1] == ("prod", False, "")
