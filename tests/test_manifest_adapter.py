"""ekstrain.components.manifest.resource (the one manifest-to-resource adapter) and components.helm.release."""

from __future__ import annotations

import ast
import pathlib
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from conftest import REPO, run_program, stack_config

from ekstrain.assembly import observability as obs
from ekstrain.components.helm import release
from ekstrain.components.manifest import BUILTINS, resource
from ekstrain.components.observability import Observability, ObservabilityArgs
from ekstrain.facts.versions import DEFAULT_CHARTS

META = {
    "name": "x",
    "namespace": "ns",
    "labels": {"app": "x"},
    "annotations": {"example.com/note": "kept"},
    "finalizers": ["example.com/keep"],
}


@pytest.mark.parametrize(
    "manifest, token",
    [
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": META, "data": {"a": "1"}},
            "kubernetes:core/v1:ConfigMap",
        ),
        (
            {"apiVersion": "v1", "kind": "Secret", "metadata": META, "type": "Opaque", "stringData": {"k": "v"}},
            "kubernetes:core/v1:Secret",
        ),
        (
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": META,
                "provisioner": "p",
                "reclaimPolicy": "Retain",
                "volumeBindingMode": "Immediate",
                "mountOptions": ["flock"],
            },
            "kubernetes:storage.k8s.io/v1:StorageClass",
        ),
        (
            {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": META, "spec": {"limits": {"cpu": 1}}},
            "kubernetes:karpenter.sh/v1:NodePool",
        ),
    ],
)
def test_every_field_and_all_metadata_reach_the_engine(manifest: dict[str, Any], token: str) -> None:
    # GIVEN a manifest with labels, annotations and finalizers WHEN adapted THEN the engine receives it whole
    rec = run_program(lambda: resource("x", manifest).urn)
    (r,) = rec.of_type(token)
    assert {k: v for k, v in r.inputs.items() if k != "apiVersion" and k != "kind"} == {
        k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")
    }
    assert (r.inputs["apiVersion"], r.inputs["kind"]) == (manifest["apiVersion"], manifest["kind"])


def test_component_keeps_an_annotation_its_builder_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the EFA exporter DaemonSet builder annotating its object (observability used to drop annotations)
    build = obs.efa_exporter_daemonset

    def annotated() -> dict[str, Any]:
        ds = build()
        ds["metadata"]["annotations"] = {"example.com/owner": "platform"}
        return ds

    monkeypatch.setattr(obs, "efa_exporter_daemonset", annotated)
    prod = stack_config("prod")

    def program() -> pulumi.Output[str]:
        return Observability(
            "observability", ObservabilityArgs(plan=obs.plan(prod), chart=prod.versions.chart("kube-prometheus-stack"))
        ).grafana_admin_password

    # WHEN the component is recorded
    rec = run_program(program)
    # THEN the DaemonSet carries it, next to its labels
    ds = rec.one("kubernetes:apps/v1:DaemonSet", "observability-efa-exporter")
    assert ds.inputs["metadata"] == {**build()["metadata"], "annotations": {"example.com/owner": "platform"}}


def test_release_helper_sends_what_it_is_given_and_nothing_else() -> None:
    chart = DEFAULT_CHARTS["volcano"]
    rec = run_program(
        lambda: (
            release(
                "v",
                chart=chart,
                namespace="volcano-system",
                parent=None,  # type: ignore[arg-type]
                values={"a": 1},
                create_namespace=True,
            ).urn
        )
    )
    (r,) = rec.of_type("kubernetes:helm.sh/v3:Release")
    assert {k: r.inputs[k] for k in r.inputs if k not in ("id", "compat")} == {  # compat: set by the SDK
        "name": "v",
        "chart": chart.chart,
        "version": chart.version,
        "namespace": "volcano-system",
        "createNamespace": True,
        "values": {"a": 1},
        **({"repositoryOpts": {"repo": chart.repo}} if chart.repo else {}),
    }


def _constructors(path: pathlib.Path) -> list[str]:
    """``pulumi_kubernetes`` resource classes a module calls (``k8s.<group>.<version>.<Kind>(...)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            dotted = ast.unparse(node.func)
            if dotted.startswith("k8s.") and dotted.split(".")[-1][:1].isupper() and not dotted.endswith("Args"):
                found.append(dotted)
    return found


def test_components_create_kubernetes_objects_and_releases_only_through_the_helpers() -> None:
    # Inline literals (a Namespace, the default gp3 class) may call the typed class; manifest dicts and
    # charts go through components/manifest.py and components/helm.py.
    allowed = {
        "k8s.core.v1.Namespace",
        "k8s.core.v1.Secret",
        "k8s.storage.v1.StorageClass",
        "k8s.Provider",
        "k8s.yaml.v2.ConfigGroup",
        "k8s.kustomize.v2.Directory",
    }
    helpers = {"components/manifest.py", "components/helm.py"}
    calls = {
        str(p.relative_to(REPO)): _constructors(p)
        for p in sorted((REPO / "components").glob("*.py"))
        if str(p.relative_to(REPO)) not in helpers
    }
    assert {f: [c for c in cs if c not in allowed] for f, cs in calls.items() if set(cs) - allowed} == {}
    assert set(BUILTINS) >= {("v1", "PersistentVolume"), ("apps/v1", "StatefulSet"), ("batch/v1", "Job")}


def test_a_core_kind_without_its_typed_class_is_refused_not_sent_as_a_custom_resource() -> None:
    # GIVEN a core-group kind missing from BUILTINS WHEN adapted THEN a clear error, not kubernetes:v1:<Kind>
    with pytest.raises(ValueError, match=r"v1 ResourceQuota is a built-in kind: add its typed class"):
        resource("q", {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}})
    assert BUILTINS[("v1", "LimitRange")] is k8s.core.v1.LimitRange
