"""Kubernetes side of training storage: the ``training`` namespace, the FSx static PV/PVC, the
optional ``fsx-scratch`` StorageClass (one new Lustre file system per PVC), the ``efs-ap``
StorageClass and the ``model-store`` PV/PVC.

Manifests are built by pure functions (unit-tested and schema-validated as plain dicts); the
component only turns them into resources. Static volumes use ``Retain``: deleting a PVC or PV
never deletes file-system data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.components.deps import dependencies
from ekstrain.components.manifest import resource
from ekstrain.facts import names
from ekstrain.payloads import fsx_volume

FSX_DRIVER = fsx_volume.DRIVER
EFS_DRIVER = "efs.csi.aws.com"
MODEL_STORE_PV = names.MODEL_STORE_PVC
MODEL_STORE_NOMINAL_SIZE = "1Ti"
"""EFS is elastic; Kubernetes still needs a size, which the EFS driver ignores."""
POD_SECURITY = {
    # Every template's pods meet `baseline`: no privilege, capabilities dropped (sshd's five are in the
    # baseline list), /dev/shm is a memory emptyDir, no host namespaces or hostPath; EFA needs no
    # IPC_LOCK (assembly/jobs/resolve.py). Enforce it; warn/audit against `restricted` to show the gap.
    "pod-security.kubernetes.io/enforce": "baseline",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}


def namespace_manifest(name: str = names.TRAINING_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "ekstrain", **POD_SECURITY}},
    }


def fsx_pv_manifest(file_system_id: Any, dns_name: Any, mount_name: Any, capacity_gib: int) -> dict[str, Any]:
    return fsx_volume.pv(names.FSX_PV, file_system_id, dns_name, mount_name, capacity_gib)


def fsx_pvc_manifest(capacity_gib: int, namespace: str = names.TRAINING_NAMESPACE) -> dict[str, Any]:
    return fsx_volume.pvc(names.FSX_PVC, namespace, names.FSX_PV, capacity_gib)


SCRATCH_TAG = "ekstrain.io/fsx-scratch"
"""Tag on every dynamically created file system (value: cluster name); the CSI role may delete only those."""
LUSTRE_VERSION = "2.15"
"""Lustre 2.15: the client AL2023 ships (the CSI driver's default would be 2.10 for SCRATCH_2)."""


def fsx_scratch_storage_class_manifest(
    name: str,
    subnet_id: Any,
    security_group_id: Any,
    deployment_type: str,
    per_unit_throughput: int | None,
    cluster_name: str,
) -> dict[str, Any]:
    """aws-fsx-csi-driver dynamic provisioning: each PVC creates its own file system in ``subnet_id``."""
    params: dict[str, Any] = {
        "subnetId": subnet_id,
        "securityGroupIds": security_group_id,
        "deploymentType": deployment_type,
        "fileSystemTypeVersion": LUSTRE_VERSION,
        "dataCompressionType": "LZ4",
        "extraTags": f"{SCRATCH_TAG}={cluster_name}",
    }
    if per_unit_throughput is not None:
        params["perUnitStorageThroughput"] = str(per_unit_throughput)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "provisioner": FSX_DRIVER,
        "parameters": params,
        # Scratch: deleting the PVC deletes the file system and its data (no DRA, no backup).
        "reclaimPolicy": "Delete",
        # The subnet is fixed (the training AZ), so there is nothing to wait for.
        "volumeBindingMode": "Immediate",
        "mountOptions": ["flock"],
    }


def efs_storage_class_manifest(file_system_id: Any, base_path: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": names.EFS_STORAGE_CLASS},
        "provisioner": EFS_DRIVER,
        "parameters": {
            "provisioningMode": "efs-ap",
            "fileSystemId": file_system_id,
            "directoryPerms": "700",
            "basePath": base_path,
            "ensureUniqueDirectory": "true",
        },
        # Deleting a dynamic PVC removes its access point; the driver keeps the directory
        # (deleteAccessPointRootDir is false), so the data stays on EFS.
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


def model_store_pv_manifest(file_system_id: Any, access_point_id: Any) -> dict[str, Any]:
    handle = (
        pulumi.Output.concat(file_system_id, "::", access_point_id)
        if isinstance(file_system_id, pulumi.Output) or isinstance(access_point_id, pulumi.Output)
        else (f"{file_system_id}::{access_point_id}")
    )
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": MODEL_STORE_PV},
        "spec": {
            "capacity": {"storage": MODEL_STORE_NOMINAL_SIZE},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": names.EFS_STORAGE_CLASS,
            "mountOptions": ["tls"],
            "csi": {"driver": EFS_DRIVER, "volumeHandle": handle},
        },
    }


