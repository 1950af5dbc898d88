"""Cluster component contract (pulumi-eks is remote: assert on its inputs, it has no children here)."""

from __future__ import annotations

import pytest
from conftest import run_program

from components.cluster import AdminPrincipal, Cluster, ClusterArgs
from infra.offline import Recording

ARGS = ClusterArgs(
    cluster_name="ml-prod",
    region="us-west-2",
    kubernetes_version="1.33",
    vpc_id="vpc-1",
    private_subnet_ids=["subnet-a", "subnet-b"],
    public_subnet_ids=["subnet-c", "subnet-d"],
    admin_principals=[AdminPrincipal(principal_arn="arn:aws:iam::111122223333:role/Admin")],
    addon_versions={"vpc-cni": "v1.20.1-eksbuild.3"},
    tags={"Team": "ml"},
)


@pytest.fixture(scope="module")
def rec() -> Recording:
    return run_program(lambda: Cluster("eks", ARGS).kubeconfig)


def test_eks_cluster_inputs(rec: Recording) -> None:
    eks = rec.one("eks:index:Cluster", "eks")
    i = eks.inputs
    assert eks.remote
    assert i["name"] == "ml-prod" and i["version"] == "1.33"
    assert i["authenticationMode"] == "API"
    assert i["endpointPrivateAccess"] is True and i["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in i
    assert i["enabledClusterLogTypes"] == ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    assert i["createOidcProvider"] is True and i["skipDefaultNodeGroup"] is True
    assert i["vpcCniOptions"]["addonVersion"] == "v1.20.1-eksbuild.3"
    assert i["corednsAddonOptions"]["enabled"] is False, "CoreDNS is installed after the node group"
    assert i["encryptionConfigKeyArn"] == rec.one("aws:kms/key:Key", "eks-secrets").outputs["arn"]
    assert i["deletionProtection"] is True
    entry = i["accessEntries"]["admin-0"]
    assert entry["principalArn"] == "arn:aws:iam::111122223333:role/Admin"
    assert entry["accessPolicies"]["cluster-admin"]["policyArn"] == (
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )


def test_system_node_group_is_small_general_purpose_and_private(rec: Recording) -> None:
    mng = rec.one("eks:index:ManagedNodeGroup", "eks-system")
    i = mng.inputs
    assert i["instanceTypes"] == ["m7i.xlarge"] and i["capacityType"] == "ON_DEMAND"
    assert i["amiType"] == "AL2023_x86_64_STANDARD"
    assert i["subnetIds"] == ["subnet-a", "subnet-b"]
    assert i["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 4}
    lt = rec.one("aws:ec2/launchTemplate:LaunchTemplate", "eks-system")
    assert i["launchTemplate"] == {"id": lt.outputs["id"], "version": "1"}
    assert lt.inputs["metadataOptions"]["httpTokens"] == "required"
    assert lt.inputs["blockDeviceMappings"][0]["ebs"] == {
        "volumeSize": 100,
        "volumeType": "gp3",
        "encrypted": "true",
        "deleteOnTermination": "true",
    }
    assert "diskSize" not in i and "enableIMDSv2" not in i, "the launch template owns disk and metadata settings"
    assert i["cluster"]["$ref"] == rec.one("eks:index:Cluster", "eks").urn
    role = rec.one("aws:iam/role:Role", "eks-system-node")
    assert i["nodeRoleArn"] == role.outputs["arn"]
    attached = sorted(
        r.inputs["policyArn"].rsplit("/", 1)[1]
        for r in rec.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.name.startswith("eks-system-node-")
    )
    assert attached == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonSSMManagedInstanceCore",
    ]


def test_core_addons_wait_for_nodes(rec: Recording) -> None:
    mng = rec.one("eks:index:ManagedNodeGroup", "eks-system")
    addons = {r.inputs["addonName"]: r for r in rec.of_type("aws:eks/addon:Addon")}
    assert set(addons) == {"coredns", "eks-pod-identity-agent", "aws-ebs-csi-driver"}
    for addon in addons.values():
        assert addon.inputs["clusterName"] == "ml-prod"
        assert mng.urn in addon.dependencies
    ebs = addons["aws-ebs-csi-driver"].inputs["podIdentityAssociations"][0]
    assert ebs["serviceAccount"] == "ebs-csi-controller-sa"
    assert ebs["roleArn"] == rec.one("aws:iam/role:Role", "eks-ebs-csi").outputs["arn"]


def test_kubernetes_provider_uses_cluster_kubeconfig(rec: Recording) -> None:
    provider = rec.one("pulumi:providers:kubernetes", "eks-k8s")
    assert '"command": "aws"' in provider.inputs["kubeconfig"]
    assert "ml-prod" in provider.inputs["kubeconfig"]


def test_default_storage_class_is_encrypted_gp3(rec: Recording) -> None:
    sc = rec.one("kubernetes:storage.k8s.io/v1:StorageClass", "eks-gp3")
    assert sc.inputs["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert sc.inputs["parameters"] == {"type": "gp3", "encrypted": "true", "fsType": "ext4"}
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc.provider.startswith(rec.one("pulumi:providers:kubernetes", "eks-k8s").urn)


def test_secrets_key_rotates(rec: Recording) -> None:
    assert rec.one("aws:kms/key:Key", "eks-secrets").inputs["enableKeyRotation"] is True


def test_public_endpoint_carries_allow_list() -> None:
    args = ClusterArgs(**{**ARGS.__dict__, "endpoint_public_access": True, "public_access_cidrs": ["203.0.113.0/24"]})
    rec = run_program(lambda: Cluster("eks", args).kubeconfig)
    assert rec.one("eks:index:Cluster", "eks").inputs["publicAccessCidrs"] == ["203.0.113.0/24"]
