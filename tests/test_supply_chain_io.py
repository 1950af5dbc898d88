"""Supply chain and bad input, the I/O side: archives, caches, special files and concurrent or failed writes.

Generated corpora, each counted on the test output (``corpus <class>: N cases, ...``):

- archives: a chart archive with one tampered member per tar member type helm reads as a file (links, devices,
  FIFOs, sparse, GNU and unknown type flags), a path outside the chart, an oversized file, a duplicate with other
  bytes: every one refused by the chart digest and by ``fetch-upstream``'s verification, naming chart and member;
  the valid and borderline ones (directories, ``./`` prefixes, identical duplicates) accepted.
- caches: planted pickles (which would run a command when unpickled), truncated, edited, re-keyed, misshapen and
  special-file entries for every cache reader (memoised values, render replays, helm renders): nothing runs,
  each is recomputed with one warning line, and a replay never writes what its hashes do not match.
- special files: a FIFO (and a device, a directory) wherever a file is read: render and job render
  ``--stack-file``, the lock file, a workload file, a timeline mix file, a build directory: one clean line,
  never a hang (each call runs under a watchdog).
- concurrency and half-done writes: ``--lock write`` of different stacks at once, ``job render --out`` whose
  second file cannot be written, a write failing half-way through the renames, damaged build directories and
  mirror indexes.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import multiprocessing
import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import tarfile
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from conftest import REPO
from support import trees

from ekstrain.cli import main as cli
from ekstrain.cli import render as render_cli
from ekstrain.files import inputs_guard, outputs
from ekstrain.infra import replay
from ekstrain.infra.verify import charts
from ekstrain.tooling import chartdigest, lock, validation
from ekstrain.tooling import upstream as fetch_upstream  # the fetcher (scripts/fetch_upstream.py is its wrapper)

WATCHDOG_SECONDS = 30
BUILD = pathlib.Path(__file__).parent / "data" / "supply_chain_build"
JOB = pathlib.Path(__file__).parent / "data" / "supply_chain_job.yaml"


class CorpusCounts(UserWarning):
    """A corpus's counts: a warning so that `make test` (pytest-xdist, whose workers' stdout is not shown) lists
    them in its warnings summary."""


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    """A corpus's counts on the test output: the warnings summary, and stdout when run without xdist."""
    warnings.warn(CorpusCounts(line), stacklevel=2)
    with capsys.disabled():
        print(f"\n{line}")


class Outcome:
    def __init__(self) -> None:
        self.value: Any = None
        self.traceback: str | None = None
        self.hung = False
        self.stderr = ""


def watched(fn: Callable[[], Any], release: list[pathlib.Path] = ()) -> Outcome:  # type: ignore[assignment]
    """``fn()`` in a thread with a watchdog: a call still blocked after WATCHDOG_SECONDS is a hang (the FIFOs in
    ``release`` are then opened for writing, so the blocked thread ends and the test process does not hang)."""
    out = Outcome()
    err = io.StringIO()

    def run() -> None:
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                out.value = fn()
        except SystemExit as exc:
            out.value = exc.code
        except BaseException:  # noqa: BLE001 - the defect class the corpus counts
            out.traceback = traceback.format_exc()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WATCHDOG_SECONDS)
    if thread.is_alive():
        out.hung = True
        for fifo in release:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
    out.stderr = err.getvalue()
    return out


# ---- archives ---------------------------------------------------------------------------------------------------

CHART = "demo"
CLEAN = {
    "Chart.yaml": b"apiVersion: v2\nname: demo\nversion: 1.0.0\n",
    "values.yaml": b"replicas: 1\n",
    "templates/deployment.yaml": b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\n",
}
# What an attacker adds: a template granting cluster-admin, which helm renders whatever the member's type flag.
EVIL = (
    b"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: owned\nroleRef:\n"
    b"  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n"
    b"- kind: ServiceAccount\n  name: default\n  namespace: default\n"
)


def _info(name: str, type_: bytes = tarfile.REGTYPE, size: int = 0, **extra: Any) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = type_, size, 0o644
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def make_archive(path: pathlib.Path, extra: list[tuple[tarfile.TarInfo, bytes | None]] = ()) -> pathlib.Path:  # type: ignore[assignment]
    """A gzip'd chart archive of CLEAN, then the ``extra`` members (data written after the header, as helm's
    reader takes it, for any type flag)."""
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tgz:
        tgz.addfile(_info(f"{CHART}/", tarfile.DIRTYPE))
        for rel, data in CLEAN.items():
            tgz.addfile(_info(f"{CHART}/{rel}", size=len(data)), io.BytesIO(data))
        for info, data in extra:
            tgz.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _typed(type_: bytes, name: str = f"{CHART}/templates/owned.yaml") -> tuple[tarfile.TarInfo, bytes | None]:
    return _info(name, type_, size=len(EVIL)), EVIL


