"""The write guard (ekstrain/files/outputs.py): no command deletes or overwrites a file outside the output it was given.

GIVEN a project a user keeps (stack files, sources, a file of their own, symlinks in and out, an earlier render)
WHEN an output path is any of the values a careless user or a hostile CI input would pass
THEN either it is refused before anything is written, or only the output changes, and never a file it did not write.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ekstrain.cli import render as render_cli
from ekstrain.files import outputs

SEGMENTS = ["..", ".", "build", "dev", "link-in", "link-out", "notes", "new", "~", "proj", "Pulumi.dev.yaml", ""]
NAMED = [".", "..", "/", "~", "~/", "proj", "build", "build/dev", "build/dev/", "link-in", "link-out", "notes", "new/a"]


def _snapshot(root: pathlib.Path) -> dict[str, str]:
    """Every file and link under ``root``: content digest or link target."""
    seen: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = pathlib.Path(dirpath, name)
            key = str(path.relative_to(root))
            seen[key] = (
                f"-> {os.readlink(path)}" if path.is_symlink() else hashlib.sha256(path.read_bytes()).hexdigest()
            )
    return seen


@pytest.fixture()
def world(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[pathlib.Path]:
    """home/proj: a Pulumi project with a stack file, a source file, a user's directory, an earlier render, a
    symlink into the project and one to a directory outside it; the working directory is the project."""
    home = tmp_path / "home"
    proj = home / "proj"
    (proj / "infra").mkdir(parents=True)
    (proj / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    (proj / "Pulumi.dev.yaml").write_text("config: {}\n")
    (proj / "infra" / "main.py").write_text("print('keep me')\n")
    (proj / "notes").mkdir()
    (proj / "notes" / "todo.txt").write_text("mine\n")
    elsewhere = tmp_path / "elsewhere" / "out"
    elsewhere.mkdir(parents=True)
    (proj / "link-in").symlink_to(proj)
    (proj / "link-out").symlink_to(elsewhere)
    earlier = proj / "build" / "dev"
    (earlier / "manifests").mkdir(parents=True)
    (earlier / "manifests" / "a.yaml").write_text("a: 1\n")
    (earlier / outputs.MARKER).write_text(json.dumps({"by": "test", "files": ["manifests/a.yaml"]}))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(proj)
    yield tmp_path


def _kept(world: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    proj = world / "home" / "proj"
    return outputs.kept_dirs(proj, proj)


def _fill(staging: pathlib.Path) -> int:
    (staging / "manifests").mkdir()
    (staging / "manifests" / "b.yaml").write_text("b: 2\n")
    (staging / "SUMMARY.md").write_text("# render\n")
    return 2


def _attempt(world: pathlib.Path, value: str) -> None:
    before = _snapshot(world)
    try:
        target = outputs.check_dir("--out", pathlib.Path(value), _kept(world))
    except outputs.OutputRefused as exc:
        assert "fix:" in str(exc)
        assert _snapshot(world) == before, f"{value!r}: refused, yet files changed"
        return
    for _, kept in _kept(world):
        assert not kept.is_relative_to(target), f"{value!r}: accepted {target}, which holds {kept}"
    if _outside_the_world(world, value, target):
        return
    assert outputs.replace_dir(target, _fill, by="test") == 2
    after = _snapshot(world)
    inside = {k for k in after | before if (world / k).absolute().is_relative_to(target) or _through_link(world, k)}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= inside, f"{value!r}: files outside {target} changed: {sorted(changed - inside)}"
    gone = {k for k in before if k not in after}
    for k in gone:  # only what an earlier render listed in its marker
        assert k.endswith(("manifests/a.yaml", outputs.MARKER)), f"{value!r}: removed {k}"
    assert sorted(p.name for p in target.iterdir()) == [outputs.MARKER, "SUMMARY.md", "manifests"]


def _outside_the_world(world: pathlib.Path, value: str, target: pathlib.Path) -> bool:
    """An accepted target outside the test's directory: only an absolute value may name one (the home and working
    directories are inside it), and the test writes nothing there (as root it could write into the machine's /)."""
    if target.is_relative_to(world.resolve()):
        return False
    assert value.startswith("/"), f"{value!r}: a relative value resolved outside the project's world: {target}"
    return True


def _through_link(world: pathlib.Path, rel: str) -> bool:
    """``rel`` lies in the directory link-out points at (the output a symlinked --out names)."""
    return rel.startswith("elsewhere/out/")


@pytest.mark.parametrize("value", NAMED)
def test_named_values_are_refused_or_only_replace_the_output(world: pathlib.Path, value: str) -> None:
    _attempt(world, value)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)
