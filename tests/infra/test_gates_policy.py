"""The CrossGuard pack (policy/): every rule on synthetic good and bad inputs, the pulumi-policy
objects themselves through the SDK's unknown-checking proxy, and the whole pack over the offline
recordings of the real stacks (zero mandatory violations)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import pytest
from conftest import REPO, run_program
from ekstrain_policy import pack, rules
from ekstrain_policy.rules import Resource
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from ekstrain.facts import names
from ekstrain.infra import offline
from ekstrain.infra.verify import secrets

# -- bridge: offline recording -> what the policy runtime hands a pack -------------------------------------------------


def _engine_value(value: Any) -> Any:
    """Offline ``<unknown>`` -> the policy SDK's unknown sentinel; resource refs stay as data."""
    if isinstance(value, dict):
        return {k: _engine_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_engine_value(v) for v in value]
    return UNKNOWN_STRING_VALUE if value == offline.UNKNOWN else value


def _opts(protect: bool = False) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def resource_args(r: offline.Record, config: Mapping[str, Any] | None = None) -> ResourceValidationArgs:
    """Resource policies see inputs, wrapped in the proxy that raises on unknowns (as at preview)."""
    return ResourceValidationArgs(
        r.type, unknown_checking_proxy(_engine_value(r.inputs)), r.urn, r.name, _opts(r.protect), None, config
    )


def stack_args(records: Iterable[offline.Record], config: Mapping[str, Any] | None = None) -> StackValidationArgs:
    """Stack policies see outputs (the fakes echo inputs and add ids/ARNs) and dependencies."""
    records = list(records)
    by_urn: dict[str, PolicyResource] = {}
    for r in records:
        by_urn[r.urn] = PolicyResource(
            r.type,
            unknown_checking_proxy(_engine_value(r.outputs or r.inputs)),
            r.urn,
            r.name,
            _opts(r.protect),
            None,
            None,
            [],
            {},
        )
    for r in records:
        by_urn[r.urn].dependencies = [by_urn[u] for u in r.dependencies if u in by_urn]
    return StackValidationArgs(list(by_urn.values()), config)


def run_pack(
    records: list[offline.Record],
    config: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[tuple[str, str, str]]:
    """(policy, level, message) for every violation the real pulumi-policy objects report."""
    found: list[tuple[str, str, str]] = []
    for policy in pack.POLICIES:
        cfg = (config or {}).get(policy.name, {})
        lvl = str(policy.enforcement_level.value if policy.enforcement_level else "advisory")

        def report(message: str, urn: str | None = None, name: str = policy.name, lvl: str = lvl) -> None:
            found.append((name, lvl, message))

        if isinstance(policy, ResourceValidationPolicy):
            for r in records:
                policy.validate(resource_args(r, cfg), report)
        else:
            assert isinstance(policy, StackValidationPolicy)
            policy.validate(stack_args(records, cfg), report)
    return found


def pack_config(stack: str) -> dict[str, Any]:
    return json.loads((REPO / "policy" / "config" / f"{stack}.json").read_text())


# -- synthetic resources -----------------------------------------------------------------------------------------------


def res(
    type_: str, props: Mapping[str, Any], name: str = "r", protect: bool = False, deps: Iterable[str] = ()
) -> Resource:
    return Resource(
        type=type_,
        name=name,
        urn=f"urn:pulumi:s::p::{type_}::{name}",
        props=props,
        protect=protect,
        dependencies=frozenset(deps),
    )


def check(rule: rules.ResourceRule, r: Resource, cfg: Mapping[str, Any] | None = None) -> list[str]:
    return list(rule(r, cfg or {}))


def check_stack(rule: rules.StackRule, rs: list[Resource], cfg: Mapping[str, Any] | None = None) -> list[str]:
    return [m for _, m in rule(rs, cfg or {})]


def nodeclass(**spec: Any) -> dict[str, Any]:
    base = {
        "role": "r",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "metadataOptions": {"httpTokens": "required"},
    }
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu"},
        "spec": {**base, **spec},
    }


# -- encryption at rest ------------------------------------------------------------------------------------------------


def test_ebs_rule_on_nodeclass_volume_template_and_storage_class() -> None:
    enc = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi", "encrypted": True}}]
    plain = [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "200Gi"}}]
    assert check(rules.ebs_encrypted, res(rules.EC2_NODE_CLASS, nodeclass(blockDeviceMappings=enc))) == []
    assert check(rules.ebs_encrypted, res(rules.EC2_NODE_CLASS, nodeclass())) == []  # Karpenter default: encrypted
    assert (
        "not encrypted"
        in check(rules.ebs_encrypted, res(rules.EC2_NODE_CLASS, nodeclass(blockDeviceMappings=plain)))[0]
    )
    assert check(rules.ebs_encrypted, res(rules.VOLUME, {"size": 10, "encrypted": True})) == []
    assert check(rules.ebs_encrypted, res(rules.VOLUME, {"size": 10})) != []
    lt_ok = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}
    lt_bad = {"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}]}
    assert check(rules.ebs_encrypted, res(rules.LAUNCH_TEMPLATE, lt_ok)) == []
    assert check(rules.ebs_encrypted, res(rules.LAUNCH_TEMPLATE, lt_bad)) != []
    sc = {"provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3", "encrypted": "true"}}
    assert check(rules.ebs_encrypted, res(rules.STORAGE_CLASS, sc)) == []
    assert check(rules.ebs_encrypted, res(rules.STORAGE_CLASS, {**sc, "parameters": {"type": "gp3"}})) != []
    assert check(rules.ebs_encrypted, res(rules.STORAGE_CLASS, {"provisioner": "efs.csi.aws.com"})) == []


