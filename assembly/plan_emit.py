"""``ekstrain plan search|evaluate ... --emit FRAMEWORK``: the launch lines ``ekstrain job render`` would write.

The words come from the job templates' own code (:class:`ekstrain.assembly.jobs.resolve.ResolvedRun`), for a
run of the plan's model, nodes and batch on the plan's instance type with the stack defaults (FSx at
``/fsx``, data in ``/fsx/data``, checkpoints in ``/fsx/checkpoints/<name>``, script ``train.py``). Only the
rendezvous flags are left out: each scheduler adds its own (``--node_rank=${VC_TASK_INDEX}`` ...).

    fsdp, hsdp           the torchrun + FSDP2 command line (aliases torchrun, torchrun-fsdp)
    deepspeed            the DeepSpeed command line, then the ds_config.json the job mounts at /etc/ekstrain
    megatron             the Megatron-LM command line (pretrain_gpt.py arguments from the plan)
    neuronx-distributed  the neuronx-distributed command line (Trainium; alias neuron)
    nemo                 the NeMo Hydra overrides (``ekstrain.planner.emit.nemo_overrides``; no job template)

The names are the planner's one vocabulary (ekstrain/planner/frameworks.py), the same ``job render
--framework`` takes, and the plan is the best one *for that framework* (``plan search --emit X`` ranks for X).
"""

from __future__ import annotations

import hashlib
import json as jsonlib
import posixpath
import re
from typing import Any

from ekstrain.assembly.jobs.resolve import (
    FILES_DIR,
    ResolvedRun,
    _check_torchrun_args,
    _deepspeed_config,
    _degrees,
    shell_join,
)
from ekstrain.assembly.jobs.spec import MAX_NAME, NAME_PATTERN, JobRequestError, RunSpec, check_text
from ekstrain.facts import catalog
from ekstrain.layout.partitions import shape
from ekstrain.planner import frameworks
from ekstrain.planner.errors import PlanError
from ekstrain.stacks.models.storage import FsxConfig

JOB_FRAMEWORK = {name: name for name in frameworks.JOB_NAMES} | {
    alias: frameworks.ALIASES[alias] for alias in frameworks.ALIASES
}
"""``--emit`` name (or alias) -> the ``ekstrain job render --framework`` that writes the same lines."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def run_name(model: str, framework: str) -> str:
    """The workload name of ``model`` (any text a model JSON's ``name`` holds: "Llama 3 8B", "7B-base") on
    ``framework``: a DNS-1035 label of at most 40 characters (Kubernetes object names, the checkpoint directory).
    Letters and digits are kept lowercased, every other run becomes one ``-``; a leading digit gets ``m-``; when
    more than case and dots changed, six hex digits of the name's hash keep two names from meeting on one label."""
    base = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    if base and not base[0].isalpha():
        base = f"m-{base}"
    if base != model.lower().replace(".", "-"):  # built-in names (llama3.1-8b) keep the label they always had
        base = f"{base or 'model'}-{_digest(model)}".strip("-")
    suffix = f"-{framework}"
    name = f"{base[: MAX_NAME - len(suffix)].rstrip('-')}{suffix}"
    assert NAME_PATTERN.fullmatch(name) and len(name) <= MAX_NAME, name
    return name


def model_identifier(model: str) -> str:
    """``model`` where the launch line uses it as a word of a path or flag value (``--model=``, Megatron's
    ``--data-path <dir>/<model>_text_document``): letters, digits, ``.``, ``_`` and ``-``; anything else becomes
    ``_`` (a space in Megatron's data path would be read as two paths, nargs='*' in megatron/training/arguments.py)."""
    check_text("--model-json name", model)
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._-")
    return cleaned or f"model_{_digest(model)}"


def resolved_run(plan: Any, framework: str, model: str, global_batch: int, seq_len: int) -> ResolvedRun:
    """The job templates' ResolvedRun of ``plan`` (what ``resolve`` computes from a stack, with its defaults)."""
    instance = catalog.get(plan.fleet.name)
    fsx = FsxConfig()
    spec = RunSpec(
        name=run_name(model, framework),
        partition="plan",
        nodes=plan.nodes,
        image="",
        model=model_identifier(model),
        global_batch=global_batch,
        seq_len=seq_len,
        framework=framework,  # type: ignore[arg-type]
        plan=plan,
    )
    nproc = instance.workers_per_node
    degrees = _degrees(spec, plan, nproc)
    _check_torchrun_args(plan, spec.nodes, nproc)
    mount = fsx.mount_path.rstrip("/") or "/"
    return ResolvedRun(
        spec=spec,
        shape=shape(spec.partition, instance.family, [instance.name], True),
        instance=instance,
        plan=plan,
        namespace="",
        nodes=spec.nodes,
        nproc_per_node=nproc,
        degrees=degrees,
        efa=0,
        hugepages_2mi=None,
        memory="",
        cpu="",
        shm_size="",
        mount_path=mount,
        data_dir=posixpath.join(mount, fsx.data_path.lstrip("/")),
        checkpoint_dir=posixpath.join(mount, fsx.checkpoint_path.lstrip("/"), spec.name),
        compile_cache=posixpath.join(mount, "neuron-cache"),
        env={},
        deepspeed_config=_deepspeed_config(plan, degrees, spec) if framework == "deepspeed" else None,
        kubernetes_version="",
    )


def launch(plan: Any, emit: str, *, model: str, global_batch: int, seq_len: int, json: bool = False) -> str:
    """Text of ``--emit``: the launch line (and ds_config.json), or one JSON object with ``--json``."""
    if frameworks.canonical(emit) == frameworks.NEMO:
        words = list(plan.nemo_overrides())
        files: dict[str, str] = {}
    else:
        framework = JOB_FRAMEWORK[emit]
        family = plan.fleet.family
        trainium = framework == frameworks.NEURON
        if (family == catalog.TRAINIUM) != trainium:
            raise PlanError(
                f"--emit {emit} needs {'a Trainium' if trainium else 'a GPU'} instance; {plan.fleet.name} is "
                f"{family} (use --emit {frameworks.NEURON if family == catalog.TRAINIUM else frameworks.FSDP})"
            )
        try:
            run = resolved_run(plan, framework, model, global_batch, seq_len)
            words = [str(w) for w in run.torchrun([])]
            files = run.files()
        except (JobRequestError, ValueError, KeyError) as exc:
            raise PlanError(f"--emit {emit}: {exc}") from None
    if json:
        return jsonlib.dumps({"emit": emit, "command": words, "files": files}, indent=2)  # strings only
    text = shell_join(words)
    for file_name, content in files.items():
        text += f"\n# {FILES_DIR}/{file_name}\n{content.rstrip()}"
    return text


__all__ = ["JOB_FRAMEWORK", "launch", "resolved_run"]
