"""``helm template`` of one pinned chart with a recorded release's values, for tests that check what the chart makes
of them (the render's own path, ekstrain/infra/verify/charts.py, caches and post-processes; these run helm bare).
helm is the project's one lookup ($EKSTRAIN_HELM, PATH, .tools/helm): `make test` fetches it, so these never skip."""

from __future__ import annotations

import pathlib
import subprocess
from typing import Any

import yaml

from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.infra.verify import charts
from ekstrain.tooling import validation


def template(
    values: dict[str, Any], archive: str, release: str, namespace: str, workdir: pathlib.Path, *flags: str
) -> str:
    """What ``helm template RELEASE chart-src/ARCHIVE -n NAMESPACE -f values.yaml --kube-version 1.35.0 FLAGS`` prints
    (helm checks the values against the chart's values.schema.json first; a failure raises CalledProcessError)."""
    values_file = workdir / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    upstream = validation.upstream_dir()
    assert upstream is not None, "upstream files absent: `make fetch-upstream`"
    chart = upstream / "chart-src" / archive
    return subprocess.run(
        [charts.helm_binary() or "helm", "template", release, str(chart), "-n", namespace, "-f", str(values_file)]
        + ["--kube-version", "1.35.0", *flags],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def template_objects(
    values: dict[str, Any], archive: str, release: str, namespace: str, workdir: pathlib.Path, *flags: str
) -> list[dict[str, Any]]:
    """The objects ``template`` renders, a List's items in its place (helm applies them one by one). Parsed with
    libyaml's safe loader where PyYAML has it: the same documents, and a chart's CRDs are megabytes (Argo CD's took
    3 s in pure Python)."""
    text = template(values, archive, release, namespace, workdir, *flags)
    docs = [d for d in yaml.load_all(text, Loader=SAFE_LOADER) if d]
    return [i for d in docs for i in (d["items"] if d.get("kind") == "List" else [d])]