def test_node_group_disks_need_account_default_encryption_or_own_template() -> None:
    mng = res(rules.EKS_MNG, {"enableIMDSv2": True, "diskSize": 100}, name="system")
    assert "does not encrypt the root volume" in check_stack(rules.node_groups_disk_encrypted, [mng])[0]
    default_on = res(rules.EBS_DEFAULT_ENCRYPTION, {"enabled": True})
    assert check_stack(rules.node_groups_disk_encrypted, [mng, default_on]) == []
    own = res(rules.EKS_MNG, {"launchTemplate": {"id": "lt-1", "version": "1"}})
    assert check_stack(rules.node_groups_disk_encrypted, [own]) == []
    assert (
        check_stack(rules.node_groups_disk_encrypted, [mng, res(rules.EBS_DEFAULT_ENCRYPTION, {"enabled": False})])
        != []
    )


def test_efs_fsx_and_eks_secrets_encryption() -> None:
    assert check(rules.efs_encrypted, res(rules.EFS, {"encrypted": True, "kmsKeyId": "arn:k"})) == []
    assert check(rules.efs_encrypted, res(rules.EFS, {"throughputMode": "elastic"})) != []
    persistent = {"deploymentType": "PERSISTENT_2", "kmsKeyId": "arn:aws:kms:us-west-2:1:key/x"}
    assert check(rules.fsx_encrypted, res(rules.FSX_LUSTRE, persistent)) == []
    assert check(rules.fsx_encrypted, res(rules.FSX_LUSTRE, {"deploymentType": "SCRATCH_2"})) == []
    assert "kmsKeyId" in check(rules.fsx_encrypted, res(rules.FSX_LUSTRE, {"deploymentType": "PERSISTENT_2"}))[0]
    assert "SCRATCH_1" in check(rules.fsx_encrypted, res(rules.FSX_LUSTRE, {}))[0]  # the provider's default
    assert check(rules.eks_secrets_encrypted, res(rules.EKS_CLUSTER, {"encryptionConfigKeyArn": "arn:k"})) == []
    assert check(rules.eks_secrets_encrypted, res(rules.EKS_CLUSTER, {"name": "c"})) != []


def _bucket_set(
    *, sse: str | None = "AES256", pab: bool = True, tls: bool = True, by_dependency: bool = True
) -> list[Resource]:
    bucket = res(rules.S3_BUCKET, {"bucket": "b-123", "id": "b-123"}, name="data")
    ref = "<computed>" if by_dependency else "b-123"  # unknown bucket id at preview: matched by dependency
    deps = [bucket.urn] if by_dependency else []
    out = [bucket]
    if sse:
        out.append(
            res(
                rules.S3_SSE[0],
                {"bucket": ref, "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": sse}}]},
                name="data",
                deps=deps,
            )
        )
    out.append(res(rules.S3_PAB, {"bucket": ref, **{f: pab for f in rules.PAB_FLAGS}}, name="data", deps=deps))
    statement = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::b-123/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false" if tls else "true"}},
    }
    out.append(
        res(rules.S3_POLICY, {"bucket": ref, "policy": json.dumps({"Statement": [statement]})}, name="data", deps=deps)
    )
    return out


@pytest.mark.parametrize("by_dependency", [True, False])
def test_s3_rules_pair_buckets_with_their_configuration(by_dependency: bool) -> None:
    good = _bucket_set(by_dependency=by_dependency)
    for rule in (rules.s3_encrypted, rules.s3_public_access_blocked, rules.s3_tls_only):
        assert check_stack(rule, good) == []
    assert "no BucketServerSideEncryptionConfiguration" in check_stack(rules.s3_encrypted, _bucket_set(sse=None))[0]
    assert check_stack(rules.s3_encrypted, _bucket_set(sse="none")) != []
    assert check_stack(rules.s3_public_access_blocked, _bucket_set(pab=False)) != []
    assert "aws:SecureTransport" in check_stack(rules.s3_tls_only, _bucket_set(tls=False))[0]
    # A second bucket whose settings are missing is caught even though the first one is fine.
    other = res(rules.S3_BUCKET, {"bucket": "other", "id": "other"}, name="other")
    assert len(check_stack(rules.s3_public_access_blocked, [*good, other])) == 1
    assert check_stack(rules.s3_encrypted, []) == []  # no buckets in the stack yet


