"""Every recorded input is checked against the pinned SDKs' own input types, nested objects included."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ekstrain.infra import offline
from ekstrain.infra.verify import sdk_schema


@pytest.fixture(scope="module")
def prod(prod_recording: offline.Recording) -> offline.Recording:
    """The session's prod recording (conftest.py): the tests deep-copy records before they change any."""
    return prod_recording


def _with(rec: offline.Recording, type_token: str, change: Any) -> offline.Recording:
    """A copy of ``rec`` with ``change`` applied to the inputs of the first resource of ``type_token``."""
    records = copy.deepcopy(rec.records)
    target = next(r for r in records if r.type == type_token)
    change(target.inputs)
    return offline.Recording(records, rec.outputs, rec.invokes)


def test_every_recorded_input_matches_the_sdk_types(prod: offline.Recording) -> None:
    check = sdk_schema.check_recording(prod)
    assert check.problems == []
    # every AWS, EKS and Kubernetes built-in resource was checked (custom resources go to the CRD schemas)
    # (pulumi-eks's own sub-components, registered by its provider, are not SDK calls)
    assert check.checked == sum(
        1 for r in prod.records if sdk_schema.args_class(r.type) is not None and not (r.synthetic and not r.custom)
    )
    assert {
        r.type
        for r in prod.records
        if r.type.startswith(("aws:", "eks:", "random:")) and sdk_schema.args_class(r.type) is None and not r.synthetic
    } == set()


def test_a_misspelt_nested_key_is_caught(prod: offline.Recording) -> None:
    # GIVEN a launch template whose root volume says volumType
    def misspell(inputs: dict[str, Any]) -> None:
        ebs = inputs["blockDeviceMappings"][0]["ebs"]
        ebs["volumType"] = ebs.pop("volumeType")

    check = sdk_schema.check_recording(_with(prod, "aws:ec2/launchTemplate:LaunchTemplate", misspell))
    # THEN the check names the path, the type and the likely key
    [problem] = check.problems
    assert problem.endswith(
        "blockDeviceMappings[0].ebs.volumType: unknown property of "
        "LaunchTemplateBlockDeviceMappingEbs (did you mean 'volumeType'?)"
    ), problem


def test_a_list_where_a_string_is_expected_is_caught(prod: offline.Recording) -> None:
    def listify(inputs: dict[str, Any]) -> None:
        inputs["cidrBlock"] = [inputs["cidrBlock"]]

    [problem] = sdk_schema.check_recording(_with(prod, "aws:ec2/subnet:Subnet", listify)).problems
    assert "cidrBlock: expected str, got list" in problem, problem


def test_missing_required_and_wrong_scalar_types_are_caught(prod: offline.Recording) -> None:
    def drop_vpc(inputs: dict[str, Any]) -> None:
        del inputs["vpcId"]

    [problem] = sdk_schema.check_recording(_with(prod, "aws:ec2/subnet:Subnet", drop_vpc)).problems
    assert problem.endswith("vpcId: required by Subnet, missing")

    def text_size(inputs: dict[str, Any]) -> None:
        inputs["storageCapacity"] = "1200"

    [problem] = sdk_schema.check_recording(_with(prod, "aws:fsx/lustreFileSystem:LustreFileSystem", text_size)).problems
    assert "storageCapacity: expected int, got str '1200'" in problem


def test_kubernetes_objects_are_checked_against_the_kubernetes_sdk(prod: offline.Recording) -> None:
    def bad_meta(inputs: dict[str, Any]) -> None:
        inputs["metadata"]["labelz"] = {"a": "b"}

    [problem] = sdk_schema.check_recording(_with(prod, "kubernetes:core/v1:Namespace", bad_meta)).problems
    assert "metadata.labelz: unknown property of ObjectMeta (did you mean 'labels'?)" in problem


def test_args_class_resolution() -> None:
    import pulumi_aws
    import pulumi_eks
    import pulumi_kubernetes

    assert sdk_schema.args_class("aws:s3/bucketVersioning:BucketVersioning") is pulumi_aws.s3.BucketVersioningInitArgs
    assert sdk_schema.args_class("eks:index:Cluster") is pulumi_eks.ClusterArgs
    assert sdk_schema.args_class("kubernetes:helm.sh/v3:Release") is pulumi_kubernetes.helm.v3.ReleaseArgs
    assert sdk_schema.args_class("kubernetes:storage.k8s.io/v1:StorageClass") is (
        pulumi_kubernetes.storage.v1.StorageClassInitArgs
    )
    assert sdk_schema.args_class("kubernetes:karpenter.sh/v1:NodePool") is None


def test_a_value_outside_an_sdk_enum_is_caught(prod: offline.Recording) -> None:
    # GIVEN the EKS cluster's authentication mode (pulumi_eks.AuthenticationMode) misspelt
    def misspell(inputs: dict[str, Any]) -> None:
        assert inputs["authenticationMode"] == "API"
        inputs["authenticationMode"] = "API_ONLY"

    [problem] = sdk_schema.check_recording(_with(prod, "eks:index:Cluster", misspell)).problems
    assert problem == "eks:index:Cluster cluster: authenticationMode: expected AuthenticationMode, got str 'API_ONLY'"
