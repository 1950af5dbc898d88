"""The wheel of this checkout, built once for every test that installs it (tests/test_library_wheel.py,
tests/test_wheel_flow.py), in whichever pytest-xdist worker asks first; and installed once for the session.

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

import pytest

from ekstrain.infra import replay
from ekstrain.tooling import validation
from support import shared
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


def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The wheel installed ``pip install --no-deps --target`` into a directory of this session (its dependencies come
    from this interpreter's site-packages): the ``site`` of tests/test_library_wheel.py's user program and of
    tests/test_wheel_flow.py's virtualenv, installed by the first process that asks (each pip run ~1 CPU-s, and a
    module whose tests pytest-xdist splits over two workers ran its module fixture twice). Read it, never write it:
    the tests assert that nothing they run writes into it."""

    def install() -> pathlib.Path:
        target = shared.session_dir(tmp_path_factory) / "installed-wheel"
        shutil.rmtree(target, ignore_errors=True)
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", str(target)]
            + [str(built_wheel())],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return target

    return shared.once(tmp_path_factory, "installed-wheel", install)
