"""Replay a whole offline render when nothing it reads has changed: a warm `make render` in about a second.

A render is a function of: the stack file, the stack name, --preview and --lock (use and check share an entry),
today's date (version-window and AMI age rules), the interpreter and the installed distributions, the
``EKSTRAIN_*`` environment, this package's files, the upstream schemas and chart archives (every file, by
content), the helm binary (by content) and any other file the run opened (an SSH key file next to the stack
file, ekstrain.lock.json). The first six and the helm, package and upstream content make the key (``key``); the
files opened besides are recorded while the render runs (``Reads``, an audit hook) and their content is compared
before a replay. Nothing in the key or the record is an absolute path inside
the checkout or an mtime, so a copied or moved checkout with its build/.cache replays too.

The entry holds every file written under the output directory (each with its sha256), the summary and the
problems, as JSON with a content hash (ekstrain/tooling/validation.py ``cached``: nothing read from the cache can run
code): a replay writes the same tree and exits the same way, and an entry that does not match its hashes is
rendered again with one warning line. ``EKSTRAIN_REPLAY=0`` turns it off (the tests do: they patch the checks).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import pathlib
import sys
import sysconfig
import threading
from dataclasses import dataclass, field
from typing import Any

from ekstrain.files import outputs
from ekstrain.files.paths import project_dir
from ekstrain.tooling import helm, validation

REPO = pathlib.Path(__file__).resolve().parent.parent
FORMAT = "render-replay-v1"
# What the key hashes whole: the package (its symlinked directories included), the policy pack, the IAM accept list.
SOURCE_DIRS = ("ekstrain", "policy", "security")
# Variables naming a place, whose content the key holds (or that holds no input): not keyed by their value.
BY_CONTENT = {"EKSTRAIN_CACHE_DIR", "EKSTRAIN_UPSTREAM_DIR", helm.HELM_ENV}


REPLAY_ENV = "EKSTRAIN_REPLAY"
"""Turns replays off (``0``); a switch of the store, not an input of the render: left out of the key, so a render
with it unset and one with it at ``1`` share an entry."""


def enabled() -> bool:
    return os.environ.get(REPLAY_ENV, "1") != "0"


def _tree_digest(root: pathlib.Path) -> str:
    """Content of every file below ``root`` (symlinked directories followed), by path relative to it."""
    digest = hashlib.sha256()
    if root.is_dir():
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                path = pathlib.Path(dirpath) / name
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _distributions() -> list[str]:
    """Names of the installed distributions' metadata directories (name and version) in the environment's
    site-packages (not sys.path: the program puts the checkout on it while it runs)."""
    found: set[str] = set()
    for entry in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}:
        if entry and os.path.isdir(entry):
            found |= {n for n in os.listdir(entry) if n.endswith((".dist-info", ".egg-info"))}
    return sorted(found)


# --lock use and --lock check write the same files when the lock is current (check only computes the answers the
# lock holds): they share an entry, which says whether it was checked (``load``'s ``checked``).
LOCK_KEY = {"use": "lock", "check": "lock", "write": "write", "ignore": "ignore"}


def key(stack: str, stack_file: pathlib.Path, preview: bool, lock_mode: str = "use") -> str:
    upstream = validation.upstream_dir()
    helm_path = helm.helm_binary()
    parts: list[Any] = [
        FORMAT,
        stack,
        preview,
        LOCK_KEY[lock_mode],
        hashlib.sha256(stack_file.read_bytes()).hexdigest(),
        dt.date.today().isoformat(),
        dt.datetime.now(dt.timezone.utc).date().isoformat(),
        sys.version,
        _distributions(),
        sorted(
            (k, v)
            for k, v in os.environ.items()
            if k.startswith("EKSTRAIN_") and k not in BY_CONTENT and k != REPLAY_ENV
        ),
        [_tree_digest(REPO / d) for d in SOURCE_DIRS],
        _tree_digest(upstream) if upstream else None,
        _helm_digest(helm_path),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:40]


def _helm_digest(path: str | None) -> str | None:
    from ekstrain.infra.verify.charts import content_digest

    return content_digest(path) if path and os.path.exists(path) else None


@dataclass
class Reads:
    """Files the render opened outside what the key covers (recorded by an audit hook while it runs)."""

    skip: list[str]
    seen: set[str] = field(default_factory=set)
    active: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def skips(self, path: str) -> bool:
        """Whether ``path`` is one of ``skip`` or below one (by whole path components: ``<checkout>/ekstrain``
        covers ``ekstrain/x.py``, not ``ekstrain.lock.json`` beside it)."""
        return any(path == s or path.startswith(s if s.endswith(os.sep) else s + os.sep) for s in self.skip)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or event != "open" or not args or not isinstance(args[0], str | pathlib.Path):
            return
        path = os.path.abspath(os.fspath(args[0]))
        if not self.skips(path):
            with self.lock:
                self.seen.add(path)


_READS: Reads | None = None


def start(out: pathlib.Path) -> Reads:
    """Record the files opened from now on (one audit hook per process: hooks cannot be removed)."""
    global _READS
    upstream = validation.upstream_dir()
    skip = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        *(str(REPO / d) for d in SOURCE_DIRS),
        *(str(p) for p in (REPO / d for d in SOURCE_DIRS) if p.is_symlink()),
        str(validation.cache_root().resolve()),
        str(validation.cache_root()),
        str(out.resolve()),
        "/proc/",
        "/dev/",
        "/sys/",
    ]
    skip += [str((REPO / "ekstrain" / d).resolve()) for d in ("components", "infra", "stacks", "assembly")]
    if upstream:
        skip += [str(upstream), str(upstream.resolve())]
    helm_path = helm.helm_binary()
    if helm_path:
        skip.append(os.path.abspath(helm_path))
    if _READS is None:
        _READS = Reads(skip)
        sys.addaudithook(_READS.hook)
    _READS.skip, _READS.seen, _READS.active = skip, set(), True
    return _READS


def _name(path: str) -> str:
    """A read file as recorded: relative to the project being rendered when inside it (its lock file, a key file
    next to its stack file: another project with the same stack file reads its own), else relative to the
    checkout (a copied checkout reads its own), else the path."""
    for prefix, root in (("project:", project_dir().absolute()), ("checkout:", REPO)):
        try:
            return prefix + str(pathlib.Path(path).relative_to(root))
        except ValueError:
            continue
    return path


def _resolve(name: str) -> pathlib.Path:
    if name.startswith("project:"):
        return project_dir().absolute() / name.removeprefix("project:")
    return REPO / name.removeprefix("checkout:") if name.startswith("checkout:") else pathlib.Path(name)


def _file_digest(path: pathlib.Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    except OSError:
        return None


def _entry(cache_key: str) -> pathlib.Path:
    return validation.cache_dir() / "render" / f"{cache_key}{validation.CACHE_SUFFIX}"


@dataclass
class Replayed:
    summary: str
    problems: list[str]
    resources: int
    seconds: float


def _checked_entry(entry: Any) -> str | None:
    """Why ``entry`` (read from the cache, JSON) is not a render entry of the shape :func:`save` writes; None: it
    is, and every file's bytes match the sha256 recorded beside them."""
    shapes: dict[str, type | tuple[type, ...]] = {
        "reads": list,
        "files": dict,
        "summary": str,
        "problems": list,
        "resources": int,
        "seconds": (int, float),
        "checked": bool,
    }
    if not isinstance(entry, dict) or any(not isinstance(entry.get(k), t) for k, t in shapes.items()):
        return "not a render entry"
    if not all(isinstance(p, str) for p in entry["problems"]):
        return "a problem that is not a string"
    for read in entry["reads"]:
        if not (isinstance(read, list) and len(read) == 2 and isinstance(read[0], str)):
            return "a damaged list of files read"
        if not (read[1] is None or isinstance(read[1], str)):
            return "a damaged list of files read"
    for rel, item in entry["files"].items():
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], bytes)):
            return f"a damaged file {rel[:80]!r}"
        if hashlib.sha256(item[1]).hexdigest() != item[0]:
            return f"{rel[:80]!r} does not match its recorded sha256"
    return None


