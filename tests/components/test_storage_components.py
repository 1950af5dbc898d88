"""Storage components as registered by the prod and dev stacks: exact types, names and inputs."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import run_program, run_stack, stack_config

from ekstrain.components import csi, volumes
from ekstrain.components.buckets import BucketsArgs, TrainingBuckets, bucket_prefix
from ekstrain.components.fsx import LustreArgs, LustreStorage
from ekstrain.facts import names
from ekstrain.infra.offline import Record, Recording
from ekstrain.tooling import validation

BUCKET = "aws:s3/bucket:Bucket"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
EFS = "aws:efs/fileSystem:FileSystem"
MT = "aws:efs/mountTarget:MountTarget"
AP = "aws:efs/accessPoint:AccessPoint"
KEY = "aws:kms/key:Key"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
RELEASE = "kubernetes:helm.sh/v3:Release"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
SC = "kubernetes:storage.k8s.io/v1:StorageClass"
ACCELERATOR_TAINTS = [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"},
]
STATEFUL = {BUCKET, "aws:s3/bucketVersioning:BucketVersioning", FSX, DRA, EFS, AP}


def _sg_id(rec: Recording, name: str) -> str:
    return rec.one("aws:ec2/securityGroup:SecurityGroup", name).outputs["id"]


def _cluster_sg(rec: Recording) -> str:
    return rec.one("eks:index:Cluster", "cluster").outputs["clusterSecurityGroupId"]


# ---- protection ------------------------------------------------------------------------------


def test_prod_protects_every_stateful_resource(prod_recording: Recording) -> None:
    stateful = [r for r in prod_recording.records if r.type in STATEFUL]
    assert sorted(r.name for r in stateful) == [
        "efs",
        "efs-models",
        "fsx",
        "fsx-checkpoints",
        "fsx-data",
        "storage-checkpoints",
        "storage-checkpoints",
        "storage-datasets",
        "storage-datasets",
    ]
    assert all(r.protect and r.retain_on_delete for r in stateful), [r.name for r in stateful if not r.protect]
    keys = {r.name: r for r in prod_recording.of_type(KEY)}
    assert keys["fsx-key"].protect and keys["fsx-key"].retain_on_delete
    assert keys["efs-key"].protect and keys["efs-key"].retain_on_delete
    assert all(r.inputs["forceDestroy"] is False for r in prod_recording.of_type(BUCKET))
    assert prod_recording.one(FSX, "fsx").inputs["skipFinalBackup"] is False, "protected FSx takes a final backup"


def test_dev_protects_nothing(dev_recording: Recording) -> None:
    stateful = [
        r for r in dev_recording.records if r.type in STATEFUL | {KEY} and r.name.startswith(("storage", "fsx", "efs"))
    ]
    assert stateful and not any(r.protect or r.retain_on_delete for r in stateful)


# ---- buckets ---------------------------------------------------------------------------------


def _bucket_children(rec: Recording, role: str) -> dict[str, Record]:
    return {r.type.rsplit(":", 1)[1]: r for r in rec.records if r.name == f"storage-{role}"}


def test_buckets_are_versioned_private_encrypted_and_owner_enforced(prod_recording: Recording) -> None:
    for role in ("datasets", "checkpoints"):
        parts = _bucket_children(prod_recording, role)
        assert set(parts) == {
            "Bucket",
            "BucketOwnershipControls",
            "BucketPublicAccessBlock",
            "BucketVersioning",
            "BucketServerSideEncryptionConfiguration",
            "BucketPolicy",
            "BucketLifecycleConfiguration",
        }
        bucket = parts["Bucket"]
        assert bucket.inputs["bucketPrefix"] == f"ekstrain-prod-{role}-"
        for child in parts.values():
            if child is not bucket:
                assert child.inputs["bucket"] == bucket.outputs["bucket"]
        assert parts["BucketVersioning"].inputs["versioningConfiguration"] == {"status": "Enabled"}
        assert {k: v for k, v in parts["BucketPublicAccessBlock"].inputs.items() if k != "bucket"} == {
            "blockPublicAcls": True,
            "blockPublicPolicy": True,
            "ignorePublicAcls": True,
            "restrictPublicBuckets": True,
        }
        assert parts["BucketOwnershipControls"].inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}
        assert parts["BucketServerSideEncryptionConfiguration"].inputs["rules"] == [
            {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}, "bucketKeyEnabled": False}
        ]
        assert parts["BucketPublicAccessBlock"].urn in parts["BucketPolicy"].dependencies


def test_bucket_policy_denies_everything_without_tls(prod_recording: Recording) -> None:
    import json

    parts = _bucket_children(prod_recording, "checkpoints")
    arn = parts["Bucket"].outputs["arn"]
    policy = json.loads(parts["BucketPolicy"].inputs["policy"])
    assert policy["Statement"] == [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [arn, f"{arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ]


def test_lifecycle_expires_only_noncurrent_checkpoint_versions(prod_recording: Recording) -> None:
    abort = {
        "id": "abort-incomplete-multipart-uploads",
        "status": "Enabled",
        "filter": {"prefix": ""},
        "abortIncompleteMultipartUpload": {"daysAfterInitiation": 7},
    }
    ck = _bucket_children(prod_recording, "checkpoints")["BucketLifecycleConfiguration"].inputs["rules"]
    assert ck == [
        abort,
        {
            "id": "expire-noncurrent-versions",
            "status": "Enabled",
            "filter": {"prefix": ""},
            # prod rotates checkpoints (3 kept of 920 GiB): rotated saves' S3 copies expire after the rotation's window
            "noncurrentVersionExpiration": {"noncurrentDays": 1},
        },
    ]
    assert _bucket_children(prod_recording, "datasets")["BucketLifecycleConfiguration"].inputs["rules"] == [abort]
    assert not any("expiration" in r for r in ck), "current checkpoints never expire"


def test_bucket_prefix_fits_the_s3_limit() -> None:
    assert bucket_prefix("ekstrain-prod", "checkpoints") == "ekstrain-prod-checkpoints-"
    long = bucket_prefix("A-very-long-Cluster-name-for-training-platform", "checkpoints")
    assert len(long) <= 37 and long.endswith("-checkpoints-") and "--" not in long and long == long.lower()


def test_kms_key_switches_buckets_to_sse_kms() -> None:
    key = "arn:aws:kms:us-west-2:111122223333:key/abc"
    rec = run_program(
        lambda: (
            TrainingBuckets(
                "b", BucketsArgs(cluster_name="c", kms_key_arn=key, datasets_bucket="c-data", protect=False)
            ).datasets_arn
        )
    )
    sse = rec.one(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", "b-datasets"
    ).inputs["rules"]
    assert sse == [
        {
            "applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": key},
            "bucketKeyEnabled": True,
        }
    ]
    assert rec.one(BUCKET, "b-datasets").inputs["bucket"] == "c-data"
    assert "bucketPrefix" not in rec.one(BUCKET, "b-datasets").inputs
    assert not rec.one(BUCKET, "b-datasets").protect


# ---- FSx -------------------------------------------------------------------------------------


def test_prod_fsx_is_persistent_2_7200_in_the_efa_subnet(prod_recording: Recording) -> None:
    fs = prod_recording.one(FSX, "fsx").inputs
    assert (fs["deploymentType"], fs["storageCapacity"], fs["perUnitStorageThroughput"]) == ("PERSISTENT_2", 7200, 500)
    assert fs["storageType"] == "SSD" and fs["fileSystemTypeVersion"] == "2.15"
    assert fs["subnetIds"] == prod_recording.outputs["efaSubnetId"]
    assert fs["securityGroupIds"] == [_sg_id(prod_recording, "fsx-sg")]
    assert fs["kmsKeyId"] == prod_recording.one(KEY, "fsx-key").outputs["arn"]
    assert prod_recording.one(KEY, "fsx-key").inputs["enableKeyRotation"] is True
    assert fs["dataCompressionType"] == "LZ4"
    logs = prod_recording.one("aws:cloudwatch/logGroup:LogGroup", "fsx-logs")
    assert logs.inputs["name"] == "/aws/fsx/ekstrain-prod-lustre" and logs.inputs["retentionInDays"] == 30
    assert fs["logConfiguration"] == {"level": "WARN_ERROR", "destination": logs.outputs["arn"]}


def test_dev_fsx_is_scratch_without_kms_or_tier(dev_recording: Recording) -> None:
    fs = dev_recording.one(FSX, "fsx").inputs
    assert fs["deploymentType"] == "SCRATCH_2" and fs["storageCapacity"] == 1200
    assert "perUnitStorageThroughput" not in fs and "kmsKeyId" not in fs and "skipFinalBackup" not in fs
    # The file system's own key only: its log group has one in every stack (like every log group).
    assert [r.name for r in dev_recording.of_type(KEY) if r.name.startswith("fsx")] == ["fsx-logs-key"]
    assert len(dev_recording.of_type(DRA)) == 2, "SCRATCH_2 (Lustre 2.15) supports DRAs with import and export"


def test_dras_link_paths_and_events_exactly_as_configured(prod_recording: Recording) -> None:
    fs_id = prod_recording.one(FSX, "fsx").outputs["id"]
    data = prod_recording.one(DRA, "fsx-data").inputs
    ck = prod_recording.one(DRA, "fsx-checkpoints").inputs
    assert data["fileSystemId"] == ck["fileSystemId"] == fs_id
    assert data["fileSystemPath"] == "/data" and ck["fileSystemPath"] == "/checkpoints"
    assert data["dataRepositoryPath"] == f"s3://{prod_recording.outputs['datasetsBucket']}"
    assert ck["dataRepositoryPath"] == f"s3://{prod_recording.outputs['checkpointsBucket']}"
    assert data["s3"] == {"autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}}
    assert ck["s3"] == {"autoExportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}}
    assert data["batchImportMetaDataOnCreate"] is True and data["deleteDataInFilesystem"] is False
    assert ck["deleteDataInFilesystem"] is False


def test_custom_paths_and_events_reach_the_dras() -> None:
    cfg = stack_config("dev")
    fsx = cfg.storage.fsx.model_copy(
        update={
            "data_path": "/datasets",
            "checkpoint_path": "/ckpt",
            "auto_import_events": ["NEW"],
            "auto_export_events": ["CHANGED", "NEW"],
        }
    )
    rec = run_stack(cfg.model_copy(update={"storage": cfg.storage.model_copy(update={"fsx": fsx})}))
    data = rec.one(DRA, "fsx-data").inputs
    ck = rec.one(DRA, "fsx-checkpoints").inputs
    assert (data["fileSystemPath"], data["s3"]) == ("/datasets", {"autoImportPolicy": {"events": ["NEW"]}})
    assert (ck["fileSystemPath"], ck["s3"]) == ("/ckpt", {"autoExportPolicy": {"events": ["CHANGED", "NEW"]}})


def test_empty_events_turn_the_policy_off() -> None:
    args = LustreArgs(
        cluster_name="c",
        vpc_id="vpc-1",
        subnet_id="subnet-efa",
        client_security_group_id="sg-c",
        datasets_bucket="d",
        checkpoints_bucket="k",
        auto_import_events=(),
        auto_export_events=(),
    )
    rec = run_program(lambda: LustreStorage("l", args).dns_name)
    assert "s3" not in rec.one(DRA, "l-data").inputs and "s3" not in rec.one(DRA, "l-checkpoints").inputs


def test_lustre_ports_open_between_servers_and_cluster_nodes(prod_recording: Recording) -> None:
    fsx_sg, cluster_sg = _sg_id(prod_recording, "fsx-sg"), _cluster_sg(prod_recording)

    def rules(kind: str, on: str) -> set[tuple[int, int, str]]:
        return {
            (r.inputs["fromPort"], r.inputs["toPort"], r.inputs["referencedSecurityGroupId"])
            for r in prod_recording.of_type(kind)
            if r.inputs["securityGroupId"] == on and r.name.startswith("fsx-") and r.inputs["ipProtocol"] == "tcp"
        }

    both = {(988, 988, fsx_sg), (1018, 1023, fsx_sg), (988, 988, cluster_sg), (1018, 1023, cluster_sg)}
    assert rules(INGRESS, fsx_sg) == both
    assert rules(EGRESS, fsx_sg) == both
    assert rules(INGRESS, cluster_sg) == {(988, 988, fsx_sg), (1018, 1023, fsx_sg)}
    fs = prod_recording.one(FSX, "fsx")
    sg_rules = [r.urn for r in prod_recording.records if r.type in (INGRESS, EGRESS) and r.name.startswith("fsx-")]
    assert len(sg_rules) == 10 and set(sg_rules) <= set(fs.dependencies), "rules exist before the file system"


# ---- EFS -------------------------------------------------------------------------------------


def test_efs_is_encrypted_with_one_mount_target_per_private_subnet(prod_recording: Recording) -> None:
    fs = prod_recording.one(EFS, "efs")
    assert fs.inputs["encrypted"] is True and fs.inputs["throughputMode"] == "elastic"
    assert fs.inputs["kmsKeyId"] == prod_recording.one(KEY, "efs-key").outputs["arn"]
    mts = prod_recording.of_type(MT)
    assert sorted(m.inputs["subnetId"] for m in mts) == sorted(prod_recording.outputs["privateSubnetIds"])
    assert prod_recording.outputs["efaSubnetId"] not in {m.inputs["subnetId"] for m in mts}, (
        "one mount target per AZ: the training AZ's private subnet serves the EFA subnet"
    )
    efs_sg = _sg_id(prod_recording, "efs-sg")
    assert all(m.inputs["securityGroups"] == [efs_sg] and m.inputs["fileSystemId"] == fs.outputs["id"] for m in mts)
    nfs = prod_recording.one(INGRESS, "efs-nfs").inputs
    assert (nfs["securityGroupId"], nfs["ipProtocol"], nfs["fromPort"], nfs["toPort"]) == (efs_sg, "tcp", 2049, 2049)
    assert nfs["referencedSecurityGroupId"] == _cluster_sg(prod_recording)


def test_models_access_point_maps_to_posix_user(prod_recording: Recording) -> None:
    ap = prod_recording.one(AP, "efs-models").inputs
    assert ap["posixUser"] == {"uid": 1000, "gid": 1000}
    assert ap["rootDirectory"] == {
        "path": "/models",
        "creationInfo": {"ownerUid": 1000, "ownerGid": 1000, "permissions": "0775"},
    }


def test_disabled_efs_registers_nothing(dev_recording: Recording) -> None:
    efs_types = {EFS, MT, AP}
    assert [r.name for r in dev_recording.records if r.type in efs_types or r.name.startswith("efs")] == []
    csi_charts = [r.inputs["chart"] for r in dev_recording.of_type(RELEASE) if "csi-driver" in r.inputs["chart"]]
    assert csi_charts == ["aws-fsx-csi-driver"]
    assert dev_recording.of_type(SC) and all(
        r.inputs["metadata"]["name"] != names.EFS_STORAGE_CLASS for r in dev_recording.of_type(SC)
    )


def test_disabled_fsx_registers_nothing() -> None:
    cfg = stack_config("dev")
    storage = cfg.storage.model_copy(update={"fsx": cfg.storage.fsx.model_copy(update={"enabled": False})})
    rec = run_stack(cfg.model_copy(update={"storage": storage}))
    assert [r.name for r in rec.records if r.name.startswith("fsx") or r.type in (FSX, DRA)] == []
    assert [r for r in rec.of_type(RELEASE) if "csi-driver" in r.inputs["chart"]] == [] and rec.of_type(PV) == []
    assert rec.one("kubernetes:core/v1:Namespace", "storage-volumes-ns").inputs["metadata"]["name"] == "training"


# ---- CSI drivers -----------------------------------------------------------------------------


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    """Kubernetes toleration matching (empty key + Exists matches every taint)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator", "Equal") == "Exists" and (not t.get("key") or t["key"] == taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value") == taint["value"]:
            return True
    return False


