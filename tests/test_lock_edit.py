"""An edit of sizes or counts is cheap and needs no lock commit (ekstrain/tooling/lock.py,
ekstrain/tooling/lock_policy.py,
infra/verify/noop_edit.py).

- the lock records what each answer's key is made of (tools, basis, the values with their sizes blanked, the
  sizes), so a render whose values differ only in sizes or counts of the same kind checks only the changed keys
  again (two helm renders, not one per values key);
- ``--lock check`` fails when a chart, helm or the check changed, and says in one ``note:`` line which releases
  it computed because a stack's values changed.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import yaml
from conftest import REPO, needs_upstream
from support.renders import Renders, programs_run_once

from ekstrain.cli import render as render_cli
from ekstrain.infra.verify import charts
from ekstrain.tooling import lock, lock_policy, validation

# ---- the shape of values: sizes apart from the rest -------------------------------------------------------------


def test_a_size_edit_keeps_the_rest_and_names_the_size() -> None:
    before = {"nodesets": {"gpu": {"partition": {"config": {"MaxNodes": "16"}}, "image": "slurmd:25.05"}}, "n": 3}
    after = json.loads(json.dumps(before))
    after["nodesets"]["gpu"]["partition"]["config"]["MaxNodes"] = "17"
    rest_before, sizes_before = lock.values_shape(before)
    rest_after, sizes_after = lock.values_shape(after)
    assert rest_before == rest_after
    assert dict(sizes_before) == {"nodesets.gpu.partition.config.MaxNodes": '"16"', "n": "3"}
    assert dict(sizes_after)["nodesets.gpu.partition.config.MaxNodes"] == '"17"'
    # an image is not a size: changing it changes the rest
    after["nodesets"]["gpu"]["image"] = "slurmd:25.11"
    assert lock.values_shape(after)[0] != rest_before


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("16", "17", True),
        ('"500Gi"', '"600Gi"', True),
        ('"85GiB"', '"102GiB"', True),
        ("0", "1", False),  # a chart testing the count for zero (or truthiness) takes another branch
        ('"500Gi"', '"1Ti"', False),  # another unit
        ('"16"', "16", False),  # another type
        ("true", "false", False),  # a switch is not a size
        # a configuration file carried as text: of a kind when numbers alone differ
        ('"SwitchName=s Nodes=a-[0-15]\\n"', '"SwitchName=s Nodes=a-[0-16]\\n"', True),
        ('"SwitchName=s Nodes=a-[0-15]\\n"', '"SwitchName=t Nodes=a-[0-16]\\n"', False),
        ('"Nodes=a-[0-15]"', '"Nodes=a-[0-16]"', False),  # one line: not a file, not a size
    ],
)
def test_sizes_of_the_same_kind(old: str, new: str, same: bool) -> None:
    assert lock.same_kind_of_size(old, new) is same


def test_a_file_under_a_key_with_a_dot_is_a_size_addressed_by_an_escaped_key() -> None:
    """Slurm's ``configFiles."topology.conf"`` (its node ranges sized by maxNodes): a size, its key escaped so the
    no-op recheck finds the leaf again (lock.size_path)."""
    values = {"configFiles": {"topology.conf": "SwitchName=s Nodes=a-[0-15]\n"}}
    _, sizes = lock.values_shape(values)
    [(key, _)] = sizes
    assert key == "configFiles.topology\\.conf"
    assert lock.size_path(key) == ("configFiles", "topology.conf")


def entry(release: str, *noop: str, tools: str = "t1", basis: str = "b1", rest: str = "r1", **sizes: str) -> lock.Entry:
    return lock.Entry(release, "slurm 1.0", tuple(noop), tools, basis, rest, tuple(sorted(sizes.items())))


def test_the_lock_derives_only_from_the_same_release_basis_and_rest() -> None:
    recorded = lock.Lock(pathlib.Path("x")).with_stack(
        "prod", {"k1": entry("slurm--slurm", "a.b", MaxNodes='"16"', replicas="2")}
    )
    edited = entry("slurm--slurm", MaxNodes='"17"', replicas="2")
    found = recorded.derivable(edited)
    assert found is not None and found[0].noop == ("a.b",) and found[1] == ["MaxNodes"]
    # another chart or helm (basis), another non-size value (rest), a size from 0, or an entry without tools: none
    assert recorded.derivable(entry("slurm--slurm", basis="b2", MaxNodes='"17"', replicas="2")) is None
    assert recorded.derivable(entry("slurm--slurm", rest="r2", MaxNodes='"17"', replicas="2")) is None
    assert recorded.derivable(entry("slurm--slurm", MaxNodes='"17"', replicas="0")) is None
    assert recorded.derivable(lock.Entry("slurm--slurm", "slurm 1.0", ())) is None


def test_entries_round_trip_with_what_their_key_is_made_of(tmp_path: pathlib.Path) -> None:
    path = tmp_path / lock.LOCK_NAME
    lock.Lock(path).with_stack("prod", {"k1": entry("slurm--slurm", MaxNodes='"16"')}).save()
    assert lock.load(path).stacks["prod"]["k1"] == entry("slurm--slurm", MaxNodes='"16"')
    # a lock recorded before these fields were: read, and --lock write records them (it differs)
    old = lock.Lock(path).with_stack("prod", {"k1": lock.Entry("slurm--slurm", "slurm 1.0", ())})
    assert old.differences("prod", {"k1": entry("slurm--slurm")}) == [
        "slurm--slurm: recorded without what its key is made of (tools, sizes)"
    ]


# ---- --lock check: what fails CI ---------------------------------------------------------------------------------


def test_a_chart_files_or_helm_change_is_stale_a_values_edit_is_one_note() -> None:
    recorded = {"k1": entry("slurm--slurm"), "k2": entry("obs--kps", tools="t9")}
    # the values changed (new keys), the chart and helm did not
    stale, notes = lock_policy.check(recorded, {"k3": entry("slurm--slurm"), "k4": entry("obs--kps", tools="t9")})
    assert stale == [] and notes == ["obs--kps (slurm 1.0)", "slurm--slurm (slurm 1.0)"]
    line = lock_policy.note_line(notes)
    assert line.startswith("note: 2 releases' answers computed (values changed") and "\n" not in line
    assert line.endswith("obs--kps (slurm 1.0), slurm--slurm (slurm 1.0)")
    # the same chart version with other files, or another helm: the tools differ, so the answers must be recorded
    stale, notes = lock_policy.check(recorded, {"k5": entry("slurm--slurm", tools="t2")})
    assert len(stale) == 1 and "the chart's files or helm changed" in stale[0] and notes == []


# ---- the render --------------------------------------------------------------------------------------------------


def edited_prod(into: pathlib.Path) -> pathlib.Path:
    """Prod with its first partition's maxNodes + 1, in a directory of its own (no Pulumi.yaml: the render reads
    the working directory's project, this checkout, and its committed lock)."""
    doc = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    part = doc["config"]["ekstrain:partitions"][0]
    part["maxNodes"] = int(part["maxNodes"]) + 1
    path = into / "edited" / "Pulumi.prod.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def noop_warnings(out: pathlib.Path) -> list[str]:
    return [w for w in (out / "SUMMARY.md").read_text().splitlines() if "changes nothing in the rendered" in w]


