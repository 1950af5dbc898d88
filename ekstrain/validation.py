"""Validate rendered Kubernetes objects and Helm values against the real upstream schemas.

- Custom resources: the CRD's ``openAPIV3Schema`` from the pinned upstream files (see
  ``shared/upstream/SOURCES.md``), converted to JSON Schema the way the API server treats it:
  unknown fields are rejected unless ``x-kubernetes-preserve-unknown-fields`` says otherwise,
  ``int-or-string`` accepts both. CEL rules (``x-kubernetes-validations``) are listed for the
  caller to check with its own tests; they are not evaluated here.
- Built-in kinds: ``kubernetes-validate`` in strict mode for the cluster's Kubernetes version.
- Helm values: every key path must exist in the chart's upstream ``values.yaml`` (below maps
  that are empty upstream, anything goes: they are free-form, such as ``nodeSelector``).

The upstream files are not copied into this repository. They are read from, in order:
``$EKSTRAIN_UPSTREAM_DIR``, ``../shared/upstream`` beside the checkout, ``.upstream/`` (filled by
``make fetch-upstream``).
"""

from __future__ import annotations

import functools
import os
import pathlib
from dataclasses import dataclass
from typing import Any

import yaml

REPO = pathlib.Path(__file__).resolve().parent.parent
# The upstream CRDs are several MB of YAML: libyaml's loader parses them ~10x faster when present.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# API groups served by Kubernetes itself (validated by kubernetes-validate, not by a CRD).
BUILTIN_GROUPS = {
    "", "apps", "batch", "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "networking.k8s.io",
    "scheduling.k8s.io", "autoscaling", "coordination.k8s.io", "node.k8s.io", "apiextensions.k8s.io",
    "admissionregistration.k8s.io", "discovery.k8s.io", "resource.k8s.io",
}


def upstream_dir() -> pathlib.Path | None:
    candidates = [os.environ.get("EKSTRAIN_UPSTREAM_DIR"), REPO.parent / "shared" / "upstream", REPO / ".upstream"]
    for c in candidates:
        if c and (pathlib.Path(c) / "crds").is_dir():
            return pathlib.Path(c)
    return None


class SchemasMissing(RuntimeError):
    pass


def _require_upstream() -> pathlib.Path:
    found = upstream_dir()
    if found is None:
        raise SchemasMissing("upstream schemas not found: set EKSTRAIN_UPSTREAM_DIR or run `make fetch-upstream`")
    return found


@dataclass(frozen=True)
class CrdVersion:
    group: str
    version: str
    kind: str
    schema: dict[str, Any]
    cel_rules: tuple[tuple[str, str, str], ...]
    """(json path, rule, message) of every x-kubernetes-validations entry."""


@functools.lru_cache(maxsize=1)
def crd_schemas() -> dict[tuple[str, str], CrdVersion]:
    """(apiVersion, kind) -> schema for every served version of every upstream CRD."""
    root = _require_upstream() / "crds"
    out: dict[tuple[str, str], CrdVersion] = {}
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=_YAML_LOADER):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for v in spec["versions"]:
                if not v.get("served", True):
                    continue
                raw = v["schema"]["openAPIV3Schema"]
                api = f"{spec['group']}/{v['name']}"
                out[(api, spec["names"]["kind"])] = CrdVersion(
                    spec["group"], v["name"], spec["names"]["kind"], _to_json_schema(raw),
                    tuple(_cel_rules(raw, "$")))
    return out


def _cel_rules(node: Any, path: str) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    if not isinstance(node, dict):
        return found
    for rule in node.get("x-kubernetes-validations", []) or []:
        found.append((path, rule.get("rule", ""), rule.get("message", "")))
    for key, child in (node.get("properties") or {}).items():
        found += _cel_rules(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        found += _cel_rules(node["items"], f"{path}[*]")
    return found


def _to_json_schema(node: Any) -> Any:
    """OpenAPI v3 structural schema -> JSON Schema with the API server's strictness."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("x-kubernetes-validations", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
                   "x-kubernetes-map-type", "x-kubernetes-embedded-resource", "nullable", "format",
                   "description", "example", "default", "x-kubernetes-preserve-unknown-fields",
                   "x-kubernetes-int-or-string"):
            continue
        if key == "properties":
            out[key] = {k: _to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_to_json_schema(v) for v in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}] + out.get("anyOf", [])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if node.get("type") == "object" and "additionalProperties" not in node and not preserve:
        out["additionalProperties"] = False
    if node.get("x-kubernetes-embedded-resource"):
        out.setdefault("properties", {}).update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                                  "metadata": {"type": "object"}})
    return out


def validate_object(obj: dict[str, Any], kubernetes_version: str) -> list[str]:
    """Problems with one manifest; empty when it is valid."""
    api = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    where = f"{kind} {obj.get('metadata', {}).get('namespace', '')}/{obj.get('metadata', {}).get('name', '?')}"
    if group in BUILTIN_GROUPS:
        import kubernetes_validate

        try:
            kubernetes_validate.validate(obj, kubernetes_version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            return [f"{where}: {exc.message}"]
        except kubernetes_validate.SchemaNotFoundError:
            return [f"{where}: no built-in schema for {api} {kind} in Kubernetes {kubernetes_version}"]
        return []
    crd = crd_schemas().get((api, kind))
    if crd is None:
        return [f"{where}: no upstream CRD schema for {api} {kind} (add the CRD to the pinned upstream set)"]
    import jsonschema

    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    schema = dict(crd.schema)
    props = dict(schema.get("properties", {}))
    for key in ("apiVersion", "kind", "metadata"):
        props.pop(key, None)
    schema["properties"] = props
    # Some CRDs (Argo CD's) list metadata as required at the root: it is checked by the API server, not here.
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r not in ("apiVersion", "kind", "metadata")]
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    return [f"{where}: {'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]


# ---- Helm values ---------------------------------------------------------------------------------

FREE_FORM_VALUES: dict[str, tuple[tuple[str, ...], ...]] = {
    # zero-to-jupyterhub passes hub.config through as traitlets config (c.<Class>.<trait>): any class.
    "jupyterhub": (("hub", "config"),),
}
"""Value paths a chart documents as free-form although its values.yaml has example keys there."""


@functools.cache
def chart_defaults(upstream_chart_dir: str) -> dict[str, Any]:
    path = _require_upstream() / "charts" / upstream_chart_dir / "values.yaml"
    defaults = yaml.safe_load(path.read_text()) or {}
    for free in FREE_FORM_VALUES.get(upstream_chart_dir, ()):
        node = defaults
        for key in free[:-1]:
            node = node.get(key, {})
        if isinstance(node, dict) and free[-1] in node:
            node[free[-1]] = {}
    return defaults


def unknown_value_keys(values: Any, defaults: Any, path: str = "") -> list[str]:
    """Key paths in ``values`` that the chart's values.yaml does not have."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or not defaults:
        return []
    out = []
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if key not in defaults:
            out.append(here)
        else:
            out += unknown_value_keys(value, defaults[key], here)
    return out
