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
import hashlib
import json
import os
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ekstrain.files import inputs_guard, outputs
from ekstrain.files.paths import EXAMPLE_STACKS, in_checkout, project_dir

LOCK_NAME = "ekstrain.lock.json"
FORMAT = "ekstrain-lock-v1"
MODES = ("use", "check", "write", "ignore")
DEFAULT_MODE = "use"
SHIPPED = EXAMPLE_STACKS / LOCK_NAME
"""The example stacks' lock (package data): the answers are keyed by content, so they hold in any project."""
MAX_BYTES = 64 * 1024 * 1024  # prod's lock is about 100 KiB; a file past this is not one


class LockError(ValueError):
    """The lock file cannot be used: says which file and what to do."""


@dataclass(frozen=True)
class Entry:
    """One release's answer: the no-op values keys (dotted), plus what the key was made of, for a reviewer and for
    the answers a values edit can keep (:meth:`Lock.derivable`):

    - ``tools``: the chart's files and helm's version (``charts.noop_key`` of the chart alone): when these differ
      from every recorded entry of the release, a chart or helm changed (``--lock check`` fails);
    - ``basis``: everything but the values (chart, helm, release name and namespace, Kubernetes and API versions);
    - ``rest``: the values with their sizes and counts blanked (:func:`values_shape`);
    - ``sizes``: each size or count leaf (dotted key) -> its value as JSON.
    """

    release: str
    chart: str
    noop: tuple[str, ...]
    tools: str = ""
    basis: str = ""
    rest: str = ""
    sizes: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"release": self.release, "chart": self.chart, "noop": list(self.noop)}
        if self.tools:
            body |= {"tools": self.tools, "basis": self.basis, "rest": self.rest, "sizes": dict(self.sizes)}
        return body


# A size or count: a number, or a string of a number and a unit (Kubernetes quantities "500Gi", "250m",
# Prometheus's "85GiB" and "15d", Slurm's "MaxNodes: '16'").
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([A-Za-z]{0,3})")


_NUMBERS = re.compile(r"\d+")


def _size_kind(value: Any) -> tuple[str, str, bool] | None:
    """(JSON type, unit, nonzero) of a size or count value; None: not one. A configuration file carried as a
    multi-line string (Slurm's topology.conf, its node range ``gpu-a100-[0-15]`` sized by maxNodes) is one when it
    holds numbers: its kind is its text with every number blanked, so two such files are of a kind only when they
    differ in numbers alone."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    if isinstance(value, str):
        m = _SIZE.fullmatch(value)
        if m:
            return ("str", m.group(2), float(m.group(1)) != 0)
        if "\n" in value and _NUMBERS.search(value):
            return ("text", _NUMBERS.sub("#", value), True)
        return None
    return ("num", "", value != 0)


def size_key(path: tuple[str, ...]) -> str:
    """A leaf's key path as one dotted string; a "." inside a key (``configFiles."topology.conf"``) is escaped."""
    return ".".join(k.replace("\\", "\\\\").replace(".", "\\.") for k in path)


def size_path(key: str) -> tuple[str, ...]:
    """The inverse of :func:`size_key`."""
    parts, part, escaped = [], "", False
    for ch in key:
        if escaped:
            part, escaped = part + ch, False
        elif ch == "\\":
            escaped = True
        elif ch == ".":
            parts.append(part)
            part = ""
        else:
            part += ch
    return (*parts, part)


