"""A local stand-in for the upstream hosts ``scripts/fetch_upstream.py`` contacts, for offline tests.

    python scripts/upstream_mirror.py build SRC DEST     SRC laid out like ../shared/upstream (or a fetched .upstream)
    python scripts/upstream_mirror.py serve DEST [--port N] [--env-file FILE]

``build`` lays out, under DEST:
- ``raw/<owner>/<repo>/<commit>/<path>``: every raw file of scripts/upstream-pins.tsv (GitHub raw layout);
- ``helm/<host>/<path>/``: one classic Helm repository per chart repository URL of ekstrain/facts/versions.py, the
  archives plus an ``index.yaml`` written by ``helm repo index`` (relative URLs, so any port works);
- ``oci/<host>/<path>/``: one OCI image layout per ``oci://`` chart (oci-layout, index.json with the version as
  ``org.opencontainers.image.ref.name``, blobs/sha256/...), with the media types ``helm push`` uses.

``serve`` answers GET/HEAD over HTTP on 127.0.0.1: ``/raw/...`` and ``/helm/...`` as files, and the read side of
the OCI distribution API from the layouts (``/v2/``, ``/v2/<name>/manifests/<tag|digest>``,
``/v2/<name>/blobs/<digest>``, ``/v2/<name>/tags/list``): what ``helm pull oci://... --plain-http`` needs. It
prints (and writes to ``--env-file``) the variables that point the fetcher at it.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import pathlib
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterable
from typing import Any

import yaml

from ekstrain.facts import versions
from ekstrain.files import outputs
from ekstrain.tooling import chartdigest
from ekstrain.tooling.helm import helm_binary

try:
    from scripts import fetch_upstream
except ImportError:  # run as `python scripts/upstream_mirror.py`: its sibling is on sys.path
    import fetch_upstream  # type: ignore[no-redef,import-not-found]

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
HELM_CONFIG_TYPE = "application/vnd.cncf.helm.config.v1+json"
HELM_LAYER_TYPE = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"


def _blob(layout: pathlib.Path, data: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    path = layout / "blobs" / "sha256" / digest
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def add_oci_chart(layout: pathlib.Path, archive: pathlib.Path) -> None:
    """Add ``archive`` to the OCI image layout ``layout`` as ``helm push`` would store it (tag = version)."""
    data = archive.read_bytes()
    try:  # every member accounted for (ekstrain/tooling/chartdigest.py) before the archive is served as a chart
        chartdigest.chart_files(archive)
        with tarfile.open(archive) as tgz:
            chart_yaml = next(
                (m for m in tgz.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")), None
            )
            f = tgz.extractfile(chart_yaml) if chart_yaml is not None else None
            meta = yaml.safe_load(f.read() if f else b"")
    except (OSError, tarfile.TarError, yaml.YAMLError, chartdigest.NotAChart) as exc:
        raise SystemExit(f"error: upstream_mirror: {archive}: not a chart archive ({exc})") from None
    if not isinstance(meta, dict) or "version" not in meta:
        raise SystemExit(f"error: upstream_mirror: {archive}: no <chart>/Chart.yaml with a version")
    config = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": HELM_CONFIG_TYPE, **_blob(layout, config)},
        "layers": [{"mediaType": HELM_LAYER_TYPE, **_blob(layout, data)}],
    }
    ref = _blob(layout, json.dumps(manifest, separators=(",", ":")).encode())
    (layout / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
    index_path = layout / "index.json"
    index: dict[str, Any] = {"schemaVersion": 2, "manifests": _manifests(index_path) if index_path.exists() else []}
    tag = str(meta["version"]).replace("+", "_")
    index["manifests"] = [m for m in index["manifests"] if _annotations(m).get(REF_NAME) != tag]
    index["manifests"].append({"mediaType": MANIFEST_TYPE, **ref, "annotations": {REF_NAME: tag}})
    index_path.write_text(json.dumps(index, indent=1))


def build(src: pathlib.Path, dest: pathlib.Path, charts: Iterable[str] | None = None, files: bool = True) -> None:
    """The mirror of ``src`` (an upstream directory) under ``dest``: every chart of DEFAULT_CHARTS (or ``charts``)
    and, with ``files``, every raw file of the pins."""
    helm = helm_binary()
    if helm is None:
        raise SystemExit("helm not found: run `make .tools/helm` (helm repo index writes the repositories' index)")
    if files:
        for pin in fetch_upstream.read_file_pins():
            if pin.from_chart is None:
                out = dest / "raw" / pin.repo / pin.commit / pin.path
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src / pin.dest, out)
    repos: set[pathlib.Path] = set()
    for name, chart in versions.DEFAULT_CHARTS.items():
        if charts is not None and name not in charts:
            continue
        archive = src / "chart-src" / fetch_upstream.archive_name(chart)
        if chart.repo is None:
            add_oci_chart(dest / "oci" / chart.chart.removeprefix("oci://"), archive)
        else:
            repo = dest / "helm" / chart.repo.split("://", 1)[1].rstrip("/")
            repo.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(archive, repo / archive.name)
            repos.add(repo)
    for repo in sorted(repos):
        # the directory after "--" and absolute: a dest such as '-x' is never read as an option
        subprocess.run([helm, "repo", "index", "--", str(repo.absolute())], check=True)


def _manifests(index: pathlib.Path) -> list[dict[str, Any]]:
    """The manifest descriptors of an OCI ``index.json`` (image-spec image-index.md: ``manifests`` is an array of
    descriptors); a damaged index (not JSON, a null entry) lists none instead of failing the request."""
    try:
        doc = json.loads(index.read_text())
    except (OSError, ValueError, RecursionError):
        return []
    found = doc.get("manifests") if isinstance(doc, dict) else None
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _annotations(manifest: dict[str, Any]) -> dict[str, Any]:
    found = manifest.get("annotations")
    return found if isinstance(found, dict) else {}


class _Handler(http.server.BaseHTTPRequestHandler):
    root: pathlib.Path
    quiet = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        if not self.quiet:
            super().log_message(format, *args)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def _send(self, code: int, data: bytes, ctype: str, body: bool, digest: str | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Docker-Distribution-API-Version", "registry/2.0")
        if digest:
            self.send_header("Docker-Content-Digest", digest)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _missing(self, body: bool, code: str = "NOT_FOUND") -> None:
        err = json.dumps({"errors": [{"code": code, "message": f"{self.path} not in the mirror"}]}).encode()
        self._send(404, err, "application/json", body)

    def _file(self, rel: str) -> pathlib.Path | None:
        path = (self.root / rel).resolve()
        if self.root.resolve() not in path.parents or not path.is_file():
            return None
        return path

    def _answer(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith(("/raw/", "/helm/")):
            f = self._file(path.lstrip("/"))
            if f is None:
                return self._missing(body)
            return self._send(200, f.read_bytes(), "application/octet-stream", body)
        if path in ("/v2", "/v2/"):
            return self._send(200, b"{}", "application/json", body)
        if not path.startswith("/v2/"):
            return self._missing(body)
        rest = path[len("/v2/") :]
        if rest.endswith("/tags/list"):
            index = self._file(f"oci/{rest[: -len('/tags/list')]}/index.json")
            if index is None:
                return self._missing(body, "NAME_UNKNOWN")
            tags = [str(_annotations(m).get(REF_NAME)) for m in _manifests(index) if REF_NAME in _annotations(m)]
            data = json.dumps({"name": rest[: -len("/tags/list")], "tags": tags}).encode()
            return self._send(200, data, "application/json", body)
        for kind in ("/manifests/", "/blobs/"):
            if kind in rest:
                name, ref = rest.rsplit(kind, 1)
                break
        else:
            return self._missing(body)
        digest = ref
        if kind == "/manifests/" and not ref.startswith("sha256:"):
            index = self._file(f"oci/{name}/index.json")
            found = [
                m["digest"]
                for m in (_manifests(index) if index else [])
                if _annotations(m).get(REF_NAME) == ref and isinstance(m.get("digest"), str)
            ]
            if not found:
                return self._missing(body, "MANIFEST_UNKNOWN")
            digest = found[0]
        blob = self._file(f"oci/{name}/blobs/{digest.replace(':', '/', 1)}")
        if blob is None:
            return self._missing(body, "BLOB_UNKNOWN" if kind == "/blobs/" else "MANIFEST_UNKNOWN")
        ctype = MANIFEST_TYPE if kind == "/manifests/" else "application/octet-stream"
        return self._send(200, blob.read_bytes(), ctype, body, digest)


def serve(root: pathlib.Path, port: int = 0, quiet: bool = True) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve the mirror ``root`` on 127.0.0.1 from a daemon thread; returns the server and its base URL."""
    handler = type("MirrorHandler", (_Handler,), {"root": root, "quiet": quiet})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def mirror_env(base: str) -> dict[str, str]:
    """The variables that point scripts/fetch_upstream.py at the mirror served at ``base``."""
    return {"UPSTREAM_RAW_BASE": f"{base}/raw", "UPSTREAM_HELM_MIRROR": f"{base}/helm", "UPSTREAM_OCI_MIRROR": base}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="lay out the mirror of an upstream directory")
    b.add_argument("src", type=pathlib.Path)
    b.add_argument("dest", type=pathlib.Path)
    s = sub.add_parser("serve", help="serve a built mirror on 127.0.0.1 until killed")
    s.add_argument("root", type=pathlib.Path)
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--env-file", type=pathlib.Path, help="write `export VAR=value` lines here once listening")
    s.add_argument("--verbose", action="store_true", help="log every request")
    args = p.parse_args(argv)
    if args.cmd == "build":
        try:  # the write guard (ekstrain/files/outputs.py): a directory of its own, holding only a mirror's files
            outputs.check_tree("dest", args.dest, outputs.kept_dirs(), {"raw", "helm", "oci"})
        except outputs.OutputRefused as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        build(args.src, args.dest)
        print(f"mirror of {args.src} built in {args.dest}")
        return 0
    try:
        env_file = outputs.check_file("--env-file", args.env_file) if args.env_file else None
    except outputs.OutputRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server, base = serve(args.root, args.port, quiet=not args.verbose)
    lines = "".join(f"export {k}={v}\n" for k, v in mirror_env(base).items())
    print(f"serving {args.root} at {base}\n{lines}", end="", flush=True)
    if env_file is not None:
        try:
            outputs.write_file("--env-file", env_file, lines)
        except outputs.OutputRefused as exc:
            server.shutdown()
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
