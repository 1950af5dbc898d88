"""One render per stack per test session, shared by every test that reads a shipped stack's render.

A render of a shipped stack is the same files whichever test asks (infra/replay.py keys it by what it reads), so
the session renders each (stack, flags) once and hands every test the same directory, read-only; a test that adds
files to it (simulate renders more charts into it) takes ``copy``. Across pytest-xdist workers the replay store
is what they share: ``serialise_renders`` makes a render wait while another process renders the same inputs, then
replay it, instead of both missing the store and rendering twice (each worker starts with the costliest tests).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import pathlib
import shutil
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from ekstrain.cli import render as render_cli
from ekstrain.infra import offline, render, replay
from ekstrain.stacks.loader import read_stack_file
from ekstrain.tooling import lock, validation

REPO = pathlib.Path(__file__).resolve().parent.parent.parent


@contextlib.contextmanager
def held(name: str) -> Iterator[None]:
    """An exclusive lock (flock) named ``name`` in the render cache, shared by every process of the session."""
    path = validation.cache_root() / "test-locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def serialise_renders() -> None:
    """Wrap ``render.render_or_replay`` (what ``ekstrain render`` calls) so that two renders of the same replay key
    run one after the other: the second replays the first's stored render. Renders with replays off (tests that
    patch a check) are left alone. Idempotent."""
    real = render.render_or_replay
    if getattr(real, "serialised", False):
        return

    def render_or_replay(stack_file: pathlib.Path, stack: str, preview: bool, *args: Any, **kwargs: Any) -> Any:
        if not replay.enabled():
            return real(stack_file, stack, preview, *args, **kwargs)
        mode = kwargs.get("lock_mode", args[6] if len(args) > 6 else lock.DEFAULT_MODE)
        with held(f"render-{replay.key(stack, stack_file, preview, mode)}"):
            return real(stack_file, stack, preview, *args, **kwargs)

    render_or_replay.serialised = True  # type: ignore[attr-defined]
    render.render_or_replay = render_or_replay  # type: ignore[assignment]


class Renders:
    """The session's renders of shipped stacks, by (stack, extra flags)."""

    def __init__(self, root: Callable[[str], pathlib.Path]) -> None:
        self._root = root
        self._done: dict[tuple[str, tuple[str, ...]], tuple[pathlib.Path, int]] = {}
        self._printed: dict[tuple[str, tuple[str, ...]], tuple[str, str]] = {}
        self._programs: dict[str, offline.Recording] = {}

    def run(self, stack: str, *flags: str) -> tuple[pathlib.Path, int]:
        """The output directory of ``ekstrain render --stack STACK FLAGS`` of the shipped stack file, and its exit
        code (rendered on first use).

        Without a ``--lock`` flag it is the ``--lock check`` render when that passes: the same files as the default
        ``--lock use`` (they share a stored render, infra/replay.py), and the render tests/infra/test_render.py asserts
        on anyway, so the session renders each stack once whichever test asks first (a use render first would be
        a second render: a check never takes a use render's stored result). Only a failing check (a stale lock)
        renders with ``--lock use`` as asked."""
        if not any(f == "--lock" or f.startswith("--lock=") for f in flags):
            checked = self.run(stack, *flags, "--lock", "check")
            if checked[1] == 0:
                self._printed[(stack, tuple(flags))] = self._printed[(stack, (*flags, "--lock", "check"))]
                return checked
        key = (stack, tuple(flags))
        if key not in self._done:
            out = self._root(f"render-{stack}") / stack
            argv = ["--stack", stack, "--stack-file", str(REPO / f"Pulumi.{stack}.yaml"), "--out", str(out), *flags]
            stdout, stderr = io.StringIO(), io.StringIO()
            # Pulumi reads the source of every frame on the stack as it registers a resource (pulumi/runtime/
            # resource.py: traceback.extract_stack), and the stored render records each file opened while it runs:
            # read this test's and pytest's frames now (linecache keeps them), so that the stored render names none
            # and a render from another caller (a subprocess in another project) replays it too.
            traceback.extract_stack()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), self._keep_program(stack):
                code = render_cli.main(argv)
            self._done[key] = (out, code)
            self._printed[key] = (stdout.getvalue(), stderr.getvalue())
        return self._done[key]

    def printed(self, stack: str, *flags: str) -> tuple[str, str]:
        """What that render printed: its stdout and stderr (rendered on first use)."""
        self.run(stack, *flags)
        return self._printed[(stack, tuple(flags))]

    def __call__(self, stack: str, *flags: str) -> pathlib.Path:
        """The render's directory; the render passed every check. Read it, never write into it."""
        out, code = self.run(stack, *flags)
        assert code == 0, (out / "SUMMARY.md").read_text() if (out / "SUMMARY.md").exists() else code
        return out

    def copy(self, stack: str, dest: pathlib.Path, *flags: str) -> pathlib.Path:
        """A copy of the render at ``dest``, for a test that writes into it."""
        shutil.copytree(self(stack, *flags), dest)
        return dest

    @contextlib.contextmanager
    def _keep_program(self, stack: str) -> Iterator[None]:
        """Within the block, the shipped stack file's program run by the render (not in preview) is kept as
        :meth:`program`'s: the same call :meth:`program` would make (the render reads the same file; the
        ``--lock`` flags change no input of the program), so the session runs it once, not once more. A replayed
        render runs no program: then :meth:`program` runs it."""
        real = render.run_program
        flat, secrets = read_stack_file(REPO / f"Pulumi.{stack}.yaml")

        def run_program(
            given: dict[str, str], given_secrets: list[str], name: str, preview: bool = False
        ) -> offline.Recording:
            rec = real(given, given_secrets, name, preview=preview)
            if (given, sorted(given_secrets), name, preview) == (flat, sorted(secrets), stack, False):
                self._programs.setdefault(stack, rec)
            return rec

        render.run_program = run_program  # type: ignore[assignment]
        try:
            yield
        finally:
            render.run_program = real  # type: ignore[assignment]

    def program(self, stack: str) -> offline.Recording:
        """The shipped stack file's program as the render runs it (infra/__main__.py under fresh offline mocks),
        run once for the session (the session's render's run when it ran one): read it, never mutate it."""
        if stack not in self._programs:
            flat, secrets = read_stack_file(REPO / f"Pulumi.{stack}.yaml")
            self._programs[stack] = render.run_program(flat, secrets, stack)
        return self._programs[stack]


@contextlib.contextmanager
def programs_run_once() -> Iterator[None]:
    """Within the block, the render runs its program once per (stack config, secrets, stack, preview) and every later
    render of the same config is handed that recording: for tests that render one stack many times with replays off
    because they patch a check (the lock's no-op answers), not the program. The program is deterministic."""
    real = render.run_program
    ran: dict[str, offline.Recording] = {}

    def run_program(flat: dict[str, str], secrets: list[str], stack: str, preview: bool = False) -> offline.Recording:
        key = json.dumps([flat, sorted(secrets), stack, preview], sort_keys=True, default=str)
        if key not in ran:
            ran[key] = real(flat, secrets, stack, preview=preview)
        return ran[key]

    render.run_program = run_program  # type: ignore[assignment]
    try:
        yield
    finally:
        render.run_program = real  # type: ignore[assignment]
