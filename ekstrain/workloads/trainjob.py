"""TrainJob (Kubeflow Trainer v2, ``trainer.kubeflow.org/v1alpha1``): the pods are its runtime's JobSet."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import QUEUE_ANNOTATION, VOLCANO, Context, PodGroup, Workload, WorkloadKind, pod_spec


class TrainJob(WorkloadKind):
    kind = "TrainJob"
    group = "trainer.kubeflow.org"
    version = "v1alpha1"
    plural = "trainjobs"
    log_kind = "TrainJob"
    rank_labels = ("batch.kubernetes.io/job-completion-index",)  # its JobSet's Indexed Jobs
    schedulers = ("trainjob",)
    pod_templates = ()
    """None of its own: the pod templates are in the (Cluster)TrainingRuntime it names, walked as that object."""
    restart_policy = "the runtime's JobSet failurePolicy.maxRestarts"
    queue_rule = (
        "with the runtime's podGroupPolicy.volcano and schedulerName volcano: the JobSet template's "
        "scheduling.volcano.sh/queue-name annotation (runtime patches applied)"
    )

    def installed(self, schedulers: Any) -> tuple[bool, str] | None:
        flavor = schedulers.kubeflow.flavor
        return flavor == "trainer", f"set ekstrain:schedulers.kubeflow.flavor: trainer (it is {flavor!r})"

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        """Trainer v2: the runtime's JobSet, ``numNodes`` pods of the ``node`` job with the trainer's resources,
        runtime patches applied (kubeflow/trainer pkg/runtime/framework/plugins/torch + jobset builder). With the
        runtime's ``podGroupPolicy.volcano`` the Volcano plugin makes one PodGroup of every pod in the queue the
        JobSet template's ``scheduling.volcano.sh/queue-name`` annotation names (plugins/volcano/volcano.go); the
        pods reach Volcano only when their template names it as scheduler."""
        name = f"TrainJob/{obj['metadata']['name']}"
        spec = obj.get("spec", {})
        ref = spec.get("runtimeRef", {}).get("name")
        runtime = ctx.runtimes.get(ref or "")
        if runtime is None:
            return Workload(name, [], problems=[f"ClusterTrainingRuntime {ref!r} is not installed by this stack"])
        trainer = spec.get("trainer") or {}
        groups = []
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = dict(pod_spec(job["template"]["spec"].get("template")))
            count = int(job.get("replicas", 1))
            if job["name"] == "node":
                count = int(trainer.get("numNodes", runtime["spec"].get("mlPolicy", {}).get("numNodes", 1)))
                containers = []
                for c in pod.get("containers", []):
                    if c["name"] == "node" and "resourcesPerNode" in trainer:
                        c = {**c, "resources": trainer["resourcesPerNode"]}
                    containers.append(c)
                pod["containers"] = containers
            for patch in spec.get("runtimePatches") or []:
                for pj in (
                    patch.get("trainingRuntimeSpec", {}).get("template", {}).get("spec", {}).get("replicatedJobs") or []
                ):
                    if pj.get("name") != job["name"]:
                        continue
                    ps = pod_spec(pj.get("template", {}).get("spec", {}).get("template"))
                    for key in ("nodeSelector", "tolerations", "affinity"):
                        if key in ps:
                            pod[key] = ps[key]
            groups.append(PodGroup(job["name"], count, pod))
        rspec = runtime.get("spec") or {}
        queue = None
        if "volcano" in (rspec.get("podGroupPolicy") or {}) and all(
            g.spec.get("schedulerName") == VOLCANO for g in groups
        ):
            annotations = dict(((rspec.get("template") or {}).get("metadata") or {}).get("annotations") or {})
            for patch in spec.get("runtimePatches") or []:
                meta = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("metadata") or {}
                annotations.update(meta.get("annotations") or {})
            queue = str(annotations.get(QUEUE_ANNOTATION, "default"))
        return Workload(name, groups, volcano_queue=queue)

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        spec = obj.get("spec") or {}
        runtime = ctx.runtimes.get(str((spec.get("runtimeRef") or {}).get("name")), {})
        policy = ((runtime.get("spec") or {}).get("template") or {}).get("spec", {}).get("failurePolicy") or {}
        limit = int(policy.get("maxRestarts", 0))
        kind_of = runtime.get("kind", "ClusterTrainingRuntime")
        return limit, f"JobSet failurePolicy.maxRestarts {limit} ({kind_of})"

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        ref = v.mapping(spec.get("runtimeRef"), "spec.runtimeRef")
        v.text(ref.get("name"), "spec.runtimeRef.name")
        trainer = v.mapping(spec.get("trainer"), "spec.trainer")
        v.count(trainer.get("numNodes"), "spec.trainer.numNodes")
        per_node = v.mapping(trainer.get("resourcesPerNode"), "spec.trainer.resourcesPerNode")
        v.quantities(per_node.get("requests"), "spec.trainer.resourcesPerNode.requests")
        v.quantities(per_node.get("limits"), "spec.trainer.resourcesPerNode.limits")
        for i, patch in enumerate(v.sequence(spec.get("runtimePatches"), "spec.runtimePatches")):
            v.mapping(patch, f"spec.runtimePatches[{i}]", required=True)


KIND = TrainJob()