@given(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4))
def test_any_path_is_refused_or_only_replaces_the_output(world: pathlib.Path, parts: list[str]) -> None:
    _attempt(world, "/".join(parts))


def test_what_each_kept_directory_gets(world: pathlib.Path) -> None:
    kept = _kept(world)

    def why(value: str) -> str:
        with pytest.raises(outputs.OutputRefused) as exc:
            outputs.check_dir("--out", pathlib.Path(value), kept)
        return str(exc.value)

    assert "is the working directory" in why(".")
    assert "is the home directory" in why("..")  # the project lives in ~/proj
    assert "is the home directory" in why("~")
    assert "is the root directory" in why("/")
    assert "is the working directory" in why("link-in")  # a symlink is followed before it is judged
    assert "no ekstrain render wrote" in why("notes")
    assert "is a file" in why("Pulumi.dev.yaml")


def test_an_earlier_render_with_a_users_file_in_it_is_kept(world: pathlib.Path) -> None:
    """GIVEN an earlier render the user added a file to WHEN it is the output THEN refused, naming the file."""
    (world / "home" / "proj" / "build" / "dev" / "mine.txt").write_text("keep\n")
    with pytest.raises(outputs.OutputRefused, match=r"holds files the render did not write \(mine.txt\)"):
        outputs.check_dir("--out", pathlib.Path("build/dev"), _kept(world))


def test_a_failed_render_leaves_the_last_good_output(world: pathlib.Path) -> None:
    target = outputs.check_dir("--out", pathlib.Path("build/dev"), _kept(world))
    before = _snapshot(world)

    def broken(staging: pathlib.Path) -> None:
        (staging / "half.yaml").write_text("x\n")
        raise RuntimeError("the program failed")

    with pytest.raises(RuntimeError):
        outputs.replace_dir(target, broken, by="test")
    assert _snapshot(world) == before
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".dev.")], "staging left behind"


def test_a_symlinked_output_replaces_the_directory_it_points_at(world: pathlib.Path) -> None:
    target = outputs.check_dir("--out", pathlib.Path("link-out"), _kept(world))
    outputs.replace_dir(target, _fill, by="test")
    link = world / "home" / "proj" / "link-out"
    assert link.is_symlink() and (link / "SUMMARY.md").read_text() == "# render\n"


@pytest.mark.parametrize("stack", ["..", ".", "...", "../x", "a/b", "-x", ""])
def test_render_refuses_stack_names_that_are_paths(world: pathlib.Path, stack: str) -> None:
    before = _snapshot(world)
    with pytest.raises(SystemExit) as exc:
        render_cli.main(["--stack", stack, "--stack-file", "Pulumi.dev.yaml"] if stack else ["--stack=", "--out=x"])
    assert exc.value.code == 2
    assert _snapshot(world) == before


@pytest.mark.parametrize("out", [".", "..", "~", "/", "link-in", "notes", "Pulumi.dev.yaml", "infra"])
def test_render_refuses_an_output_it_may_not_replace_before_it_runs(
    world: pathlib.Path, out: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(world)
    assert render_cli.main(["--stack", "dev", "--stack-file", "Pulumi.dev.yaml", "--out", out]) == 2
    assert "fix:" in capsys.readouterr().err
    assert _snapshot(world) == before


def test_file_outputs_refuse_stack_files_and_directories(world: pathlib.Path) -> None:
    for value, why in [
        ("Pulumi.dev.yaml", "stack file"),
        ("Pulumi.yaml", "stack file"),
        ("notes", "is a directory"),
        ("Pulumi.dev.yaml/x.json", "not a writable directory"),
    ]:
        with pytest.raises(outputs.OutputRefused, match=why):
            outputs.check_file("--out", pathlib.Path(value))
    target = outputs.check_file("--out", pathlib.Path("notes/plan.json"))
    outputs.write_file("--out", target, "{}\n")
    assert target.read_text() == "{}\n"


# ---- every other command that writes: file outputs, fetch-upstream's directory, the lock file ----------------

FILE_SEGMENTS = [*SEGMENTS, "x.out", "infra", "main.py", "Pulumi.yaml", "pyproject.toml", outputs.MARKER]


def _changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def _attempt_file(world: pathlib.Path, value: str) -> None:
    """The file guard every file output goes through (diff/job render/plan --out, --html, the lock): refused with
    nothing changed, or only the file it resolves to written."""
    before = _snapshot(world)
    try:
        target = outputs.check_file("--out", pathlib.Path(value))
        if _outside_the_world(world, value, target):
            return
        outputs.write_file("--out", target, "written\n")
    except outputs.OutputRefused as exc:
        assert "fix:" in str(exc) or "create it first" in str(exc)
        assert _snapshot(world) == before, f"{value!r}: refused, yet files changed"
        return
    changed = _changed(before, _snapshot(world))
    assert changed <= {str(target.relative_to(world))}, f"{value!r}: wrote {target}, changed {sorted(changed)}"
    assert target.read_text() == "written\n"
    assert not target.name.startswith("Pulumi.") and target.name not in ("pyproject.toml", outputs.MARKER)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)