@needs_upstream
def test_a_maxnodes_edit_checks_only_the_changed_key_and_passes_the_lock_check_without_a_lock_commit(
    renders: Renders, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if charts.helm_binary() is None:
        pytest.skip("no helm: `ekstrain upstream helm`")
    # The session's --lock check render of prod first: the render cache (keyed by content) then holds helm's output
    # and the no-op answers of every release the edit leaves alone, so only Slurm's are computed here. The variants
    # are counted at charts.template, before that cache, and no variant is ever stored (keep=False).
    renders("prod", "--lock", "check")
    monkeypatch.chdir(REPO)  # the committed ekstrain.lock.json is the working directory's project's
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")  # no whole stored render: the checks run (they are counted)
    before = (REPO / lock.LOCK_NAME).read_bytes()
    stack_file = edited_prod(tmp_path)
    variants: list[str] = []
    asked: list[tuple[charts.Release, str, list[str]]] = []  # each variant's release, Kubernetes and API versions
    template = charts.template

    def counted(release: charts.Release, *args: object, **kwargs: object) -> str:
        if kwargs.get("keep") is False:  # a no-op check's variant (a values key left out)
            variants.append(release.key)
            asked.append((release, str(args[0]), sorted(args[1])))  # type: ignore[call-overload]
        return template(release, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(charts, "template", counted)
    argv = ["--stack", "prod", "--stack-file", str(stack_file)]
    with programs_run_once():  # both renders run the edited program: once
        # WHEN the edited stack renders (--lock use, a user's render)
        code = render_cli.main([*argv, "--out", str(tmp_path / "use")])
        err = capsys.readouterr().err
        assert code == 0, err[-3000:]
        # THEN the lock answered every release but Slurm, and each of Slurm's changed keys was rendered without it
        # once (the old code ran Slurm's whole check: ~140 variants)
        assert "20 of 21 releases answered by ekstrain.lock.json" in err, err[-3000:]
        assert "1 release(s) whose sizes or counts changed" in err and "MaxNodes" in err
        # the two keys the edit changed: the NodeSet's MaxNodes and its switch's node range in topology.conf
        assert variants == ["slurm--slurm", "slurm--slurm"], variants
        # The edited Slurm's whole answer is not in the cache (a render of these values elsewhere would have put
        # it there): the check below computes it whole, whichever test ran before.
        release, kube_version, apis = asked[0]
        validation.entry_path(f"helm/noop-{charts.noop_key(release, kube_version, apis)}").unlink(missing_ok=True)
        # WHEN CI's lock check renders it (every answer computed whole)
        code = render_cli.main([*argv, "--out", str(tmp_path / "check"), "--lock", "check"])
    err = capsys.readouterr().err
    # THEN it passes, with one note naming Slurm, and the committed lock is untouched (nothing to commit)
    assert code == 0, err[-3000:]
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "answers computed (values changed" in notes[0] and "slurm--slurm" in notes[0], notes
    assert "is not current" not in err
    assert (REPO / lock.LOCK_NAME).read_bytes() == before
    assert len(variants) > 50  # the whole check ran this time
    # AND the kept answer is the whole check's
    assert noop_warnings(tmp_path / "use") == noop_warnings(tmp_path / "check")


def test_the_lock_of_a_project_without_one_starts_from_the_shipped_answers(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a project directory with a stack file and no lock
    project = tmp_path / "acme"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: acme\nruntime: python\n")
    shutil.copy(REPO / "Pulumi.prod.yaml", project)
    monkeypatch.chdir(project)
    # WHEN the render loads the lock
    loaded = lock.load()
    # THEN it holds the shipped example stacks' answers, and writes (if asked) into the project
    assert loaded.path == project / lock.LOCK_NAME and not loaded.path.exists()
    assert loaded.stacks == lock.load(REPO / lock.LOCK_NAME).stacks


# ---- what a sizes edit keeps (infra/verify/noop_edit.py), with helm replaced by a fake chart ----------------------


@pytest.fixture
def fake_chart(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """A chart whose render prints ``replicas`` and ``size`` unless ``ignored`` is set; ``defaults`` its values.yaml."""
    from ekstrain.infra.verify import noop_edit

    chart: dict[str, object] = {"defaults": {"replicas": 1}, "ignored": set()}

    def template(release: charts.Release, kv: str, apis: object, values: dict | None = None, **_: object) -> str:
        v = release.values if values is None else values
        return json.dumps({k: v.get(k) for k in ("replicas", "size") if k not in chart["ignored"]})  # type: ignore[operator]

    monkeypatch.setattr(noop_edit.charts, "template", template)
    monkeypatch.setattr(noop_edit.charts, "chart_defaults", lambda release: chart["defaults"])
    monkeypatch.setattr(noop_edit.charts, "same_objects", lambda a, b, release: a == b)
    return chart


def test_a_sizes_edit_keeps_the_answer_only_when_the_changed_keys_answer_as_before(
    fake_chart: dict[str, object],
) -> None:
    from ekstrain.infra.verify import noop_edit

    release = charts.Release("g", "r", "c", "1.0", "ns", {"replicas": 5, "size": "600Gi", "extra": {"a": 1}})
    old = {"replicas": "4", "size": '"500Gi"'}
    # the changed keys still matter: the recorded answer is kept
    assert noop_edit.kept_answer(release, "1.36", [], ("extra",), ["replicas", "size"], old) == ["extra"]
    # the chart ignores a changed key now (it mattered before): the whole check
    fake_chart["ignored"] = {"size"}
    assert noop_edit.kept_answer(release, "1.36", [], ("extra",), ["replicas", "size"], old) is None
    fake_chart["ignored"] = set()
    # a changed key at the chart's default before or after: the whole check
    assert noop_edit.kept_answer(release, "1.36", [], (), ["replicas"], {"replicas": "1"}) is None
    # a changed key under a key the answer names as a whole: the whole check
    nested = charts.Release("g", "r", "c", "1.0", "ns", {"extra": {"n": 3}})
    assert noop_edit.kept_answer(nested, "1.36", [], ("extra",), ["extra.n"], {"extra.n": "2"}) is None
