"""Per-process memos of what a file's content decides (its digest, a binary's version).

Keyed by the file's resolved path, size and mtime: a file rewritten in place is read again, and the 60 MB helm
binary is hashed once a run however many cache keys name it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def per_file(compute: Callable[[str], T]) -> Callable[[str | os.PathLike[str]], T]:
    """``compute(path)``, memoised on (resolved path, size, mtime_ns)."""

    @functools.cache
    def of_version(path: str, size: int, mtime_ns: int) -> T:
        return compute(path)

    @functools.wraps(compute)
    def memo(path: str | os.PathLike[str]) -> T:
        resolved = os.path.realpath(path)
        st = os.stat(resolved)
        return of_version(resolved, st.st_size, st.st_mtime_ns)

    return memo