def load(cache_key: str, out: pathlib.Path, checked: bool = False) -> Replayed | None:
    """Write the stored render into ``out`` when an entry for ``cache_key`` exists and every file it read besides
    is unchanged; None otherwise (render for real). ``checked``: only an entry whose render computed every no-op
    answer and found the lock current (``--lock check``) will do. The entry is JSON (never code), checked
    against its recorded sha256 and its shape before anything is written: a damaged one is rendered again, with
    one warning line."""
    path = _entry(cache_key)
    try:
        entry = validation.read_entry(path, cache_key)
        why = _checked_entry(entry)
    except FileNotFoundError:
        return None
    except validation.DamagedEntry as exc:
        why = str(exc)
    except OSError as exc:
        why = exc.strerror or str(exc)
    if why is not None:
        validation.warn_damaged(path, why)
        return None
    if checked and not entry["checked"]:
        return None
    if any(_file_digest(_resolve(name)) != digest for name, digest in entry["reads"]):
        return None
    try:  # an entry naming a path outside the output is no render of ours: render for real
        files = [(outputs.inside(out, rel), data) for rel, (_, data) in entry["files"].items()]
    except outputs.OutputRefused:
        validation.warn_damaged(path, "a file outside the output")
        return None
    for target, data in files:  # out: a new, empty directory (ekstrain/files/outputs.py replace_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return Replayed(entry["summary"], entry["problems"], entry["resources"], float(entry["seconds"]))


def save(
    cache_key: str,
    reads: Reads,
    out: pathlib.Path,
    summary: str,
    problems: list[str],
    resources: int,
    seconds: float,
    checked: bool = False,
) -> None:
    """Store the render just written to ``out``; ``checked``: it ran --lock check and the lock was current."""
    reads.active = False
    names = sorted({_name(p) for p in reads.seen if os.path.isfile(p)})
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            files[str(p.relative_to(out))] = [hashlib.sha256(data).hexdigest(), data]
    entry = {
        "reads": [[name, _file_digest(_resolve(name))] for name in names],
        "files": files,
        "summary": summary,
        "problems": problems,
        "resources": resources,
        "seconds": seconds,
        "checked": checked,
    }
    validation.store_entry(_entry(cache_key), cache_key, entry)  # a read-only checkout renders every time
