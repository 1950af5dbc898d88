"""`make fetch-upstream` offline: scripts/fetch_upstream.py against a local mirror of the upstream hosts.

The mirror (scripts/upstream_mirror.py) is built in the test from the pinned upstream files beside the checkout
(``../shared/upstream``; in a clone without it, the directory the validation reads, e.g. a fetched
``.upstream``): GitHub raw files, classic Helm repositories (index.yaml by ``helm repo index``) and OCI
registries (the read side of the distribution API over OCI image layouts), served on 127.0.0.1. helm pulls
from it exactly as it pulls from the real hosts; the fetcher is pointed at it by the mirror variables only.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator

import pytest
from conftest import REPO
from support import shared
from support.mirror import built_mirror
from support.renders import Renders

from ekstrain.facts import versions
from ekstrain.tooling import chartdigest, validation
from ekstrain.tooling.helm import helm_binary
from scripts import fetch_upstream, upstream_mirror

SHARED = REPO.parent / "shared" / "upstream"
SRC = SHARED if SHARED.is_dir() else validation.upstream_dir()


def _src() -> pathlib.Path:
    assert SRC is not None, "no upstream files to build the mirror from: run `make fetch-upstream` first"
    return SRC


def _helm() -> str:
    helm = helm_binary()
    assert helm is not None, "helm not found: run `make .tools/helm`"
    return helm


@pytest.fixture(scope="module")
def mirror() -> Iterator[dict[str, str]]:
    server, base = upstream_mirror.serve(built_mirror(_src()))  # laid out once per session (tests/support/mirror.py)
    yield upstream_mirror.mirror_env(base)
    server.shutdown()


@pytest.fixture(scope="module")
def fetched(
    mirror: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[pathlib.Path, subprocess.CompletedProcess[str]]:
    """One `make fetch-upstream` for the session (~2.5 CPU-s; pytest-xdist may split this module over two workers):
    the tests read the directory, never write it."""

    def fetch() -> tuple[pathlib.Path, subprocess.CompletedProcess[str]]:
        dest = tmp_path_factory.mktemp("fetched") / ".upstream"
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "fetch_upstream.py"), str(dest)],
            env={**os.environ, **mirror},
            capture_output=True,
            text=True,
            timeout=900,
        )
        return dest, proc

    return shared.once(tmp_path_factory, "fetched-upstream", fetch)


def _repacked(archive: pathlib.Path) -> bytes:
    """The same chart files, gzip'd again with another timestamp: a valid archive with other bytes."""
    return gzip.compress(gzip.decompress(archive.read_bytes()), mtime=1)


def _repackaged(archive: pathlib.Path, tamper: str | None = None) -> bytes:
    """The chart packaged again as another pipeline would: members in reverse order, other mtime, uid/gid and owner
    names, gzip level 1; with ``tamper`` (a path relative to the chart root) that one file gets one more line."""
    members: list[tuple[tarfile.TarInfo, bytes]] = []
    with tarfile.open(archive) as tgz:
        for m in tgz:
            f = tgz.extractfile(m) if m.isfile() else None
            data = f.read() if f else b""
            if tamper and m.name.split("/", 1)[-1] == tamper:
                data += b"\n# injected\n"
            members.append((m, data))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as out:
        for m, data in reversed(members):
            info = tarfile.TarInfo(m.name)
            info.size, info.mode, info.type = len(data), 0o600, m.type
            info.mtime, info.uid, info.gid, info.uname, info.gname = 86400, 1234, 5678, "ci", "ci"
            out.addfile(info, io.BytesIO(data) if m.isfile() else None)
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=7)


