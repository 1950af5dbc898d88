"""``ekstrain:schedulers``: which workload schedulers and operators a stack runs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.models.base import IPv4Cidr, Model


class SlurmConfig(Model):
    enabled: bool = False
    login_allowed_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """CIDRs allowed to reach the login node's internal NLB on port 22."""
    accounting: bool = True
    """@default true: slurmdbd backed by MariaDB."""
    shared_mount_path: str = "/shared"
    cert_manager: bool = True
    """@default true: install cert-manager for the operator's webhook certificates."""


class VolcanoConfig(Model):
    enabled: bool = False
    queue_weights: dict[str, int] = Field(default_factory=dict)
    """Per-partition queue weight; @default 1."""


class ToggleConfig(Model):
    enabled: bool = False


class KubeflowConfig(Model):
    flavor: Literal["trainer", "training-operator", "none"] = "none"
    """``trainer`` = Kubeflow Trainer v2 (TrainJob); ``training-operator`` = legacy v1 (PyTorchJob)."""


class SchedulersConfig(Model):
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    volcano: VolcanoConfig = Field(default_factory=VolcanoConfig)
    mpi_operator: ToggleConfig = Field(default_factory=ToggleConfig)
    kubeflow: KubeflowConfig = Field(default_factory=KubeflowConfig)
    kuberay: ToggleConfig = Field(default_factory=ToggleConfig)
