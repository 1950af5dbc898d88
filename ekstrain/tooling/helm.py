"""The project's one helm lookup (the render, the scheduling simulator and the tests use it).

``$EKSTRAIN_HELM``, else ``helm`` on PATH, else the pinned static helm ``make`` fetches into ``.tools/helm`` of
the project (scripts/fetch_helm.py), else of the checkout this package runs from. Nothing machine-specific: a
fresh clone after ``make`` finds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ekstrain.files import filememo
from ekstrain.files.paths import CHECKOUT, project_dir

HELM_ENV = "EKSTRAIN_HELM"


def helm_binary() -> str | None:
    if os.environ.get(HELM_ENV):
        return os.environ[HELM_ENV]
    on_path = shutil.which("helm")
    if on_path:
        return on_path
    for root in (project_dir(), CHECKOUT):
        local = root / ".tools" / "helm" if root else None
        if local is not None and local.exists():
            return str(local)
    return None


@filememo.per_file
def _version_of(path: str) -> str | None:
    try:
        proc = subprocess.run(
            [path, "version", "--template", "{{.Version}}"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    version = proc.stdout.strip()
    return version if proc.returncode == 0 and version.startswith("v") else None


def helm_version(path: str | None = None) -> str | None:
    """``helm version``'s version (``v4.1.4``) of ``path`` (default :func:`helm_binary`); None when it is not
    a helm that answers. Keys answers that hold on every platform's build of the same release (ekstrain.lock.json),
    where a binary's digest would differ between an x86_64 and an arm64 machine."""
    path = path or helm_binary()
    return _version_of(path) if path and os.path.exists(path) else None
