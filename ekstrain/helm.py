"""The project's one helm lookup (the render, the scheduling simulator and the tests use it).

``$EKSTRAIN_HELM``, else ``helm`` on PATH, else the pinned static helm ``make`` fetches into ``.tools/helm`` of
the checkout (scripts/fetch_helm.py). Nothing machine-specific: a fresh clone after ``make`` finds it.
"""

from __future__ import annotations

import os
import pathlib
import shutil

HELM_ENV = "EKSTRAIN_HELM"
CHECKOUT = pathlib.Path(__file__).resolve().parent.parent


def helm_binary() -> str | None:
    if os.environ.get(HELM_ENV):
        return os.environ[HELM_ENV]
    on_path = shutil.which("helm")
    if on_path:
        return on_path
    local = CHECKOUT / ".tools" / "helm"
    return str(local) if local.exists() else None
