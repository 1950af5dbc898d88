"""Scheduler registry: one RunSpec -> the manifests (or sbatch script) for a chosen scheduler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from assembly.jobs import bionemo, mpijob, nccl, pytorchjob, ray, slurm, trainium, trainjob, volcano
from assembly.jobs.planning import PlannerBackend
from assembly.jobs.resolve import ResolvedRun, resolve
from assembly.jobs.spec import JobRequestError, RunSpec
from ekstrain import catalog
from stacks.models import StackConfig


@dataclass(frozen=True)
class Scheduler:
    name: str
    build: Callable[[ResolvedRun], list[dict[str, Any]]]
    family: str | None
    """Accelerator family the template needs; None: whatever the framework needs."""
    summary: str


SCHEDULERS: dict[str, Scheduler] = {
    s.name: s
    for s in (
        Scheduler("mpijob", mpijob.build, catalog.GPU, "MPIJob v2beta1: launcher + one worker per node"),
        Scheduler("pytorchjob", pytorchjob.build, catalog.GPU, "PyTorchJob v1: Master + Workers, torchrun"),
        Scheduler("trainjob", trainjob.build, None, "TrainJob (Kubeflow Trainer v2) on torch-distributed-<partition>"),
        Scheduler("volcano", volcano.build, None, "Volcano gang Job in the partition's queue"),
        Scheduler("rayjob", ray.build, catalog.GPU, "RayJob with a TorchTrainer entrypoint"),
        Scheduler("raycluster", ray.build_cluster, catalog.GPU, "RayCluster of the same shape (interactive)"),
        Scheduler("trainium", trainium.build, catalog.TRAINIUM, "Indexed Job for Trainium with Neuron pre-compile"),
        Scheduler("slurm", lambda r: [slurm.configmap(r)], None, "Slurm sbatch script (text, or --configmap)"),
        Scheduler("nccl-test", nccl.build, None, "all-reduce health check with the catalog's device counts"),
        Scheduler("bionemo", bionemo.build, catalog.GPU, "BioNeMo MolMIM molecule-generation pre-training (Volcano)"),
    )
}


def _installed(cfg: StackConfig) -> dict[str, tuple[bool, str]]:
    s = cfg.schedulers
    return {
        "mpijob": (s.mpi_operator.enabled, "ekstrain:schedulers.mpiOperator.enabled is false"),
        "nccl-test": (s.mpi_operator.enabled, "ekstrain:schedulers.mpiOperator.enabled is false"),
        "pytorchjob": (
            s.kubeflow.flavor == "training-operator",
            f"ekstrain:schedulers.kubeflow.flavor is {s.kubeflow.flavor!r}, PyTorchJob needs "
            "'training-operator' (use --scheduler trainjob with 'trainer')",
        ),
        "trainjob": (
            s.kubeflow.flavor == "trainer",
            f"ekstrain:schedulers.kubeflow.flavor is {s.kubeflow.flavor!r}, TrainJob needs 'trainer'",
        ),
        "volcano": (s.volcano.enabled, "ekstrain:schedulers.volcano.enabled is false"),
        "bionemo": (s.volcano.enabled, "ekstrain:schedulers.volcano.enabled is false"),
        "rayjob": (s.kuberay.enabled, "ekstrain:schedulers.kuberay.enabled is false"),
        "raycluster": (s.kuberay.enabled, "ekstrain:schedulers.kuberay.enabled is false"),
        "slurm": (s.slurm.enabled, "ekstrain:schedulers.slurm.enabled is false"),
    }


def scheduler_warning(cfg: StackConfig, scheduler: str) -> str | None:
    """A warning when the stack does not install the controller this template needs (rendering still works:
    kubectl users may apply it elsewhere)."""
    installed, why = _installed(cfg).get(scheduler, (True, ""))
    return None if installed else f"this stack does not run {scheduler}'s controller: {why}"


def resolve_for(spec: RunSpec, cfg: StackConfig, scheduler: str, planner: PlannerBackend | None = None) -> ResolvedRun:
    if scheduler not in SCHEDULERS:
        raise JobRequestError(f"unknown scheduler {scheduler!r}; use one of {', '.join(SCHEDULERS)}")
    # slurmd pods mount the FSx file system at the Slurm shared path, not at the pods' /fsx.
    mount = cfg.schedulers.slurm.shared_mount_path if scheduler == "slurm" else None
    return resolve(spec, cfg, planner, require_family=SCHEDULERS[scheduler].family, mount_path=mount)


def render(spec: RunSpec, cfg: StackConfig, scheduler: str, planner: PlannerBackend | None = None) -> list[dict]:
    """Kubernetes objects for ``spec`` on ``scheduler`` (slurm: the sbatch ConfigMap)."""
    return SCHEDULERS[scheduler].build(resolve_for(spec, cfg, scheduler, planner))


def render_sbatch(spec: RunSpec, cfg: StackConfig, planner: PlannerBackend | None = None) -> str:
    return slurm.script(resolve_for(spec, cfg, "slurm", planner))


def health_check(cfg: StackConfig, partition: str, nodes: int | None = None, image: str | None = None) -> list[dict]:
    return nccl.render(cfg, partition, nodes, image)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, scripts as literal blocks (readable with ``kubectl get -o yaml``)."""
    return "---\n".join(yaml.dump(o, Dumper=_Dumper, sort_keys=False, width=120) for o in objects)
