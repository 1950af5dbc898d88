"""A bare Pod (the simulator's slurmd pods and notebook servers are Pods too): itself its template."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import QUEUE_ANNOTATION, VOLCANO, Context, PodGroup, WorkloadKind


class Pod(WorkloadKind):
    kind = "Pod"
    pod_templates = ("",)
    queue_rule = "with schedulerName volcano: its scheduling.volcano.sh/queue-name annotation (else default)"

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        return [PodGroup("pod", 1, obj.get("spec") or {})]

    def queue(self, obj: dict[str, Any], groups: list[PodGroup], ctx: Context) -> str | None:
        # Volcano makes a one-pod PodGroup for a bare pod it schedules (pkg/controllers/podgroup
        # pg_controller_handler.go), in the queue its annotation names.
        if (obj.get("spec") or {}).get("schedulerName") != VOLCANO:
            return None
        return str(((obj.get("metadata") or {}).get("annotations") or {}).get(QUEUE_ANNOTATION, "default"))

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        v.pod_spec(spec, "spec")


NOTEBOOK_LABEL = ("component", "singleuser-server")
"""The label KubeSpawner puts on a user's server pod (zero-to-jupyterhub singleuser pods)."""


class Notebook(Pod):
    """A JupyterHub user server: a Pod the simulator places as soon as it fits, never restarted or resumed."""

    kind = "Pod"
    placement = "notebook"

    def matches(self, obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return super().matches(obj) and labels.get(NOTEBOOK_LABEL[0]) == NOTEBOOK_LABEL[1]

    def resumes(self, obj: dict[str, Any]) -> tuple[bool, str]:
        return False, "a notebook"


KIND = Pod()
NOTEBOOK = Notebook()
