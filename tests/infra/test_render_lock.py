"""ekstrain.lock.json (ekstrain/tooling/lock.py): the no-op values check's answers kept with the project.

What a fresh clone gains (a cold render without ~340 helm runs) must never cost a wrong answer: a lock entry is
used only for the exact content it was computed from, `--lock check` fails on a stale lock, `--lock write`
records exactly this stack's current answers, and a broken file is refused with its path and the fix.
"""

from __future__ import annotations

import io
import json
import pathlib
import shutil
import tarfile
from collections.abc import Iterator

import pytest
from conftest import REPO, needs_upstream
from support.renders import Renders, programs_run_once

from ekstrain.cli import render as render_cli
from ekstrain.infra import render, replay
from ekstrain.infra.verify import charts
from ekstrain.tooling import lock, validation


def entry(release: str, *noop: str) -> lock.Entry:
    return lock.Entry(release, "chart 1.0", tuple(noop))


# ---- the file ------------------------------------------------------------------------------------------------


def test_an_absent_lock_is_empty_and_answers_nothing(tmp_path: pathlib.Path) -> None:
    empty = lock.load(tmp_path / lock.LOCK_NAME)
    assert empty.stacks == {} and empty.answer("k") is None


def test_write_then_load_round_trips_and_any_stack_answers_a_key(tmp_path: pathlib.Path) -> None:
    # GIVEN answers of two stacks written to the file
    path = tmp_path / lock.LOCK_NAME
    lock.Lock(path).with_stack("dev", {"k1": entry("a--a")}).with_stack("prod", {"k2": entry("b--b", "x.y")}).save()
    # WHEN it is read back
    back = lock.load(path)
    # THEN every entry is there, keyed by content: a key recorded under dev answers prod's render too
    assert back.stacks == {"dev": {"k1": entry("a--a")}, "prod": {"k2": entry("b--b", "x.y")}}
    assert back.answer("k2") == ("x.y",) and back.answer("k1") == ()
    # AND the text lists a stack's entries by release (what a reviewer reads in a pull request)
    assert json.loads(path.read_text())["format"] == lock.FORMAT
    assert not list(tmp_path.glob(".*.partial"))


def test_differences_name_missing_changed_and_stale_entries() -> None:
    recorded = lock.Lock(pathlib.Path("x")).with_stack(
        "prod", {"same": entry("a--a"), "changed": entry("b--b"), "gone": entry("c--c")}
    )
    computed = {"same": entry("a--a"), "changed": entry("b--b", "k"), "new": entry("d--d")}
    assert recorded.differences("prod", computed) == [
        "b--b: recorded [], computed ['k']",
        "d--d (chart 1.0): not recorded for these values",
        "c--c (chart 1.0): recorded for values this stack no longer has",
    ]
    assert recorded.differences("prod", {"same": entry("a--a"), "changed": entry("b--b"), "gone": entry("c--c")}) == []


def test_write_replaces_only_this_stacks_entries() -> None:
    before = (
        lock.Lock(pathlib.Path("x")).with_stack("dev", {"d": entry("a--a")}).with_stack("prod", {"old": entry("b")})
    )
    after = before.with_stack("prod", {"new": entry("b", "k")})
    assert after.stacks == {"dev": {"d": entry("a--a")}, "prod": {"new": entry("b", "k")}}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "not readable as JSON"),
        ('{"format": "other", "stacks": {}}', "not an ekstrain-lock-v1 file"),
        ('{"format": "ekstrain-lock-v1", "stacks": {"prod": []}}', "stacks.prod is not a mapping"),
        ('{"format": "ekstrain-lock-v1", "stacks": {"prod": {"k": {"noop": "x"}}}}', "stacks.prod.k.noop"),
    ],
)
def test_a_broken_lock_is_refused_with_its_path_and_the_fix(tmp_path: pathlib.Path, text: str, says: str) -> None:
    path = tmp_path / lock.LOCK_NAME
    path.write_text(text)
    with pytest.raises(lock.LockError) as refused:
        lock.load(path)
    assert says in str(refused.value) and str(path) in str(refused.value) and "make lock" in str(refused.value)


# ---- the key ---------------------------------------------------------------------------------------------------


