"""MPIJob (mpi-operator v0.8, ``kubeflow.org/v2beta1``): a launcher and one worker per node."""

from __future__ import annotations

from ekstrain.workloads.kubeflow import ReplicaSpecsKind


class MPIJob(ReplicaSpecsKind):
    kind = "MPIJob"
    version = "v2beta1"
    plural = "mpijobs"
    replica_specs = "mpiReplicaSpecs"
    log_kind = "MPIJob"
    schedulers = ("mpijob", "nccl-test")
    installed_by = ("mpi_operator.enabled", True, "set ekstrain:schedulers.mpiOperator.enabled: true")
    gang_flag = "--gang-scheduling=volcano"  # mpi-operator cmd/mpi-operator/app/options


KIND = MPIJob()
