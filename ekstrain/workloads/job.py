"""Kubernetes ``batch/v1`` Job: the Trainium template's Indexed Job (one pod per node) and the platform's Jobs."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import (
    MIN_MEMBER_ANNOTATION,
    QUEUE_ANNOTATION,
    VOLCANO,
    Context,
    PodGroup,
    Workload,
    WorkloadKind,
    pod_spec,
)


class BatchJob(WorkloadKind):
    kind = "Job"
    group = "batch"
    group_required = True
    log_kind = "IndexedJob"
    rank_labels = ("batch.kubernetes.io/job-completion-index",)  # Indexed Job pods (kubernetes v1.28+)
    schedulers = ("trainium",)
    pod_templates = ("spec.template",)
    restart_policy = "spec.backoffLimit pod failures (Indexed: shared by every pod, so backoffLimit / pods restarts)"
    queue_rule = "with schedulerName volcano: the pods' scheduling.volcano.sh/queue-name annotation"
    replace_on_change = {}

    def claims_shape(self, obj: dict[str, Any]) -> bool:
        return obj.get("kind") == self.kind and "tasks" not in (obj.get("spec") or {})

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        spec = obj.get("spec") or {}
        return [PodGroup("pod", int(spec.get("parallelism", 1)), pod_spec(spec.get("template")))]

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
        (pods,) = self.pod_groups(obj, ctx)
        if pods.spec.get("schedulerName") != VOLCANO:
            return Workload(self.name_of(obj), [pods])
        # Volcano's PodGroup controller: one PodGroup for the Job's pods, minMember from the Job's
        # group-min-member annotation (default 1), queue from the pods' annotation (pg_controller_handler.go).
        ann = ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        min_member = int((meta.get("annotations") or {}).get(MIN_MEMBER_ANNOTATION, 1))
        return Workload(
            self.name_of(obj),
            [pods],
            volcano_queue=str(ann.get(QUEUE_ANNOTATION, "default")),
            gang=min_member >= pods.count,
        )

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        # kubernetes pkg/controller/job: backoffLimit counts pod failures; an Indexed Job's gang of ``nodes``
        # pods spends ``nodes`` of them per whole-job restart.
        spec = obj.get("spec") or {}
        limit = int(spec.get("backoffLimit", 6))
        per_pod = spec.get("completionMode") == "Indexed"
        return (limit // max(1, nodes) if per_pod else limit), f"Job backoffLimit {limit}" + (
            f" (pods: {limit // max(1, nodes)} whole-job restarts of {nodes} pods)" if per_pod else ""
        )

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        v.count(spec.get("parallelism"), "spec.parallelism")
        v.count(spec.get("completions"), "spec.completions")
        v.count(spec.get("replicas"), "spec.replicas")
        v.template(spec.get("template"), "spec.template")


KIND = BatchJob()