def values_shape(values: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(digest of ``values`` with every size or count leaf blanked, the sizes as (key, JSON value)); the key is the
    leaf's path as :func:`size_key` writes it."""
    sizes: list[tuple[str, str]] = []

    def blank(node: Any, path: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            return {k: blank(v, (*path, str(k))) for k, v in node.items()}
        if path and _size_kind(node) is not None:
            sizes.append((size_key(path), json.dumps(node)))
            return "<size>"
        return node

    rest = json.dumps(blank(values, ()), sort_keys=True, default=str)
    return hashlib.sha256(rest.encode()).hexdigest()[:40], tuple(sorted(sizes))


def same_kind_of_size(old: str, new: str) -> bool:
    """Whether two sizes (JSON) are the same kind: the same type and unit, both zero or both not (a chart that
    tests a count for zero, or truthiness, renders the same branch for both)."""
    a, b = _size_kind(json.loads(old)), _size_kind(json.loads(new))
    return a is not None and a == b


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
            elif recorded[key] != entry:
                out.append(f"{entry.release}: recorded without what its key is made of (tools, sizes)")
        for key, entry in sorted(recorded.items(), key=lambda kv: kv[1].release):
            if key not in answers:
                out.append(f"{entry.release} ({entry.chart}): recorded for values this stack no longer has")
        return out

    def derivable(self, entry: Entry) -> tuple[Entry, list[str]] | None:
        """For a release the lock has no answer for: (a recorded entry of the same release, the size keys whose
        value differs) when an entry differs from ``entry`` only in sizes or counts of the same kind
        (:func:`same_kind_of_size`): the same chart, helm, name, namespace, Kubernetes and API versions, and every
        other value. Of several, the one with the fewest changed sizes; None: no such entry."""
        if not entry.tools:
            return None
        best: tuple[Entry, list[str]] | None = None
        sizes = dict(entry.sizes)
        for entries in self.stacks.values():
            for old in entries.values():
                if (old.release, old.basis, old.rest) != (entry.release, entry.basis, entry.rest):
                    continue
                before = dict(old.sizes)
                if set(before) != set(sizes):
                    continue
                changed = sorted(k for k in sizes if before[k] != sizes[k])
                if (
                    changed
                    and all(same_kind_of_size(before[k], sizes[k]) for k in changed)
                    and (best is None or len(changed) < len(best[1]))
                ):
                    best = (old, changed)
        return best

    def with_stack(self, stack: str, answers: dict[str, Entry]) -> Lock:
        return Lock(self.path, {**self.stacks, stack: dict(answers)}, self.changed | {stack})

    def text(self) -> str:
        body = {
            "format": FORMAT,
            "about": (
                "Answers of `ekstrain render`'s no-op values check, keyed by content "
                "(ekstrain/tooling/lock.py). Commit it; "
                "refresh with `ekstrain render --stack S --lock write`; CI runs --lock check, which fails only when "
                "a chart, helm or the check changed (a stack's values edit is computed and said)."
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
        lock), re-read, merged, then written through the write guard (ekstrain/files/outputs.py: a file beside it,
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
    """``path`` resolved, when ``--lock write`` may replace it (a file, not a directory; ekstrain/files/outputs.py)."""
    return outputs.check_file("--lock write", path, make_parents=False)


def lock_path() -> pathlib.Path:
    """The project's lock file (the stack file's Pulumi project, else the working directory)."""
    return project_dir() / LOCK_NAME


def write_command(stack: str = "<stack>") -> str:
    """The command that records a stack's answers, as the user can run it: ``ekstrain render ... --lock write``
    (every install has it), and ``make lock`` beside it only when this package runs from a checkout (a wheel
    user has no Makefile)."""
    return f"`ekstrain render --stack {stack} --lock write`" + in_checkout(
        "make lock" if stack == "<stack>" else f"make lock STACK={stack}"
    )


def load(path: pathlib.Path | None = None) -> Lock:
    """The lock at ``path`` (default :func:`lock_path`; a project without one starts from the answers shipped with
    the example stacks, :data:`SHIPPED`, and writes its own); an absent file is an empty lock."""
    if path is None:
        path = lock_path()
        if not path.exists() and SHIPPED.is_file() and SHIPPED.resolve() != path.resolve():
            return Lock(path, load(SHIPPED).stacks)
    if not path.exists():
        return Lock(path)
    fix = f"delete {path} and run {write_command()} to record it again"
    try:  # a regular file, bounded (ekstrain/files/inputs_guard.py): a FIFO in its place would block the render
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
            made_of = {k: entry.get(k, "") for k in ("tools", "basis", "rest")}
            sizes = entry.get("sizes", {})
            if not all(isinstance(v, str) for v in made_of.values()) or not (
                isinstance(sizes, dict) and all(isinstance(v, str) for v in sizes.values())
            ):
                raise LockError(f"{path}: stacks.{stack}.{key}: tools, basis, rest or sizes is not text: {fix}")
            stacks[stack][key] = Entry(
                str(entry.get("release", "")),
                str(entry.get("chart", "")),
                tuple(noop),
                **made_of,
                sizes=tuple(sorted(sizes.items())),
            )
    return Lock(path, stacks)
