"""``ekstrain.lock.json``: the answers of the render's slowest check, kept with the project like a lockfile.

The no-op values check (infra/verify/charts.py ``noop_leaves``) renders each Helm release once per values key the
stack sets: about 340 ``helm template`` runs for prod, most of a cold render. Its answer is a function of content
only (chart archive bytes, helm version, release name and namespace, values, Kubernetes version, API versions;
``charts.noop_key``), so a project can keep it next to its stack files and commit it. A fresh clone then
renders without those runs; a release whose values, chart or helm changed has another key and is checked again.

Modes (``ekstrain render --lock``):

- ``use`` (default): an answer the lock holds for a key is taken; the rest are computed and the render says how
  many (``--lock write`` records them).
- ``check``: every answer is computed; the render fails when this stack's entries differ from them (CI: a
  committed lock that went stale, or an answer recorded by hand, fails the build).
- ``write``: every answer is computed (a wrong recorded one is replaced, never kept), then this stack's entries
  are replaced by this render's answers (other stacks' kept).
- ``ignore``: every answer is computed; the file is not read.

Entries are grouped by stack so that ``write`` drops the keys a stack no longer has; a lookup accepts any
stack's entry with the same key (the key is content).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ekstrain import inputs_guard, outputs
from ekstrain.paths import project_dir

LOCK_NAME = "ekstrain.lock.json"
FORMAT = "ekstrain-lock-v1"
MODES = ("use", "check", "write", "ignore")
DEFAULT_MODE = "use"
MAX_BYTES = 64 * 1024 * 1024  # prod's lock is about 100 KiB; a file past this is not one


class LockError(ValueError):
    """The lock file cannot be used: says which file and what to do."""


@dataclass(frozen=True)
class Entry:
    """One release's answer: the no-op values keys (dotted), plus what the key was made of, for a reviewer."""

    release: str
    chart: str
    noop: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"release": self.release, "chart": self.chart, "noop": list(self.noop)}


@dataclass
class Lock:
    path: pathlib.Path
    stacks: dict[str, dict[str, Entry]] = field(default_factory=dict)
    changed: frozenset[str] = frozenset()
    """The stacks :meth:`with_stack` replaced: what :meth:`save` writes over the file as it is then."""

    def answer(self, key: str) -> tuple[str, ...] | None:
        for entries in self.stacks.values():
            if key in entries:
                return entries[key].noop
        return None

    def differences(self, stack: str, answers: dict[str, Entry]) -> list[str]:
        """How this stack's recorded entries differ from ``answers`` (empty: the lock is current)."""
        recorded = self.stacks.get(stack, {})
        out = []
        for key, entry in sorted(answers.items(), key=lambda kv: kv[1].release):
            if key not in recorded:
                out.append(f"{entry.release} ({entry.chart}): not recorded for these values")
            elif recorded[key].noop != entry.noop:
                out.append(f"{entry.release}: recorded {list(recorded[key].noop)}, computed {list(entry.noop)}")
        for key, entry in sorted(recorded.items(), key=lambda kv: kv[1].release):
            if key not in answers:
                out.append(f"{entry.release} ({entry.chart}): recorded for values this stack no longer has")
        return out

    def with_stack(self, stack: str, answers: dict[str, Entry]) -> Lock:
        return Lock(self.path, {**self.stacks, stack: dict(answers)}, self.changed | {stack})

    def text(self) -> str:
        body = {
            "format": FORMAT,
            "about": (
                "Answers of `ekstrain render`'s no-op values check, keyed by content (ekstrain/lock.py). Commit it; "
                "refresh with `make lock` (ekstrain render --stack S --lock write); CI runs --lock check."
            ),
            "stacks": {
                stack: {k: e.as_json() for k, e in sorted(entries.items(), key=lambda ke: (ke[1].release, ke[0]))}
                for stack, entries in sorted(self.stacks.items())
            },
        }
        return json.dumps(body, indent=1, sort_keys=False) + "\n"

    def save(self) -> Lock:
        """Write this lock's changed stacks into the file, keeping every other stack's entries as the file holds
        them now: two `--lock write` renders of different stacks at once both land. Under an exclusive
        ``flock(2)`` on the lock file's directory (the file itself is replaced, so its inode cannot carry the
        lock), re-read, merged, then written through the write guard (ekstrain/outputs.py: a file beside it,
        then a rename, so a reader never sees half a file). Returns what was written."""
        target = writable(self.path)
        with _directory_lock(target.parent):
            try:
                current = load(target) if self.changed else Lock(self.path)
            except LockError:  # damaged since the render read it: --lock write records this render's view
                current = Lock(self.path, {s: e for s, e in self.stacks.items()})
            merged = Lock(self.path, {**current.stacks, **{s: self.stacks[s] for s in self.changed}})
            if not self.changed:
                merged.stacks = dict(self.stacks)
            outputs.write_file("--lock write", target, merged.text())
        return merged