@given(st.lists(st.sampled_from(FILE_SEGMENTS), min_size=1, max_size=4))
def test_any_file_output_is_refused_or_only_writes_that_file(world: pathlib.Path, parts: list[str]) -> None:
    _attempt_file(world, "/".join(parts))


def _fetch_upstream() -> Any:
    import importlib

    return importlib.import_module("scripts.fetch_upstream")


def _attempt_tree(world: pathlib.Path, value: str) -> None:
    """fetch-upstream's directory: refused with nothing changed, or files added only under its own names."""
    fetch = _fetch_upstream()
    layout = fetch.upstream_layout()
    before = _snapshot(world)
    try:
        target = outputs.check_tree("dest", pathlib.Path(value), outputs.kept_dirs(), layout)
    except outputs.OutputRefused as exc:
        assert "fix:" in str(exc)
        assert _snapshot(world) == before
        return
    for _, kept in outputs.kept_dirs():
        assert not kept.is_relative_to(target), f"{value!r}: accepted {target}, which holds {kept}"
    if _outside_the_world(world, value, target):
        return
    for rel in ("crds/a.yaml", "chart-src/c-1.tgz", "charts/x/values.yaml"):  # what a fetch writes
        path = outputs.inside(target, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    changed = _changed(before, _snapshot(world))
    assert all((world / k).resolve().is_relative_to(target) for k in changed), f"{value!r}: {sorted(changed)}"
    assert {p.name for p in target.iterdir()} <= layout


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True
)
@given(st.lists(st.sampled_from([*SEGMENTS, "crds", ".upstream"]), min_size=1, max_size=4))
def test_fetch_upstream_dest_is_refused_or_only_gains_upstream_files(world: pathlib.Path, parts: list[str]) -> None:
    _attempt_tree(world, "/".join(parts))


