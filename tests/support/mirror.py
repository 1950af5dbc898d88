"""The offline mirror of the pinned upstream files (scripts/upstream_mirror.py ``build``), laid out once for every
test that fetches from it (tests/test_fetch_upstream.py, tests/test_wheel_flow.py), in whichever pytest-xdist worker
asks first; each test process serves it on a port of its own.

The layout is a function of the upstream directory it is built from, the pins and chart versions (the package),
the mirror and fetch scripts and helm (``helm repo index``): it is kept in the render cache under a digest of
those, and ``held`` makes a second builder wait for the first, then take its directory. Read it, never write it.
"""

from __future__ import annotations

import hashlib
import pathlib
import shutil

from ekstrain.infra import replay
from ekstrain.tooling import helm, validation
from support.renders import REPO, held


def built_mirror(src: pathlib.Path) -> pathlib.Path:
    """The directory ``upstream_mirror.build(src, ...)`` lays out."""
    from scripts import upstream_mirror

    binary = helm.helm_binary()
    parts = [replay._tree_digest(src), replay._tree_digest(REPO / "ekstrain"), replay._tree_digest(REPO / "scripts")]
    parts.append(hashlib.sha256(pathlib.Path(binary).read_bytes()).hexdigest() if binary else "")
    where = validation.cache_root() / "test-mirrors" / hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]
    with held("mirror"):
        if (where / ".built").is_file():
            return where
        building = where.with_name(where.name + ".partial")
        shutil.rmtree(building, ignore_errors=True)
        upstream_mirror.build(src, building)
        (building / ".built").write_text("")
        shutil.rmtree(where, ignore_errors=True)
        building.rename(where)
        return where