@needs_upstream
def test_the_answer_key_changes_with_every_input_it_is_made_of() -> None:
    rel = charts.Release("g", "r", "nvidia-device-plugin", "0.20.0", "ns", {"a": 1})
    base = charts.noop_key(rel, "1.34", ["x/v1"])
    assert charts.noop_key(rel, "1.34", ["x/v1"]) == base
    others = {
        charts.noop_key(charts.Release("g", "r", "nvidia-device-plugin", "0.20.0", "ns", {"a": 2}), "1.34", ["x/v1"]),
        charts.noop_key(charts.Release("g", "r", "nvidia-device-plugin", "0.20.0", "ns2", {"a": 1}), "1.34", ["x/v1"]),
        charts.noop_key(charts.Release("g", "r2", "nvidia-device-plugin", "0.20.0", "ns", {"a": 1}), "1.34", ["x/v1"]),
        charts.noop_key(rel, "1.35", ["x/v1"]),
        charts.noop_key(rel, "1.34", []),
        charts.noop_key(charts.Release("g", "r", "dcgm-exporter", "4.8.1", "ns", {"a": 1}), "1.34", ["x/v1"]),
    }
    assert base not in others and len(others) == 6


# ---- the render ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _one_program_run() -> Iterator[None]:
    """Each test here renders dev several times with replays off (they patch the no-op check, not the program): the
    dev program runs once for the module (tests/support/renders.py)."""
    with programs_run_once():
        yield


@pytest.fixture
def project(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A Pulumi project of its own (Pulumi.yaml + the dev stack file) sharing the checkout's render cache."""
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(validation.cache_root()))
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")  # the tests patch the no-op check
    root = tmp_path / "project"
    root.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(REPO / name, root / name)
    return root


@pytest.fixture(scope="module")
def dev_lock(tmp_path_factory: pytest.TempPathFactory, renders: Renders) -> str:
    """ekstrain.lock.json as `--lock write` writes it for the dev stack (the real check, computed once for the
    module): the tests below start from it. After the session's --lock check render of dev, whose no-op answers
    the cache holds (keyed by content): the write computes nothing that render did not."""
    renders("dev", "--lock", "check")
    with pytest.MonkeyPatch.context() as patch:
        project = tmp_path_factory.mktemp("written") / "project"
        project.mkdir()
        for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
            shutil.copy(REPO / name, project / name)
        patch.setenv("EKSTRAIN_CACHE_DIR", str(validation.cache_root()))
        patch.setenv("EKSTRAIN_REPLAY", "0")
        assert render_dev(project, "--lock", "write") == 0
        return (project / lock.LOCK_NAME).read_text()


def render_dev(project: pathlib.Path, *extra: str) -> int:
    return render_cli.main(
        ["--stack", "dev", "--stack-file", str(project / "Pulumi.dev.yaml"), "--out", str(project / "out"), *extra]
    )