# Type flags Python's tarfile reads with their data (the unknown ones: not in tarfile.SUPPORTED_TYPES), each
# carrying the cluster-admin template; the ones it reads without data (links, devices, FIFOs) carry none.
WITH_DATA = [b"9", b"Q", b"D", b"V", b"M", b"N", b"A", b"I", b"E", b"Z", b"S"]
WITHOUT_DATA = [tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE]


def tampered_archives() -> list[tuple[str, list[tuple[tarfile.TarInfo, bytes | None]]]]:
    cases: list[tuple[str, list[tuple[tarfile.TarInfo, bytes | None]]]] = []
    cases += [(f"type {t.decode()!r}", [_typed(t)]) for t in WITH_DATA]
    # a Solaris extended header whose data is valid pax records: Python folds it into the next member, Go's reader
    # gives it to helm as a file
    record = b" comment=" + EVIL + b"\n"
    size = len(record) + len(str(len(record)))
    size += len(str(size)) - len(str(len(record)))
    pax = str(size).encode() + record
    after = _info(f"{CHART}/templates/after.yaml", size=len(EVIL))
    cases.append(
        (
            "type 'X' with pax records",
            [(_info(f"{CHART}/templates/owned.yaml", b"X", size=len(pax)), pax), (after, EVIL)],
        )
    )
    for t in WITHOUT_DATA:
        info = _info(f"{CHART}/templates/owned.yaml", t, linkname="../../../etc/passwd")
        cases.append((f"type {t.decode()!r}", [(info, None)]))
    big = 5 * 1024 * 1024 + 1
    cases += [
        ("path with ..", [(_info(f"{CHART}/../owned.yaml", size=len(EVIL)), EVIL)]),
        ("absolute path", [(_info(f"/{CHART}/templates/owned.yaml", size=len(EVIL)), EVIL)]),
        ("path with .. inside", [(_info(f"{CHART}/templates/../../x.yaml", size=len(EVIL)), EVIL)]),
        ("oversized file", [(_info(f"{CHART}/templates/big.yaml", size=big), b"#" * big)]),
        ("duplicate, other bytes", [(_info(f"{CHART}/templates/deployment.yaml", size=len(EVIL)), EVIL)]),
        ("second top-level directory", [(_info("other/templates/x.yaml", size=len(EVIL)), EVIL)]),
        ("file at the top", [(_info("owned.yaml", size=len(EVIL)), EVIL)]),
    ]
    return cases


def valid_archives() -> list[tuple[str, list[tuple[tarfile.TarInfo, bytes | None]]]]:
    same = CLEAN["templates/deployment.yaml"]
    return [
        ("clean", []),
        ("a subdirectory entry", [(_info(f"{CHART}/templates/", tarfile.DIRTYPE), None)]),
        ("duplicate, same bytes", [(_info(f"{CHART}/templates/deployment.yaml", size=len(same)), same)]),
        ("an empty file", [(_info(f"{CHART}/templates/NOTES.txt"), b"")]),
        ("a contiguous-file member", [(_info(f"{CHART}/README.md", tarfile.CONTTYPE, size=3), b"hi\n")]),
    ]


def _pin(archive: pathlib.Path) -> fetch_upstream.ChartPin:
    digest = chartdigest.files_digest(chartdigest.chart_files(archive))
    return fetch_upstream.ChartPin(CHART, "1.0.0", digest, "-", "-")


