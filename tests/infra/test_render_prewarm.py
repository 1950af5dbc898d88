"""The render parses the upstream CRDs ahead, in a process of its own, only when a check will read them: a render
without helm (before `ekstrain upstream helm`) or every pinned file, and without Argo CD, starts none."""

from __future__ import annotations

import pathlib

import pytest
from conftest import REPO, shipped_stack_file, stack_config

from ekstrain.infra import render
from ekstrain.infra.verify import charts
from ekstrain.tooling import validation


class ProgramStarted(Exception):
    """Raised where the program would run: what the render did before it is what this test looks at."""


def _prewarms(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, helm: str | None, argocd: bool, missing: list[str]
) -> bool:
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")
    monkeypatch.setattr(validation, "upstream_dir", lambda: tmp_path)
    monkeypatch.setattr(validation, "upstream_missing", lambda root: missing)
    started: list[bool] = []
    monkeypatch.setattr(validation, "prewarm_crd_schemas", lambda: started.append(True))
    monkeypatch.setattr(charts, "helm_binary", lambda: helm)

    def run_program(*args: object, **kwargs: object) -> None:
        raise ProgramStarted

    monkeypatch.setattr(render, "run_program", run_program)
    cfg = stack_config("dev")
    cfg = cfg.model_copy(update={"delivery": cfg.delivery.model_copy(update={"argocd": argocd})})
    flat, secrets = shipped_stack_file("dev")
    with pytest.raises(ProgramStarted):
        render.render_or_replay(REPO / "Pulumi.dev.yaml", "dev", False, flat, secrets, cfg, [], tmp_path)
    return bool(started)


def test_without_helm_or_argocd_no_process_parses_the_crds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    # GIVEN no helm, or a partial upstream directory, and no Argo CD Applications: no check reads the CRD schemas,
    # so none is parsed ahead
    assert not _prewarms(monkeypatch, tmp_path, helm=None, argocd=False, missing=[])
    assert not _prewarms(monkeypatch, tmp_path, helm="/usr/bin/helm", argocd=False, missing=["crds/ray.io/rayjob.yaml"])
    # AND with helm and every pinned file (the chart and manifest checks) or Argo CD (its Applications' check) they are
    assert _prewarms(monkeypatch, tmp_path, helm="/usr/bin/helm", argocd=False, missing=[])
    assert _prewarms(monkeypatch, tmp_path, helm=None, argocd=True, missing=[])
