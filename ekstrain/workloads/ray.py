"""KubeRay (``ray.io/v1``): RayJob (a RayCluster plus its submitter) and the bare RayCluster."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import VOLCANO, Context, PodGroup, WorkloadKind, pod_spec

SCHEDULER_LABEL = "ray.io/scheduler-name"
QUEUE_LABEL = "volcano.sh/queue-name"


class RayCluster(WorkloadKind):
    kind = "RayCluster"
    group = "ray.io"
    plural = "rayclusters"
    log_kind = "RayCluster"
    schedulers = ("raycluster",)
    installed_by = ("kuberay.enabled", True, "set ekstrain:schedulers.kuberay.enabled: true")
    restart_policy = "not restarted (KubeRay recreates failed pods one by one)"
    queue_rule = "with the ray.io/scheduler-name: volcano label: its volcano.sh/queue-name label, else default"
    cluster_key: str | None = None
    """Where the cluster spec is: None the object's spec (RayCluster), else the spec key (RayJob)."""

    def _cluster(self, obj: dict[str, Any]) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        return spec.get(self.cluster_key, {}) if self.cluster_key else spec

    @property
    def pod_templates(self) -> tuple[str, ...]:  # type: ignore[override]
        at = f"spec.{self.cluster_key}" if self.cluster_key else "spec"
        return (f"{at}.headGroupSpec.template", f"{at}.workerGroupSpecs.*.template")

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        # KubeRay: one head pod, and per worker group replicas x numOfHosts pods (ray-operator v1.3
        # controllers/ray/utils: CalculateDesiredReplicas, numOfHosts for multi-host TPU/accelerator groups).
        cluster = self._cluster(obj)
        groups = [PodGroup("head", 1, pod_spec(cluster.get("headGroupSpec", {}).get("template")))]
        for g in cluster.get("workerGroupSpecs") or []:
            count = int(g.get("replicas", g.get("minReplicas", 0)) or 0) * int(g.get("numOfHosts", 1) or 1)
            groups.append(PodGroup(g.get("groupName", "workers"), count, pod_spec(g.get("template"))))
        return groups

    def queue(self, obj: dict[str, Any], groups: list[PodGroup], ctx: Context) -> str | None:
        # KubeRay's Volcano batch scheduler plugin (ray-operator controllers/ray/batchscheduler/volcano).
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return labels.get(QUEUE_LABEL, "default") if labels.get(SCHEDULER_LABEL) == VOLCANO else None

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        path = f"spec.{self.cluster_key}" if self.cluster_key else "spec"
        v.ray_cluster(spec.get(self.cluster_key) if self.cluster_key else spec, path)


class RayJob(RayCluster):
    kind = "RayJob"
    plural = "rayjobs"
    log_kind = "RayJob"
    schedulers = ("rayjob",)
    cluster_key = "rayClusterSpec"
    restart_policy = "spec.backoffLimit whole-job retries (default 0; KubeRay v1.3 RayJob)"

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        limit = int((obj.get("spec") or {}).get("backoffLimit", 0))
        return limit, f"RayJob backoffLimit {limit}"


RAYJOB = RayJob()
RAYCLUSTER = RayCluster()
