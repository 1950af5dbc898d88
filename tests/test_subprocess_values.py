"""No user value reaches a subprocess as an option: one test per call site, with values that begin with '-'.

GIVEN a value a hostile CI input would pass (``--output=FILE``, ``-x``, ``--upload-pack=...``)
WHEN it reaches the command that hands it to git or helm
THEN it is refused (exit 2, one line naming the flag) or passed where the tool reads it as a value, and no file appears.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import yaml
from conftest import REPO

from ekstrain import validation
from ekstrain.cli.main import main
from ekstrain.diff import sides
from ekstrain.helm import helm_binary
from ekstrain.infra.verify import charts
from ekstrain.simulate import charts as simulate_charts

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