def test_a_tampered_archive_of_every_member_type_is_refused_naming_chart_and_member(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pin = _pin(make_archive(tmp_path / "clean.tgz"))
    refused = accepted = tracebacks = 0
    for i, (what, extra) in enumerate(tampered_archives()):
        archive = make_archive(tmp_path / f"t{i}.tgz", extra)
        # THEN the digest refuses it, naming the archive and the member
        with pytest.raises(chartdigest.NotAChart) as caught:
            chartdigest.chart_files(archive)
        member = extra[0][0].name
        assert str(archive) in str(caught.value) and member in str(caught.value), (what, caught.value)
        # AND fetch-upstream's verification refuses it in one line naming the chart
        try:
            fetch_upstream.verify_content(CHART, "1.0.0", archive, pin, tmp_path / "none.tsv")
            accepted += 1
        except fetch_upstream.FetchError as exc:
            assert "refused" in str(exc) and f"{CHART} 1.0.0" in str(exc) and "\n" not in str(exc), what
            refused += 1
        except Exception:  # noqa: BLE001 - counted
            tracebacks += 1
    for i, (what, extra) in enumerate(valid_archives()):
        archive = make_archive(tmp_path / f"v{i}.tgz", extra)
        files = chartdigest.chart_files(archive)
        assert set(CLEAN) <= set(files), what
        if what in ("clean", "a subdirectory entry", "duplicate, same bytes"):
            fetch_upstream.verify_content(CHART, "1.0.0", archive, pin, tmp_path / "none.tsv")
    n = len(tampered_archives())
    report(
        capsys,
        f"corpus archives: {n} tampered ({refused} refused, {accepted} accepted, {tracebacks} tracebacks), "
        f"{len(valid_archives())} valid accepted",
    )
    assert refused == n and accepted == 0 and tracebacks == 0


def test_the_cluster_admin_template_in_a_type_9_member_no_longer_passes_the_pin(tmp_path: pathlib.Path) -> None:
    """The defect as found: a type '9' member helm reads as templates/owned.yaml left the files digest unchanged,
    so the tampered archive was stored as "files verified"."""
    clean = make_archive(tmp_path / "clean.tgz")
    tampered = make_archive(tmp_path / "tampered.tgz", [_typed(b"9")])
    pin = _pin(clean)
    with pytest.raises(fetch_upstream.FetchError, match=r"templates/owned\.yaml.*tar type '9'"):
        fetch_upstream.verify_content(CHART, "1.0.0", tampered, pin, tmp_path / "none.tsv")


@pytest.mark.skipif(validation.upstream_dir() is None, reason="upstream chart archives absent")
def test_every_pinned_reference_archive_is_still_accounted_for() -> None:
    """The refusals above cost no real chart: every reference archive (one carries a subchart twice) is read."""
    upstream = validation.upstream_dir()
    assert upstream is not None
    archives = sorted((upstream / "chart-src").glob("*.tgz"))
    assert archives
    for archive in archives:
        assert chartdigest.chart_files(archive)


# ---- caches -----------------------------------------------------------------------------------------------------


class _Planted:
    """Unpickling this runs ``touch <marker>``: what a planted cache file would do under pickle."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def cache(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    validation._WARNED.clear()
    return tmp_path


def damaged_bodies(marker: pathlib.Path, key: str, good: bytes) -> list[tuple[str, bytes | None]]:
    """(what, file bytes) of damaged entries for ``key`` whose good file is ``good`` (None: a FIFO, a directory)."""
    head, _, body = good.partition(b"\n")
    fmt, digest, _key = head.split(b" ")

    def with_header(new_body: bytes, key_: bytes = key.encode()) -> bytes:
        return b" ".join([fmt, hashlib.sha256(new_body).hexdigest().encode(), key_]) + b"\n" + new_body

    evil = pickle.dumps(_Planted(marker))
    return [
        ("a planted pickle", evil),
        ("a planted pickle behind a valid header", with_header(evil)),
        ("empty", b""),
        ("truncated", good[: len(good) // 2]),
        ("truncated body, old header", good[:-3]),
        ("an object added, old header", head + b"\n" + body[:-1] + b',"extra":1}'),
        ("header only", head + b"\n"),
        ("another key's entry", with_header(body, b"x" * 40)),
        ("not JSON, valid header", with_header(b"\x80\x04\x95not json")),
        ("an unknown tag, valid header", with_header(b'{"\\u0000":"os.system","v":"touch x"}')),
        ("a tag with extra keys", with_header(b'{"\\u0000":"tuple","v":[],"w":1}')),
        ("a tuple of a string", with_header(b'{"\\u0000":"tuple","v":"abc"}')),
        ("bad base64", with_header(b'{"\\u0000":"bytes","v":"***"}')),
        ("deeply nested", with_header(b"[" * 100_000 + b"]" * 100_000)),
        ("binary garbage", bytes(range(256)) * 4),
        ("a FIFO", None),
        ("a directory", None),
    ]


def _plant(path: pathlib.Path, data: bytes | None, what: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if data is not None:
        path.write_bytes(data)
    elif what == "a FIFO":
        os.mkfifo(path)
    else:
        path.mkdir()


def test_a_planted_or_damaged_memo_entry_runs_nothing_and_is_recomputed_with_one_warning(
    cache: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = cache / "ran"
    key = "check-" + "a" * 40
    value = {("a", "b"): [1, 2.5, None, True, "s", b"\x00\xff", {"\u0000": 1}], "k": ({1, 2}, (3,))}
    assert validation.cached(key, lambda: value) == value
    good = validation.entry_path(key).read_bytes()
    assert validation.cached(key, lambda: pytest.fail("served from the cache")) == value
    cases = damaged_bodies(marker, key, good)
    ran = wrong = tracebacks = hangs = warned = 0
    for what, data in cases:
        path = validation.entry_path(key)
        _plant(path, data, what)
        validation._WARNED.clear()
        computed: list[int] = []

        def compute(computed: list[int] = computed) -> Any:
            computed.append(1)
            return value

        out = watched(lambda compute=compute: validation.cached(key, compute), [path])  # type: ignore[misc]
        hangs += out.hung
        tracebacks += out.traceback is not None
        ran += marker.exists()
        wrong += out.value != value or computed != [1]
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        warned += len(lines) == 1 and lines[0].startswith("warning: cache entry") and "recomputed" in lines[0]
        assert out.traceback is None, (what, out.traceback)
        assert len(lines) == 1, (what, out.stderr)
    # the old pickle file name is never read at all
    (validation.cache_dir() / f"{key}.pickle").write_bytes(pickle.dumps(_Planted(marker)))
    shutil.rmtree(validation.entry_path(key), ignore_errors=True)
    assert validation.cached(key, lambda: 7) == 7 and not marker.exists()
    report(
        capsys,
        f"corpus caches (memo): {len(cases)} planted/damaged entries: {ran} ran code, {wrong} wrong answers, "
        f"{tracebacks} tracebacks, {hangs} hangs, {warned} warned in one line",
    )
    assert ran == wrong == tracebacks == hangs == 0 and warned == len(cases)


def test_a_misshapen_crd_schema_entry_is_recomputed(cache: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry of valid JSON and hash but not the shape crd_schemas holds (a forged entry) is not served."""
    monkeypatch.setattr(validation, "_upstream_crds", lambda: ("d" * 32, []))
    validation._crd_schemas.cache_clear()
    key = f"crd-schemas-{'d' * 32}"
    validation.store_entry(validation.entry_path(key), key, {("v1", "X"): "not a schema"})
    try:
        assert validation._crd_schemas() == {}
    finally:
        validation._crd_schemas.cache_clear()


@pytest.mark.parametrize(
    ("forged", "valid"),
    [
        ([("../../escaped.yaml", "kind: ClusterRoleBinding\n")], charts._plain_files),
        ([("a/b.yaml", "x")], charts._plain_files),
        ([("..", "x")], charts._plain_files),
        ({"not": "a list"}, charts._plain_files),
        ([1, 2], lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v)),
        ("true", lambda v: isinstance(v, bool)),
    ],
)
def test_a_forged_entry_of_another_shape_is_recomputed_never_used(cache: pathlib.Path, forged: Any, valid: Any) -> None:
    """An entry with a valid header and hash (a forger can recompute it) but not the shape its reader expects: the
    chart files cache naming a path outside the output, a problem list of numbers, a string for a flag."""
    key = "helm/files-redacted-" + "f" * 40
    validation.store_entry(validation.entry_path(key), key, forged)
    assert validation.read_entry(validation.entry_path(key), key) == forged
    assert validation.cached(key, lambda: "recomputed", valid=valid) == "recomputed"


