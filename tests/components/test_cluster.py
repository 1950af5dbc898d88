"""Cluster component contract: the inputs sent to pulumi-eks (a remote component) and the children the offline
engine registers for it as pulumi-eks does (infra/eks_children.py; tests/test_real_eks.py compares them with
the real implementation)."""

from __future__ import annotations

import pytest
from conftest import run_program

from ekstrain.components.cluster import AdminPrincipal, Cluster, ClusterArgs
from ekstrain.infra.offline import Recording

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
    entry = i["accessEntries"]["role-Admin"]
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
    addons = {r.inputs["addonName"]: r for r in rec.of_type("aws:eks/addon:Addon") if not r.synthetic}
    assert set(addons) == {"coredns", "eks-pod-identity-agent", "aws-ebs-csi-driver"}
    # vpc-cni and kube-proxy come from pulumi-eks with the cluster (pinned: never "most recent" on each run)
    inside = {
        r.inputs["addonName"]: r.inputs["addonVersion"] for r in rec.of_type("aws:eks/addon:Addon") if r.synthetic
    }
    assert inside == {"vpc-cni": "v1.20.1-eksbuild.3", "kube-proxy": "<most recent>"}, "ARGS pins no kube-proxy"
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


def test_access_entries_are_keyed_by_principal_not_position() -> None:
    # GIVEN two admins, WHEN their order changes or the first is removed
    a = AdminPrincipal(principal_arn="arn:aws:iam::111122223333:role/Admin")
    b = AdminPrincipal(principal_arn="arn:aws:iam::111122223333:role/team/Ops", access_policy="view")

    def entries(principals: list[AdminPrincipal]) -> dict[str, object]:
        args = ClusterArgs(**{**ARGS.__dict__, "admin_principals": principals})
        rec = run_program(lambda: Cluster("eks", args).kubeconfig)
        return rec.one("eks:index:Cluster", "eks").inputs["accessEntries"]

    # THEN each keeps its key (a list index would re-key, so EKS would delete and recreate the other's entry)
    first = entries([a, b])
    assert sorted(first) == ["role-Admin", "role-team-Ops"]
    assert entries([b, a]) == first
    assert entries([b]) == {"role-team-Ops": first["role-team-Ops"]}


