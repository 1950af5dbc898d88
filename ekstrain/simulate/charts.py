"""Chart-rendered objects in ``build/<stack>/charts/<component>--<release>/<Kind>-<ns>-<name>.yaml``.

``ekstrain.infra.render`` writes that layout with real ``helm template`` output. For a build directory made before
it did, :func:`render_missing` produces the same layout from ``build/<stack>/helm/*.yaml`` (release name,
namespace, values) and the pinned chart archives in the upstream directory, with a local helm binary.
"""

from __future__ import annotations

import pathlib
import subprocess
import tempfile
from typing import Any

import yaml

from ekstrain.files import outputs
from ekstrain.tooling.helm import helm_binary

__all__ = ["helm_binary", "render_missing"]  # helm_binary: the project's one lookup (ekstrain/tooling/helm.py)


def _archive(chart_src: pathlib.Path, chart: str, version: str) -> pathlib.Path | None:
    path = chart_src / f"{chart.rstrip('/').rsplit('/', 1)[-1]}-{version}.tgz"
    return path if path.exists() else None


def file_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or "_"
    return f"{obj.get('kind')}-{ns}-{meta.get('name')}.yaml"


def render_missing(build: pathlib.Path, chart_src: pathlib.Path, helm: str, only: tuple[str, ...] = ()) -> list[str]:
    """Render every release of ``build/helm`` (those starting with one of ``only``, when given) that has no
    ``build/charts`` directory yet; returns problems."""
    problems = []
    for release_file in sorted((build / "helm").glob("*.yaml")):
        out_dir = build / "charts" / release_file.stem
        if out_dir.exists() or (only and not release_file.stem.startswith(only)):
            continue
        rel = yaml.safe_load(release_file.read_text()) or {}
        archive = _archive(chart_src, str(rel.get("chart")), str(rel.get("version")))
        if archive is None:
            problems.append(
                f"{release_file.name}: chart archive {rel.get('chart')} {rel.get('version')} not in {chart_src}"
            )
            continue
        # The values in a file of its own (never one of the build's, which the user may have put there).
        with tempfile.NamedTemporaryFile("w", suffix=".values.yaml", prefix="ekstrain-simulate-") as f:
            f.write(yaml.safe_dump(rel.get("values") or {}))
            f.flush()
            proc = _helm_template(helm, rel, pathlib.Path(f.name), archive)
        if proc.returncode != 0:
            problems.append(f"{release_file.name}: helm template failed: {proc.stderr.strip()[:200]}")
            continue
        out_dir.mkdir(parents=True)
        for doc in yaml.safe_load_all(proc.stdout):
            if isinstance(doc, dict) and doc.get("kind"):
                doc.setdefault("metadata", {}).setdefault("namespace", rel["namespace"]) if doc["kind"] not in (
                    "CustomResourceDefinition",
                    "ClusterRole",
                    "ClusterRoleBinding",
                ) else None
                try:  # a name from the chart's output never places a file outside out_dir ('../x' is refused)
                    path = outputs.inside(out_dir, file_name(doc))
                except outputs.OutputRefused as exc:
                    problems.append(f"{release_file.name}: {exc}")
                    continue
                path.write_text(yaml.safe_dump(doc, sort_keys=False))
        outputs.add_written(build, out_dir.iterdir())  # the next render may replace what this wrote
    return problems


def _helm_template(
    helm: str, rel: dict[str, Any], values: pathlib.Path, archive: pathlib.Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [  # values read from a render's files: after "--" and in --flag=value form, never options
            helm,
            "template",
            f"--namespace={rel['namespace']}",
            f"--values={values}",
            "--include-crds",
            "--",
            str(rel["name"]),
            str(archive),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
