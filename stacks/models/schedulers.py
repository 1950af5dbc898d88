"""``ekstrain:schedulers``: which workload schedulers and operators a stack runs.

Every scheduler is off unless the stack turns it on; ``docs/schedulers.md`` describes what each
one installs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.models.base import IPv4Cidr, Model


class SlurmConfig(Model):
    enabled: bool = False
    """@default false: Slinky (slurm-operator + slurm chart) with one NodeSet per partition."""
    login_allowed_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """CIDRs allowed to reach the login node's internal NLB on port 22; @default the VPC CIDR."""
    accounting: bool = True
    """@default true: slurmdbd backed by a MariaDB StatefulSet (gp3 volume, generated password)."""
    shared_mount_path: str = "/shared"
    """@default /shared: where the FSx for Lustre file system is mounted in slurmd and login pods."""
    cert_manager: bool = True
    """@default true: install cert-manager for the operator's webhook certificates; false uses the
    documented ``certManager.enabled=false`` install of slurm-operator."""
    nodeset_replicas: dict[str, int] = Field(default_factory=dict)
    """Per-partition slurmd pods (= whole nodes kept running); @default the partition's minNodes."""
    login_ssh_authorized_keys: list[str] = Field(default_factory=list)
    """SSH public keys for root on the login node; @default none (add keys before first login)."""
    login_ssh_authorized_keys_file: str | None = None
    """Path (relative to the project directory) of an authorized_keys file whose keys are added to
    loginSshAuthorizedKeys: keys change by pull request without editing the stack file."""
    accounting_volume_gib: int = Field(default=20, ge=1, alias="accountingVolumeGiB")
    """@default 20: gp3 volume of the MariaDB that backs slurmdbd."""


class VolcanoConfig(Model):
    enabled: bool = False
    """@default false: Volcano scheduler with one Queue per partition."""
    queue_weights: dict[str, int] = Field(default_factory=dict)
    """Per-partition queue weight; @default 1."""


class ToggleConfig(Model):
    enabled: bool = False
    """@default false."""


class KubeflowConfig(Model):
    flavor: Literal["trainer", "training-operator", "none"] = "none"
    """``trainer`` = Kubeflow Trainer v2 (TrainJob); ``training-operator`` = legacy v1 (PyTorchJob);
    @default none."""


class SchedulersConfig(Model):
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    volcano: VolcanoConfig = Field(default_factory=VolcanoConfig)
    mpi_operator: ToggleConfig = Field(default_factory=ToggleConfig)
    """MPI operator v0.8 (MPIJob ``kubeflow.org/v2beta1``); @default off."""
    kubeflow: KubeflowConfig = Field(default_factory=KubeflowConfig)
    kuberay: ToggleConfig = Field(default_factory=ToggleConfig)
    """KubeRay operator; uses Volcano as batch scheduler when Volcano is enabled; @default off."""
