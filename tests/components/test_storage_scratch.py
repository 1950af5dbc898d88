"""Dynamic FSx for Lustre scratch: a StorageClass next to the static volume, its IAM, its config keys."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pulumi
import pytest
from conftest import needs_upstream, run_program, stack_sections

from ekstrain.components import csi, volumes
from ekstrain.components.volumes import FsxScratch, TrainingVolumes, VolumesArgs
from ekstrain.infra.offline import Recording
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

SC = "kubernetes:storage.k8s.io/v1:StorageClass"


@pytest.fixture(scope="module")
def rec() -> Recording:
    # GIVEN only a scratch class (no static volumes) through the Volumes component
    def program() -> pulumi.Output[str]:
        v = TrainingVolumes(
            "vol",
            VolumesArgs(
                fsx_scratch=FsxScratch(
                    subnet_id="subnet-0abc",
                    security_group_id="sg-0lustre",
                    cluster_name="ml",
                    deployment_type="PERSISTENT_2",
                    per_unit_throughput=500,
                    storage_class_name="lustre-tmp",
                )
            ),
        )
        return v.namespace_name

    return run_program(program)


def test_component_registers_the_storage_class_with_exact_parameters(rec: Recording) -> None:
    (comp,) = rec.of_type("ekstrain:storage:Volumes")
    assert sorted((c.type, c.name) for c in rec.children_of(comp.urn)) == [
        ("kubernetes:core/v1:Namespace", "vol-ns"),
        (SC, "vol-fsx-scratch"),
    ]
    sc = rec.one(SC, "vol-fsx-scratch").inputs
    assert sc["metadata"]["name"] == "lustre-tmp"
    assert sc["provisioner"] == "fsx.csi.aws.com"
    assert sc["parameters"] == {
        "subnetId": "subnet-0abc",
        "securityGroupIds": "sg-0lustre",
        "deploymentType": "PERSISTENT_2",
        "fileSystemTypeVersion": "2.15",
        "dataCompressionType": "LZ4",
        "extraTags": "ekstrain.io/fsx-scratch=ml",
        "perUnitStorageThroughput": "500",
    }
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"], sc["mountOptions"]) == ("Delete", "Immediate", ["flock"])


@needs_upstream
def test_storage_class_is_a_valid_kubernetes_object() -> None:
    sc = volumes.fsx_scratch_storage_class_manifest("fsx-scratch", "subnet-1", "sg-1", "SCRATCH_2", None, "ml")
    assert validation.validate_object(sc, "1.35") == []
    assert "perUnitStorageThroughput" not in sc["parameters"], "SCRATCH_2 has a fixed throughput"


def test_prod_scratch_sits_in_the_efa_subnet_behind_the_lustre_sg(prod_recording: Recording) -> None:
    sc = prod_recording.one(SC, "storage-volumes-fsx-scratch").inputs
    efa_subnet = prod_recording.outputs["efaSubnetId"]
    lustre_sg = prod_recording.one("aws:ec2/securityGroup:SecurityGroup", "fsx-sg").outputs["id"]
    assert sc["metadata"]["name"] == "fsx-scratch"
    assert (sc["parameters"]["subnetId"], sc["parameters"]["securityGroupIds"]) == (efa_subnet, lustre_sg)
    assert sc["parameters"]["deploymentType"] == "SCRATCH_2"
    # AND the static volume is still there, unchanged
    assert prod_recording.one("kubernetes:core/v1:PersistentVolume", "storage-volumes-fsx-pv")


def test_controller_may_create_and_delete_only_tagged_scratch(prod_recording: Recording) -> None:
    policy = json.loads(prod_recording.one("aws:iam/rolePolicy:RolePolicy", "storage-csi-fsx").inputs["policy"])
    scratch = policy["Statement"][1:-1]
    assert scratch == csi.fsx_controller_policy("x", ("ekstrain.io/fsx-scratch", "ekstrain-prod"))[1:-1]
    create = next(s for s in scratch if s["Action"] == ["fsx:CreateFileSystem"])
    tag = next(s for s in scratch if s["Action"] == ["fsx:TagResource"])
    delete = next(s for s in scratch if "fsx:DeleteFileSystem" in s["Action"])
    requested = {"StringEquals": {"aws:RequestTag/ekstrain.io/fsx-scratch": "ekstrain-prod"}}
    assert create["Condition"] == requested and tag["Condition"] == requested, "tags only in a create call's request"
    assert delete["Action"] == ["fsx:DeleteFileSystem", "fsx:UpdateFileSystem"]
    assert delete["Condition"] == {"StringEquals": {"aws:ResourceTag/ekstrain.io/fsx-scratch": "ekstrain-prod"}}
    # AND the protected file system is denied outright: the scratch tag can never be put on it, then deleted
    assert policy["Statement"][-1]["Effect"] == "Deny" and "fsx:TagResource" in policy["Statement"][-1]["Action"]
    without = csi.fsx_controller_policy("arn")
    assert [s["Sid"] for s in without] == ["Describe", "NeverTheProtectedFileSystem"]


def test_dev_has_no_scratch_class(dev_recording: Recording) -> None:
    assert [r for r in dev_recording.of_type(SC) if r.name.endswith("fsx-scratch")] == []


def _errors(change: Any) -> list[str]:
    sections = stack_sections("prod")
    change(sections)
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml", today=dt.date(2026, 12, 3))
    return [f"{i.key}: {i.problem} / {i.fix}" for i in caught.value.issues]


def test_bad_scratch_settings_name_the_key() -> None:
    assert _errors(lambda s: s["storage"]["fsx"]["scratch"].update(perUnitStorageThroughput=200)) == [
        "ekstrain:storage.fsx.scratch.perUnitStorageThroughput: SCRATCH_2 has a fixed throughput (200 MB/s/TiB) / "
        "remove perUnitStorageThroughput"
    ]
    assert _errors(
        lambda s: s["storage"]["fsx"]["scratch"].update(deploymentType="PERSISTENT_2", perUnitStorageThroughput=300)
    ) == [
        "ekstrain:storage.fsx.scratch.perUnitStorageThroughput: 300 MB/s/TiB is not offered for PERSISTENT_2 / "
        "use one of 125, 250, 500, 1000"
    ]
    assert any(
        e.startswith("ekstrain:storage.fsx.scratch.enabled: dynamic FSx scratch needs the FSx CSI driver")
        for e in _errors(
            lambda s: (s["storage"]["fsx"].update(enabled=False), s["schedulers"]["slurm"].update(enabled=False))
        )
    )
