"""BioNeMo molecule generation: MolMIM pre-training as a Volcano gang job with the planner's numbers.

The seed's molecule-generation workload. The job is the Volcano template's gang Job (queue, gang
size, restart policy, EFA, FSx, placement are unchanged); only the worker command differs: BioNeMo
Framework 1.x trains MolMIM with NeMo/Hydra (``examples/molecule/molmim/pretrain.py``), which
takes Hydra overrides rather than the generic ``--flag=value`` arguments, so the planner's degrees
are passed as ``trainer.*``/``model.*`` overrides:

- ``trainer.num_nodes`` / ``trainer.devices``: nodes and GPUs per node;
- ``model.global_batch_size`` / ``model.micro_batch_size``: the run's batch and the plan's
  micro-batch (NeMo derives gradient accumulation from them and the data-parallel size);
- ``model.tensor_model_parallel_size`` / ``model.pipeline_model_parallel_size``: the plan's TP/PP;
- ``exp_manager.exp_dir`` on FSx with ``resume_if_exists``: a restarted gang resumes from the last
  checkpoint; ``model.data.dataset_path``: the SMILES dataset under the run's data directory.
"""

from __future__ import annotations

import copy
from typing import Any

from ekstrain.assembly.jobs import volcano
from ekstrain.assembly.jobs.pod import kubelet_argv
from ekstrain.assembly.jobs.resolve import ResolvedRun, shell_join

BIONEMO_HOME = "/workspace/bionemo"
SCRIPT = f"{BIONEMO_HOME}/examples/molecule/molmim/pretrain.py"
CONFIG_PATH = f"{BIONEMO_HOME}/examples/molecule/molmim/conf"
CONFIG_NAME = "pretrain_small_canonicalized"
"""MolMIM-small: 6-layer encoder and decoder, hidden 512, 8 heads (the molmim_70m checkpoint's size)."""
DATASET = "zinc15"
"""Sub-directory of the run's data directory holding the processed SMILES splits (train/val/test)."""


def hydra_overrides(r: ResolvedRun) -> list[str]:
    d = r.degrees
    return [
        f"trainer.num_nodes={r.nodes}",
        f"trainer.devices={r.nproc_per_node}",
        "trainer.precision=bf16-mixed",
        f"model.global_batch_size={r.spec.global_batch}",
        f"model.micro_batch_size={d['micro_batch']}",
        f"model.tensor_model_parallel_size={d['tp']}",
        f"model.pipeline_model_parallel_size={d['pp']}",
        f"++model.seq_length={r.spec.seq_len}",
        f"++model.data.dataset_path={r.data_dir}/{DATASET}",
        f"exp_manager.exp_dir={r.checkpoint_dir}",
        "exp_manager.resume_if_exists=True",
        "exp_manager.resume_ignore_no_checkpoint=True",
        *r.spec.args,
    ]


def torchrun_argv(r: ResolvedRun, rendezvous: list[str]) -> list[str]:
    """torchrun of the MolMIM pre-training script with the planner's numbers as Hydra overrides."""
    return [
        "torchrun",
        f"--nnodes={r.nodes}",
        f"--nproc_per_node={r.nproc_per_node}",
        *rendezvous,
        SCRIPT,
        f"--config-path={CONFIG_PATH}",
        f"--config-name={CONFIG_NAME}",
        *hydra_overrides(r),
    ]


def command(r: ResolvedRun, rendezvous: list[str]) -> str:
    """``bash -c`` body: the FSx directories, then torchrun of the MolMIM pre-training script."""
    return "\n".join([*r.prelude(), "exec " + shell_join(torchrun_argv(r, rendezvous))]) + "\n"


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    objects = copy.deepcopy(volcano.build(r))
    job = objects[-1]
    (task,) = job["spec"]["tasks"]
    container = task["template"]["spec"]["containers"][0]
    container["command"] = kubelet_argv(["/bin/bash", "-c", command(r, volcano.rendezvous(r))])
    container["env"] = [*container.get("env", []), {"name": "BIONEMO_HOME", "value": BIONEMO_HOME}]
    job["metadata"].setdefault("labels", {})["ekstrain.io/workload"] = "bionemo-molmim"
    return objects
