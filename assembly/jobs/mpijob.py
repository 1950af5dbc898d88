"""MPIJob v2beta1 (kubeflow/mpi-operator): one launcher running ``mpirun``, one worker per node.

``slotsPerWorker`` = processes per node; ``mpirun -np <world> --npernode <slots>`` starts one rank
per accelerator. Ranks get the image's PATH/LD_LIBRARY_PATH/LD_PRELOAD and the platform env through
``-x`` (ssh sessions do not inherit the container env) and map Open MPI's ranks onto the
torch.distributed variables before ``exec``.
"""

from __future__ import annotations

import shlex
from typing import Any

from ekstrain.assembly.jobs import env as envtable
from ekstrain.assembly.jobs.pod import (
    gang_min_resources,
    launch_configmap,
    queue,
    small_container,
    worker_container,
    worker_template,
)
from ekstrain.assembly.jobs.resolve import MASTER_PORT, ResolvedRun
from ekstrain.workloads.mpijob import KIND

API_VERSION = KIND.api_version


def master_addr(r: ResolvedRun) -> str:
    # mpi-operator's headless Service is named after the job; worker i is <job>-worker-i.<job>.<ns>.svc
    return f"{r.name}-worker-0.{r.name}.{r.namespace}.svc"


def rank_shell(r: ResolvedRun) -> str:
    exports = (
        "export RANK=$OMPI_COMM_WORLD_RANK LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK "
        "WORLD_SIZE=$OMPI_COMM_WORLD_SIZE LOCAL_WORLD_SIZE=$OMPI_COMM_WORLD_LOCAL_SIZE "
        f"MASTER_ADDR={master_addr(r)} MASTER_PORT={MASTER_PORT}"
    )
    return "\n".join([*r.prelude(), exports, "exec " + shlex.join(["python", *r.script_args()])]) + "\n"


def mpirun(r: ResolvedRun, program: list[str], ranks: int, per_node: int, env: dict[str, str]) -> list[str]:
    # --tag-output: every line starts with [<jobid>,<rank>]<stdout|stderr>: (the log agent reads the rank from it).
    cmd = ["mpirun", *envtable.MPI_FLAGS, "--tag-output", "-np", str(ranks), "--npernode", str(per_node)]
    for key in dict.fromkeys([*envtable.MPI_FORWARDED_IMAGE_ENV, *env]):
        cmd += ["-x", key]
    return [*cmd, *program]


def run_policy(r: ResolvedRun) -> dict[str, Any]:
    """backoffLimit: the launcher Job's retries; each reruns mpirun over every worker (a whole-job restart).

    With Volcano, ``schedulingPolicy`` makes the operator (run with ``--gang-scheduling=volcano``,
    components/operators.py) create a PodGroup in the partition's queue and give every pod
    ``schedulerName: volcano`` (mpi-operator v0.8 pkg/controller/podgroup.go ``VolcanoCtrl.newPodGroup`` /
    ``decoratePodTemplateSpec``). ``minAvailable`` is the workers only: with ``WaitForWorkersReady`` the
    launcher is created after every worker is Ready, so the default workers + 1 would never be met; it joins
    the running gang. ``minResources`` = the workers' requests (the default would count the launcher and
    one worker less)."""
    policy: dict[str, Any] = {"cleanPodPolicy": "Running", "backoffLimit": r.spec.max_restarts}
    if r.volcano:
        policy["schedulingPolicy"] = {
            "queue": queue(r),
            "minAvailable": r.nodes,
            "minResources": gang_min_resources(r),
        }
    return policy


def build(r: ResolvedRun, launcher_command: list[str] | None = None) -> list[dict[str, Any]]:
    command = launcher_command or mpirun(r, ["bash", "-c", rank_shell(r)], r.world_size, r.nproc_per_node, r.env)
    launcher = small_container(r, name="launcher", command=command, cpu=r.launcher_cpu, memory=r.launcher_memory)
    worker = worker_container(r, name="worker", command=["/usr/sbin/sshd", "-De"], ssh=True)
    job = {
        "apiVersion": API_VERSION,
        "kind": KIND.kind,
        "metadata": r.metadata(),
        "spec": {
            "slotsPerWorker": r.nproc_per_node,
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "WaitForWorkersReady",
            "runPolicy": run_policy(r),
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {"metadata": {"labels": dict(r.labels)}, "spec": {"containers": [launcher]}},
                },
                "Worker": {
                    "replicas": r.nodes,
                    # sshd restarts in place; a pod lost with its node is recreated by the operator.
                    "restartPolicy": "OnFailure",
                    "template": worker_template(r, worker),
                },
            },
        },
    }
    return [*launch_configmap(r), job]
