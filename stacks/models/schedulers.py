"""``ekstrain:schedulers``: which workload schedulers and operators a stack runs.

Every scheduler is off unless the stack turns it on; ``docs/schedulers.md`` describes what each
one installs.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from ekstrain.stacks.models.base import DNS_LABEL, IPv4Cidr, Model, MountPath

SSH_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


def ssh_public_key_problem(value: str) -> str | None:
    """Why ``value`` is not one OpenSSH public key line (``<type> <base64 blob> [comment]``, no options), or None.

    The problem never quotes the value: key-file lines may be anything (stacks/slurm_login.py)."""
    if "\n" in value.strip() or "\r" in value:
        return "holds several lines"
    if any(not c.isprintable() for c in value.strip()):
        return "has control characters"
    parts = value.split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        return (
            f"does not start with a key type ({', '.join(SSH_KEY_TYPES[:3])}, ...); authorized_keys options "
            "such as command= or from= are not accepted"
        )
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return "its key data is not base64"
    size = int.from_bytes(blob[:4], "big")
    if len(blob) < 4 + size or blob[4 : 4 + size] != parts[0].encode():
        return f"its key data is not a {parts[0]} key"
    return None


def _ssh_public_key(value: str) -> str:
    """One OpenSSH public key: ``<type> <base64 blob> [comment]``; no options, one line."""
    problem = ssh_public_key_problem(value)
    if problem:
        fix = "paste one public key per list entry, as in id_ed25519.pub: ssh-ed25519 AAAA... comment"
        raise ValueError(f"{value[:40]!r} {problem}; {fix}")
    return value.strip()


def _key_file_path(value: str) -> str:
    """A relative path inside the project: the file itself is checked by stacks.rules (stacks/slurm_login.py)."""
    fix = "give a path relative to the project directory, such as security/slurm-login.pub"
    if not re.fullmatch(r"[A-Za-z0-9_.@+-][A-Za-z0-9_./@+-]{0,254}", value):
        raise ValueError(f"{value[:80]!r} is not a relative path of letters, digits and _ . / @ + -; {fix}")
    if any(part in ("", ".", "..") for part in value.split("/")):
        raise ValueError(f"{value!r} has an empty, . or .. component (only paths inside the project are read); {fix}")
    return value


SshPublicKey = Annotated[str, AfterValidator(_ssh_public_key)]


class SlurmConfig(Model):
    own_text_checks: ClassVar[frozenset[str]] = frozenset({"login_ssh_authorized_keys"})  # one key per line

    enabled: bool = False
    """@default false: Slinky (slurm-operator + slurm chart) with one NodeSet per partition."""
    login_ssh: bool = True
    """@default true: the login node's sshd is reachable through an internal NLB on port 22 (for the keys
    below). false: no load balancer, the login pod is reached with ``kubectl exec`` only; the SSH settings
    (keys, key file, loginAllowedCidrs) are then refused, as they would change nothing."""
    login_allowed_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """CIDRs allowed to reach the login node's internal NLB on port 22; @default the VPC CIDR (required with
    ``network.existingVpc``)."""
    accounting: bool = True
    """@default true: slurmdbd backed by a MariaDB StatefulSet (gp3 volume, generated password)."""
    shared_mount_path: MountPath = "/shared"
    """@default /shared: where the FSx for Lustre file system is mounted in slurmd and login pods."""
    cert_manager: bool = True
    """@default true: install cert-manager for the operator's webhook certificates; false uses the
    documented ``certManager.enabled=false`` install of slurm-operator."""
    nodeset_replicas: dict[str, int] = Field(default_factory=dict)
    """Per-partition floor of slurmd pods (= whole nodes kept running whether or not Slurm has work; they are
    counted in the partition's Volcano queue like every other pod there); @default the partition's minNodes.
    With ``autoscale`` KEDA adds pods up to maxNodes while jobs need them; without it this is the NodeSet's size."""
    autoscale: bool = True
    """@default true: one KEDA ScaledObject per NodeSet scales it from Slurm's metrics (the nodes busy plus the
    largest pending job) between nodesetReplicas and the partition's maxNodes, to 0 when the queue empties
    (assembly/schedulers/autoscaling.py); needs ``ekstrain:observability.enabled`` (Prometheus). false: scale
    NodeSets by hand (``kubectl scale nodeset``)."""
    login_ssh_authorized_keys: list[SshPublicKey] = Field(default_factory=list)
    """SSH public keys for root on the login node; @default none (add keys before first login)."""
    login_ssh_authorized_keys_file: Annotated[str, AfterValidator(_key_file_path)] | None = None
    """Path (relative to the project directory, inside it, no symlink out) of an authorized_keys file whose
    keys are added to loginSshAuthorizedKeys: keys change by pull request without editing the stack file.
    Every line is checked like loginSshAuthorizedKeys (key type, no options, never a private key)."""
    accounting_volume_gib: int = Field(default=20, ge=1, le=16384, alias="accountingVolumeGiB")
    """@default 20: gp3 volume of the MariaDB that backs slurmdbd."""


TEAM_NAME = DNS_LABEL


class TeamConfig(Model):
    """A team with its own Volcano queue inside each partition it names (docs/schedulers.md "Teams")."""

    name: str = Field(pattern=TEAM_NAME, max_length=20)
    """Required. DNS label; the team's queue in partition ``P`` is ``P-<name>`` (``shared`` is taken)."""
    guarantees: dict[str, int] = Field(min_length=1)
    """Required. Partition -> whole nodes reserved for the team there (0 or more): the queue's ``guarantee`` and
    ``deserved``; no other queue of the partition can be admitted onto them. The team may borrow the partition's
    unguaranteed nodes beyond it (``capability`` = the partition)."""
    priority: int = Field(default=0, ge=0, le=1000)
    """@default 0: Queue ``spec.priority``; when room frees up in a partition, pending jobs of a higher-priority
    queue are admitted first (capacity plugin QueueOrderFn)."""


class VolcanoConfig(Model):
    enabled: bool = False
    """@default false: Volcano scheduler with one Queue per partition."""
    queue_weights: dict[str, int] = Field(default_factory=dict)
    """Per-partition queue weight; @default 1."""
    teams: list[TeamConfig] = Field(default_factory=list)
    """@default none: one queue per partition. With teams, each partition a team names becomes a parent queue
    (the whole partition) with one child queue per team (``<partition>-<team>``, its guaranteed nodes) and
    ``<partition>-shared`` (Slurm's slurmd pods, notebooks, jobs rendered without ``--team``); the capacity plugin
    runs with ``enableHierarchy`` (Volcano v1.15 hierarchical queues)."""


class ToggleConfig(Model):
    enabled: bool = False
    """@default false."""


class KubeflowConfig(Model):
    flavor: Literal["trainer", "training-operator", "none"] = "none"
    """``trainer`` = Kubeflow Trainer v2 (TrainJob); ``training-operator`` (legacy v1, PyTorchJob) is refused: its
    kustomization would be fetched from GitHub at deploy time, unchecked; @default none."""


class SchedulersConfig(Model):
    slurm: SlurmConfig = Field(default_factory=SlurmConfig)
    volcano: VolcanoConfig = Field(default_factory=VolcanoConfig)
    mpi_operator: ToggleConfig = Field(default_factory=ToggleConfig)
    """MPI operator v0.8 (MPIJob ``kubeflow.org/v2beta1``); @default off."""
    kubeflow: KubeflowConfig = Field(default_factory=KubeflowConfig)
    kuberay: ToggleConfig = Field(default_factory=ToggleConfig)
    """KubeRay operator; uses Volcano as batch scheduler when Volcano is enabled; @default off."""
