"""TrainingJob: registers one rendered training workload (or health check) as Kubernetes resources.

Thin on purpose: ``ekstrain.assembly.jobs`` renders the objects (pure, tested without Pulumi); this
component only turns each object into a resource (``CustomResource`` for MPIJob, PyTorchJob,
TrainJob, Volcano Job, RayJob/RayCluster; typed ConfigMap, Service and batch/v1 Job), children of
the component, in render order. Pass the Kubernetes provider in ``opts`` and ``depends_on`` the
operator's Helm release so the CRD exists first. Not wired into any stack by default (training
runs are not infrastructure); see docs/jobs.md for declaring the NCCL health checks in a stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from ekstrain.components.manifest import resource


@dataclass(frozen=True, kw_only=True)
class TrainingJobArgs:
    """``TrainingJobArgs(objects=assembly.jobs.render(spec, cfg, scheduler))`` or ``objects=health_check(cfg, p)``."""

    objects: Sequence[Mapping[str, Any]]
    """Rendered Kubernetes objects (``ekstrain.assembly.jobs.render`` / ``health_check``), applied in this order."""


def _suffix(obj: Mapping[str, Any]) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}"


class TrainingJob(pulumi.ComponentResource):
    resources: list[pulumi.CustomResource]

    def __init__(self, name: str, args: TrainingJobArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:jobs:TrainingJob", name, None, opts)
        self.resources = []
        previous: list[pulumi.Resource] = []
        for obj in args.objects:
            # Each object waits for the one before it: the launch ConfigMap exists before the workload mounts it.
            child = pulumi.ResourceOptions(parent=self, depends_on=list(previous))
            rname = f"{name}-{_suffix(obj)}"
            res = resource(rname, obj, opts=child)
            self.resources.append(res)
            previous = [res]
        self.register_outputs(
            {"kinds": [o["kind"] for o in args.objects], "names": [o["metadata"]["name"] for o in args.objects]}
        )
