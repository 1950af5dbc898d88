"""The write guard (ekstrain/outputs.py): no command deletes or overwrites a file outside the output it was given.

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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ekstrain import outputs
from ekstrain.cli import render as render_cli

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
    assert outputs.replace_dir(target, _fill, by="test") == 2
    after = _snapshot(world)
    inside = {k for k in after | before if (world / k).absolute().is_relative_to(target) or _through_link(world, k)}
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    assert changed <= inside, f"{value!r}: files outside {target} changed: {sorted(changed - inside)}"
    gone = {k for k in before if k not in after}
    for k in gone:  # only what an earlier render listed in its marker
        assert k.endswith(("manifests/a.yaml", outputs.MARKER)), f"{value!r}: removed {k}"
    assert sorted(p.name for p in target.iterdir()) == [outputs.MARKER, "SUMMARY.md", "manifests"]


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
