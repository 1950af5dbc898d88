"""The schema checks must catch what the API server would refuse."""

from __future__ import annotations

import os
import pathlib

import pytest
import yaml

from ekstrain.tooling import validation

pytestmark = pytest.mark.skipif(
    validation.upstream_dir() is None, reason="upstream schemas absent: run `make fetch-upstream`"
)

NODEPOOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "p"},
    "spec": {
        "template": {
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "p"},
                "requirements": [],
            }
        }
    },
}


def test_valid_custom_resource_passes() -> None:
    assert validation.validate_object(NODEPOOL, "1.34") == []


def test_unknown_field_in_custom_resource_fails() -> None:
    bad = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "disruptionn": {}}}
    assert any("disruptionn" in p for p in validation.validate_object(bad, "1.34"))


def test_wrong_enum_in_custom_resource_fails() -> None:
    bad = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "disruption": {"consolidationPolicy": "Never"}}}
    assert any("consolidationPolicy" in p for p in validation.validate_object(bad, "1.34"))


def test_kind_without_schema_fails() -> None:
    assert validation.validate_object(
        {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x"}}, "1.34"
    )


def test_builtin_kind_is_validated_strictly() -> None:
    good = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}
    assert validation.validate_object(good, "1.34") == []
    assert validation.validate_object({**good, "spec": {"finalizerz": []}}, "1.34")


def test_crd_cel_rules_are_collected() -> None:
    ec2 = validation.crd_schemas()[("karpenter.k8s.aws/v1", "EC2NodeClass")]
    assert any("networkInterfaces" in path for path, _, _ in ec2.cel_rules)


def test_unknown_helm_value_keys() -> None:
    defaults = {"settings": {"clusterName": ""}, "nodeSelector": {}, "tolerations": []}
    values = {
        "settings": {"clusterName": "x", "clusterNmae": "y"},
        "nodeSelector": {"any": "thing"},
        "tolerations": [{"key": "k"}],
        "extra": 1,
    }
    assert validation.unknown_value_keys(values, defaults) == ["settings.clusterNmae", "extra"]


def test_parsed_crd_schemas_are_cached_by_content(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an upstream dir with one CRD and an empty cache
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                        }
                    },
                }
            ],
        },
    }
    (tmp_path / "up" / "crds").mkdir(parents=True)
    path = tmp_path / "up" / "crds" / "thing.yaml"
    path.write_text(yaml.safe_dump(crd))
    monkeypatch.setenv("EKSTRAIN_UPSTREAM_DIR", str(tmp_path / "up"))
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    validation.clear_caches()
    try:
        thing = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"colour": 1}}
        # WHEN validated twice in "two processes" (the in-memory cache cleared between)
        first = validation.validate_object(thing, "1.34")
        validation.clear_caches()
        second = validation.validate_object(thing, "1.34")
        # THEN the second run read the cache entry, with the same answer
        assert len(list(validation.cache_dir().glob("crd-schemas-*.json"))) == 1
        assert first == second and "colour" in first[0]
        assert validation.crd_schemas()[("example.com/v1", "Thing")].namespaced is False
        # AND a changed CRD file is parsed again, not served stale
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["colour"] = {
            "type": "integer"
        }
        path.write_text(yaml.safe_dump(crd))
        validation.clear_caches()
        assert validation.validate_object(thing, "1.34") == []
        assert len(list(validation.cache_dir().glob("crd-schemas-*.json"))) == 2
    finally:
        validation.clear_caches()


def test_bare_equals_sign_reads_as_a_string_as_kubernetes_reads_it() -> None:
    """GIVEN a CRD enum written [=, !=, =~, !~] as kube-prometheus-stack's CRDs do
    WHEN the render's YAML loader reads it THEN "=" is a string (PyYAML's safe loader refuses the value tag)."""
    import yaml as _yaml

    assert _yaml.load("enum: [=, '!=', =~]", Loader=validation.KubeYamlLoader) == {"enum": ["=", "!=", "=~"]}


def test_derived_caches_are_per_checker_version_and_helm_output_is_shared() -> None:
    """GIVEN the on-disk cache WHEN the checking code changes THEN derived entries (parsed schemas, validation
    results) are not reused: they live under a directory named by the checker's source hash, below the root
    that keeps raw helm output (which depends only on helm, the chart and the values)."""
    import re as _re

    derived, root = validation.cache_dir(), validation.cache_root()
    assert derived.parent == root and _re.fullmatch(r"code-[0-9a-f]{16}", derived.name), derived


@pytest.mark.skipif(validation.upstream_dir() is None, reason="upstream schemas absent: run `make fetch-upstream`")
def test_the_crd_schemas_are_parsed_ahead_by_a_process_of_their_own(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN an empty cache and an upstream directory of two of the pinned CRDs: how the parse is handed over does not
    # depend on how many there are (the renders parse all of them; two parses of all took ~2.5 CPU-s here)
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path / "cache"))
    source, upstream = validation.upstream_dir(), tmp_path / "upstream"
    assert source is not None
    for crd in ("karpenter.sh/nodepool.yaml", "scheduling.volcano.sh/queue.yaml"):
        (upstream / "crds" / crd).parent.mkdir(parents=True, exist_ok=True)
        (upstream / "crds" / crd).write_bytes((source / "crds" / crd).read_bytes())
    monkeypatch.setenv("EKSTRAIN_UPSTREAM_DIR", str(upstream))
    validation.clear_caches()
    pickle_file = validation.entry_path(f"crd-schemas-{validation._upstream_crds()[0]}")
    assert not pickle_file.exists()
    # WHEN the prewarm starts THEN another process parses them into the cache, and crd_schemas() waits for it
    validation.prewarm_crd_schemas()
    child = validation._PREWARM
    assert child is not None and child.pid != os.getpid()
    schemas = validation.crd_schemas()
    assert child.returncode == 0 and pickle_file.exists() and validation._PREWARM is None
    assert ("karpenter.sh/v1", "NodePool") in schemas and ("scheduling.volcano.sh/v1beta1", "Queue") in schemas
    # AND the answer is the one this process computes itself
    validation.clear_caches()
    pickle_file.unlink()
    assert validation.crd_schemas().keys() == schemas.keys()
    # AND with the answer cached, nothing starts
    validation.prewarm_crd_schemas()
    assert validation._PREWARM is None
    validation.clear_caches()