def test_s3_pairing_at_preview_uses_property_dependencies_without_reading_unknown_ids() -> None:
    """First preview: every bucket id is unknown; the engine's property dependencies still pair them."""
    policy = next(p for p in pack.POLICIES if p.name == "s3-public-access-blocked")
    assert isinstance(policy, StackValidationPolicy)

    def resource(type_: str, name: str, props: dict[str, Any]) -> PolicyResource:
        return PolicyResource(
            type_, unknown_checking_proxy(props), f"urn:pulumi:s::p::{type_}::{name}", name, _opts(), None, None, [], {}
        )

    a = resource(rules.S3_BUCKET, "a", {"id": UNKNOWN_STRING_VALUE, "bucket": UNKNOWN_STRING_VALUE})
    b = resource(rules.S3_BUCKET, "b", {"id": UNKNOWN_STRING_VALUE, "bucket": UNKNOWN_STRING_VALUE})
    block = resource(rules.S3_PAB, "a", {"bucket": UNKNOWN_STRING_VALUE, **{f: True for f in rules.PAB_FLAGS}})
    block.property_dependencies = {"bucket": [a]}
    found: list[str | None] = []
    policy.validate(StackValidationArgs([a, b, block]), lambda message, urn=None: found.append(urn))
    assert found == [b.urn]


# -- IMDSv2, endpoint, logs --------------------------------------------------------------------------------------------


def test_imdsv2_on_every_node_class() -> None:
    assert check(rules.imdsv2_required, res(rules.EC2_NODE_CLASS, nodeclass())) == []
    optional = nodeclass(metadataOptions={"httpTokens": "optional"})
    assert check(rules.imdsv2_required, res(rules.EC2_NODE_CLASS, optional)) != []
    assert check(rules.imdsv2_required, res(rules.EC2_NODE_CLASS, nodeclass(metadataOptions={}))) != []
    assert check(rules.imdsv2_required, res(rules.EKS_MNG, {"enableIMDSv2": True})) == []
    assert check(rules.imdsv2_required, res(rules.EKS_MNG, {"nodeGroupName": "x"})) != []
    assert (
        check(rules.imdsv2_required, res(rules.LAUNCH_TEMPLATE, {"metadataOptions": {"httpTokens": "required"}})) == []
    )
    assert check(rules.imdsv2_required, res(rules.INSTANCE, {"ami": "ami-1"})) != []


@pytest.mark.parametrize(
    ("props", "ok"),
    [
        ({"endpointPublicAccess": False}, True),
        ({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}, True),
        ({"endpointPublicAccess": True}, False),
        ({"name": "c"}, False),  # pulumi-eks defaults the endpoint to public
        ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}, False),
        ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/8", "::/0"]}, False),
    ],
)
def test_eks_public_endpoint_needs_cidr_allow_list(props: dict[str, Any], ok: bool) -> None:
    assert (check(rules.eks_endpoint_restricted, res(rules.EKS_CLUSTER, props)) == []) is ok
    vpc = {"vpcConfig": {k: v for k, v in props.items() if k != "name"}}
    assert (check(rules.eks_endpoint_restricted, res(rules.AWS_EKS_CLUSTER, vpc)) == []) is ok


def test_control_plane_logs() -> None:
    logs = {"enabledClusterLogTypes": ["api", "audit", "authenticator", "scheduler"]}
    assert check(rules.eks_control_plane_logs, res(rules.EKS_CLUSTER, logs)) == []
    only_api = res(rules.EKS_CLUSTER, {"enabledClusterLogTypes": ["api"]})
    assert "audit" in check(rules.eks_control_plane_logs, only_api)[0]


# -- Karpenter ---------------------------------------------------------------------------------------------------------


def nodepool(
    policy: str = "WhenEmpty",
    expire: str | None = "Never",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    tspec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
        "requirements": [],
        "taints": taints or [],
    }
    if expire is not None:
        tspec["expireAfter"] = expire
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu"},
        "spec": {
            "template": {
                "metadata": {"labels": labels if labels is not None else {names.PARTITION_LABEL: "gpu"}},
                "spec": tspec,
            },
            "disruption": {"consolidationPolicy": policy, "consolidateAfter": "30m"},
        },
    }


def test_training_nodepools_never_consolidate_running_nodes_or_expire() -> None:
    assert check(rules.training_pools_never_disrupt_running, res(rules.NODE_POOL, nodepool())) == []
    bad = check(
        rules.training_pools_never_disrupt_running, res(rules.NODE_POOL, nodepool("WhenEmptyOrUnderutilized", None))
    )
    assert len(bad) == 2 and "WhenEmpty" in bad[0] and "expireAfter" in bad[1]
    assert check(rules.training_pools_never_disrupt_running, res(rules.NODE_POOL, nodepool(expire="720h"))) != []
    # Identified by accelerator taints too, not only the partition label.
    tainted = nodepool(
        "WhenEmptyOrUnderutilized",
        labels={},
        taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
    )
    assert check(rules.training_pools_never_disrupt_running, res(rules.NODE_POOL, tainted)) != []
    # A general-purpose pool may consolidate and expire.
    general = nodepool("WhenEmptyOrUnderutilized", "720h", labels={})
    assert check(rules.training_pools_never_disrupt_running, res(rules.NODE_POOL, general)) == []