def test_deploy_and_preview_roles_get_explicit_entries() -> None:
    # GIVEN the deploy and preview roles of the workflows
    deploy = "arn:aws:iam::111122223333:role/ekstrain-deploy"
    preview = "arn:aws:iam::111122223333:role/ekstrain-preview"
    args = ClusterArgs(**{**ARGS.__dict__, "deploy_role_arn": deploy, "preview_role_arn": preview})
    rec = run_program(lambda: Cluster("eks", args).kubeconfig)
    # THEN the preview role has a view entry through pulumi-eks
    entries = rec.one("eks:index:Cluster", "eks").inputs["accessEntries"]
    assert entries["role-ekstrain-preview"]["accessPolicies"] == {
        "view": {
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy",
            "accessScope": {"type": "cluster"},
        }
    }
    # AND the deploy role's cluster-admin entry is created by the program, never imported: pulumi-eks always sends
    # bootstrapClusterCreatorAdminPermissions true (cluster.ts createCore), which the component's transform turns
    # off on the EKS cluster, so EKS creates no entry of its own for the creator (one entry per principal)
    assert "role-ekstrain-deploy" not in entries
    entry = rec.one("aws:eks/accessEntry:AccessEntry", "eks-deployer")
    assert entry.import_id == ""
    assert entry.inputs == {"clusterName": "ml-prod", "principalArn": deploy, "type": "STANDARD"}
    assoc = rec.one("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "eks-deployer")
    assert assoc.import_id == ""
    assert assoc.inputs["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert rec.one("eks:index:Cluster", "eks").urn in entry.dependencies, "created once the cluster exists"
    eks_child = rec.one("aws:eks/cluster:Cluster", "eks-eksCluster")
    assert eks_child.inputs["accessConfig"] == {
        "authenticationMode": "API",
        "bootstrapClusterCreatorAdminPermissions": False,
    }


def test_without_a_deploy_role_eks_bootstraps_the_creators_entry() -> None:
    # GIVEN no deploy role WHEN recorded THEN pulumi-eks's default stays: EKS makes the creator an admin
    rec = run_program(lambda: Cluster("eks", ARGS).kubeconfig)
    assert rec.of_type("aws:eks/accessEntry:AccessEntry") == [] or all(
        not r.name.endswith("-deployer") for r in rec.of_type("aws:eks/accessEntry:AccessEntry")
    )
    eks_child = rec.one("aws:eks/cluster:Cluster", "eks-eksCluster")
    assert eks_child.inputs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is True


def test_protect_covers_the_cluster_and_its_secrets_key() -> None:
    # GIVEN protect (prod's storage.protect) THEN the KMS key is protected and retained, and eks.Cluster protected
    # (its children inherit it: the EKS cluster, its role and OIDC provider)
    args = ClusterArgs(**{**ARGS.__dict__, "protect": True})
    rec = run_program(lambda: Cluster("eks", args).kubeconfig)
    key = rec.one("aws:kms/key:Key", "eks-secrets")
    assert key.protect and key.retain_on_delete
    assert rec.one("eks:index:Cluster", "eks").protect
    assert rec.one("aws:eks/cluster:Cluster", "eks-eksCluster").protect
    # AND without it (dev) nothing is protected
    plain = run_program(lambda: Cluster("eks", ARGS).kubeconfig)
    assert not plain.one("aws:kms/key:Key", "eks-secrets").protect


def test_node_group_version_follows_the_cluster(rec: Recording) -> None:
    # pulumi-eks leaves `version` unset when a launch template is given: pinned here, a kubernetesVersion bump
    # rolls the system nodes with the control plane (EKS refuses the next bump otherwise)
    assert rec.one("eks:index:ManagedNodeGroup", "eks-system").inputs["version"] == "1.33"
    assert rec.one("aws:eks/nodeGroup:NodeGroup", "eks-system").inputs["version"] == "1.33"


def test_offline_engine_registers_pulumi_eks_children(rec: Recording) -> None:
    # GIVEN the remote components, THEN their children as pulumi-eks registers them, under them
    (eks,) = rec.of_type("eks:index:Cluster")
    children = sorted((c.type, c.name) for c in rec.children_of(eks.urn))
    assert children == sorted(
        [
            ("eks:index:ServiceRole", "eks-eksRole"),
            ("aws:eks/cluster:Cluster", "eks-eksCluster"),
            ("aws:eks/accessEntry:AccessEntry", "eks-role-Admin"),
            ("aws:eks/addon:Addon", "eks-kube-proxy"),
            ("aws:iam/openIdConnectProvider:OpenIdConnectProvider", "eks-oidcProvider"),
            ("pulumi:providers:kubernetes", "eks-eks-k8s"),
            ("eks:index:VpcCniAddon", "eks-vpc-cni"),
        ]
    )
    cluster = rec.one("aws:eks/cluster:Cluster", "eks-eksCluster")
    role = rec.one("aws:iam/role:Role", "eks-eksRole-role")
    assert cluster.inputs["roleArn"] == role.outputs["arn"]
    assert cluster.inputs["vpcConfig"]["subnetIds"] == ["subnet-c", "subnet-d", "subnet-a", "subnet-b"]
    assert (
        cluster.inputs["encryptionConfig"]["provider"]["keyArn"]
        == rec.one("aws:kms/key:Key", "eks-secrets").outputs["arn"]
    )
    assert all(r.synthetic for r in rec.records if r.parent == eks.urn)
    group = rec.one("aws:eks/nodeGroup:NodeGroup", "eks-system")
    assert group.inputs["clusterName"] == "ml-prod" and cluster.urn in group.dependencies
