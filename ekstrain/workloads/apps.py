"""``apps/v1`` Deployment, StatefulSet, ReplicaSet: ``spec.replicas`` pods of ``spec.template``."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import WorkloadKind


class AppsKind(WorkloadKind):
    group = "apps"
    pod_templates = ("spec.template",)

    def __init__(self, kind: str, replace_on_change: dict[str, tuple[str, ...]] | None = None) -> None:
        self.kind = kind
        self.replace_on_change = replace_on_change or {}

    def claims_shape(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == self.kind and "tasks" not in (obj.get("spec") or {})

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        v.count(spec.get("parallelism"), "spec.parallelism")
        v.count(spec.get("completions"), "spec.completions")
        v.count(spec.get("replicas"), "spec.replicas")
        v.template(spec.get("template"), "spec.template")


# pulumi-kubernetes provider/pkg/provider/forcenew.go ``deployment``: a changed selector replaces it.
DEPLOYMENT = AppsKind("Deployment", {"kubernetes:apps/v1:Deployment": ("spec.selector",)})
STATEFULSET = AppsKind("StatefulSet")
REPLICASET = AppsKind("ReplicaSet")
