"""PyTorchJob (the legacy Kubeflow training operator, release-1.9, ``kubeflow.org/v1``): Master + Workers."""

from __future__ import annotations

from typing import Any

from ekstrain.workloads.kubeflow import ReplicaSpecsKind


class PyTorchJob(ReplicaSpecsKind):
    kind = "PyTorchJob"
    version = "v1"
    plural = "pytorchjobs"
    replica_specs = "pytorchReplicaSpecs"
    log_kind = "PyTorchJob"
    schedulers = ("pytorchjob",)
    gang_flag = "--gang-scheduler-name=volcano"  # training-operator v1.9 cmd/training-operator.v1

    def installed(self, schedulers: Any) -> tuple[bool, str] | None:
        flavor = schedulers.kubeflow.flavor
        return (
            flavor == "training-operator",
            f"set ekstrain:schedulers.kubeflow.flavor: training-operator (it is {flavor!r}; the training "
            "operator cannot run beside the MPI operator)",
        )


KIND = PyTorchJob()