def _saved_render(out: pathlib.Path, key: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "SUMMARY.md").write_text("0 problems\n")
    (out / "charts").mkdir(exist_ok=True)
    (out / "charts" / "Deployment-a.yaml").write_text("kind: Deployment\n")
    reads = replay.start(out)
    replay.save(key, reads, out, "summary", [], 2, 1.0)


def test_a_replay_never_writes_what_its_hashes_do_not_match(
    cache: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = cache / "ran"
    key = "r" * 40
    _saved_render(cache / "first", key)
    path = replay._entry(key)
    good = path.read_bytes()
    assert replay.load(key, cache / "ok") is not None
    assert (cache / "ok" / "charts" / "Deployment-a.yaml").read_text() == "kind: Deployment\n"
    head, _, body = good.partition(b"\n")
    entry = json.loads(body)

    def rehashed(doc: Any) -> bytes:
        new = json.dumps(doc).encode()
        return b" ".join([head.split(b" ")[0], hashlib.sha256(new).hexdigest().encode(), key.encode()]) + b"\n" + new

    def file_changed() -> Any:  # an object added to a cached render, the entry's hash recomputed, the file's not
        doc = json.loads(body)
        item = doc["files"]["charts/Deployment-a.yaml"]
        item[1]["v"] = "a2luZDogRGVwbG95bWVudAotLS0Ka2luZDogQ2x1c3RlclJvbGVCaW5kaW5nCg=="
        return doc

    def file_added() -> Any:  # a new file whose recorded hash is not its content's
        doc = json.loads(body)
        doc["files"]["charts/ClusterRoleBinding-x.yaml"] = ["0" * 64, {"\u0000": "bytes", "v": "eA=="}]
        return doc

    def escaping() -> Any:
        doc = json.loads(body)
        data = b"x"
        doc["files"]["../../escaped.yaml"] = [hashlib.sha256(data).hexdigest(), {"\u0000": "bytes", "v": "eA=="}]
        return doc

    cases = [*damaged_bodies(marker, key, good)]
    cases += [
        ("a rendered file edited, entry rehashed", rehashed(file_changed())),
        ("a rendered file added, entry rehashed", rehashed(file_added())),
        ("a path outside the output, entry rehashed", rehashed(escaping())),
        ("not a render entry, rehashed", rehashed({"files": []})),
        ("problems not strings, rehashed", rehashed({**entry, "problems": [1]})),
    ]
    served = tracebacks = hangs = warned = 0
    for i, (what, data) in enumerate(cases):
        _plant(path, data, what)
        validation._WARNED.clear()
        target = cache / f"out{i}"
        out = watched(lambda target=target: replay.load(key, target), [path])  # type: ignore[misc]
        hangs += out.hung
        tracebacks += out.traceback is not None
        served += out.value is not None or (target.exists() and any(target.rglob("*")))
        warned += out.stderr.count("warning: cache entry") == 1
        assert out.traceback is None and out.value is None, (what, out.traceback, out.value)
    assert not (cache / "escaped.yaml").exists() and not marker.exists()
    report(
        capsys,
        f"corpus caches (replay): {len(cases)} planted/damaged entries: {served} served, {int(marker.exists())} ran "
        f"code, {tracebacks} tracebacks, {hangs} hangs, {warned} warned in one line",
    )
    assert served == tracebacks == hangs == 0 and warned == len(cases)


def test_a_damaged_cached_helm_render_is_rendered_again(
    cache: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A truncated cached render (which made a valid stack fail with invented problems) or one with an object
    added (which reached charts/ with 0 problems) is detected by its recorded sha256 and helm runs again."""
    rendered = "---\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: Service\nmetadata:\n  name: b\n"
    runs: list[int] = []
    key = "h" * 40
    release = charts.Release("g", "r", "demo", "1.0.0", "ns", {})
    monkeypatch.setattr(charts, "_args_and_key", lambda *a, **k: (["r", "x"], "{}", key))
    monkeypatch.setattr(charts, "helm_binary", lambda: "helm")

    def fake_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        runs.append(1)
        return subprocess.CompletedProcess(args, 0, rendered, "")

    monkeypatch.setattr(charts.subprocess, "run", fake_run)
    assert charts.template(release, "1.34") == rendered and runs == [1]
    assert charts.template(release, "1.34") == rendered and runs == [1]  # served from the cache
    path = validation.cache_root() / "helm" / f"{key}.entry.yaml"
    good = path.read_bytes()
    head = good.partition(b"\n")[0]
    cases = [
        ("truncated", good[: len(good) - 30]),
        ("an object added", good + b"---\nkind: ClusterRoleBinding\nmetadata:\n  name: owned\n"),
        ("the old format, no header", rendered.encode()),
        ("an object added, header of another key", head.replace(key.encode(), b"k" * 40) + b"\n" + rendered.encode()),
        ("a FIFO", None),
        ("not UTF-8 behind a valid header", None),
    ]
    wrong = tracebacks = hangs = 0
    for what, data in cases:
        if what.startswith("not UTF-8"):
            bad = b"\xff\xfe"
            data = head.split(b" ")[0] + b" " + hashlib.sha256(bad).hexdigest().encode() + b" " + key.encode()
            data += b"\n" + bad
        _plant(path, data, what)
        validation._WARNED.clear()
        before = len(runs)
        out = watched(lambda: charts.template(release, "1.34"), [path])
        hangs += out.hung
        tracebacks += out.traceback is not None
        wrong += out.value != rendered or len(runs) != before + 1
        assert out.stderr.count("warning: cache entry") == 1, (what, out.stderr)
    report(
        capsys,
        f"corpus caches (helm renders): {len(cases)} damaged: {wrong} served wrong, {tracebacks} tracebacks, "
        f"{hangs} hangs",
    )
    assert wrong == tracebacks == hangs == 0


DESERIALISERS = {"pickle", "marshal", "shelve", "dill", "cloudpickle", "joblib", "jsonpickle"}


def test_no_module_of_the_program_imports_a_deserialiser_that_can_run_code() -> None:
    """Nothing the program reads from disk goes through pickle (or marshal, shelve, ...), nor YAML's full
    loader: a cache restored from another branch is data, never code."""
    found = []
    roots = [REPO / d for d in ("ekstrain", "components", "infra", "stacks", "assembly", "cli", "scripts")]
    seen: set[pathlib.Path] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            real = path.resolve()
            if real in seen:
                continue
            seen.add(real)
            for node in trees.nodes(trees.parse(real.read_text(), str(path))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name.split(".")[0] for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module.split(".")[0]]
                found += [f"{path.relative_to(REPO)}: imports {n}" for n in names if n in DESERIALISERS]
                if isinstance(node, ast.keyword) and node.arg == "Loader":
                    text = ast.unparse(node.value)
                    if any(u in text for u in ("FullLoader", "UnsafeLoader", "yaml.Loader", "CLoader")):
                        found.append(f"{path.relative_to(REPO)}: yaml Loader={text}")
    assert found == []


# ---- special files ----------------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(REPO / name, root / name)
    return root


JOB_ARGS = [
    "job", "render", "--scheduler", "volcano", "--partition", "gpu-h100", "--nodes", "2", "--model", "llama3-8b",
    "--image", "nvcr.io/nvidia/pytorch:25.01-py3", "--global-batch", "256", "--seq-len", "4096",
]  # fmt: skip


def _special(path: pathlib.Path, kind: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    else:  # a character device that never ends
        path.symlink_to("/dev/zero")
    return path


def special_file_cases(
    root: pathlib.Path,
) -> Iterator[tuple[str, pathlib.Path, Callable[[], Any], str]]:
    """(what, the special path, the call reading it, what its refusal must name)."""
    for kind in ("fifo", "dev", "dir"):
        base = root / kind
        stack = _special(base / "stacks" / "Pulumi.prod.yaml", kind)
        yield (
            f"render --stack-file ({kind})",
            stack,
            lambda s=stack, b=base: render_cli.main(["--stack", "prod", "--stack-file", str(s), "--out", str(b / "o")]),
            "--stack-file" if kind != "dir" else "Pulumi.<stack>.yaml",
        )
        yield (
            f"job render --stack-file ({kind})",
            stack,
            lambda s=stack: cli.main([*JOB_ARGS, "--stack-file", str(s)]),
            "--stack-file" if kind != "dir" else "Pulumi.<stack>.yaml",
        )
        if kind != "dir":  # a directory of workload files is read recursively (valid input)
            workload = _special(base / "workloads" / "job.yaml", kind)
            yield (
                f"simulate workload file ({kind})",
                workload,
                lambda w=workload: cli.main(["simulate", "--stack", "prod", "--build", str(BUILD), str(w)]),
                str(workload),
            )
        mix = _special(base / "mix" / "mix.yaml", kind)
        yield (
            f"simulate --timeline mix file ({kind})",
            mix,
            lambda m=mix: cli.main(
                [
                    "simulate",
                    "--stack",
                    "prod",
                    "--stack-file",
                    str(REPO / "Pulumi.prod.yaml"),
                    "--build",
                    str(BUILD),
                    "--timeline",
                    str(m),
                ]
            ),  # fmt: skip
            str(mix),
        )
        build = base / "build"
        shutil.copytree(BUILD, build)
        target = next(build.glob("manifests/*/NodePool-*.yaml"))
        target.unlink()
        _special(target, kind)
        yield (
            f"simulate --build with a special NodePool file ({kind})",
            target,
            lambda b=build: cli.main(["simulate", "--stack", "prod", "--build", str(b), str(JOB)]),
            "render the stack again",
        )
        project = base / "project"
        project.mkdir()
        for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
            shutil.copy(REPO / name, project / name)
        lock_file = _special(project / lock.LOCK_NAME, kind)
        yield (
            f"render with {lock.LOCK_NAME} ({kind})",
            lock_file,
            lambda p=project: render_cli.main(
                ["--stack", "dev", "--stack-file", str(p / "Pulumi.dev.yaml"), "--out", str(p / "out")]
            ),
            "--lock",
        )


def test_a_special_file_where_a_file_is_read_is_one_clean_line_never_a_hang(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = list(special_file_cases(tmp_path))
    hangs = tracebacks = unclean = 0
    for what, path, call, names in cases:
        out = watched(call, [path])
        if out.hung:
            hangs += 1
            continue
        tracebacks += out.traceback is not None
        errors = [ln for ln in out.stderr.splitlines() if ln.startswith(("error", "ekstrain"))]
        clean = out.value == 2 and errors and "Traceback" not in out.stderr and names in out.stderr
        unclean += not clean
        assert out.traceback is None, (what, out.traceback)
        assert clean, (what, out.value, out.stderr[-600:])
    report(
        capsys,
        f"corpus special files: {len(cases)} (FIFO, /dev/zero, directory; 6 readers): {hangs} hangs, "
        f"{tracebacks} tracebacks, {unclean} without one clean line naming the flag or file",
    )
    assert hangs == tracebacks == unclean == 0


def test_the_read_guard_reads_regular_files_and_bounds_them(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert inputs_guard.read_bytes(path, 100) == b"x" * 100
    with pytest.raises(inputs_guard.TooLarge):
        inputs_guard.read_bytes(path, 99)
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(inputs_guard.NotARegularFile, match="named pipe"):
        inputs_guard.read_bytes(fifo)
    with pytest.raises(inputs_guard.NotARegularFile, match="character device"):
        inputs_guard.read_bytes("/dev/zero")
    with pytest.raises(FileNotFoundError):
        inputs_guard.read_bytes(tmp_path / "absent")


# ---- concurrency and half-done writes ---------------------------------------------------------------------------


def _entry(release: str) -> lock.Entry:
    return lock.Entry(release, "chart 1.0", ())


def _write_stack(path: str, stack: str, rounds: int, start: Any) -> None:
    start.wait()
    for i in range(rounds):
        stale = lock.Lock(pathlib.Path(path))  # what a render read before its minutes of work: no other stack
        stale.with_stack(stack, {f"{stack}-{i}": _entry(f"{stack}--r")}).save()


def test_concurrent_lock_writes_of_different_stacks_keep_both(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two `--lock write` renders of different stacks at once: each loaded the lock before the other saved (the
    render loads it first and saves minutes later); both stacks' entries must be in the file after."""
    path = tmp_path / lock.LOCK_NAME
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    rounds = 25
    procs = [ctx.Process(target=_write_stack, args=(str(path), s, rounds, start)) for s in ("dev", "prod", "staging")]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    final = lock.load(path)
    report(
        capsys,
        f"corpus concurrency: 3 processes x {rounds} `--lock write` saves of different stacks: stacks kept "
        f"{sorted(final.stacks)}, partial files left {len(list(tmp_path.glob('.*')))}",
    )
    assert sorted(final.stacks) == ["dev", "prod", "staging"]
    assert all(list(final.stacks[s]) == [f"{s}-{rounds - 1}"] for s in final.stacks)
    assert not list(tmp_path.glob(".*"))


def test_a_stale_lock_saved_keeps_the_stack_another_render_recorded_meanwhile(tmp_path: pathlib.Path) -> None:
    path = tmp_path / lock.LOCK_NAME
    first, second = lock.load(path), lock.load(path)  # both renders start from an absent lock
    first.with_stack("dev", {"d": _entry("a")}).save()
    second.with_stack("prod", {"p": _entry("b")}).save()
    assert sorted(lock.load(path).stacks) == ["dev", "prod"]


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_job_render_out_writes_every_file_or_none(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*JOB_ARGS, "--stack-file", str(REPO / "Pulumi.prod.yaml")]
    out = tmp_path / "job.yaml"
    # GIVEN FILE.logs.sh is a directory (the second file cannot be written)
    (tmp_path / "job.yaml.logs.sh").mkdir()
    # WHEN rendered THEN it is refused and FILE is not left behind
    res = watched(lambda: cli.main([*argv, "--out", str(out)]))
    assert res.traceback is None and res.value == 2 and not out.exists(), res.stderr
    assert "job.yaml.logs.sh" in res.stderr
    (tmp_path / "job.yaml.logs.sh").rmdir()
    # AND written once, then a failure in the middle of the renames puts every old file back
    assert cli.main([*argv, "--out", str(out)]) == 0
    before = _tree(tmp_path)
    assert {"job.yaml", "job.yaml.logs.sh", "job.yaml.logs.query"} <= set(before)
    real = os.replace
    calls: list[int] = []

    def failing(src: Any, dst: Any) -> None:
        calls.append(1)
        if len(calls) == 4:  # after FILE was swapped in, while FILE.logs.query is
            raise OSError(28, "No space left on device", str(dst))
        real(src, dst)

    monkeypatch.setattr(outputs.os, "replace", failing)
    res = watched(lambda: cli.main([*argv, "--nodes", "4", "--out", str(out)]))
    monkeypatch.setattr(outputs.os, "replace", real)
    assert res.traceback is None and res.value == 2 and "nothing was written" in res.stderr, res.stderr
    assert _tree(tmp_path) == before
    report(capsys, "corpus half-done writes: 2 job render --out failures: 0 files left half-written")


def test_out_into_a_missing_directory_says_what_it_created(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "new" / "deeper" / "plan.json"
    outputs.write_file("--out", outputs.check_file("--out", target), "{}\n")
    err = capsys.readouterr().err
    assert f"created directory {tmp_path / 'new'}" in err and target.read_text() == "{}\n"
    outputs.write_file("--out", target, "{}\n")
    assert "created" not in capsys.readouterr().err  # nothing created: nothing said
    # AND a directory output (render --out DIR) whose parent is missing says so too
    out = tmp_path / "builds" / "prod"
    outputs.replace_dir(out, lambda staging: (staging / "SUMMARY.md").write_text("x"), by="--out")
    assert f"created directory {tmp_path / 'builds'}" in capsys.readouterr().err
    assert (out / "SUMMARY.md").read_text() == "x"


# ---- damaged build directories and mirror indexes ---------------------------------------------------------------

DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda b: b[: len(b) // 2],
    "not UTF-8": lambda b: b"\xff\xfe\x00" + b,
    "a list": lambda b: b"- a\n- b\n",
    "a string": lambda b: b"just text\n",
    "null": lambda b: b"null\n",
    "bad YAML": lambda b: b"{ [\n",
    "deep": lambda b: b"[" * 5000,
    "empty": lambda b: b"",
}


def _edited(data: bytes, how: str) -> bytes:
    doc = next((d for d in yaml.safe_load_all(data) if isinstance(d, dict)), {})
    if how == "spec a number":
        doc["spec"] = 5
    elif how == "metadata null":
        doc["metadata"] = None
    elif how == "spec null":
        doc["spec"] = None
    else:
        doc = {"kind": doc.get("kind", "NodePool")}
    return yaml.safe_dump(doc).encode()


def test_simulate_on_a_damaged_build_says_so_in_one_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted(p.relative_to(BUILD) for p in BUILD.rglob("*.yaml") if p.stat().st_size > 200)
    hows = [*DAMAGE, "spec a number", "metadata null", "spec null", "kind only"]
    tracebacks = hangs = cases = 0
    codes: dict[Any, int] = {}
    for rel in files:
        for how in hows:
            cases += 1
            build = tmp_path / f"b{cases}"
            shutil.copytree(BUILD, build)
            data = (build / rel).read_bytes()
            (build / rel).write_bytes(DAMAGE[how](data) if how in DAMAGE else _edited(data, how))
            argv = ["simulate", "--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--build"]
            out = watched(lambda b=build, argv=argv: cli.main([*argv, str(b), str(JOB)]))  # type: ignore[misc]
            hangs += out.hung
            tracebacks += out.traceback is not None
            codes[out.value] = codes.get(out.value, 0) + 1
            assert out.traceback is None, (str(rel), how, out.traceback)
            if out.value == 2:
                assert len(out.stderr.strip().splitlines()) == 1, (str(rel), how, out.stderr)
            shutil.rmtree(build)
    report(
        capsys,
        f"corpus damaged builds: {cases} (simulate, {len(files)} files x {len(hows)} damages): {tracebacks} "
        f"tracebacks, {hangs} hangs, exit codes {dict(sorted(codes.items(), key=str))}",
    )
    assert tracebacks == hangs == 0


INDEXES: list[tuple[str, Any]] = [
    ("null document", None),
    ("a list", []),
    ("a string", "text"),
    ("entries null", {"entries": None}),
    ("entries a list", {"entries": []}),
    ("the chart's entry null", {"entries": {CHART: None}}),
    ("the chart's entry a mapping", {"entries": {CHART: {"version": "1.0.0"}}}),
    ("a null version entry", {"entries": {CHART: [None]}}),
    ("a version entry a string", {"entries": {CHART: ["1.0.0"]}}),
    ("version null", {"entries": {CHART: [{"version": None}]}}),
    ("digest a number", {"entries": {CHART: [{"version": "1.0.0", "digest": 5}]}}),
]


def test_a_mirror_index_with_null_or_misshapen_entries_is_one_clean_line(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracebacks = 0
    for i, (what, doc) in enumerate(INDEXES):
        repo = tmp_path / f"repo{i}"
        repo.mkdir()
        (repo / "index.yaml").write_text(yaml.safe_dump(doc))
        try:
            got = fetch_upstream._index_digest(repo.as_uri(), CHART, "1.0.0")
            assert got is None, what  # a listed version without a usable digest vouches for nothing
        except fetch_upstream.FetchError as exc:
            assert "\n" not in str(exc) and "index.yaml" in str(exc), what
        except Exception:  # noqa: BLE001 - counted
            tracebacks += 1
    report(capsys, f"corpus mirror indexes: {len(INDEXES)} null or misshapen: {tracebacks} tracebacks")
    assert tracebacks == 0


def test_the_test_mirror_serves_a_damaged_oci_index_as_missing(tmp_path: pathlib.Path) -> None:
    from scripts import upstream_mirror

    for i, text in enumerate(['{"manifests": [null]}', "null", '{"manifests": null}', "{not json", "[1]"]):
        index = tmp_path / f"index{i}.json"
        index.write_text(text)
        assert upstream_mirror._manifests(index) == []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
