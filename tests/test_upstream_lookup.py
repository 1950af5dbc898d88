"""Where the render finds the pinned upstream files (ekstrain/tooling/validation.py upstream_dir): a partial
``.upstream/``
(a fetch that failed midway, ``mkdir -p .upstream/crds``) never hides a complete directory after it, and a render
whose only directory is partial names the missing files and exits 1, never with a traceback."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import REPO
from support.renders import Renders

from ekstrain.facts import versions
from ekstrain.files import paths
from ekstrain.tooling import validation

COMPLETE = validation.upstream_dir()


def _complete() -> pathlib.Path:
    assert COMPLETE is not None and not validation.upstream_missing(COMPLETE), (
        "no complete upstream directory: run `make fetch-upstream`"
    )
    return COMPLETE


@pytest.fixture
def partial_project(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A Pulumi project (prod's and dev's stack files) whose ``.upstream/`` holds only an empty ``crds/``."""
    monkeypatch.delenv("EKSTRAIN_UPSTREAM_DIR", raising=False)
    # content-keyed: the render tests' helm answers serve the renders here
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(validation.cache_root()))
    project = tmp_path / "project"
    (project / ".upstream" / "crds").mkdir(parents=True)
    # The lock too: this is about where upstream files are found, and without the lock's answers the render runs
    # every no-op helm check again (a minute of CPU the render tests already spend).
    for f in ("Pulumi.yaml", "Pulumi.prod.yaml", "Pulumi.dev.yaml", "ekstrain.lock.json"):
        shutil.copy(REPO / f, project / f)
    return project


def test_the_pinned_files_the_render_reads_include_every_chart_archive_values_and_crd() -> None:
    required = validation.required_upstream_files()
    assert "chart-src/karpenter-1.14.1.tgz" in required
    assert "charts/jupyterhub/values.yaml" in required
    assert "crds/kubeflow.org/mpijob.yaml" in required  # a row of scripts/upstream-pins.tsv
    assert validation.upstream_missing(_complete()) == []


def test_a_partial_upstream_directory_does_not_hide_a_complete_one(
    partial_project: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the project's .upstream/ holds only crds/ and a complete directory is a later candidate
    complete = _complete()
    monkeypatch.setattr(validation, "upstream_candidates", lambda: [partial_project / ".upstream", complete])
    # WHEN the render looks for its upstream files
    # THEN it reads the complete one, and says what the partial one lacks
    assert validation.upstream_dir() == complete
    missing = validation.upstream_missing(partial_project / ".upstream")
    assert "chart-src/karpenter-1.14.1.tgz" in missing and "crds/karpenter.sh/nodepool.yaml" in missing


def test_the_candidates_are_the_projects_upstream_then_the_mirror_beside_the_checkout_then_its_own(
    tmp_path: pathlib.Path,
) -> None:
    with paths.use_project(tmp_path):
        candidates = validation.upstream_candidates()
    assert candidates[0] == tmp_path / ".upstream"
    assert paths.CHECKOUT is not None
    assert candidates[1:] == [paths.CHECKOUT.parent / "shared" / "upstream", paths.CHECKOUT / ".upstream"]


def _render(
    project: pathlib.Path, stack: str, out: pathlib.Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ekstrain.cli.render", "--stack", stack, "--out", str(out)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_prod_renders_with_a_partial_upstream_directory_beside_a_complete_one(
    partial_project: pathlib.Path, tmp_path: pathlib.Path, renders: Renders
) -> None:
    # GIVEN a project whose .upstream/ is `mkdir -p .upstream/crds`, the complete files a later candidate (the
    # checkout's ../shared/upstream or .upstream/)
    _complete()
    # AND the session's render of prod stored (infra/replay.py): the render below replays it only if it reads the
    # same upstream files (the key holds their content), so a render that took the partial directory still fails
    renders("prod")
    env = {k: v for k, v in os.environ.items() if k != "EKSTRAIN_UPSTREAM_DIR"}
    # WHEN prod renders
    proc = _render(partial_project, "prod", tmp_path / "out", env)
    # THEN exit 0, no traceback, everything checked against the complete directory
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "valid against the pinned upstream schemas" in (tmp_path / "out" / "SUMMARY.md").read_text()


def test_a_render_whose_only_upstream_directory_is_partial_names_what_is_missing(
    partial_project: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    # GIVEN the only upstream directory is the partial one
    env = {**os.environ, "EKSTRAIN_UPSTREAM_DIR": str(partial_project / ".upstream")}
    # GIVEN the partial directory holds that CRD and nothing else
    crd = partial_project / ".upstream" / versions.MPIJOB_CRD
    crd.parent.mkdir(parents=True)
    shutil.copy(_complete() / versions.MPIJOB_CRD, crd)
    # WHEN dev renders
    proc = _render(partial_project, "dev", tmp_path / "out", env)
    # THEN exit 1 with the missing files and the fix, no traceback
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stdout[-2000:]
    summary = (tmp_path / "out" / "SUMMARY.md").read_text()
    count = len(validation.required_upstream_files()) - 1
    assert (
        f"lacks {count} pinned file(s): aws/karpenter-v1.14.1-cloudformation.yaml, chart-src/argo-cd-10.1.1.tgz"
        in summary
    )
    assert "fix: run `ekstrain upstream fetch`" in summary and "--upstream-dir DIR" in summary
    assert "checks did not run" in proc.stderr