def test_every_pinned_chart_and_file_arrives_and_matches_its_pin(
    fetched: tuple[pathlib.Path, subprocess.CompletedProcess[str]],
) -> None:
    dest, proc = fetched
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pins = fetch_upstream.read_chart_pins()
    for name, chart in versions.DEFAULT_CHARTS.items():
        archive = dest / "chart-src" / fetch_upstream.archive_name(chart)
        assert archive.is_file(), f"{name}: {archive} missing\n{proc.stdout}"
        assert fetch_upstream.sha256_of(archive) == pins[name].sha256, name
        assert chartdigest.files_digest(chartdigest.chart_files(archive)) == pins[name].files_sha256, name
        assert f"chart {archive.name} <- " in proc.stdout
    for pin in fetch_upstream.read_file_pins():
        assert fetch_upstream.sha256_of(dest / pin.dest) == pin.sha256, pin.dest
        assert f"file {pin.dest} <- " in proc.stdout
    assert validation.upstream_dir() is not None
    # what the render reads: every CRD file and every chart's values.yaml the validation knows
    for crd in (_src() / "crds").rglob("*.yaml"):
        assert (dest / crd.relative_to(_src())).read_bytes() == crd.read_bytes(), crd
    for chart in versions.DEFAULT_CHARTS.values():
        if chart.upstream_dir:
            assert (dest / "charts" / chart.upstream_dir / "values.yaml").is_file(), chart.upstream_dir
    assert (dest / "chart-src" / "SHA256SUMS").read_text().count(".tgz\n") == len(versions.DEFAULT_CHARTS)


def test_pins_follow_ekstrain_versions_and_the_reference_archives() -> None:
    pins = fetch_upstream.read_chart_pins()
    assert sorted(pins) == sorted(versions.DEFAULT_CHARTS), "one row of scripts/chart-pins.tsv per chart"
    for name, chart in versions.DEFAULT_CHARTS.items():
        assert pins[name].version == chart.version, name
    sums = SHARED / "chart-src" / "SHA256SUMS"
    if sums.is_file():  # beside the checkout: the pins are the reference archives' sha256
        listed = dict(reversed(line.split()) for line in sums.read_text().splitlines() if line.strip())
        for name, chart in versions.DEFAULT_CHARTS.items():
            assert listed[fetch_upstream.archive_name(chart)] == pins[name].sha256, name


def test_every_pin_verifies_by_content_and_its_file_list_is_the_reference_archives() -> None:
    # GIVEN the pins (files_sha256) and the per-file table; the reference archives are the pinned source
    pins, files = fetch_upstream.read_chart_pins(), fetch_upstream.read_chart_files()
    assert len(pins) == len(versions.DEFAULT_CHARTS) == 21
    for name, chart in versions.DEFAULT_CHARTS.items():
        pin = pins[name]
        assert len(pin.files_sha256) == 64 and pin.files_sha256 != fetch_upstream.UNKNOWN, name
        table = files[(name, chart.version)]
        assert "Chart.yaml" in table and chartdigest.files_digest(table) == pin.files_sha256, name
        reference = _src() / "chart-src" / fetch_upstream.archive_name(chart)
        assert chartdigest.chart_files(reference) == table, name
        # THEN another packaging of the same files has other bytes and the same content digest
        again = pathlib.Path(str(reference) + ".again")
        try:
            again.write_bytes(_repackaged(reference))
            assert fetch_upstream.sha256_of(again) != pin.sha256
            fetch_upstream.verify_content(name, chart.version, again, pin, fetch_upstream.CHART_FILES)
        finally:
            again.unlink(missing_ok=True)


def test_a_second_run_downloads_nothing(
    fetched: tuple[pathlib.Path, subprocess.CompletedProcess[str]], mirror: dict[str, str], tmp_path: pathlib.Path
) -> None:
    # the first run's directory as it left it, copied: a run writes its SHA256SUMS again, and the session's other
    # workers read the fetched directory meanwhile
    dest = shutil.copytree(fetched[0], tmp_path / ".upstream", symlinks=True)
    out = io.StringIO()
    assert fetch_upstream.fetch(dest, env=mirror, out=out) == []
    lines = [line for line in out.getvalue().splitlines() if line.startswith("  ")]
    assert lines and all("already present" in line for line in lines), out.getvalue()


