"""Where files are: the package's own data (inside ``ekstrain/``) versus the user's project (never inside it).

Installed from the wheel, ``ekstrain/`` sits in site-packages, so nothing the user owns may be computed
relative to this file:

- *package data* (shipped in the wheel, read-only): the CrossGuard pack (:data:`POLICY_PACK`) and the
  reviewed-finding lists (:data:`REVIEWS`). In a checkout ``ekstrain/policy_pack`` and ``ekstrain/security``
  are symlinks to ``policy/`` and ``security/``; in the wheel they are real directories.
- *the project* (:func:`project_dir`): where ``Pulumi.yaml`` and the stack files are; the render's default
  output and cache, the Slurm login key file and the fetched upstream schemas are relative to it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
"""``ekstrain/`` itself (site-packages/ekstrain when installed)."""
POLICY_PACK = PACKAGE / "policy_pack"
"""The CrossGuard pack (``PulumiPolicy.yaml``, ``__main__.py``, ``ekstrain_policy/``, ``config/<stack>.json``):
``pulumi preview --policy-pack "$(python -c 'from ekstrain.files.paths import POLICY_PACK; print(POLICY_PACK)')"``."""
REVIEWS = PACKAGE / "security"
"""Reviewed findings the render's checks accept (``iam-lint-accepted.yaml``, ``reviewed-runtime-objects.yaml``)."""

EXAMPLE_STACKS = PACKAGE / "example_stacks"
"""The shipped example stacks (``Pulumi.prod.yaml``, ``Pulumi.dev.yaml``) and their ``ekstrain.lock.json``
(package data; symlinks to the checkout's own files): what ``ekstrain render --stack prod`` renders outside any
Pulumi project (a wheel in an empty directory), and the no-op answers a project without a lock starts from."""

CHECKOUT: pathlib.Path | None = PACKAGE.parent if (PACKAGE.parent / "pyproject.toml").is_file() else None
"""The source checkout this package runs from (its ``.tools/``, ``.upstream/``); None when installed."""

PROJECT_ENV = "EKSTRAIN_PROJECT_DIR"
_project: pathlib.Path | None = None


def project_dir() -> pathlib.Path:
    """The user's Pulumi project directory, in this order: the one :func:`use_project` set (the render sets
    the stack file's directory), ``$EKSTRAIN_PROJECT_DIR``, the nearest directory holding ``Pulumi.yaml``
    from the working directory up (``pulumi up`` runs a ``main: infra/`` program in ``infra/``), else the
    working directory. Never a directory inside the installed package."""
    if _project is not None:
        return _project
    if os.environ.get(PROJECT_ENV):
        return pathlib.Path(os.environ[PROJECT_ENV]).absolute()
    cwd = pathlib.Path.cwd()
    for directory in (cwd, *cwd.parents):
        if (directory / "Pulumi.yaml").is_file():
            return directory
    return cwd


def project_of(stack_file: pathlib.Path) -> pathlib.Path:
    """The Pulumi project a stack file belongs to: the nearest directory holding ``Pulumi.yaml`` from the stack
    file's directory up; a stack file outside any project (a copy in a temporary directory) belongs to the
    working directory's project (:func:`project_dir`)."""
    start = stack_file.absolute().parent
    for directory in (start, *start.parents):
        if (directory / "Pulumi.yaml").is_file():
            return directory
    return project_dir()


@contextlib.contextmanager
def use_project(directory: pathlib.Path) -> Iterator[pathlib.Path]:
    """Make ``directory`` the project for the duration (the render: the stack file's directory)."""
    global _project
    previous, _project = _project, directory.absolute()
    try:
        yield _project
    finally:
        _project = previous


def upstream_fix() -> str:
    """How to get the pinned upstream files: the one command every install has (``ekstrain upstream fetch``,
    ekstrain/tooling/upstream.py), then the flag and variable that point the render at a copy elsewhere."""
    return (
        "run `ekstrain upstream fetch` (fills .upstream/ of the project; --mirror URL for a mirror), or pass "
        "`ekstrain render --upstream-dir DIR` or set EKSTRAIN_UPSTREAM_DIR (docs/index.md)"
    )


def helm_fix() -> str:
    """How to give the render a helm binary (as :func:`upstream_fix`)."""
    return (
        "run `ekstrain upstream helm` (the pinned helm into .tools/helm of the project), put helm on PATH, or "
        "pass `ekstrain render --helm PATH` or set EKSTRAIN_HELM (docs/index.md)"
    )


def in_checkout(command: str) -> str:
    """`` (in this checkout: `make ...`)`` when this package runs from a source checkout, else nothing: a hint
    names the ``ekstrain`` command every install has first, and a Makefile target only where there is one."""
    return f" (in this checkout: `{command}`)" if CHECKOUT is not None else ""


def example_stack(stack: str) -> pathlib.Path | None:
    """The shipped example stack file of ``stack`` for an installed package (a checkout has its stack files at
    hand) when the working directory is in no Pulumi project (nothing of the user's to render), else None."""
    shipped = EXAMPLE_STACKS / f"Pulumi.{stack}.yaml"
    cwd = pathlib.Path.cwd()
    in_project = any((d / "Pulumi.yaml").is_file() for d in (cwd, *cwd.parents)) or bool(os.environ.get(PROJECT_ENV))
    return shipped if CHECKOUT is None and shipped.is_file() and not in_project else None
