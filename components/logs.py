"""Logs off every node: Fluent Bit (a DaemonSet tolerating every taint) writes container stdout/stderr, sbatch
output, the kernel's messages and the kubelet's journal into KMS-encrypted CloudWatch log groups through EKS Pod
Identity. Values and policies come from :mod:`ekstrain.assembly.logs`; this component registers them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from ekstrain.assembly import logs
from ekstrain.components import iam, manifest
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.facts.versions import Chart

POD_SECURITY = {
    # hostPath mounts of /var/log and the agent's state directory, root to read them.
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "baseline",
}


@dataclass(frozen=True, kw_only=True)
class LogsArgs:
    plan: logs.LogsPlan
    """Required. From ``ekstrain.assembly.logs.plan(cfg)``."""
    chart: Chart
    """Required. The fluent-bit chart (pinned in ekstrain/facts/versions.py)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the AWS resources (key, log groups, role)."""


def log_group_key(
    name: str, log_group_name: str, description: str, tags: Mapping[str, str], opts: pulumi.ResourceOptions
) -> tuple[aws.kms.Key, aws.kms.KeyPolicy]:
    """A customer managed key (rotated, explicit policy) for one CloudWatch log group of another component (VPC
    flow logs, FSx logs): the group names the key's ARN and depends on the policy, which CloudWatch checks when
    the group is associated with the key."""
    key, policy = iam.customer_key(
        f"{name}-key", description, tags, opts, policy=lambda arn: iam.log_group_key_policy(arn, log_group_name)
    )
    return key, policy


class Logs(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster>])``; AWS children use the
    default provider."""

    release: k8s.helm.v3.Release
    """The fluent-bit Helm release."""
    log_group_names: dict[str, pulumi.Output[str]]
    """``workloads`` and ``node`` -> the CloudWatch log group's name."""

    def __init__(self, name: str, args: LogsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:logs:Logs", name, None, opts)
        plan = args.plan
        after = dependencies(opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)

        key, key_policy = iam.customer_key(
            f"{name}-key",
            f"CloudWatch log groups of {plan.cluster_name}",
            tags,
            child,
            alias=f"{plan.cluster_name}-logs",
            policy=lambda arn: logs.kms_key_policy(arn, plan.region, plan.cluster_name),
        )
        groups = {
            kind: aws.cloudwatch.LogGroup(
                f"{name}-{kind}",
                name=group,
                kms_key_id=key.arn,
                retention_in_days=plan.retention_days,
                tags=tags,
                # CloudWatch checks the key policy when the group is associated with the key.
                opts=pulumi.ResourceOptions(parent=self, depends_on=[key_policy]),
            )
            for kind, group in plan.log_groups.items()
        }
        self.log_group_names = {kind: g.name for kind, g in groups.items()}

        role = aws.iam.Role(
            f"{name}-writer",
            assume_role_policy=iam.pod_identity_trust(),
            description=f"Fluent Bit of {plan.cluster_name} writes its own log groups",
            tags=tags,
            opts=child,
        )
        arns = [g.arn for g in groups.values()]
        policy = aws.iam.RolePolicy(
            f"{name}-writer",
            role=role.id,
            policy=pulumi.Output.all(*arns).apply(
                lambda resolved: json.dumps(
                    {"Version": "2012-10-17", "Statement": logs.log_writer_statements(resolved)}
                )
            ),
            opts=child,
        )
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=logs.NAMESPACE, labels={"app.kubernetes.io/part-of": "ekstrain", **POD_SECURITY}
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-writer",
            cluster_name=plan.cluster_name,
            namespace=logs.NAMESPACE,
            service_account=logs.SERVICE_ACCOUNT,
            role_arn=role.arn,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy, *after]),
        )
        # nodes get for the init container (the chart's rbac.nodeAccess would also grant nodes/proxy).
        node_reader = [
            manifest.resource(f"{name}-{obj['kind'].lower()}-node-reader", obj, child)
            for obj in logs.node_reader_objects()
        ]
        self.release = release(
            name,
            release_name=logs.RELEASE,
            chart=args.chart,
            namespace=logs.NAMESPACE,
            values=plan.values,
            parent=self,
            depends_on=[ns, association, *groups.values(), *node_reader, *after],
        )
        outputs: dict[str, Any] = {f"{k}LogGroup": v for k, v in self.log_group_names.items()}
        self.register_outputs(outputs)
