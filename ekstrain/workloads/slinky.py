"""Slinky's NodeSet and LoginSet (``slinky.slurm.net/v1beta1``): slurmd and login pods. The simulator plays a
NodeSet as standing slurmd pods (ekstrain/simulate/engine.py ``nodeset_workloads``), not as a submitted job; the
verifiers walk its template, which may hold no container: the operator adds slurmd beside it at run time
(slurm-operator internal/builder nodeset)."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.base import Context, Workload, WorkloadKind


class SlinkySet(WorkloadKind):
    group = "slinky.slurm.net"
    version = "v1beta1"
    pod_templates = ("spec.template",)
    sidecar_pods = True

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def expand(self, obj: dict[str, Any], ctx: Context) -> Workload | None:
        return None

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        """Not a workload file the simulator reads."""


NODESET = SlinkySet("NodeSet")
LOGINSET = SlinkySet("LoginSet")
