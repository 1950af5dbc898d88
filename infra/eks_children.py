"""The children pulumi-eks registers for ``eks:index:Cluster`` and ``eks:index:ManagedNodeGroup``.

Both are remote components: in a real `pulumi up` the pulumi-eks provider (Node.js) constructs them and
registers the EKS cluster, its service role, access entries, add-ons, OIDC provider, Kubernetes provider
and the node group. Under the SDK's mocks none of that happens, so the offline engine adds the same
children itself from these functions, and every check (IAM lint, policy pack, checkov, AWS rules, creation
order) sees them.

Mirrors pulumi/pulumi-eks nodejs/eks at 7bf0c1b (v4.3.0 + 9 commits; Python SDK 4.4.0) for the arguments
this program uses (cluster/cluster.ts createCore, servicerole.ts, addons/cni-addon.ts, nodes/nodegroup.ts
createManagedNodeGroup). tests/test_real_eks.py runs that implementation itself (shared/tools/real-eks) on a
render's recorded inputs and compares its registrations with these.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

PROVIDER_AWS_VERSION = "7.25.0"
"""The @pulumi/aws version pulumi-eks pins for its children (its package.json)."""

# cni-addon.ts: the defaults of the VPC CNI environment pulumi-eks always writes into configurationValues.
VPC_CNI_ENV = {
    "AWS_VPC_ENI_MTU": "9001",
    "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "false",
    "AWS_VPC_K8S_CNI_EXTERNALSNAT": "false",
    "AWS_VPC_K8S_CNI_LOGLEVEL": "DEBUG",
    "AWS_VPC_K8S_CNI_LOG_FILE": "/host/var/log/aws-routed-eni/ipamd.log",
    "AWS_VPC_K8S_CNI_VETHPREFIX": "eni",
    "AWS_VPC_K8S_PLUGIN_LOG_FILE": "/var/log/aws-routed-eni/plugin.log",
    "AWS_VPC_K8S_PLUGIN_LOG_LEVEL": "DEBUG",
    "ENABLE_POD_ENI": "false",
    "WARM_ENI_TARGET": "1",
}


@dataclass
class Child:
    """One registration a remote component makes: type, name, parent (a child's name, or "" for the component)."""

    type: str
    name: str
    parent: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    dependencies: list[str] = field(default_factory=list)
    """Names of sibling children it depends on."""
    ignore_changes: list[str] = field(default_factory=list)
    custom: bool = True


def service_role_policy_suffix(policy_arn: str) -> str:
    """servicerole.ts: the attachment is named after the SHA-1 of the policy ARN (first 8 hex digits)."""
    return hashlib.sha1(policy_arn.encode()).hexdigest()[:8]


def cluster_children(
    name: str, inputs: dict[str, Any], partition: str = "aws", issuer_url: str = "<issuer>"
) -> list[Child]:
    """What ``eks.Cluster(name, **inputs)`` registers, for the options this program sets (API authentication,
    no default node group or security groups, OIDC provider, managed vpc-cni and kube-proxy, no CoreDNS)."""
    tags = dict(inputs.get("tags") or {})
    role = f"{name}-eksRole-role"
    policy = f"arn:{partition}:iam::aws:policy/AmazonEKSClusterPolicy"
    attachment = f"{name}-eksRole-{service_role_policy_suffix(policy)}"
    cluster = f"{name}-eksCluster"
    vpc_config: dict[str, Any] = {
        "endpointPrivateAccess": bool(inputs.get("endpointPrivateAccess", False)),
        "endpointPublicAccess": bool(inputs.get("endpointPublicAccess", True)),
        "subnetIds": [*(inputs.get("publicSubnetIds") or []), *(inputs.get("privateSubnetIds") or [])]
        or list(inputs.get("subnetIds") or []),
    }
    if inputs.get("publicAccessCidrs"):
        vpc_config["publicAccessCidrs"] = list(inputs["publicAccessCidrs"])
    eks_inputs: dict[str, Any] = {
        "bootstrapSelfManagedAddons": inputs.get("bootstrapSelfManagedAddons", True),
        "name": inputs.get("name"),
        "roleArn": f"<ref {role}.arn>",
        "tags": {"Name": cluster, **tags},
        "version": inputs.get("version"),
        "vpcConfig": vpc_config,
    }
    if inputs.get("authenticationMode"):
        eks_inputs["accessConfig"] = {
            "authenticationMode": inputs["authenticationMode"],
            "bootstrapClusterCreatorAdminPermissions": True,
        }
    for key in ("deletionProtection", "enabledClusterLogTypes"):
        if key in inputs:
            eks_inputs[key] = inputs[key]
    if inputs.get("encryptionConfigKeyArn"):
        eks_inputs["encryptionConfig"] = {
            "provider": {"keyArn": inputs["encryptionConfigKeyArn"]},
            "resources": ["secrets"],
        }
    children = [
        Child("eks:index:ServiceRole", f"{name}-eksRole", custom=False),
        Child(
            "aws:iam/role:Role",
            role,
            parent=f"{name}-eksRole",
            inputs={
                "assumeRolePolicy": json.dumps(
                    {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Action": ["sts:AssumeRole", "sts:TagSession"],
                                "Effect": "Allow",
                                "Principal": {"Service": ["eks.amazonaws.com"]},
                            }
                        ],
                    },
                    separators=(",", ":"),
                ),
                "description": "Allows EKS to manage clusters on your behalf.",
                "tags": tags,
            },
        ),
        Child(
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            attachment,
            parent=f"{name}-eksRole",
            inputs={"policyArn": policy, "role": f"<ref {role}.name>"},
            dependencies=[role],
        ),
        Child(
            "aws:eks/cluster:Cluster",
            cluster,
            inputs=eks_inputs,
            dependencies=[role, attachment],
            ignore_changes=["accessConfig.bootstrapClusterCreatorAdminPermissions", "bootstrapSelfManagedAddons"],
        ),
    ]
    for key, entry in (inputs.get("accessEntries") or {}).items():
        entry_name = f"{name}-{key}"
        entry_inputs = {"clusterName": inputs.get("name"), "principalArn": entry.get("principalArn")}
        for optional in ("kubernetesGroups", "type", "username", "tags"):
            if entry.get(optional):
                entry_inputs[optional] = entry[optional]
        children.append(
            Child("aws:eks/accessEntry:AccessEntry", entry_name, inputs=entry_inputs, dependencies=[cluster])
        )
        for policy_key, assoc in (entry.get("accessPolicies") or {}).items():
            children.append(
                Child(
                    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
                    f"{entry_name}-{policy_key}",
                    parent=entry_name,
                    inputs={
                        "accessScope": assoc.get("accessScope"),
                        "clusterName": inputs.get("name"),
                        "policyArn": assoc.get("policyArn"),
                        "principalArn": entry.get("principalArn"),
                    },
                    dependencies=[entry_name, cluster],
                )
            )
    kube_proxy = inputs.get("kubeProxyAddonOptions") or {}
    if kube_proxy.get("enabled", True):
        children.append(
            Child(
                "aws:eks/addon:Addon",
                f"{name}-kube-proxy",
                inputs={
                    "addonName": "kube-proxy",
                    # Unpinned, cluster.ts asks getAddonVersion(mostRecent: true) on every run.
                    "addonVersion": kube_proxy.get("version") or "<most recent>",
                    "clusterName": inputs.get("name"),
                    "preserve": True,
                    "resolveConflictsOnCreate": kube_proxy.get("resolveConflictsOnCreate", "OVERWRITE"),
                    "resolveConflictsOnUpdate": kube_proxy.get("resolveConflictsOnUpdate", "OVERWRITE"),
                    "tags": tags,
                },
                dependencies=[cluster],
            )
        )
    if inputs.get("createOidcProvider"):
        children.append(
            Child(
                "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
                f"{name}-oidcProvider",
                inputs={
                    "clientIdLists": ["sts.amazonaws.com"],
                    "thumbprintLists": ["<issuer CA thumbprint>"],
                    "url": issuer_url,
                },
                dependencies=[cluster],
            )
        )
    children.append(Child("pulumi:providers:kubernetes", f"{name}-eks-k8s", dependencies=[cluster]))
    cni = inputs.get("vpcCniOptions") or {}
    config: dict[str, Any] = {}
    if cni.get("enableNetworkPolicy") is not None:
        config["enableNetworkPolicy"] = "true" if cni["enableNetworkPolicy"] else "false"
    config["env"] = dict(VPC_CNI_ENV)
    config["init"] = {"env": {"DISABLE_TCP_EARLY_DEMUX": "false"}}
    cni_inputs: dict[str, Any] = {
        "addonName": "vpc-cni",
        "clusterName": inputs.get("name"),
        "configurationValues": json.dumps(config, separators=(",", ":")),
        "preserve": True,
        "resolveConflictsOnCreate": "OVERWRITE",
        "resolveConflictsOnUpdate": "OVERWRITE",
        "tags": tags,
    }
    if cni.get("addonVersion"):
        cni_inputs["addonVersion"] = cni["addonVersion"]
    children += [
        Child("eks:index:VpcCniAddon", f"{name}-vpc-cni", custom=False),
        Child(
            "aws:eks/addon:Addon",
            f"{name}-vpc-cni",
            parent=f"{name}-vpc-cni",
            inputs=cni_inputs,
            dependencies=[cluster],
        ),
    ]
    return children


def node_group_children(name: str, inputs: dict[str, Any], cluster_name: str) -> list[Child]:
    """What ``eks.ManagedNodeGroup(name, **inputs)`` registers: the ``aws.eks.NodeGroup`` itself."""
    ng: dict[str, Any] = {"clusterName": cluster_name}
    for key in (
        "amiType",
        "capacityType",
        "instanceTypes",
        "labels",
        "launchTemplate",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "scalingConfig",
        "subnetIds",
        "tags",
        "taints",
        "version",
        "releaseVersion",
    ):
        if inputs.get(key) not in (None, [], {}):
            ng[key] = inputs[key]
    return [Child("aws:eks/nodeGroup:NodeGroup", name, inputs=ng)]