def test_tolerance_helper_is_strict() -> None:
    assert not _tolerates([{"key": "CriticalAddonsOnly", "operator": "Exists"}], ACCELERATOR_TAINTS[0])
    assert not _tolerates([{"operator": "Exists", "effect": "NoExecute"}], ACCELERATOR_TAINTS[1])


def test_csi_releases_are_pinned_classic_charts(prod_recording: Recording) -> None:
    rels = {r.inputs["chart"]: r.inputs for r in prod_recording.of_type(RELEASE) if r.name.startswith("storage-csi")}
    assert {c: (r["name"], r["version"], r["namespace"], r["repositoryOpts"]["repo"]) for c, r in rels.items()} == {
        "aws-fsx-csi-driver": (
            "aws-fsx-csi-driver",
            "1.17.0",
            "kube-system",
            "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
        ),
        "aws-efs-csi-driver": (
            "aws-efs-csi-driver",
            "4.4.1",
            "kube-system",
            "https://kubernetes-sigs.github.io/aws-efs-csi-driver/",
        ),
    }
    provider = prod_recording.one("pulumi:providers:kubernetes", "cluster-k8s").urn
    assert all(
        r.provider.startswith(provider) for r in prod_recording.of_type(RELEASE) if r.name.startswith("storage-csi")
    )


