"""A Slurm batch script (``ekstrain job render --scheduler slurm``; in a ConfigMap under ``<name>.sbatch`` for
GitOps): its pods are the partition's Slinky NodeSet pods, its request the ``#SBATCH`` directives."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import Context, Workload, WorkloadKind

SUFFIX = ".sbatch"


def _text(obj: dict[str, Any]) -> str:
    return "\n".join(str(v) for v in (obj.get("data") or {}).values())


class Sbatch(WorkloadKind):
    kind = "ConfigMap"
    log_kind = "sbatch"
    # the log agent tails the job's output file on the node (ekstrain/assembly/logs.py): no namespace, the
    # Slurm job name and id
    log_fields = ("job_kind", "job")
    log_extra_shown = ("slurm_job_id",)
    schedulers = ("slurm",)
    installed_by = ("slurm.enabled", True, "set ekstrain:schedulers.slurm.enabled: true")
    restart_policy = "Slurm requeues a batch job on node failure (JobRequeue=1) unless --no-requeue"
    queue_rule = "#SBATCH --partition: the partition's NodeSet pods, in that partition's Volcano queue"

    def arrival_name(self, obj: dict[str, Any]) -> str:
        return f"sbatch/{(obj.get('metadata') or {}).get('name')}"

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        texts = [(k, v) for k, v in (obj.get("data") or {}).items() if str(k).endswith(SUFFIX)]
        if not texts:
            return None
        name, text = texts[0]
        assert ctx.sbatch is not None, "the simulator hands its #SBATCH reader in the Context"
        try:
            request = ctx.sbatch(text)
        except ValueError as exc:
            return Workload(f"sbatch/{name}", [], problems=[str(exc)])
        return Workload(f"sbatch/{name}", [], slurm=request)

    def placement_of(self, w: Workload) -> str:
        # a script whose directives did not parse has no request: it is reported, not run on a partition
        return "slurm" if w.slurm else super().placement_of(w)

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        # slurm.conf JobRequeue=1 (Slinky's default config); sbatch --no-requeue opts out.
        if "--no-requeue" in _text(obj):
            return 0, "sbatch --no-requeue"
        return 1_000, "Slurm requeues batch jobs on node failure (JobRequeue=1)"

    def resumes(self, obj: dict[str, Any]) -> tuple[bool, str]:
        text = _text(obj)
        ok = "CHECKPOINT_DIR" in text and ("RESUME_FROM_CHECKPOINT" in text or "--resume" in text)
        return ok, "" if ok else "the sbatch script names no checkpoint to resume from"

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        for key, value in v.mapping(obj.get("data"), "data").items():
            v.text(value, f"data.{key}")
            if str(key).endswith(SUFFIX):
                v.sbatch_script(value, f"data.{key}")


KIND = Sbatch()
