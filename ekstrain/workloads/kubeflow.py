"""What the Kubeflow operators' jobs share (MPIJob, PyTorchJob): ``<x>ReplicaSpecs`` roles, ``runPolicy``."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import QUEUE_ANNOTATION, Context, PodGroup, Workload, WorkloadKind, replicas


class ReplicaSpecsKind(WorkloadKind):
    group = "kubeflow.org"
    # MPIJob workers, PyTorchJob replicas: the operators' replica-index label (kubeflow/common
    # pkg/apis/common/v1/constants.go ``ReplicaIndexLabel``, which both operators set on their pods)
    rank_labels = ("training.kubeflow.org/replica-index",)
    replica_specs = ""
    """The spec key holding the roles (``mpiReplicaSpecs``)."""
    restart_policy = "runPolicy.backoffLimit whole-job restarts (none without it)"
    queue_rule = (
        "with the operator's Volcano gang flag: runPolicy.schedulingPolicy.queue, else the job's "
        "scheduling.volcano.sh/queue-name annotation, else default"
    )

    @property
    def pod_templates(self) -> tuple[str, ...]:  # type: ignore[override]
        return (f"spec.{self.replica_specs}.*.template",)

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        return replicas((obj.get("spec") or {}).get(self.replica_specs) or {})

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        """With Volcano gang scheduling (mpi-operator ``--gang-scheduling=volcano``, training-operator
        ``--gang-scheduler-name=volcano``): one PodGroup of the job in ``schedulingPolicy.queue`` (else the
        job's queue-name annotation, else Volcano's default queue) with ``minResources`` when given
        (mpi-operator v0.8 pkg/controller/podgroup.go ``newPodGroup``)."""
        groups = self.pod_groups(obj, ctx)
        if self.kind not in ctx.gang_kinds:
            return Workload(self.name_of(obj), groups)
        spec, meta = obj.get("spec") or {}, obj.get("metadata") or {}
        policy = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
        queue = policy.get("queue") or (meta.get("annotations") or {}).get(QUEUE_ANNOTATION) or "default"
        minimum = policy.get("minResources")
        return Workload(
            self.name_of(obj), groups, volcano_queue=str(queue), min_resources=dict(minimum) if minimum else None
        )

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        limit = ((obj.get("spec") or {}).get("runPolicy") or {}).get("backoffLimit")
        if limit is None:
            return 0, "no runPolicy.backoffLimit"
        return int(limit), f"runPolicy.backoffLimit {limit}"

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        path = f"spec.{self.replica_specs}"
        for role, s in v.mapping(spec.get(self.replica_specs), path).items():
            s = v.mapping(s, f"{path}.{role}", required=True)
            v.count(s.get("replicas"), f"{path}.{role}.replicas")
            v.template(s.get("template"), f"{path}.{role}.template")
