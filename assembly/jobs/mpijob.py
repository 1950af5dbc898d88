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
from ekstrain.assembly.jobs.resolve import JOB_LABEL, MASTER_PORT, ResolvedRun
from ekstrain.layout import topology
from ekstrain.workloads.mpijob import KIND

API_VERSION = KIND.api_version
WORKER_ROLE_LABEL = "training.kubeflow.org/job-role"
"""The operator labels each worker pod ``<this>: worker`` (mpi-operator v0.8.2 ``defaultLabels``)."""


def worker_affinity(r: ResolvedRun) -> dict[str, Any] | None:
    """The network tier of the plan, as a preference of the worker pods (ekstrain/layout/topology.py).

    The MPIJob cannot carry ``networkTopology``: the operator builds the PodGroup itself from ``schedulingPolicy``
    (queue, minAvailable, minResources, priorityClass; mpi-operator v0.8.2 pkg/controller/podgroup.go
    ``newPodGroup``), rewrites its whole spec whenever it differs (``pgSpecsAreEqual``/``updatePodGroup``), refuses a
    PodGroup of the job's name it does not own (mpi_job_controller.go ``getOrCreatePodGroups``), and names its own
    on every pod (``decoratePodTemplateSpec``), so Volcano's pod-annotation route
    (``volcano.sh/network-topology-mode``, volcano v1.15.1 pg_controller_handler.go) never runs: that controller
    skips pods that name a PodGroup. What reaches Volcano is the pods' own affinity, scored by its nodeorder
    plugin, plus the network-topology-aware plugin's HyperNode packing of every gang."""
    return topology.preferred_pod_affinity(
        {JOB_LABEL: r.name, WORKER_ROLE_LABEL: "worker"},
        topology.network_topology(r.instance.name, r.nodes, r.degrees),
    )


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


def _affinity(affinity: dict[str, Any] | None) -> dict[str, Any]:
    return {"affinity": affinity} if affinity else {}


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
                    "template": worker_template(r, worker, **_affinity(worker_affinity(r))),
                },
            },
        },
    }
    return [*launch_configmap(r), job]