@pytest.mark.parametrize("dest", [".", "..", "~", "/", "link-in", "notes", "infra", "Pulumi.dev.yaml"])
def test_fetch_upstream_refuses_before_it_fetches(
    world: pathlib.Path, dest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the working directory, ~, /, a user's directory or a file WHEN `fetch_upstream.py DEST` THEN exit 2,
    an error line then its fix, nothing fetched or written (no network is touched: the guard runs first)."""
    before = _snapshot(world)
    assert _fetch_upstream().main([dest]) == 2
    err = capsys.readouterr().err
    error, fix = err.strip().splitlines()
    assert error.startswith("error: fetch_upstream.py: --dest ") and fix.startswith("fix: ")
    assert _snapshot(world) == before


def test_a_pins_row_naming_a_path_outside_the_directory_is_refused(tmp_path: pathlib.Path) -> None:
    fetch = _fetch_upstream()
    pin = fetch.FilePin("../escaped.yaml", "o/r", "0" * 40, "x.yaml", "0" * 64)
    with pytest.raises(fetch.FetchError, match="outside"):
        fetch.fetch_file(pin, tmp_path / "up", "file:///nonexistent")
    assert not (tmp_path / "escaped.yaml").exists()


def test_lock_write_refuses_a_directory_and_writes_only_its_file(world: pathlib.Path) -> None:
    from ekstrain.tooling import lock

    proj = world / "home" / "proj"
    (proj / lock.LOCK_NAME).mkdir()
    with pytest.raises(outputs.OutputRefused, match="is a directory"):
        lock.writable(proj / lock.LOCK_NAME)
    (proj / lock.LOCK_NAME).rmdir()
    before = _snapshot(world)
    lock.Lock(proj / lock.LOCK_NAME).save()
    assert _changed(before, _snapshot(world)) == {f"home/proj/{lock.LOCK_NAME}"}


def test_render_lock_write_into_a_directory_is_refused_before_it_runs(
    world: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ekstrain.tooling import lock

    proj = world / "home" / "proj"
    (proj / "Pulumi.prod.yaml").write_text((REPO / "Pulumi.prod.yaml").read_text())
    (proj / lock.LOCK_NAME).mkdir()
    before = _snapshot(world)
    argv = ["--stack", "prod", "--stack-file", "Pulumi.prod.yaml", "--out", "build/p", "--lock", "write"]
    assert render_cli.main(argv) == 2
    assert lock.LOCK_NAME in capsys.readouterr().err
    assert _snapshot(world) == before


def test_a_cached_render_naming_a_path_outside_the_output_is_not_replayed(tmp_path: pathlib.Path) -> None:
    with pytest.raises(outputs.OutputRefused):
        outputs.inside(tmp_path / "out", "../x")
    with pytest.raises(outputs.OutputRefused):
        outputs.inside(tmp_path / "out", "/etc/passwd")
    assert outputs.inside(tmp_path / "out", "manifests/a.yaml") == tmp_path / "out" / "manifests" / "a.yaml"


PLAN = ["--instance", "p5.48xlarge", "--nodes", "2", "--global-batch", "256", "--seq-len", "4096"]
WRITERS = {
    "job render --out": lambda out: [
        *["job", "render", "--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml")],
        *["--scheduler", "nccl-test", "--partition", "gpu-h100", f"--out={out}"],
    ],
    "plan search --out": lambda out: ["plan", "search", "--model", "llama3-8b", *PLAN, "--top", "1", f"--out={out}"],
    "plan search --html": lambda out: ["plan", "search", "--model", "llama3-8b", *PLAN, "--top", "1", f"--html={out}"],
    "simulate --html": lambda out: [
        *["simulate", "--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml")],
        *["--build", "no-such-build", "--timeline", str(REPO / "examples" / "mix-prod.yaml"), f"--html={out}"],
    ],
    "diff --out": lambda out: [
        *["diff", "--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml")],
        *["--old-stack-file", "no-such-file.yaml", f"--out={out}"],
    ],
}
FILE_VALUES = [".", "..", "~", "~/", "/", "proj", "link-in", "link-out", "notes", "Pulumi.dev.yaml", "Pulumi.yaml"]
FILE_VALUES += ["infra", "infra/main.py/x", "link-out/x.out", "link-in/x.out", "new/x.out", "~/x.out", "/proc/x"]


@pytest.mark.parametrize("value", FILE_VALUES)
@pytest.mark.parametrize("command", sorted(WRITERS))
def test_each_writing_command_changes_nothing_but_its_output(
    world: pathlib.Path,
    command: str,
    value: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """GIVEN each command that writes a file WHEN its output flag is any of the values THEN exit 0 or 2, no
    traceback, and no file changed but the one the value resolves to."""
    from ekstrain.cli.main import main

    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("mpl")))  # matplotlib's own font cache

    before = _snapshot(world)
    try:
        code = main(WRITERS[command](value))
    except SystemExit as exc:  # argparse refuses a flag's value with exit 2
        code = exc.code
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err
    changed = _changed(before, _snapshot(world))
    target = outputs._resolved(pathlib.Path(value))
    assert all((world / k).resolve() == target for k in changed), f"{command} {value!r}: changed {sorted(changed)}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], derandomize=True)
@given(
    st.lists(
        st.sampled_from(["..", ".", "/", "~", "-x", "--out=.", "dev", "proj", "build", "\x00", " "]),
        min_size=1,
        max_size=3,
    )
)
def test_any_stack_name_renders_nothing_outside_its_output(world: pathlib.Path, parts: list[str]) -> None:
    """GIVEN a stack name built from path segments, options and names WHEN `render --stack NAME` (default output
    build/<NAME>) THEN it is refused (exit 2) or fails on its stack file, and no file in the project changes."""
    name = "".join(parts)
    before = _snapshot(world)
    try:
        code = render_cli.main(["--stack", name])
    except SystemExit as exc:  # argparse's refusal of the name
        code = exc.code
    assert code == 2, name
    assert _snapshot(world) == before, f"--stack {name!r} changed files"
