"""The read guard: a file the user names (a stack file, a workload or mix file, a calibration, the lock file) is
read only when it is a regular file, and at most a bounded number of bytes of it.

``open()`` of a named pipe blocks until a writer appears (fifo(7): "opening the FIFO blocks until the other end is
opened also"), and a character device such as /dev/zero never ends, so a stat, then an open, would still race and
a plain ``read()`` could hang or fill memory. Here the file is opened with ``O_NONBLOCK`` (open(2): a FIFO opened
for reading with it returns at once), its type is taken from the open descriptor (``fstat``, no race), anything
but a regular file is refused, and then at most ``limit + 1`` bytes are read.

:class:`NotARegularFile` and :class:`TooLarge` are ``OSError`` subclasses whose ``strerror`` is the whole reason,
so every caller's existing ``except OSError as exc: ... exc.strerror`` line already says it in one line.
"""

from __future__ import annotations

import errno
import os
import stat

DEFAULT_LIMIT = 16 * 1024 * 1024
"""Bytes read at most from a file the user names when its reader sets no tighter limit."""

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotARegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory."""


class TooLarge(OSError):
    """The file holds more than the reader's limit."""


def kind_of(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them; NotARegularFile,
    TooLarge or the OSError of the open otherwise. Never blocks on a FIFO or reads a device."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = kind_of(st.st_mode)
            raise NotARegularFile(errno.EINVAL, f"is {what}, not a regular file", os.fspath(path))
        if st.st_size > limit:
            raise TooLarge(errno.EFBIG, f"is {st.st_size} bytes, more than the {limit} read", os.fspath(path))
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # grew while read
            raise TooLarge(errno.EFBIG, f"is more than the {limit} bytes read", os.fspath(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT, encoding: str = "utf-8") -> str:
    """:func:`read_bytes` decoded (UnicodeDecodeError as ``bytes.decode`` raises it)."""
    return read_bytes(path, limit).decode(encoding)


def is_special(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory (a FIFO, a device, a socket);
    None otherwise. A stat, for a caller that only checks (the read itself goes through :func:`read_bytes`)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else kind_of(mode)
