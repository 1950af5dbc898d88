"""The wheel of this checkout, built once for every test that installs it (tests/test_library_wheel.py,
tests/test_wheel_flow.py), in whichever pytest-xdist worker asks first.

A wheel is a function of what setuptools packages: pyproject.toml and the files beside it, and the ``ekstrain/``
tree (its symlinked layers followed, as the build follows them), built by this interpreter's pip and setuptools. It
is kept in the render cache under a digest of those, so the workers of a session (and a later session of the same
files) take the same wheel: ``held`` makes a second builder wait for the first, then find its wheel.
"""

from __future__ import annotations

import hashlib
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from ekstrain.infra import replay
from ekstrain.tooling import validation
from support.renders import REPO, held


def _digest() -> str:
    """What the wheel is built from: the package tree, the checkout's top-level files, this interpreter and its
    installed distributions (pip and setuptools among them)."""
    parts = [replay._tree_digest(REPO / "ekstrain"), sys.version, sysconfig.get_path("purelib")]
    parts += replay._distributions()
    for path in sorted(REPO.iterdir()):
        if path.is_file():
            parts += [path.name, hashlib.sha256(path.read_bytes()).hexdigest()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def built_wheel() -> pathlib.Path:
    """``pip wheel --no-deps`` of this checkout: the path of the one ``ekstrain-*.whl`` (read it, never write it)."""
    where = validation.cache_root() / "test-wheels" / _digest()
    with held("wheel"):
        found = sorted(where.glob("ekstrain-*.whl"))
        if len(found) == 1:
            return found[0]
        building = where.with_name(where.name + ".partial")
        shutil.rmtree(building, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(building), str(REPO)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        shutil.rmtree(where, ignore_errors=True)
        building.rename(where)
        (wheel,) = where.glob("ekstrain-*.whl")
        return wheel
