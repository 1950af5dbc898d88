"""Scheduler registry: one RunSpec -> the manifests (or sbatch script) for a chosen scheduler."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from ekstrain.assembly import logs
from ekstrain.assembly.jobs import (
    bionemo,
    mpijob,
    nccl,
    pod,
    pytorchjob,
    ray,
    slurm,
    trainium,
    trainjob,
    volcano,
    windows,
)
from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.assembly.jobs.planning import PlannerBackend
from ekstrain.assembly.jobs.resolve import ResolvedRun, resolve
from ekstrain.assembly.jobs.spec import JobRequestError, RunSpec
from ekstrain.facts import catalog
from ekstrain.workloads import registry

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig


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
    """Scheduler -> (its controller is installed, the stack-file setting that installs it), from each workload
    kind's ``installed`` (ekstrain/workloads); schedulers of built-in kinds need nothing installed."""
    out = {}
    for name, kind in registry.schedulers():
        installed = kind.installed(cfg.schedulers)
        if installed is not None:
            out[name] = installed
    return out


def scheduler_problem(cfg: StackConfig, scheduler: str, family: str | None = None) -> str | None:
    """Why ``scheduler``'s workload would never run on this stack (its controller is not installed), with
    the stack-file key that installs it and the schedulers this stack does run; None when it is installed."""
    installed = _installed(cfg)
    ok, fix = installed.get(scheduler, (True, ""))
    if ok:
        return None
    usable = [
        name
        for name, (on, _) in installed.items()
        if on and name not in ("nccl-test", "raycluster") and SCHEDULERS[name].family in (None, family)
    ]
    alternative = f"use --scheduler {' or '.join(usable)}" if usable else "no other job scheduler is installed"
    return f"this stack does not install {scheduler}'s controller: {fix}, or {alternative}"


def resolve_for(spec: RunSpec, cfg: StackConfig, scheduler: str, planner: PlannerBackend | None = None) -> ResolvedRun:
    if scheduler not in SCHEDULERS:
        close = difflib.get_close_matches(scheduler, list(SCHEDULERS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise JobRequestError(f"unknown scheduler {scheduler!r}{hint}; fix: use one of {', '.join(SCHEDULERS)}")
    # slurmd pods mount the FSx file system at the Slurm shared path, not at the pods' /fsx.
    mount = cfg.schedulers.slurm.shared_mount_path if scheduler == "slurm" else None
    windows.check(spec, cfg)  # refuses a run that outlives its Capacity Block without a checkpoint signal
    spec = dataclasses.replace(spec, env={**windows.signal_env(cfg, spec.partition), **spec.env})
    r = resolve(spec, cfg, planner, require_family=SCHEDULERS[scheduler].family, mount_path=mount)
    # Every pod says which job, kind and queue it belongs to: the log agent and OpenCost read these labels.
    # The queue is the one the pods run in: with teams ``<partition>-<team>`` or ``<partition>-shared``, so spend by
    # queue and the log query see the team (an sbatch's records carry its Slurm partition, assembly/logs.py).
    labels = {**r.labels, **joblogs.pod_labels(scheduler, r.shape.name if scheduler == "slurm" else pod.queue(r))}
    slurm_log_dir = logs.SLURM_LOG_DIR if scheduler == "slurm" and cfg.logging.enabled else None
    return dataclasses.replace(r, labels=labels, slurm_log_dir=slurm_log_dir)


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
