"""Per-process memos of what a file's content decides (its digest, a binary's version, a parse).

``per_file`` keys by the file's resolved path, size and mtime: a file rewritten in place is read again, and the
60 MB helm binary is hashed once a run however many cache keys name it. ``Recent`` keeps the latest answers by a
content key (a text's sha256, inputs' repr) for a process that computes them again for the same content.
"""

from __future__ import annotations

import functools
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

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


class Recent(Generic[T]):
    """The ``keep`` latest values by key (least recently used dropped first), for one process."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._values: OrderedDict[str, T] = OrderedDict()

    def get(self, key: str) -> T | None:
        if key not in self._values:
            return None
        self._values.move_to_end(key)
        return self._values[key]

    def put(self, key: str, value: T) -> T:
        self._values[key] = value
        self._values.move_to_end(key)
        while len(self._values) > self.keep:
            self._values.popitem(last=False)
        return value

    def keys(self) -> list[str]:
        return list(self._values)

    def clear(self) -> None:
        self._values.clear()

    def __len__(self) -> int:
        return len(self._values)
