"""RayJob (KubeRay ``ray.io/v1``) with a TorchTrainer entrypoint, or the bare RayCluster.

The head is CPU-only (``num-cpus: 0`` keeps training tasks off it) and runs anywhere; one GPU
worker per node of the partition, with the same resources, EFA and env as every other
scheduler. The entrypoint ``ray_train.py`` (in the launch ConfigMap) runs the training script
once per Ray Train worker under ``TorchTrainer`` with ``num_workers = nodes x GPUs``; Ray Train
sets up ``torch.distributed``, so the script must skip ``init_process_group`` when
``torch.distributed.is_initialized()``.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
from typing import Any

from ekstrain.assembly.jobs.pod import launch_configmap, queue, small_container, worker_container, worker_template
from ekstrain.assembly.jobs.resolve import FILES_DIR, ResolvedRun
from ekstrain.workloads.ray import QUEUE_LABEL, RAYCLUSTER, RAYJOB, SCHEDULER_LABEL

API_VERSION = RAYJOB.api_version
LAUNCHER = "ray_train.py"

LAUNCHER_TEMPLATE = '''"""Ray Train launcher rendered by ekstrain: the script once per worker under TorchTrainer."""
import json
import runpy
import sys

from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

RUN = json.loads({run!r})


def train_loop_per_worker(config):
    sys.argv = list(config["argv"])
    runpy.run_path(sys.argv[0], run_name="__main__")


trainer = TorchTrainer(
    train_loop_per_worker,
    train_loop_config={{"argv": RUN["argv"]}},
    scaling_config=ScalingConfig(num_workers=RUN["num_workers"], use_gpu=True,
                                 resources_per_worker={{"GPU": 1}}),
    run_config=RunConfig(name=RUN["name"], storage_path=RUN["storage_path"],
                         checkpoint_config=CheckpointConfig(num_to_keep=3),
                         failure_config=FailureConfig(max_failures=RUN["max_failures"])),
)
trainer.fit()
'''


def launcher_source(r: ResolvedRun) -> str:
    run = {
        "name": r.name,
        "num_workers": r.world_size,
        "argv": r.script_args(),
        "storage_path": posixpath.dirname(r.checkpoint_dir),
        "max_failures": r.spec.max_restarts,
    }
    return LAUNCHER_TEMPLATE.format(run=json.dumps(run, sort_keys=True))


def with_launcher(r: ResolvedRun) -> ResolvedRun:
    return dataclasses.replace(r, extra_files={**r.extra_files, LAUNCHER: launcher_source(r)})


def cluster_spec(r: ResolvedRun) -> dict[str, Any]:
    head = small_container(r, name="ray-head", cpu="4", memory="16Gi", with_files=True, with_fsx=True)
    head["ports"] = [
        {"name": "gcs", "containerPort": 6379},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
    ]
    head_volumes = [v for v in r.volumes() if v["name"] in ("fsx", "launch")]
    worker = worker_container(r, name="ray-worker")
    return {
        "headGroupSpec": {
            "rayStartParams": {"num-cpus": "0", "dashboard-host": "0.0.0.0"},
            "template": {
                "metadata": {"labels": dict(r.labels)},
                "spec": {"containers": [head], "volumes": head_volumes},
            },
        },
        "workerGroupSpecs": [
            {
                "groupName": "gpu-workers",
                "replicas": r.nodes,
                "minReplicas": r.nodes,
                "maxReplicas": r.nodes,
                "rayStartParams": {"num-gpus": str(r.instance.accelerator_count)},
                "template": worker_template(r, worker),
            }
        ],
    }


def metadata(r: ResolvedRun) -> dict[str, Any]:
    """KubeRay's Volcano integration (operator installed with ``batchScheduler.name: volcano``) reads these
    labels: one PodGroup per Ray cluster (head + workers, minMember = all) in the partition's queue, so a
    RayJob is gang-scheduled and bounded by its partition like every other template. Without the batch
    scheduler the operator ignores them."""
    meta = r.metadata()
    meta["labels"] = {**meta["labels"], SCHEDULER_LABEL: "volcano", QUEUE_LABEL: queue(r)}
    return meta


def submitter_template(r: ResolvedRun) -> dict[str, Any]:
    """The pod that runs ``ray job submit`` and follows the driver's output (every Ray Train worker's lines reach the
    driver): it carries the job's labels, so the log agent files that output under the job. KubeRay uses a given
    template's first container as the submitter and sets its command when it has none (ray-operator
    controllers/ray/rayjob_controller.go ``getSubmitterTemplate``); the image is the job's, as KubeRay's default
    takes the head's."""
    submitter = small_container(r, name="ray-job-submitter", cpu="500m", memory="1Gi")
    return {"metadata": {"labels": dict(r.labels)}, "spec": {"restartPolicy": "Never", "containers": [submitter]}}


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    r = with_launcher(r)
    job = {
        "apiVersion": API_VERSION,
        "kind": RAYJOB.kind,
        "metadata": metadata(r),
        "spec": {
            "entrypoint": f"python {FILES_DIR}/{LAUNCHER}",
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": 3600,
            # A lost head ends the Ray cluster: retry with a new cluster (KubeRay RayJob backoffLimit); a lost
            # submitter pod is retried and re-attaches to the submitted job. Worker loss inside the cluster:
            # Ray Train's FailureConfig(max_failures) in the launcher.
            "backoffLimit": r.spec.max_restarts,
            "submitterConfig": {"backoffLimit": r.spec.max_restarts},
            "submitterPodTemplate": submitter_template(r),
            "rayClusterSpec": cluster_spec(r),
        },
    }
    return [*launch_configmap(r), job]


def build_cluster(r: ResolvedRun) -> list[dict[str, Any]]:
    """A long-lived RayCluster of the same shape, for interactive ``ray job submit`` use."""
    r = with_launcher(r)
    cluster = {"apiVersion": API_VERSION, "kind": RAYCLUSTER.kind, "metadata": metadata(r), "spec": cluster_spec(r)}
    return [*launch_configmap(r), cluster]