def _efa_world(
    subnet_terms: list[dict[str, Any]], sg_terms: list[dict[str, Any]], efa_subnets: int = 1, self_rules: bool = True
) -> list[Resource]:
    disc = {"karpenter.sh/discovery": "c"}
    out = [
        res(
            rules.SUBNET,
            {"id": "subnet-priv", "availabilityZone": "us-west-2a", "tags": {**disc, names.SUBNET_ROLE_TAG: "private"}},
            name="private-a",
        )
    ]
    out += [
        res(
            rules.SUBNET,
            {"id": f"subnet-efa{i}", "availabilityZone": "us-west-2a", "tags": {**disc, names.SUBNET_ROLE_TAG: "efa"}},
            name=f"efa-{i}",
        )
        for i in range(efa_subnets)
    ]
    sg = res(rules.SECURITY_GROUP, {"id": "sg-efa", "tags": {**disc, names.SG_ROLE_TAG: "efa"}}, name="efa")
    out.append(sg)
    if self_rules:
        for t in (rules.SG_INGRESS, rules.SG_EGRESS):
            out.append(
                res(
                    t,
                    {"securityGroupId": "sg-efa", "referencedSecurityGroupId": "sg-efa", "ipProtocol": "-1"},
                    name=f"efa-{t[-6:]}",
                )
            )
    out.append(
        res(
            rules.EC2_NODE_CLASS,
            nodeclass(
                subnetSelectorTerms=subnet_terms,
                securityGroupSelectorTerms=sg_terms,
                networkInterfaces=[{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa"}],
            ),
            name="gpu",
        )
    )
    return out


EFA_SUBNET_TERM = {"tags": {"karpenter.sh/discovery": "c", names.SUBNET_ROLE_TAG: "efa"}}
EFA_SG_TERMS = [{"id": "sg-cluster"}, {"tags": {"karpenter.sh/discovery": "c", names.SG_ROLE_TAG: "efa"}}]


def test_efa_classes_select_exactly_the_efa_subnet_and_sg() -> None:
    assert check_stack(rules.efa_single_subnet_and_sg, _efa_world([EFA_SUBNET_TERM], EFA_SG_TERMS)) == []
    assert check_stack(rules.efa_single_subnet_and_sg, _efa_world([{"id": "subnet-efa0"}], EFA_SG_TERMS)) == []
    wide = _efa_world([{"tags": {"karpenter.sh/discovery": "c"}}], EFA_SG_TERMS)
    assert "must select only the EFA subnet" in check_stack(rules.efa_single_subnet_and_sg, wide)[0]
    no_sg = _efa_world([EFA_SUBNET_TERM], [{"id": "sg-cluster"}])
    assert "EFA security group" in check_stack(rules.efa_single_subnet_and_sg, no_sg)[0]
    two = _efa_world([EFA_SUBNET_TERM], EFA_SG_TERMS, efa_subnets=2)
    assert "exactly one" in check_stack(rules.efa_single_subnet_and_sg, two)[0]
    no_self = _efa_world([EFA_SUBNET_TERM], EFA_SG_TERMS, self_rules=False)
    assert len(check_stack(rules.efa_single_subnet_and_sg, no_self)) == 2
    # Non-EFA classes (no EFA interfaces) may select the private subnets.
    plain = [r for r in wide if r.type != rules.EC2_NODE_CLASS] + [
        res(rules.EC2_NODE_CLASS, nodeclass(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "c"}}]))
    ]
    assert check_stack(rules.efa_single_subnet_and_sg, plain) == []


def test_efa_classes_on_an_existing_vpc_name_the_subnet_and_groups_by_id() -> None:
    """network.existingVpc: no subnet in the stack; the classes name the EFA subnet and groups by id."""
    by_id = [{"id": "subnet-efa0"}]
    sg_ids = [{"id": "sg-cluster"}, {"id": "sg-efa"}]
    world = [r for r in _efa_world(by_id, sg_ids) if r.type != rules.SUBNET]
    assert check_stack(rules.efa_single_subnet_and_sg, world) == []
    given_sg = [r for r in world if r.type not in (rules.SECURITY_GROUP, rules.SG_INGRESS, rules.SG_EGRESS)]
    assert check_stack(rules.efa_single_subnet_and_sg, given_sg) == []  # efaSecurityGroupId: a second id
    only_cluster = [r for r in _efa_world(by_id, [{"id": "sg-cluster"}]) if r.type != rules.SUBNET]
    assert "EFA security group" in check_stack(rules.efa_single_subnet_and_sg, only_cluster)[0]
    two = [r for r in _efa_world([*by_id, {"id": "subnet-efa1"}], sg_ids) if r.type != rules.SUBNET]
    assert "by id" in check_stack(rules.efa_single_subnet_and_sg, two)[0]
    by_tag = [r for r in _efa_world([EFA_SUBNET_TERM], sg_ids) if r.type != rules.SUBNET]
    assert "by id" in check_stack(rules.efa_single_subnet_and_sg, by_tag)[0]
    no_self = [r for r in _efa_world(by_id, sg_ids, self_rules=False) if r.type != rules.SUBNET]
    assert len(check_stack(rules.efa_single_subnet_and_sg, no_self)) == 2


