"""Volcano Job (``batch.volcano.sh/v1alpha1``): one PodGroup of all its tasks in ``spec.queue``."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import Context, PodGroup, WorkloadKind, pod_spec


class VolcanoJob(WorkloadKind):
    kind = "Job"
    group = "batch.volcano.sh"
    version = "v1alpha1"
    plural = "jobs"
    group_required = True
    log_kind = "VolcanoJob"
    rank_labels = ("volcano.sh/task-index",)  # volcano pkg/controllers/job: the task's pod index label
    schedulers = ("volcano", "bionemo")
    installed_by = ("volcano.enabled", True, "set ekstrain:schedulers.volcano.enabled: true")
    pod_templates = ("spec.tasks.*.template",)
    restart_policy = "spec.maxRetry whole-job restarts (default 3; volcano pkg/controllers/job)"
    queue_rule = "spec.queue (default: Volcano's default queue)"

    def claims_shape(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == self.kind and "tasks" in (obj.get("spec") or {})

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        return [
            PodGroup(t.get("name", "task"), int(t.get("replicas", 1)), pod_spec(t.get("template")))
            for t in (obj.get("spec") or {}).get("tasks") or []
        ]

    def queue(self, obj: dict[str, Any], groups: list[PodGroup], ctx: Context) -> str | None:
        return (obj.get("spec") or {}).get("queue", "default")

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        spec = obj.get("spec") or {}
        return int(spec.get("maxRetry", 3)), f"Volcano Job maxRetry {spec.get('maxRetry', 3)}"

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        v.text(spec.get("queue"), "spec.queue")
        v.count(spec.get("minAvailable"), "spec.minAvailable")
        for i, t in enumerate(v.sequence(spec.get("tasks"), "spec.tasks")):
            t = v.mapping(t, f"spec.tasks[{i}]", required=True)
            v.text(t.get("name"), f"spec.tasks[{i}].name")
            v.count(t.get("replicas"), f"spec.tasks[{i}].replicas")
            v.template(t.get("template"), f"spec.tasks[{i}].template")


KIND = VolcanoJob()
