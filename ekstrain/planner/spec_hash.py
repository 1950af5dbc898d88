"""One hash for the planner's frozen input specs, computed once per object."""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def cached_fields_hash(spec: Any) -> int:
    """The hash of a frozen dataclass's fields, kept on the object: the search's caches key on a spec millions of
    times. Assigned as ``__hash__`` in the class body (an inherited one would be replaced by the dataclass's)."""
    cached: int | None = spec.__dict__.get("_hash")
    if cached is None:
        cached = hash(tuple(getattr(spec, f.name) for f in fields(spec)))
        object.__setattr__(spec, "_hash", cached)
    return cached