def refuse_helm_variants(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Patch the no-op check to record (and fail) any release it is asked to compute."""
    asked: list[str] = []

    def computed(release: charts.Release, *_: object) -> list[str]:
        asked.append(release.key)
        return []

    monkeypatch.setattr(charts, "noop_leaves", computed)
    return asked


@needs_upstream
def test_a_recorded_answer_replaces_the_helm_runs_and_is_what_the_render_reports(
    project: pathlib.Path, dev_lock: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the dev stack's answers written by --lock write (the real check, computed once)
    (project / lock.LOCK_NAME).write_text(dev_lock)
    recorded = lock.load(project / lock.LOCK_NAME)
    assert len(recorded.stacks["dev"]) == 7
    # AND one recorded answer changed by hand to name a key the chart would ignore
    path = project / lock.LOCK_NAME
    body = json.loads(path.read_text())
    key, nvidia = next((k, e) for k, e in body["stacks"]["dev"].items() if "nvidia" in e["release"])
    nvidia["noop"] = ["planted.key"]
    path.write_text(json.dumps(body))
    asked = refuse_helm_variants(monkeypatch)
    capsys.readouterr()
    # WHEN the stack renders with the lock (the default)
    assert render_dev(project) == 0
    # THEN no release was computed, and the (planted) recorded answer is what the render reports
    assert asked == []
    summary = (project / "out" / "SUMMARY.md").read_text()
    assert "values key 'planted.key' changes nothing" in summary
    assert "7 of 7 releases answered by ekstrain.lock.json" in capsys.readouterr().err
    # AND --lock check computes every answer and fails on the planted one, naming the release and the fix
    monkeypatch.undo()
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(validation.cache_root()))
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")
    assert render_dev(project, "--lock", "check") == 1
    summary = (project / "out" / "SUMMARY.md").read_text()
    assert (
        f"ekstrain.lock.json is not current for stack dev: {nvidia['release']}: recorded ['planted.key'], "
        "computed []; run `ekstrain render --stack dev --lock write` (in this checkout: `make lock STACK=dev`) and "
        "commit it" in summary
    )
    assert key in json.loads(path.read_text())["stacks"]["dev"]
    # AND the fix it names works: --lock write computes every answer (the planted one is not kept), then check passes
    assert render_dev(project, "--lock", "write") == 0
    assert json.loads(path.read_text())["stacks"]["dev"][key]["noop"] == []
    assert render_dev(project, "--lock", "check") == 0


@needs_upstream
def test_values_the_lock_has_not_seen_are_checked_and_write_drops_the_old_entry(
    project: pathlib.Path, dev_lock: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a lock whose entry for one release was recorded for other values (its key is not today's, and not only
    # its sizes differ: infra/verify/noop_edit.py would keep it after checking the changed sizes)
    (project / lock.LOCK_NAME).write_text(dev_lock)
    path = project / lock.LOCK_NAME
    current = lock.load(path).stacks["dev"]
    body = json.loads(path.read_text())
    key = next(k for k, e in body["stacks"]["dev"].items() if e["release"] == "storage-csi--aws-fsx-csi-driver")
    body["stacks"]["dev"]["0" * 40] = body["stacks"]["dev"].pop(key) | {"rest": "0" * 40}
    path.write_text(json.dumps(body))
    asked = refuse_helm_variants(monkeypatch)
    capsys.readouterr()
    # WHEN the stack renders with the lock
    assert render_dev(project) == 0
    # THEN only that release is computed, and the render says how to record it
    assert asked == ["storage-csi--aws-fsx-csi-driver"]
    err = capsys.readouterr().err
    assert "1 of 7 releases were checked now" in err and "ekstrain render --stack dev --lock write" in err
    # AND --lock write records today's key and drops the old one (the section is exactly the current answers)
    monkeypatch.undo()
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(validation.cache_root()))
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")
    assert render_dev(project, "--lock", "write") == 0
    assert lock.load(path).stacks["dev"] == current


def test_a_broken_lock_stops_the_render_before_the_program_runs(
    project: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / lock.LOCK_NAME).write_text("{oops")
    monkeypatch.setattr(render, "run_program", lambda *a, **k: pytest.fail("the program ran"))
    assert render_dev(project) == 2
    err = capsys.readouterr().err
    assert err.count("\n") <= 3 and "Traceback" not in err
    assert f"error: {project / lock.LOCK_NAME}: not readable as JSON" in err and "make lock" in err


def test_the_replay_records_the_lock_file_beside_the_package(tmp_path: pathlib.Path) -> None:
    # GIVEN the replay's skip list holding the checkout's package directory
    reads = replay.Reads(skip=[str(REPO / "ekstrain"), "/proc/"])
    # THEN a file below it is skipped, but ekstrain.lock.json beside it is recorded (a changed lock: no replay)
    assert reads.skips(str(REPO / "ekstrain" / "x.py")) and reads.skips("/proc/self/status")
    assert not reads.skips(str(REPO / "ekstrain.lock.json"))
    assert not reads.skips(str(REPO / "ekstrainx" / "y"))


def _repackage(src: pathlib.Path, into: pathlib.Path, change: bytes | None = None) -> pathlib.Path:
    """``src`` packaged again as a release pipeline might: other order, timestamps and gzip level; ``change``
    appended to its values.yaml when given."""
    with tarfile.open(src) as tgz:
        members = [(m, tgz.extractfile(m).read() if m.isfile() else b"") for m in tgz]  # type: ignore[union-attr]
    with tarfile.open(into, "w:gz", compresslevel=1) as out:
        for member, data in reversed(members):
            if change is not None and member.name.endswith("/values.yaml") and member.name.count("/") == 1:
                data += change
                member.size = len(data)
            member.mtime = 1_234_567
            out.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return into


@needs_upstream
def test_an_answer_holds_for_the_same_chart_packaged_again_and_not_for_other_files(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the reference archive of a chart and the same files packaged again (other bytes: a published archive)
    rel = charts.Release("device-plugins", "nvidia-device-plugin", "nvidia-device-plugin", "0.20.0", "kube-system")
    reference = charts.chart_archive(rel)
    assert reference is not None
    again = _repackage(reference, tmp_path / "again.tgz")
    edited = _repackage(reference, tmp_path / "edited.tgz", change=b"\nextra: 1\n")
    assert charts.content_digest(again) != charts.content_digest(reference)
    keys = {}
    for name, archive in (("reference", reference), ("again", again), ("edited", edited)):
        monkeypatch.setattr(charts, "chart_archive", lambda _r, a=archive: a)
        keys[name] = charts.noop_key(rel, "1.35")
    # THEN the lock's key is the same for both packagings, and another for a chart whose files differ
    assert keys["reference"] == keys["again"] != keys["edited"]


# ---- the replay: --lock use and --lock check share a stored render --------------------------------------------


@pytest.fixture
def replaying(project: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The project with the checkout's (current) lock, replays on, and stored renders of its own.

    The checkout's cache stays (``project``): helm output and no-op answers are keyed by their content, so sharing
    them changes no answer, and a cache of its own would run every helm template and no-op check of dev again (the
    suite's costliest minute). What must start empty is the replay store: ``infra/replay.py`` keys a stored render
    by every ``EKSTRAIN_*`` variable's value, so a variable naming this test's directory gives it entries no other
    render made or can replay."""
    shutil.copy(REPO / lock.LOCK_NAME, project / lock.LOCK_NAME)
    monkeypatch.setenv("EKSTRAIN_REPLAY", "1")
    monkeypatch.setenv("EKSTRAIN_TEST_REPLAY_SCOPE", str(tmp_path))
    return project


def replayed(err: str) -> bool:
    return "replayed the stored render" in err


def out_files(project: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(project / "out")): p.read_bytes() for p in (project / "out").rglob("*") if p.is_file()}


