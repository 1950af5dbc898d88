"""The write guard: what a command may write, and how it replaces an output it wrote before.

Every command that writes (``render --out DIR``, ``diff --out FILE``, ``job render --out FILE``, ``plan ... --out
FILE``) resolves its target first, symlinks included, and refuses one that is, or contains, a directory the user
keeps: the Pulumi project, the stack file's directory, the working directory, the home directory, this checkout or
``/``. A directory output is replaced only when it carries :data:`MARKER` (written by the render itself, listing
every file it wrote) and holds nothing else; the new output is built beside it and swapped in, so a failed render
leaves the last good one and no file the render did not write is ever removed.

A file output (``--out FILE``) is written beside its target and renamed over it; a command writing several files
writes all of them or none (:func:`write_files`). Its directory may be new, as a directory output's may: the
missing directories are created and named on stderr (``note: --out: created directory ...``), never silently.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import TypeVar

from ekstrain.files.paths import PACKAGE

MARKER = ".ekstrain-output"
"""File at the top of every directory output: JSON ``{"by": command, "files": [relative paths]}``."""

_T = TypeVar("_T")


class OutputRefused(ValueError):
    """One line: the flag, the path, why it is refused and the fix."""


def _resolved(path: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(os.path.abspath(path.expanduser() if str(path).startswith("~") else path)).resolve()


def kept_dirs(*extra: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """The directories no output may be or contain, with what each is (for the message)."""
    dirs = [("the working directory", pathlib.Path.cwd()), ("the home directory", pathlib.Path.home())]
    checkout = PACKAGE.parent
    if (checkout / ".git").exists() or (checkout / "pyproject.toml").exists():
        dirs.append(("the ekstrain checkout", checkout))
    dirs += [("the stack file's directory" if i == 0 else "the Pulumi project", p) for i, p in enumerate(extra)]
    dirs.append(("the root directory", pathlib.Path("/")))
    return [(what, _resolved(p)) for what, p in dirs]


def _shown(path: pathlib.Path, target: pathlib.Path) -> str:
    """``path`` as given, and what it resolves to when that differs."""
    given = str(path)[:120]
    return repr(given) if str(target) in (given, os.path.abspath(given)) else f"{given!r} ({target})"


def _written(directory: pathlib.Path) -> set[str] | None:
    """The files the marker of ``directory`` lists; None when it has no readable marker."""
    try:
        doc = json.loads((directory / MARKER).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    files = doc.get("files") if isinstance(doc, dict) else None
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else None


def _files(directory: pathlib.Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file() or p.is_symlink()}


def check_dir(flag: str, path: pathlib.Path, kept: Iterable[tuple[str, pathlib.Path]]) -> pathlib.Path:
    """The resolved directory ``path`` names, when a command may (re)place it; else :class:`OutputRefused`."""
    try:
        target = _resolved(path)
    except (OSError, RuntimeError) as exc:  # a loop of symlinks, a name too long
        raise OutputRefused(f"{flag} {str(path)[:120]!r}: unusable path ({exc}); name a new directory") from None
    kept = sorted(kept, key=lambda k: k[1] != target)  # "is X" before "contains Y"
    for what, directory in kept:
        if target == directory or directory.is_relative_to(target):
            same = "is" if target == directory else "contains"
            raise OutputRefused(
                f"{flag} {str(path)[:120]!r} resolves to {target}, which {same} {what} ({directory}): the render "
                "replaces its output whole; fix: name a directory of its own, such as build/<stack>"
            )
    existing = next(a for a in (target, *target.parents) if a.exists() or a.is_symlink())
    if existing != target and not existing.is_dir():
        raise OutputRefused(
            f"{flag} {_shown(path, target)}: {existing} is a file, so no directory can be made there; "
            "fix: name a directory"
        )
    if existing == target:
        if not target.is_dir():
            raise OutputRefused(f"{flag} {str(path)[:120]!r} is a file, not a directory; fix: name a directory")
        present = _files(target)
        if present:
            written = _written(target)
            if written is None:
                older = {"SUMMARY.md", "resources.yaml"} <= present
                raise OutputRefused(
                    f"{flag} {_shown(path, target)} is a directory that no ekstrain render wrote (no {MARKER} in "
                    "it) and it is not empty: nothing in it is removed; fix: "
                    + (
                        f"it looks like the output of an ekstrain before the write guard: delete it once (rm -r "
                        f"{target}) and render again"
                        if older
                        else "name a new or empty directory, or delete this one yourself"
                    )
                )
            foreign = sorted(present - written - {MARKER})
            if foreign:
                shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
                raise OutputRefused(
                    f"{flag} {_shown(path, target)} holds files the render did not write ({shown}): the "
                    "render replaces its output whole; fix: move them out, or name another directory"
                )
    return target


def check_tree(
    flag: str, path: pathlib.Path, kept: Iterable[tuple[str, pathlib.Path]], own: Iterable[str]
) -> pathlib.Path:
    """The resolved directory ``path`` names, for a command that adds files under the top-level names ``own``
    (``fetch-upstream``: chart-src/, crds/, ...) and never removes one: not a kept directory nor one holding it,
    and, when it exists and is not empty, holding nothing but ``own``; else :class:`OutputRefused`."""
    try:
        target = _resolved(path)
    except (OSError, RuntimeError) as exc:
        raise OutputRefused(f"{flag} {str(path)[:120]!r}: unusable path ({exc}); name a new directory") from None
    for what, directory in sorted(kept, key=lambda k: k[1] != target):
        if target == directory or directory.is_relative_to(target):
            same = "is" if target == directory else "contains"
            raise OutputRefused(
                f"{flag} {str(path)[:120]!r} resolves to {target}, which {same} {what} ({directory}); fix: name a "
                "directory of its own, such as .upstream"
            )
    existing = next(a for a in (target, *target.parents) if a.exists() or a.is_symlink())
    if not existing.is_dir():
        raise OutputRefused(f"{flag} {_shown(path, target)}: {existing} is not a directory; fix: name a directory")
    if existing == target:
        foreign = sorted(p.name for p in target.iterdir() if p.name not in set(own) | {MARKER})
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise OutputRefused(
                f"{flag} {_shown(path, target)} holds files this command does not write ({shown}); fix: name a new "
                f"or empty directory, or one that holds only {', '.join(sorted(own))}"
            )
    return target


def inside(root: pathlib.Path, rel: str) -> pathlib.Path:
    """``root / rel`` when it stays under ``root`` (symlinks resolved); else :class:`OutputRefused` (a file list
    read from a cache or a pins file never names a path outside the output)."""
    path = root / rel
    if pathlib.PurePosixPath(rel).is_absolute() or not _resolved(path).is_relative_to(_resolved(root)):
        raise OutputRefused(f"{rel!r} lies outside {root}; fix: delete the file that lists it and run again")
    return path


def replace_dir(target: pathlib.Path, fill: Callable[[pathlib.Path], _T], by: str) -> _T:
    """``fill(staging)`` writes the new output into an empty directory beside ``target`` (checked by
    :func:`check_dir`); then it replaces ``target``. On any error the staging directory goes and ``target`` stays."""
    try:
        _make_parent(by, target)  # the output directory itself is new on a first render; a missing parent is said
        staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    except OSError as exc:
        raise OutputRefused(f"cannot create {target}: {exc.strerror or exc}; fix: name a writable directory") from None
    try:
        result = fill(staging)
        files = sorted(_files(staging) - {MARKER})
        (staging / MARKER).write_text(json.dumps({"by": by, "files": files}, indent=0) + "\n")
        os.chmod(staging, 0o777 & ~_umask())
        old = None
        if target.exists():
            old = target.parent / f"{staging.name.replace('.new-', '.old-', 1)}"
            os.rename(target, old)
        try:
            os.rename(staging, target)
        except OSError:
            if old is not None:
                os.rename(old, target)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if old is not None:
        left = _remove_written(old)
        if left:
            print(
                f"warning: {len(left)} file(s) appeared in {target} while it rendered ({', '.join(left[:5])}); "
                f"they are kept in {old}",
                file=sys.stderr,
            )
    return result


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def add_written(directory: pathlib.Path, files: Iterable[pathlib.Path]) -> None:
    """Record ``files``, written into the output ``directory`` after its render (``simulate`` adds chart renders),
    in its marker, so the next render may replace them."""
    written = _written(directory)
    if written is None:
        return
    doc = json.loads((directory / MARKER).read_text())
    doc["files"] = sorted(written | {p.relative_to(directory).as_posix() for p in files})
    (directory / MARKER).write_text(json.dumps(doc, indent=0) + "\n")


def _remove_written(target: pathlib.Path) -> list[str]:
    """Remove what the marker of ``target`` lists, then its emptied directories and ``target`` when empty; returns
    the files that are left (none the render wrote)."""
    written = _written(target) or set()
    for rel in written:
        path = target / rel
        if _resolved(path.parent).is_relative_to(_resolved(target)) and (path.is_file() or path.is_symlink()):
            path.unlink()
    (target / MARKER).unlink(missing_ok=True)
    for d in sorted((p for p in target.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    left = sorted(_files(target))
    if not left:
        target.rmdir()
    return left


def check_file(
    flag: str, path: pathlib.Path, kept: Iterable[tuple[str, pathlib.Path]] = (), make_parents: bool = True
) -> pathlib.Path:
    """The resolved file ``path`` names, when a command may write it: not a directory, not a stack or project file
    (Pulumi.*.yaml, Pulumi.yaml, pyproject.toml), in a directory that exists or, with ``make_parents``, can be
    made (:func:`write_file` makes it)."""
    try:
        target = _resolved(path)
    except (OSError, RuntimeError) as exc:
        raise OutputRefused(f"{flag} {str(path)[:120]!r}: unusable path ({exc}); name a new file") from None
    if target.is_dir() or str(path).endswith(os.sep):
        raise OutputRefused(f"{flag} {str(path)[:120]!r} is a directory; fix: name a file inside it")
    if target.name == "Pulumi.yaml" or (target.name.startswith("Pulumi.") and target.suffix in (".yaml", ".yml")):
        raise OutputRefused(f"{flag} {str(path)[:120]!r} is a Pulumi project or stack file; fix: name another file")
    if target.name in ("pyproject.toml", MARKER):
        raise OutputRefused(f"{flag} {str(path)[:120]!r} is a file ekstrain keeps; fix: name another file")
    existing = next(a for a in target.parents if a.exists())
    if not make_parents and existing != target.parent and existing.is_dir():
        raise OutputRefused(f"{flag} {str(path)[:120]!r}: directory {target.parent} does not exist; create it first")
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise OutputRefused(
            f"{flag} {str(path)[:120]!r}: cannot create it, {existing} is not a writable directory; fix: name a "
            "file in a writable directory"
        )
    if target.exists() and not os.access(target, os.W_OK):
        raise OutputRefused(f"{flag} {str(path)[:120]!r} exists and is not writable; fix: name a writable path")
    for what, directory in kept:
        if target == directory:
            raise OutputRefused(f"{flag} {str(path)[:120]!r} is {what}; fix: name a file")
    return target


def _make_parent(flag: str, target: pathlib.Path) -> pathlib.Path | None:
    """Create ``target``'s missing directories, saying which on stderr (a file output into a new directory is
    allowed, as ``render --out DIR`` makes its directory, but never silently); the topmost one created."""
    parent = target.parent
    if parent.is_dir():
        return None
    top = next(a for a in (parent, *parent.parents) if a.parent.exists() or a == a.parent)
    parent.mkdir(parents=True, exist_ok=True)
    print(f"note: {flag}: created directory {top}" + (f" (and {parent})" if top != parent else ""), file=sys.stderr)
    return top


def write_file(flag: str, target: pathlib.Path, text: str) -> None:
    """Write ``text`` to ``target`` (checked by :func:`check_file`) via a file beside it: a failure leaves the old."""
    write_files(flag, {target: text})


def write_files(flag: str, files: dict[pathlib.Path, str]) -> None:
    """Write every ``target -> text`` of ``files`` or none: each into a file beside its target first, then every
    target replaced (``os.replace``); a failure at any step removes the new files and puts back any target
    already replaced, so a command that writes several files (``job render --out FILE``: FILE, FILE.logs.sh,
    ...) never leaves some of them new and some old or missing."""
    staged: list[tuple[pathlib.Path, str]] = []
    swapped: list[tuple[pathlib.Path, str | None]] = []  # (target, its previous content's backup or None)
    made: list[pathlib.Path] = []
    try:
        for target in files:
            if target.is_dir():
                raise IsADirectoryError(21, "is a directory", str(target))
        for target, text in files.items():
            top = _make_parent(flag, target)
            made += [top] if top is not None else []
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            staged.append((target, tmp))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, (target.stat().st_mode & 0o7777) if target.exists() else 0o666 & ~_umask())
        for target, tmp in staged:
            backup = None
            if target.exists():
                fd, backup = tempfile.mkstemp(prefix=f".{target.name}.old-", dir=target.parent)
                os.close(fd)
                os.replace(target, backup)
            swapped.append((target, backup))
            os.replace(tmp, target)
    except OSError as exc:
        for target, backup in reversed(swapped):
            try:
                if backup is not None:
                    os.replace(backup, target)
                else:
                    target.unlink(missing_ok=True)
            except OSError:
                pass
        for _, tmp in staged:
            pathlib.Path(tmp).unlink(missing_ok=True)
        for top in made:  # the directories made for this output, now empty again
            if not any(p.is_file() for p in top.rglob("*")):
                shutil.rmtree(top, ignore_errors=True)
        where = exc.filename or next(iter(files), "")
        raise OutputRefused(
            f"{flag} {where}: cannot write ({exc.strerror or exc}); nothing was written; fix: name a writable path"
        ) from None
    for _, backup in swapped:
        if backup is not None:
            pathlib.Path(backup).unlink(missing_ok=True)
