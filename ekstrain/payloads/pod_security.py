"""The security contexts of the pods this program writes itself (not a chart's): non-root, no privilege.

Kubernetes' Pod Security Standards, "restricted" profile (kubernetes.io/docs/concepts/security/pod-security-standards):
runAsNonRoot, seccompProfile RuntimeDefault, allowPrivilegeEscalation false, capabilities drop ALL.
"""

from __future__ import annotations

from typing import Any

NOBODY = 65534
"""The conventional unprivileged user and group (``nobody``/``nogroup``)."""


def restricted_pod(uid: int = NOBODY, fs_group: bool = False) -> dict[str, Any]:
    """A pod's ``securityContext``: every container as ``uid`` (and the group of that id; ``fs_group``: the volumes
    owned by it too), the runtime's default seccomp profile."""
    return {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": uid,
        **({"fsGroup": uid} if fs_group else {}),
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_container(uid: int = NOBODY) -> dict[str, Any]:
    """A container's ``securityContext``: as ``uid``, read-only root, no privilege escalation, no capabilities."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": uid,
        "capabilities": {"drop": ["ALL"]},
    }