def model_store_pvc_manifest(namespace: str = names.TRAINING_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": names.MODEL_STORE_PVC, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": names.EFS_STORAGE_CLASS,
            "volumeName": MODEL_STORE_PV,
            "resources": {"requests": {"storage": MODEL_STORE_NOMINAL_SIZE}},
        },
    }


@dataclass(frozen=True, kw_only=True)
class FsxVolume:
    file_system_id: pulumi.Input[str]
    """Required. FSx for Lustre file system id (``LustreStorage.file_system_id``)."""
    dns_name: pulumi.Input[str]
    """Required. Its DNS name."""
    mount_name: pulumi.Input[str]
    """Required. Its Lustre mount name."""
    capacity_gib: int
    """Required. The static PV's capacity (the file system's size)."""


@dataclass(frozen=True, kw_only=True)
class FsxScratch:
    subnet_id: pulumi.Input[str]
    """Required. Subnet of dynamically provisioned scratch file systems (the EFA subnet)."""
    security_group_id: pulumi.Input[str]
    """Required. The Lustre SG (ports 988 and 1018-1023 with the cluster SG), shared with the static file system."""
    cluster_name: str
    """Required. Tags the scratch file systems (the CSI controller may only touch those)."""
    storage_class_name: str = "fsx-scratch"
    """@default fsx-scratch."""
    deployment_type: str = "SCRATCH_2"
    """@default SCRATCH_2."""
    per_unit_throughput: int | None = None
    """@default none (MB/s/TiB, for persistent deployment types only)."""


@dataclass(frozen=True, kw_only=True)
class EfsVolume:
    file_system_id: pulumi.Input[str]
    """Required. EFS file system id (``ModelStore.file_system_id``)."""
    access_point_id: pulumi.Input[str]
    """Required. The model store's access point (``ModelStore.access_point_id``)."""
    dynamic_base_path: str = "/dynamic"
    """@default /dynamic."""


@dataclass(frozen=True, kw_only=True)
class VolumesArgs:
    fsx: FsxVolume | None = None
    """@default none: no FSx PV/PVC."""
    efs: EfsVolume | None = None
    """@default none: no efs-ap class, no model-store PV/PVC."""
    fsx_scratch: FsxScratch | None = None
    """@default none: no dynamic FSx StorageClass."""
    namespace: str = names.TRAINING_NAMESPACE
    """@default ``training``."""


class TrainingVolumes(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>)``; children inherit it."""

    namespace: k8s.core.v1.Namespace
    """The training Namespace resource."""
    namespace_name: pulumi.Output[str]
    """Its name (``VolumesArgs.namespace``)."""

    def __init__(self, name: str, args: VolumesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:storage:Volumes", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The CSI drivers (the caller's depends_on): classes and volumes are created after them and, on
        # destroy, deleted before them, so the driver still runs to reclaim what they provisioned.
        drivers = dependencies(opts)
        after_drivers = pulumi.ResourceOptions(parent=self, depends_on=drivers)
        ns = namespace_manifest(args.namespace)
        namespace = resource(f"{name}-ns", ns, opts=child)
        assert isinstance(namespace, k8s.core.v1.Namespace)  # the adapter's typed class for v1 Namespace
        self.namespace = namespace

        if args.fsx is not None:
            f = args.fsx
            pv = fsx_pv_manifest(f.file_system_id, f.dns_name, f.mount_name, f.capacity_gib)
            fsx_pv = resource(f"{name}-fsx-pv", pv, opts=after_drivers)
            pvc = fsx_pvc_manifest(f.capacity_gib, args.namespace)
            resource(
                f"{name}-fsx-pvc", pvc, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace, fsx_pv])
            )
        if args.fsx_scratch is not None:
            x = args.fsx_scratch
            sc = fsx_scratch_storage_class_manifest(
                x.storage_class_name,
                x.subnet_id,
                x.security_group_id,
                x.deployment_type,
                x.per_unit_throughput,
                x.cluster_name,
            )
            resource(f"{name}-fsx-scratch", sc, opts=after_drivers)
        if args.efs is not None:
            e = args.efs
            sc = efs_storage_class_manifest(e.file_system_id, e.dynamic_base_path)
            storage_class = resource(f"{name}-efs-ap", sc, opts=after_drivers)
            pv = model_store_pv_manifest(e.file_system_id, e.access_point_id)
            model_pv = resource(
                f"{name}-model-store-pv", pv, opts=pulumi.ResourceOptions(parent=self, depends_on=[storage_class])
            )
            pvc = model_store_pvc_manifest(args.namespace)
            resource(
                f"{name}-model-store-pvc",
                pvc,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace, model_pv]),
            )
        self.namespace_name = self.namespace.metadata.apply(lambda m: str(m.name))
        self.register_outputs({"namespace": self.namespace_name})