def test_the_dev_stack_renders_from_the_fetched_directory(
    fetched: tuple[pathlib.Path, subprocess.CompletedProcess[str]], tmp_path: pathlib.Path, renders: Renders
) -> None:
    dest, proc = fetched
    assert proc.returncode == 0, proc.stderr
    # The session's render cache, with its render of dev: what the render computes is keyed by the content it reads
    # (helm output by chart archive, a stored render by every upstream file: infra/replay.py), so the fetched
    # directory's files are what decide whether any of it serves this render.
    renders("dev")
    env = {**os.environ, "EKSTRAIN_UPSTREAM_DIR": str(dest), "EKSTRAIN_CACHE_DIR": str(validation.cache_root())}
    render = subprocess.run(
        [sys.executable, "-m", "ekstrain.cli.render", "--stack", "dev", "--out", str(tmp_path / "out")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert render.returncode == 0, render.stdout[-3000:] + render.stderr[-3000:]
    summary = (tmp_path / "out" / "SUMMARY.md").read_text()
    assert "valid against the pinned upstream schemas" in summary
    assert list((tmp_path / "out" / "helm").iterdir()), "the charts were rendered with helm template"


TAMPERED = {"karpenter-crd": "templates/karpenter.sh_nodepools.yaml", "volcano": "templates/scheduler.yaml"}


def _mirror_of(tmp: pathlib.Path, tamper: bool) -> tuple[object, dict[str, str]]:
    src = tmp / "src"
    (src / "chart-src").mkdir(parents=True)
    for name, path in TAMPERED.items():
        file = fetch_upstream.archive_name(versions.DEFAULT_CHARTS[name])
        (src / "chart-src" / file).write_bytes(_repackaged(_src() / "chart-src" / file, path if tamper else None))
    root = tmp / "mirror"
    upstream_mirror.build(src, root, charts=list(TAMPERED), files=False)
    server, base = upstream_mirror.serve(root)
    return server, upstream_mirror.mirror_env(base)


@pytest.fixture(scope="module")
def repackaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A mirror serving karpenter-crd (OCI) and volcano (repository) packaged again: other tar metadata, member
    order and gzip level, the same files (its index.yaml lists the repackaged archives' digests)."""
    server, env = _mirror_of(tmp_path_factory.mktemp("repackaged"), tamper=False)
    yield env
    server.shutdown()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def tampered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The same repackaging with one template of each chart changed (a self-consistent mirror: index.yaml and the
    OCI manifest describe the tampered archives)."""
    server, env = _mirror_of(tmp_path_factory.mktemp("tampered"), tamper=True)
    yield env
    server.shutdown()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_repackaged_archive_of_the_pinned_files_is_accepted(
    name: str, repackaged: dict[str, str], tmp_path: pathlib.Path
) -> None:
    chart, pin = versions.DEFAULT_CHARTS[name], fetch_upstream.read_chart_pins()[name]
    note = fetch_upstream.fetch_chart(name, chart, pin, tmp_path, _helm(), repackaged)
    assert "repackaged, files verified" in note, note
    archive = tmp_path / "chart-src" / fetch_upstream.archive_name(chart)
    assert fetch_upstream.sha256_of(archive) != pin.sha256
    assert chartdigest.files_digest(chartdigest.chart_files(archive)) == pin.files_sha256


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_tampered_template_is_refused_naming_the_chart_and_the_file(
    name: str, tampered: dict[str, str], tmp_path: pathlib.Path
) -> None:
    chart = versions.DEFAULT_CHARTS[name]
    pin = fetch_upstream.read_chart_pins()[name]
    with pytest.raises(fetch_upstream.FetchError) as e:
        fetch_upstream.fetch_chart(name, chart, pin, tmp_path, _helm(), tampered)
    msg = str(e.value)
    assert msg.startswith(
        f"chart-src/{fetch_upstream.archive_name(chart)}: refused: chart {name} {chart.version} differs from the "
        f"pinned chart files: {TAMPERED[name]} (changed: sha256 "
    ), msg
    assert msg.count("(changed") == 1 and pin.files_sha256 in msg and "\n" not in msg
    assert not (tmp_path / "chart-src" / fetch_upstream.archive_name(chart)).exists(), "nothing refused is kept"


def test_a_tampered_copy_already_present_is_fetched_again(repackaged: dict[str, str], tmp_path: pathlib.Path) -> None:
    chart, pin = versions.DEFAULT_CHARTS["volcano"], fetch_upstream.read_chart_pins()["volcano"]
    out = tmp_path / "chart-src" / fetch_upstream.archive_name(chart)
    out.parent.mkdir()
    out.write_bytes(_repackaged(_src() / "chart-src" / out.name, TAMPERED["volcano"]))
    note = fetch_upstream.fetch_chart("volcano", chart, pin, tmp_path, _helm(), repackaged)
    assert "already present" not in note and "files verified" in note
    assert chartdigest.files_digest(chartdigest.chart_files(out)) == pin.files_sha256


@pytest.mark.parametrize("name", list(TAMPERED))
def test_a_maintainer_records_an_unpinned_published_digest_once_then_it_is_pinned(
    name: str, repackaged: dict[str, str], tampered: dict[str, str], tmp_path: pathlib.Path
) -> None:
    # GIVEN a pins file whose published digest for the chart is unknown, and a source serving other bytes
    pins = tmp_path / "chart-pins.tsv"
    rows = fetch_upstream.CHART_PINS.read_text().splitlines(keepends=True)
    pins.write_text(
        "".join(r if not r.startswith(name + "\t") else "\t".join([*r.split("\t")[:4], "-", "x\n"]) for r in rows)
    )
    chart, pin = versions.DEFAULT_CHARTS[name], fetch_upstream.read_chart_pins(pins)[name]
    # WHEN the files differ THEN even --record-published refuses and records nothing
    with pytest.raises(fetch_upstream.FetchError, match="differs from the pinned chart files"):
        fetch_upstream.fetch_chart(name, chart, pin, tmp_path / "a", _helm(), tampered, record=True, pins_file=pins)
    assert fetch_upstream.read_chart_pins(pins)[name].published_sha256 == "-"
    # WHEN the files are the pinned ones THEN the archive's sha256 is written into the pins file
    note = fetch_upstream.fetch_chart(
        name, chart, pin, tmp_path / "b", _helm(), repackaged, record=True, pins_file=pins
    )
    assert "recorded in scripts/chart-pins.tsv" in note
    archive = tmp_path / "b" / "chart-src" / fetch_upstream.archive_name(chart)
    recorded = fetch_upstream.read_chart_pins(pins)[name]
    assert recorded.published_sha256 == fetch_upstream.sha256_of(archive) != recorded.sha256
    # and a later fetch names those bytes, while a pinned digest is never overwritten
    assert "published archive" in fetch_upstream.fetch_chart(name, chart, recorded, tmp_path / "c", _helm(), repackaged)
    with pytest.raises(fetch_upstream.FetchError, match="no row for"):
        fetch_upstream.record_published(name, "0" * 64, pins)


def test_an_archive_that_is_not_what_the_repository_index_lists_is_refused(
    mirror: dict[str, str], tmp_path: pathlib.Path
) -> None:
    root = tmp_path / "mirror"
    upstream_mirror.build(_src(), root, charts=["volcano"], files=False)
    chart = versions.DEFAULT_CHARTS["volcano"]
    [archive] = (root / "helm").rglob(fetch_upstream.archive_name(chart))
    archive.write_bytes(_repacked(archive))  # the index.yaml still gives the original digest
    server, base = upstream_mirror.serve(root)
    try:
        with pytest.raises(fetch_upstream.FetchError) as e:
            fetch_upstream.fetch_chart(
                "volcano",
                chart,
                fetch_upstream.read_chart_pins()["volcano"],
                tmp_path / "out",
                _helm(),
                upstream_mirror.mirror_env(base),
            )
    finally:
        server.shutdown()
    assert "refused" in str(e.value) and "index.yaml" in str(e.value), e.value


@pytest.mark.parametrize("name", ["karpenter", "volcano"])
def test_a_version_the_repository_does_not_have_is_a_clear_error(
    name: str, mirror: dict[str, str], tmp_path: pathlib.Path
) -> None:
    chart = dataclasses.replace(versions.DEFAULT_CHARTS[name], version="9.9.9")
    pin = dataclasses.replace(fetch_upstream.read_chart_pins()[name], version="9.9.9")
    with pytest.raises(fetch_upstream.FetchError) as e:
        fetch_upstream.fetch_chart(name, chart, pin, tmp_path, _helm(), mirror)
    msg = str(e.value)
    assert msg.startswith(f"chart-src/{name}-9.9.9.tgz: helm pull failed: "), msg
    assert "not found" in msg and "--version 9.9.9" in msg and "fix:" in msg, msg


def test_a_pin_for_another_version_is_refused_before_any_download(tmp_path: pathlib.Path) -> None:
    chart = versions.DEFAULT_CHARTS["volcano"]
    pin = dataclasses.replace(fetch_upstream.read_chart_pins()["volcano"], version="0.0.1")
    with pytest.raises(
        fetch_upstream.FetchError, match="chart-pins.tsv pins volcano 0.0.1 but ekstrain/facts/versions.py"
    ):
        fetch_upstream.fetch_chart("volcano", chart, pin, tmp_path, "/nonexistent/helm", {})


def test_a_changed_raw_file_is_refused(tmp_path: pathlib.Path) -> None:
    pin = fetch_upstream.read_file_pins()[0]
    served = tmp_path / "mirror" / "raw" / pin.repo / pin.commit / pin.path
    served.parent.mkdir(parents=True)
    served.write_bytes((_src() / pin.dest).read_bytes() + b"# changed\n")
    server, base = upstream_mirror.serve(tmp_path / "mirror")
    try:
        with pytest.raises(fetch_upstream.FetchError) as e:
            fetch_upstream.fetch_file(pin, tmp_path / "out", f"{base}/raw")
    finally:
        server.shutdown()
    assert str(e.value).startswith(f"{pin.dest}: refused: sha256 ") and pin.sha256 in str(e.value)
    assert not (tmp_path / "out" / pin.dest).exists()


def test_the_command_line_names_each_failure_and_exits_1(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "empty-mirror"
    root.mkdir()
    server, base = upstream_mirror.serve(root)
    try:
        proc = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "fetch_upstream.py"), str(tmp_path / "out"), "--only", "slurm"],
            env={**os.environ, **upstream_mirror.mirror_env(base)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        server.shutdown()
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR ")]
    assert [e.split(":", 1)[0] for e in errors] == ["ERROR chart-src/slurm-1.2.1.tgz"], proc.stderr
    assert "oci://127.0.0.1:" in errors[0] and "fix:" in errors[0]


def test_the_mirror_stores_an_oci_chart_as_helm_push_does(tmp_path: pathlib.Path) -> None:
    """Config + one chart layer with helm's media types, the archive bytes as the layer, the version as tag."""
    chart = versions.DEFAULT_CHARTS["slurm"]
    upstream_mirror.build(_src(), tmp_path, charts=["slurm"], files=False)
    layout = tmp_path / "oci" / chart.chart.removeprefix("oci://")
    [entry] = json.loads((layout / "index.json").read_text())["manifests"]
    assert entry["annotations"][upstream_mirror.REF_NAME] == chart.version
    manifest = json.loads((layout / "blobs" / entry["digest"].replace(":", "/")).read_bytes())
    assert manifest["config"]["mediaType"] == "application/vnd.cncf.helm.config.v1+json"
    [layer] = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
    archive = _src() / "chart-src" / fetch_upstream.archive_name(chart)
    assert layer["digest"] == f"sha256:{fetch_upstream.sha256_of(archive)}"


def test_ekstrain_upstream_fetch_with_mirror_fills_the_projects_upstream_directory(
    mirror: dict[str, str], tmp_path: pathlib.Path
) -> None:
    """GIVEN an empty directory (a wheel user's project) WHEN `ekstrain upstream fetch --mirror URL` THEN the
    pinned files arrive in ./.upstream, verified by the pins shipped in the package (the mirror by flag only)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UPSTREAM_", "EKSTRAIN_UPSTREAM"))}
    base = mirror["UPSTREAM_OCI_MIRROR"]
    only = ["--only", "crds/kubeflow.org/mpijob.yaml", "--only", "keda"]
    proc = subprocess.run(
        [sys.executable, "-m", "ekstrain", "upstream", "fetch", "--mirror", base, *only],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pins = {p.dest: p for p in fetch_upstream.read_file_pins()}
    got = tmp_path / ".upstream" / "crds/kubeflow.org/mpijob.yaml"
    assert fetch_upstream.sha256_of(got) == pins["crds/kubeflow.org/mpijob.yaml"].sha256
    keda = tmp_path / ".upstream" / "chart-src" / fetch_upstream.archive_name(versions.DEFAULT_CHARTS["keda"])
    assert keda.is_file() and f"upstream files ready in {tmp_path / '.upstream'}" in proc.stdout
    # AND a mirror that is no URL is refused before anything is fetched: an error line, then its fix
    proc = subprocess.run(
        [sys.executable, "-m", "ekstrain", "upstream", "fetch", "--mirror", "ftp:x", "--dest", "fresh"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and not (tmp_path / "fresh").exists()
    error, fix = proc.stderr.strip().splitlines()
    assert error.startswith("error: ekstrain upstream fetch: --mirror 'ftp:x'") and fix.startswith("fix: ")