@needs_upstream
def test_a_passed_lock_check_is_replayed_by_a_use_render_and_not_the_other_way(
    replaying: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a --lock check render that passed (every answer computed, the lock current)
    assert render_dev(replaying, "--lock", "check") == 0
    err = capsys.readouterr().err
    assert "ekstrain.lock.json: current for stack dev" in err and not replayed(err)
    checked = out_files(replaying)
    # WHEN the same inputs render with --lock use
    asked = refuse_helm_variants(monkeypatch)
    assert render_dev(replaying) == 0
    # THEN it is that render, replayed: the same files, nothing computed
    assert replayed(capsys.readouterr().err) and asked == []
    assert out_files(replaying) == checked
    # AND a --lock check replays it too (it was checked)
    assert render_dev(replaying, "--lock", "check") == 0
    assert replayed(capsys.readouterr().err)


@needs_upstream
def test_a_use_render_is_not_taken_for_a_check_and_a_failed_check_is_not_stored(
    replaying: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a --lock use render stored in the cache (its answers came from the lock: nothing was verified)
    assert render_dev(replaying) == 0
    assert not replayed(capsys.readouterr().err)
    # WHEN --lock check runs on the same inputs THEN it computes (no replay) and passes
    assert render_dev(replaying, "--lock", "check") == 0
    assert not replayed(capsys.readouterr().err)
    # GIVEN a planted wrong answer in the lock
    path = replaying / lock.LOCK_NAME
    body = json.loads(path.read_text())
    entry = next(e for e in body["stacks"]["dev"].values() if "nvidia" in e["release"])
    entry["noop"] = ["planted.key"]
    path.write_text(json.dumps(body))
    # WHEN --lock check fails on it THEN a --lock use render of the same inputs is not that failure replayed
    assert render_dev(replaying, "--lock", "check") == 1
    capsys.readouterr()
    assert render_dev(replaying) == 0
    assert not replayed(capsys.readouterr().err)


def test_files_of_the_rendered_project_are_recorded_relative_to_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN two projects: the render of each reads its own lock file
    one, two = tmp_path / "one", tmp_path / "two"
    for p in (one, two):
        p.mkdir()
        (p / "Pulumi.yaml").write_text("name: x\nruntime: python\n")
    (one / lock.LOCK_NAME).write_text("one")
    (two / lock.LOCK_NAME).write_text("two")
    monkeypatch.chdir(one)
    name = replay._name(str(one / lock.LOCK_NAME))
    # THEN it is recorded relative to the project, and resolved in whichever project renders next
    assert name == f"project:{lock.LOCK_NAME}"
    assert replay._resolve(name).read_text() == "one"
    monkeypatch.chdir(two)
    assert replay._resolve(name).read_text() == "two"
    assert replay._name(str(REPO / "ekstrain" / "tooling" / "lock.py")) == "checkout:ekstrain/tooling/lock.py"
