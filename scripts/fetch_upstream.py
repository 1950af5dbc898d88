"""Thin wrapper for ``make fetch-upstream``: the fetcher is ``ekstrain.tooling.upstream`` (``ekstrain upstream fetch``,
flags in ``ekstrain.cli.upstream``), so an installed wheel has it too.

    python scripts/fetch_upstream.py [DEST] [--only NAME ...] [--mirror URL]
"""

from __future__ import annotations

import sys

from ekstrain.cli.upstream import fetch_upstream_main as main
from ekstrain.tooling.upstream import *  # noqa: F403  (the fetcher's names, for the tests and maintainers)

if __name__ == "__main__":
    sys.exit(main())
