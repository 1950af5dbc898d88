"""The project's one helm lookup (the render, the scheduling simulator and the tests use it).

``$EKSTRAIN_HELM``, else ``helm`` on PATH, else the pinned static helm ``make`` fetches into ``.tools/helm`` of
the project (scripts/fetch_helm.py), else of the checkout this package runs from. Nothing machine-specific: a
fresh clone after ``make`` finds it.
"""

from __future__ import annotations

import os
import shutil

from ekstrain.paths import CHECKOUT, project_dir

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