@pytest.mark.parametrize("chart", ["aws-fsx-csi-driver", "aws-efs-csi-driver"])
def test_controllers_on_system_nodes_and_node_plugins_on_accelerators(prod_recording: Recording, chart: str) -> None:
    values = next(r.inputs["values"] for r in prod_recording.of_type(RELEASE) if r.inputs["chart"] == chart)
    assert values["controller"]["nodeSelector"] == {"ekstrain.io/node-role": "system"}
    for taint in ACCELERATOR_TAINTS:
        assert _tolerates(values["node"]["tolerations"], taint), (chart, taint)
    if validation.upstream_dir() is None:
        pytest.skip("upstream chart values absent: set EKSTRAIN_UPSTREAM_DIR or run `make fetch-upstream`")
    assert validation.unknown_value_keys(values, validation.chart_defaults(chart)) == []


def test_pod_identity_roles_for_driver_service_accounts(prod_recording: Recording) -> None:
    assocs = {
        r.inputs["serviceAccount"]: r
        for r in prod_recording.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.name.startswith("storage-")
    }
    assert set(assocs) == {csi.FSX_CONTROLLER_SA, csi.EFS_CONTROLLER_SA, csi.EFS_NODE_SA}
    roles = {r.name: r for r in prod_recording.of_type("aws:iam/role:Role")}
    assert assocs[csi.FSX_CONTROLLER_SA].inputs["roleArn"] == roles["storage-csi-fsx"].outputs["arn"]
    assert assocs[csi.EFS_NODE_SA].inputs["roleArn"] == roles["storage-csi-efs"].outputs["arn"]
    assert '"pods.eks.amazonaws.com"' in roles["storage-csi-fsx"].inputs["assumeRolePolicy"]
    # depends_on the Cluster component expands to its children: the EKS cluster and system nodes.
    ready = {
        prod_recording.one("eks:index:Cluster", "cluster").urn,
        prod_recording.one("eks:index:ManagedNodeGroup", "cluster-system").urn,
    }
    for a in assocs.values():
        assert a.inputs["clusterName"] == "ekstrain-prod" and a.inputs["namespace"] == "kube-system"
        assert ready <= set(a.dependencies), "associations wait for the EKS cluster"
    release = prod_recording.one(RELEASE, "storage-csi-efs")
    assert {assocs[csi.EFS_CONTROLLER_SA].urn, assocs[csi.EFS_NODE_SA].urn} <= set(release.dependencies)
    attach = prod_recording.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "storage-csi-efs").inputs
    assert attach["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy"


def test_fsx_controller_policy_is_scoped_to_the_file_system(prod_recording: Recording) -> None:
    import json

    policy = json.loads(prod_recording.one("aws:iam/rolePolicy:RolePolicy", "storage-csi-fsx").inputs["policy"])
    fs_arn = prod_recording.one(FSX, "fsx").outputs["arn"]
    # (prod also enables dynamic scratch: its statements follow, tests/components/test_storage_scratch.py)
    assert policy["Statement"][0] == {
        "Sid": "Describe",
        "Effect": "Allow",
        "Action": ["fsx:DescribeFileSystems"],
        "Resource": "*",
    }
    # the static file system: never tagged, updated or deleted by the controller (Pulumi owns its size)
    assert policy["Statement"][-1] == {
        "Sid": "NeverTheProtectedFileSystem",
        "Effect": "Deny",
        "Action": ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem", "fsx:TagResource", "fsx:UntagResource"],
        "Resource": fs_arn,
    }
    assert [s for s in policy["Statement"] if s["Resource"] == fs_arn and s["Effect"] == "Allow"] == []


# ---- Kubernetes volumes ----------------------------------------------------------------------


def test_fsx_static_pv_and_pvc_bind_to_the_file_system(prod_recording: Recording) -> None:
    fs = prod_recording.one(FSX, "fsx").outputs
    pv = prod_recording.one(PV, "storage-volumes-fsx-pv").inputs
    assert pv["metadata"]["name"] == names.FSX_PV
    assert pv["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": fs["id"],
        "volumeAttributes": {"dnsname": fs["dnsName"], "mountname": fs["mountName"]},
    }
    assert pv["spec"]["capacity"] == {"storage": "7200Gi"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv["spec"]["mountOptions"] == ["flock"]
    assert pv["spec"]["accessModes"] == ["ReadWriteMany"] and pv["spec"]["storageClassName"] == ""
    pvc = prod_recording.one(PVC, "storage-volumes-fsx-pvc").inputs
    assert pvc["metadata"] == {"name": names.FSX_PVC, "namespace": names.TRAINING_NAMESPACE}
    assert pvc["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "",
        "volumeName": names.FSX_PV,
        "resources": {"requests": {"storage": "7200Gi"}},
    }


def test_efs_storage_class_and_model_store_pvc(prod_recording: Recording) -> None:
    fs_id = prod_recording.one(EFS, "efs").outputs["id"]
    ap_id = prod_recording.one(AP, "efs-models").outputs["id"]
    sc = prod_recording.one(SC, "storage-volumes-efs-ap").inputs
    assert sc["metadata"]["name"] == "efs-ap" and sc["provisioner"] == "efs.csi.aws.com"
    assert sc["parameters"] == {
        "provisioningMode": "efs-ap",
        "fileSystemId": fs_id,
        "directoryPerms": "700",
        "basePath": "/dynamic",
        "ensureUniqueDirectory": "true",
    }
    pv = prod_recording.one(PV, "storage-volumes-model-store-pv").inputs
    assert pv["spec"]["csi"] == {"driver": "efs.csi.aws.com", "volumeHandle": f"{fs_id}::{ap_id}"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    pvc = prod_recording.one(PVC, "storage-volumes-model-store-pvc").inputs
    assert pvc["metadata"] == {"name": names.MODEL_STORE_PVC, "namespace": "training"}
    assert pvc["spec"]["storageClassName"] == "efs-ap" and pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]


def test_training_namespace_comes_first(prod_recording: Recording) -> None:
    ns = prod_recording.one("kubernetes:core/v1:Namespace", "storage-volumes-ns")
    assert ns.inputs["metadata"]["name"] == "training"
    assert ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    for name in ("storage-volumes-fsx-pvc", "storage-volumes-model-store-pvc"):
        assert ns.urn in prod_recording.one(PVC, name).dependencies
    assert prod_recording.outputs["trainingNamespace"] == "training"


MANIFESTS = {
    "namespace": volumes.namespace_manifest(),
    "fsx pv": volumes.fsx_pv_manifest("fs-0123456789abcdef0", "fs-0123.fsx.us-west-2.amazonaws.com", "abcdefgh", 4800),
    "fsx pvc": volumes.fsx_pvc_manifest(4800),
    "efs class": volumes.efs_storage_class_manifest("fs-0abc", "/dynamic"),
    "model pv": volumes.model_store_pv_manifest("fs-0abc", "fsap-0def"),
    "model pvc": volumes.model_store_pvc_manifest(),
}


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
def test_manifest_builders_validate_strictly(kind: str) -> None:
    assert validation.validate_object(MANIFESTS[kind], "1.34") == []


def test_preview_builds_storage_with_unknown_ids() -> None:
    rec = run_stack(stack_config("prod"), preview=True)
    storage_pvs = [r for r in rec.of_type(PV) if rec.top_component(r).type.startswith("ekstrain:storage:")]
    assert len(rec.of_type(DRA)) == 2 and len(rec.of_type(MT)) == 3 and len(storage_pvs) == 2
