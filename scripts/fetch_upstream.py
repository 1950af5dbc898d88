"""Thin wrapper for ``make fetch-upstream``: the fetcher is ``ekstrain.upstream`` (``ekstrain upstream fetch``),
so an installed wheel has it too.

    python scripts/fetch_upstream.py [DEST] [--only NAME ...] [--mirror URL]
"""

from __future__ import annotations

import sys

from ekstrain import upstream

if __name__ == "__main__":
    sys.exit(upstream.main())
else:  # `from scripts import fetch_upstream`: the same module, so its names and state are the package's
    sys.modules[__name__] = upstream