@contextlib.contextmanager
def _directory_lock(directory: pathlib.Path) -> Iterator[None]:
    """An exclusive flock on ``directory`` while the block runs (a no-op where flock is missing)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: a single writer is assumed
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 section 6)")


def writable(path: pathlib.Path) -> pathlib.Path:
    """``path`` resolved, when ``--lock write`` may replace it (a file, not a directory; ekstrain/outputs.py)."""
    return outputs.check_file("--lock write", path, make_parents=False)


def lock_path() -> pathlib.Path:
    """The project's lock file (the stack file's Pulumi project, else the working directory)."""
    return project_dir() / LOCK_NAME


def load(path: pathlib.Path | None = None) -> Lock:
    """The lock at ``path`` (default :func:`lock_path`); an absent file is an empty lock."""
    path = path or lock_path()
    if not path.exists():
        return Lock(path)
    fix = f"delete {path} and run `make lock` (ekstrain render --stack <stack> --lock write) to record it again"
    try:  # a regular file, bounded (ekstrain/inputs_guard.py): a FIFO in its place would block the render
        body = json.loads(inputs_guard.read_text(path, MAX_BYTES), parse_constant=_refuse_constant)
    except inputs_guard.NotARegularFile as exc:
        raise LockError(
            f"{path} {exc.strerror}: --lock reads it; fix: replace it with the committed {LOCK_NAME}, or render "
            "with --lock ignore"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LockError(f"{path}: not readable as JSON ({exc}): {fix}") from None
    except RecursionError:  # json's decoder recurses per nesting level; the lock nests 5 deep
        raise LockError(
            f"{path}: nested deeper than Python's JSON reader can follow (a lock nests 5 deep): {fix}"
        ) from None
    except ValueError as exc:  # NaN/Infinity; an integer past int_max_str_digits
        raise LockError(f"{path}: not an {FORMAT} file ({str(exc).splitlines()[0][:120]}): {fix}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT or not isinstance(body.get("stacks"), dict):
        raise LockError(f"{path}: not an {FORMAT} file (its 'format' and 'stacks' keys): {fix}")
    stacks: dict[str, dict[str, Entry]] = {}
    for stack, entries in body["stacks"].items():
        if not isinstance(entries, dict):
            raise LockError(f"{path}: stacks.{stack} is not a mapping of key -> entry: {fix}")
        stacks[stack] = {}
        for key, entry in entries.items():
            noop = entry.get("noop") if isinstance(entry, dict) else None
            if not isinstance(noop, list) or not all(isinstance(k, str) for k in noop):
                raise LockError(f"{path}: stacks.{stack}.{key}.noop is not a list of values keys: {fix}")
            stacks[stack][key] = Entry(str(entry.get("release", "")), str(entry.get("chart", "")), tuple(noop))
    return Lock(path, stacks)
