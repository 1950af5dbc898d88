"""The stack's FSx for Lustre file system as a static PersistentVolume and its claim: one builder for every
namespace that mounts it (training, slurm, jupyterhub read-only).

Static provisioning as aws-fsx-csi-driver documents it (examples/kubernetes/static_provisioning/specs/pv.yaml,
v1.x): ``volumeHandle`` is the file system id, ``dnsname`` and ``mountname`` its attributes. ``Retain``: deleting
a claim or a volume never deletes file-system data.
"""

from __future__ import annotations

from typing import Any

DRIVER = "fsx.csi.aws.com"


def pv(
    name: str,
    file_system_id: Any,
    dns_name: Any,
    mount_name: Any,
    capacity_gib: int,
    *,
    read_only: bool = False,
    claim: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The file system as a PV named ``name``; ``claim`` (namespace, PVC name) binds it to that claim only."""
    csi: dict[str, Any] = {"driver": DRIVER, "volumeHandle": file_system_id}
    if read_only:
        csi["readOnly"] = True
    csi["volumeAttributes"] = {"dnsname": dns_name, "mountname": mount_name}
    spec: dict[str, Any] = {
        "capacity": {"storage": f"{capacity_gib}Gi"},
        "volumeMode": "Filesystem",
        "accessModes": ["ReadOnlyMany" if read_only else "ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        # flock: frameworks lock checkpoint and cache files; Lustre refuses locks without it.
        "mountOptions": ["flock", "ro"] if read_only else ["flock"],
        "csi": csi,
    }
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def pvc(name: str, namespace: str, pv_name: str, capacity_gib: int, *, read_only: bool = False) -> dict[str, Any]:
    """The claim bound to the PV ``pv_name`` by name."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadOnlyMany" if read_only else "ReadWriteMany"],
            # "" (not absent): otherwise the default gp3 class would provision an EBS volume.
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": f"{capacity_gib}Gi"}},
        },
    }
