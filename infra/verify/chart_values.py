"""A stricter Helm values check for charts whose values hold maps of templated entries.

``ekstrain.tooling.validation.unknown_value_keys`` accepts anything below a map that is empty upstream, and
the slurm chart's ``nodesets`` and ``loginsets`` are empty maps whose entries follow
``nodesetDefaults`` / ``loginsetDefaults``. This checks each entry against its template too, and
validates the Kubernetes parts (``podSpec``: corev1.PodSpec, the slurmd/login container,
``service.spec``: corev1.ServiceSpec) with kubernetes-validate instead of by key names (their
upstream defaults such as ``nodeSelector: {kubernetes.io/os: linux}`` are examples, not schemas).
"""

from __future__ import annotations

import copy
from typing import Any

from ekstrain.tooling import validation

TEMPLATED_MAPS: dict[str, dict[str, tuple[str, str]]] = {
    # chart dir -> values map -> (template key, container key inside an entry)
    "slurm": {"nodesets": ("nodesetDefaults", "slurmd"), "loginsets": ("loginsetDefaults", "login")},
}
FREE_FORM = ("podSpec", "metadata")
"""Entry keys checked by kubernetes-validate (or free-form labels/annotations), not by key names."""


def _free(template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(template)
    for key in FREE_FORM:
        out.pop(key, None)
    if isinstance(out.get("service"), dict):
        out["service"] = {k: v for k, v in out["service"].items() if k not in ("spec", "metadata")}
    return out


def value_problems(chart_dir: str, values: dict[str, Any], kubernetes_version: str) -> list[str]:
    """Unknown keys (whole document and every templated entry) and invalid embedded Kubernetes specs."""
    defaults = validation.chart_defaults(chart_dir)
    problems = [f"unknown key {k}" for k in validation.unknown_value_keys(values, defaults)]
    return problems + entry_problems(chart_dir, values, kubernetes_version)


def templated_entries(chart_dir: str, values: dict[str, Any]) -> list[str]:
    """``map.entry`` of every templated entry the values hold (what ``entry_problems`` checks)."""
    return [
        f"{map_key}.{name}" for map_key in TEMPLATED_MAPS.get(chart_dir, {}) for name in (values.get(map_key) or {})
    ]


def entry_problems(chart_dir: str, values: dict[str, Any], kubernetes_version: str) -> list[str]:
    """Each templated entry against its template, and its embedded Kubernetes specs (the part
    ``unknown_value_keys`` lets through)."""
    templated = TEMPLATED_MAPS.get(chart_dir, {})
    if not templated:
        return []
    defaults = validation.chart_defaults(chart_dir)
    problems: list[str] = []
    for map_key, (template_key, container_key) in templated.items():
        template = defaults[template_key]
        for entry_name, entry in (values.get(map_key) or {}).items():
            here = f"{map_key}.{entry_name}"
            stripped = {k: v for k, v in entry.items() if k not in FREE_FORM}
            if isinstance(stripped.get("service"), dict):
                stripped["service"] = {k: v for k, v in stripped["service"].items() if k not in ("spec", "metadata")}
            problems += [f"unknown key {here}.{k}" for k in validation.unknown_value_keys(stripped, _free(template))]
            problems += [f"{here}: {p}" for p in _kubernetes_problems(entry, container_key, kubernetes_version)]
    return problems


def _kubernetes_problems(entry: dict[str, Any], container_key: str, kubernetes_version: str) -> list[str]:
    container = {"name": container_key, "image": "placeholder"}
    for key in ("resources", "volumeMounts", "env", "securityContext", "args"):
        if key in (entry.get(container_key) or {}):
            container[key] = entry[container_key][key]
    pod_spec = {**(entry.get("podSpec") or {}), "containers": [container]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "check"}, "spec": pod_spec}
    out = validation.validate_object(pod, kubernetes_version)
    service = entry.get("service") or {}
    if service:
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "check", **(service.get("metadata") or {})},
            "spec": {"ports": [{"port": 22}], **(service.get("spec") or {})},
        }
        out += validation.validate_object(svc, kubernetes_version)
    return out
