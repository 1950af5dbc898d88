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
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import REPO

from ekstrain import validation, versions
from ekstrain.helm import helm_binary
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
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    root = tmp_path_factory.mktemp("mirror")
    upstream_mirror.build(_src(), root)
    server, base = upstream_mirror.serve(root)
    yield upstream_mirror.mirror_env(base)
    server.shutdown()


@pytest.fixture(scope="module")
def fetched(
    mirror: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[pathlib.Path, subprocess.CompletedProcess[str]]:
    dest = tmp_path_factory.mktemp("fetched") / ".upstream"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "fetch_upstream.py"), str(dest)],
        env={**os.environ, **mirror},
        capture_output=True,
        text=True,
        timeout=900,
    )
    return dest, proc


def _repacked(archive: pathlib.Path) -> bytes:
    """The same chart files, gzip'd again with another timestamp: a valid archive with other bytes."""
    return gzip.compress(gzip.decompress(archive.read_bytes()), mtime=1)


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


def test_a_second_run_downloads_nothing(
    fetched: tuple[pathlib.Path, subprocess.CompletedProcess[str]], mirror: dict[str, str]
) -> None:
    dest, _ = fetched
    out = io.StringIO()
    assert fetch_upstream.fetch(dest, env=mirror, out=out) == []
    lines = [line for line in out.getvalue().splitlines() if line.startswith("  ")]
    assert lines and all("already present" in line for line in lines), out.getvalue()


def test_the_dev_stack_renders_from_the_fetched_directory(
    fetched: tuple[pathlib.Path, subprocess.CompletedProcess[str]], tmp_path: pathlib.Path
) -> None:
    dest, proc = fetched
    assert proc.returncode == 0, proc.stderr
    env = {**os.environ, "EKSTRAIN_UPSTREAM_DIR": str(dest), "EKSTRAIN_CACHE_DIR": str(tmp_path / "cache")}
    render = subprocess.run(
        [sys.executable, "-m", "ekstrain.infra.render", "--stack", "dev", "--out", str(tmp_path / "out")],
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


@pytest.fixture(scope="module")
def tampered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A mirror serving other (valid, self-consistent) archives for karpenter-crd (OCI) and volcano (repository)."""
    src = tmp_path_factory.mktemp("tampered-src")
    (src / "chart-src").mkdir()
    for name in ("karpenter-crd", "volcano"):
        file = fetch_upstream.archive_name(versions.DEFAULT_CHARTS[name])
        (src / "chart-src" / file).write_bytes(_repacked(_src() / "chart-src" / file))
    root = tmp_path_factory.mktemp("tampered-mirror")
    upstream_mirror.build(src, root, charts=["karpenter-crd", "volcano"], files=False)
    server, base = upstream_mirror.serve(root)
    yield upstream_mirror.mirror_env(base)
    server.shutdown()


@pytest.mark.parametrize("name", ["karpenter-crd", "volcano"])
def test_an_archive_that_is_not_the_pinned_one_is_refused(
    name: str, tampered: dict[str, str], tmp_path: pathlib.Path
) -> None:
    chart = versions.DEFAULT_CHARTS[name]
    pin = fetch_upstream.read_chart_pins()[name]
    with pytest.raises(fetch_upstream.FetchError) as e:
        fetch_upstream.fetch_chart(name, chart, pin, tmp_path, _helm(), tampered)
    msg = str(e.value)
    assert msg.startswith(f"chart-src/{fetch_upstream.archive_name(chart)}: refused: sha256 "), msg
    assert pin.sha256 in msg and "scripts/chart-pins.tsv" in msg and "\n" not in msg
    assert not (tmp_path / "chart-src" / fetch_upstream.archive_name(chart)).exists(), "nothing refused is kept"


@pytest.mark.parametrize("name", ["karpenter-crd", "volcano"])
def test_a_maintainer_records_an_unpinned_published_digest_once_then_it_is_pinned(
    name: str, tampered: dict[str, str], tmp_path: pathlib.Path
) -> None:
    # GIVEN a pins file whose published digest for the chart is unknown, and a source serving other bytes
    pins = tmp_path / "chart-pins.tsv"
    rows = fetch_upstream.CHART_PINS.read_text().splitlines(keepends=True)
    pins.write_text(
        "".join(r if not r.startswith(name + "\t") else "\t".join([*r.split("\t")[:3], "-", "x\n"]) for r in rows)
    )
    chart, pin = versions.DEFAULT_CHARTS[name], fetch_upstream.read_chart_pins(pins)[name]
    # WHEN fetched without --record-published THEN refused; WITH it THEN accepted and written into the pins file
    with pytest.raises(fetch_upstream.FetchError):
        fetch_upstream.fetch_chart(name, chart, pin, tmp_path / "a", _helm(), tampered, pins_file=pins)
    note = fetch_upstream.fetch_chart(name, chart, pin, tmp_path / "b", _helm(), tampered, record=True, pins_file=pins)
    assert "recorded in scripts/chart-pins.tsv" in note
    archive = tmp_path / "b" / "chart-src" / fetch_upstream.archive_name(chart)
    recorded = fetch_upstream.read_chart_pins(pins)[name]
    assert recorded.published_sha256 == fetch_upstream.sha256_of(archive) != recorded.sha256
    # and a later strict fetch accepts those bytes, while a pinned digest is never overwritten
    assert "published archive" in fetch_upstream.fetch_chart(name, chart, recorded, tmp_path / "c", _helm(), tampered)
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
    with pytest.raises(fetch_upstream.FetchError, match="chart-pins.tsv pins volcano 0.0.1 but ekstrain/versions.py"):
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