# -- protection, IAM, secrets, containers ------------------------------------------------------------------------------


@pytest.mark.parametrize("type_", rules.STATEFUL_TYPES)
def test_stateful_storage_protected_in_prod(type_: str) -> None:
    prod = {"tags": {"Environment": "prod"}}
    assert check(rules.stateful_protected_in_prod, res(type_, prod, protect=True)) == []
    assert "protect=True" in check(rules.stateful_protected_in_prod, res(type_, prod))[0]
    assert check(rules.stateful_protected_in_prod, res(type_, {"tags": {"Environment": "dev"}})) == []
    # The per-stack pack config wins over tags (an untagged resource in the prod stack).
    assert check(rules.stateful_protected_in_prod, res(type_, {}), {"environment": "prod"}) != []
    assert check(rules.stateful_protected_in_prod, res(type_, prod), {"environment": "dev"}) == []
    assert (
        check(
            rules.stateful_protected_in_prod,
            res(type_, {"tags": {"Environment": "staging"}}),
            {"prodEnvironments": ["prod", "staging"]},
        )
        != []
    )


def _doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def test_no_iam_star_on_star() -> None:
    scoped = _doc(
        {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::b/*"},
        {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"},
    )
    admin = _doc({"Effect": "Allow", "Action": "*", "Resource": "*"})
    assert check(rules.no_iam_admin_wildcard, res("aws:iam/policy:Policy", {"policy": scoped})) == []
    assert check(rules.no_iam_admin_wildcard, res("aws:iam/policy:Policy", {"policy": admin})) != []
    assert (
        check(
            rules.no_iam_admin_wildcard,
            res("aws:iam/rolePolicy:RolePolicy", {"policy": _doc({"Action": ["*:*"], "Resource": ["*"]})}),
        )
        != []
    )
    assert (
        check(
            rules.no_iam_admin_wildcard,
            res("aws:iam/policy:Policy", {"policy": _doc({"Effect": "Deny", "Action": "*", "Resource": "*"})}),
        )
        == []
    )
    assert (
        check(
            rules.no_iam_admin_wildcard,
            res("aws:iam/policy:Policy", {"policy": _doc({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})}),
        )
        != []
    )
    role = {
        "assumeRolePolicy": _doc(
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ),
        "inlinePolicies": [{"name": "ok", "policy": scoped}, {"name": "bad", "policy": admin}],
    }
    assert check(rules.no_iam_admin_wildcard, res(rules.IAM_ROLE, role)) == [
        'inlinePolicies[1] statement 0 allows Action "*" on Resource "*"'
    ]
    attach = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    arn = "arn:aws:iam::aws:policy/"
    assert check(rules.no_iam_admin_wildcard, res(attach, {"policyArn": arn + "AdministratorAccess"}))
    assert check(rules.no_iam_admin_wildcard, res(attach, {"policyArn": arn + "ReadOnlyAccess"})) == []


def test_credentials_must_come_from_secret_sources() -> None:
    pw = res("random:index/randomPassword:RandomPassword", {"length": 32}, name="db")
    from_pw = res(rules.K8S_SECRET, {"stringData": {"password": "x9..."}}, name="db", deps=[pw.urn])
    literal = res(rules.K8S_SECRET, {"stringData": {"password": "hunter2"}}, name="db-literal")
    empty = res(rules.K8S_SECRET, {"metadata": {"name": "filled-later"}}, name="empty")
    assert check_stack(rules.credentials_from_secret_sources, [pw, from_pw, empty]) == []
    assert "literal" in check_stack(rules.credentials_from_secret_sources, [pw, literal])[0]
    assert check_stack(rules.credentials_from_secret_sources, [literal], {"literalSecretAllowList": ["db-*"]}) == []
    helm_ok = res(rules.HELM_RELEASE, {"values": {"auth": {"existingSecret": "db", "username": "slurm"}}})
    helm_bad = res(rules.HELM_RELEASE, {"values": {"auth": {"rootPassword": "changeme"}}}, name="mariadb")
    helm_gen = res(rules.HELM_RELEASE, {"values": {"auth": {"rootPassword": "x"}}}, name="gen", deps=[pw.urn])
    assert check_stack(rules.credentials_from_secret_sources, [helm_ok, helm_gen, pw]) == []
    assert "auth.rootPassword" in check_stack(rules.credentials_from_secret_sources, [helm_bad])[0]
    assert list(
        rules.sensitive_values(
            {
                "a": [{"apiKey": "k"}],
                "tokenSecretName": "n",
                "passwordEnabled": "y",
                "existingSecretPasswordKey": "pw",
                "secret": "db-creds",
            }
        )
    ) == ["a[0].apiKey"]


def _deployment(sc: dict[str, Any], name: str = "web", ns: str = "apps", kind: str = "Deployment") -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "image": "i", "securityContext": sc}]}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {}, "template": {"metadata": {}, "spec": pod}},
    }


def test_containers_unprivileged_except_device_plugins() -> None:
    dep = "kubernetes:apps/v1:Deployment"
    assert check(rules.containers_unprivileged, res(dep, _deployment({"allowPrivilegeEscalation": False}))) == []
    assert "privileged" in check(rules.containers_unprivileged, res(dep, _deployment({"privileged": True})))[0]
    assert check(rules.containers_unprivileged, res(dep, _deployment({"allowPrivilegeEscalation": True}))) != []
    plugin = _deployment({"privileged": True}, "nvidia-device-plugin-daemonset", "kube-system", "DaemonSet")
    assert check(rules.containers_unprivileged, res("kubernetes:apps/v1:DaemonSet", plugin)) == []
    assert (
        check(rules.containers_unprivileged, res("kubernetes:apps/v1:DaemonSet", plugin), {"privilegedAllowList": []})
        != []
    )
    # Pod templates nested in custom resources and CronJobs are walked too.
    ray = {
        "metadata": {"name": "ray", "namespace": "training"},
        "spec": {
            "workerGroupSpecs": [
                {
                    "template": {
                        "spec": {
                            "initContainers": [{"name": "init", "image": "i", "securityContext": {"privileged": True}}],
                            "containers": [{"name": "w", "image": "i"}],
                        }
                    }
                }
            ]
        },
    }
    found = check(rules.containers_unprivileged, res("kubernetes:ray.io/v1:RayCluster", ray))
    assert found == ["training/ray: .spec.workerGroupSpecs[0].template.spec.initContainers[init] is privileged"]
    cron = {
        "metadata": {"name": "j"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": True}}]}
                    }
                }
            }
        },
    }
    assert check(rules.containers_unprivileged, res("kubernetes:batch/v1:CronJob", cron)) != []


def test_rules_ignore_unrelated_and_absent_resources() -> None:
    vpc = res("aws:ec2/vpc:Vpc", {"cidrBlock": "10.0.0.0/16"})
    assert rules.evaluate([vpc]) == []
    assert rules.evaluate([]) == []


# -- the pulumi-policy objects -----------------------------------------------------------------------------------------


def test_pack_has_one_policy_per_rule_with_its_level() -> None:
    by_name = {p.name: p for p in pack.POLICIES}
    assert set(by_name) == {r.name for r in rules.RULES}
    for rule in rules.RULES:
        expected = EnforcementLevel.MANDATORY if rule.mandatory else EnforcementLevel.ADVISORY
        assert by_name[rule.name].enforcement_level == expected, rule.name
        assert isinstance(by_name[rule.name], StackValidationPolicy) is (rule.stack is not None)
    required = {
        "ebs-encrypted",
        "efs-encrypted",
        "fsx-encrypted",
        "s3-encrypted",
        "s3-public-access-blocked",
        "s3-tls-only",
        "imdsv2-required",
        "eks-endpoint-restricted",
        "efa-single-subnet",
        "training-nodepool-disruption",
        "stateful-protected-in-prod",
        "no-iam-admin-wildcard",
        "credentials-from-secret-sources",
        "containers-unprivileged",
    }
    assert {n for n, p in by_name.items() if p.enforcement_level == EnforcementLevel.MANDATORY} >= required


def _record(type_: str, inputs: dict[str, Any], name: str = "x", protect: bool = False) -> offline.Record:
    return offline.Record(
        urn=f"urn:pulumi:s::p::{type_}::{name}",
        type=type_,
        name=name,
        custom=True,
        remote=False,
        parent="",
        inputs=inputs,
        outputs=dict(inputs),
        protect=protect,
    )


def test_pack_policy_reports_through_the_sdk() -> None:
    bad = _record(
        rules.EKS_CLUSTER,
        {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"], "encryptionConfigKeyArn": "arn:k"},
    )
    found = run_pack([bad])
    assert (
        "eks-endpoint-restricted",
        "mandatory",
        "publicAccessCidrs contains 0.0.0.0/0: the endpoint is open to the internet",
    ) in found
    unprotected = _record(rules.FSX_LUSTRE, {"deploymentType": "SCRATCH_2"})
    assert any(n == "stateful-protected-in-prod" for n, _, _ in run_pack([unprotected], pack_config("prod")))
    assert not any(n == "stateful-protected-in-prod" for n, _, _ in run_pack([unprotected], pack_config("dev")))


def test_unknown_values_at_preview_raise_instead_of_passing_or_failing() -> None:
    """The runtime turns UnknownValueError into "cannot run during preview", never a silent pass."""
    policy = next(p for p in pack.POLICIES if p.name == "eks-endpoint-restricted")
    assert isinstance(policy, ResourceValidationPolicy)
    rec = _record(rules.EKS_CLUSTER, {"endpointPublicAccess": True, "publicAccessCidrs": offline.UNKNOWN})
    with pytest.raises(UnknownValueError):
        policy.validate(resource_args(rec), lambda message, urn=None: None)
    # An unknown field the rule does not read does not stop it.
    rec = _record(rules.EKS_CLUSTER, {"endpointPublicAccess": False, "vpcId": offline.UNKNOWN})
    seen: list[str] = []
    policy.validate(resource_args(rec), lambda message, urn=None: seen.append(message))
    assert seen == []


# -- the real stacks ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_stack_recording_has_no_mandatory_violation(stack: str, request: pytest.FixtureRequest) -> None:
    recording: offline.Recording = request.getfixturevalue(f"{stack}_recording")
    found = run_pack(recording.records, pack_config(stack))
    mandatory = [f for f in found if f[1] == "mandatory"]
    assert mandatory == []
    # The same rules called directly agree with the pack.
    direct = rules.evaluate(
        [
            Resource(
                type=r.type,
                name=r.name,
                urn=r.urn,
                props=r.outputs or r.inputs,
                protect=r.protect,
                dependencies=frozenset(r.dependencies),
            )
            for r in recording.records
        ],
        pack_config(stack),
    )
    assert sorted(m for _, _, m in direct) == sorted(m for _, _, m in found)


def test_rules_read_the_keys_the_program_really_produces(
    prod_recording: offline.Recording, dev_recording: offline.Recording
) -> None:
    """Each rule is wired to real engine keys: break one recorded input and the rule fires."""
    dev_cluster = dev_recording.of_type(rules.EKS_CLUSTER)[0]
    assert dev_cluster.inputs["endpointPublicAccess"] is False  # private; the deploy runner is in the VPC
    opened = _record(
        rules.EKS_CLUSTER, {**dev_cluster.inputs, "endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}
    )
    assert any(n == "eks-endpoint-restricted" for n, _, _ in run_pack([opened]))
    prod_cluster = prod_recording.of_type(rules.EKS_CLUSTER)[0]
    assert any(
        n == "eks-secrets-encrypted"
        for n, _, _ in run_pack(
            [
                _record(
                    rules.EKS_CLUSTER, {k: v for k, v in prod_cluster.inputs.items() if k != "encryptionConfigKeyArn"}
                )
            ]
        )
    )
    mng = prod_recording.of_type(rules.EKS_MNG)[0]
    assert mng.inputs["launchTemplate"], "the system node group brings its own launch template"
    template = prod_recording.one(rules.LAUNCH_TEMPLATE, "cluster-system")
    assert template.inputs["metadataOptions"]["httpTokens"] == "required"
    optional = {**template.inputs, "metadataOptions": {**template.inputs["metadataOptions"], "httpTokens": "optional"}}
    assert any(n == "imdsv2-required" for n, _, _ in run_pack([_record(rules.LAUNCH_TEMPLATE, optional)]))
    unencrypted_root = {
        **template.inputs,
        "blockDeviceMappings": [
            {**template.inputs["blockDeviceMappings"][0], "ebs": {"volumeSize": 100, "volumeType": "gp3"}}
        ],
    }
    assert any(n == "ebs-encrypted" for n, _, _ in run_pack([_record(rules.LAUNCH_TEMPLATE, unencrypted_root)]))
    gp3 = prod_recording.one(rules.STORAGE_CLASS, "cluster-gp3")
    unencrypted = {**gp3.inputs, "parameters": {"type": "gp3"}}
    assert any(n == "ebs-encrypted" for n, _, _ in run_pack([_record(rules.STORAGE_CLASS, unencrypted)]))
    # The recorded EFA subnet and SG are what the EFA rule resolves selectors against.
    efa = [
        r
        for r in prod_recording.of_type(rules.SUBNET)
        if (r.outputs.get("tags") or {}).get(names.SUBNET_ROLE_TAG) == "efa"
    ]
    assert len(efa) == 1


def test_secret_provenance_over_a_recorded_program() -> None:
    """Dependencies recorded by the offline engine tell a RandomPassword-fed Secret from a literal one."""

    def program() -> dict[str, Any]:
        pw = random.RandomPassword("db", length=24, special=False)
        k8s.core.v1.Secret("db", metadata={"name": "db", "namespace": "slurm"}, string_data={"password": pw.result})
        k8s.core.v1.Secret(
            "db-literal", metadata={"name": "db-literal", "namespace": "slurm"}, string_data={"password": "hunter2"}
        )
        return {"ok": pulumi.Output.from_input(True)}

    rec = run_program(program)
    found = run_pack(rec.records)
    flagged = [m for n, _, m in found if n == "credentials-from-secret-sources"]
    assert len(flagged) == 1 and flagged[0].startswith("Secret db-literal stringData")


# -- secrets reach the engine as Pulumi secrets (what the policy runtime cannot see) -----------------------------------


def test_plaintext_credential_detector() -> None:
    def program() -> dict[str, Any]:
        pw = random.RandomPassword("db", length=24, special=False)
        # pulumi-kubernetes itself wraps Secret data/stringData in Output.secret, even a literal
        # (which credentials-from-secret-sources still refuses: it would sit in git).
        k8s.core.v1.Secret("db-literal", metadata={"name": "db-literal"}, string_data={"password": "hunter2"})
        chart = {"chart": "mariadb", "version": "1.0.0", "namespace": "slurm"}
        k8s.helm.v3.Release("generated", name="generated", values={"auth": {"rootPassword": pw.result}}, **chart)
        k8s.helm.v3.Release(
            "wrapped", name="wrapped", **chart, values={"auth": {"rootPassword": pulumi.Output.secret("from-config")}}
        )
        k8s.helm.v3.Release("literal", name="literal", values={"auth": {"rootPassword": "hunter2"}}, **chart)
        return {"ok": pulumi.Output.from_input(True)}

    rec = run_program(program)
    assert rec.one(rules.K8S_SECRET, "db-literal").secret_inputs == {"stringData"}
    assert rec.one(rules.HELM_RELEASE, "wrapped").secret_inputs == {"values.auth.rootPassword"}
    assert secrets.plaintext_credentials(rec.records) == ["literal.values.auth.rootPassword"]


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_stack_credentials_are_pulumi_secrets(stack: str, request: pytest.FixtureRequest) -> None:
    recording: offline.Recording = request.getfixturevalue(f"{stack}_recording")
    assert secrets.plaintext_credentials(recording.records) == []


# -- the pack as the CLI loads it -------------------------------------------------------------------------------------


def _imports(path: Any) -> set[str]:
    import ast

    tree = ast.parse(path.read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return names


def test_pack_needs_only_pulumi_policy_and_the_standard_library() -> None:
    """The CLI runs the pack in policy/venv, which has pulumi-policy only (policy/requirements.txt)."""
    import sys

    pack_dir = REPO / "policy"
    allowed = set(sys.stdlib_module_names) | {"pulumi_policy", "ekstrain_policy", "ekstrain"}
    for path in [pack_dir / "__main__.py", *sorted((pack_dir / "ekstrain_policy").glob("*.py"))]:
        assert _imports(path) <= allowed, (path.name, _imports(path) - allowed)
    assert (pack_dir / "requirements.txt").read_text().splitlines()[-1] == "pulumi-policy==1.21.0"


def test_rules_load_with_the_standard_library_and_ekstrain_names_only(tmp_path: Any) -> None:
    # GIVEN a Python without site-packages (not even pulumi-policy) whose path is the pack directory,
    # as the CLI starts it elsewhere than this checkout's root
    import subprocess
    import sys

    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import ekstrain_policy.rules as r; "
        "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names) - {'__main__'}), "
        "'ekstrain.facts.names' in sys.modules, r.ACCELERATOR_TAINTS)"
    )
    # WHEN the rules are imported
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(REPO / "policy")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # THEN they load, and the shared names come from ekstrain.facts.names (one copy, no third-party import)
    assert out.split() == [
        "['ekstrain',",
        "'ekstrain_policy']",
        "True",
        "('nvidia.com/gpu',",
        "'aws.amazon.com/neuron',",
        "'vpc.amazonaws.com/efa')",
    ]


def test_main_only_builds_the_pack() -> None:
    import ast

    tree = ast.parse((REPO / "policy" / "__main__.py").read_text())
    calls = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    assert len(calls) == 1
    call = calls[0].value
    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "PolicyPack"
    kwargs = {k.arg: k.value for k in call.keywords}
    assert isinstance(kwargs["policies"], ast.Name) and kwargs["policies"].id == "POLICIES"


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_pack_config_files_name_real_policies(stack: str) -> None:
    cfg = pack_config(stack)
    names = {p.name for p in pack.POLICIES}
    assert set(cfg) <= names
    assert cfg["stateful-protected-in-prod"]["environment"] == stack
    for name, values in cfg.items():
        schema = pack.CONFIG_SCHEMAS[name]
        assert set(values) <= set(schema.properties), name


def test_policies_defer_on_any_unknown_input_and_never_crash(prod_recording: offline.Recording) -> None:
    """At preview any input may be unknown. Make each top-level input of each prod resource unknown in
    turn: every resource policy passes, reports, or defers with UnknownValueError (which the runtime
    reports as "can't run during preview"); none raises anything else."""
    policies = [p for p in pack.POLICIES if isinstance(p, ResourceValidationPolicy)]
    runs = 0
    for r in prod_recording.records:
        for key in r.inputs:
            blind = dataclasses.replace(r, inputs={**r.inputs, key: offline.UNKNOWN})
            for policy in policies:
                with contextlib.suppress(UnknownValueError):
                    policy.validate(resource_args(blind), lambda message, urn=None: None)
                runs += 1
    assert runs > 1000
