"""Observability: kube-prometheus-stack with GPU (DCGM), Neuron and EFA metrics, the training
dashboards, and optional remote write to Amazon Managed Service for Prometheus.

Values, scrape targets, exporter objects and dashboards come from :mod:`ekstrain.assembly.observability`;
this component registers them. Grafana's admin password is generated (never the chart's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from ekstrain.assembly import observability as obs
from ekstrain.components import iam
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts.versions import Chart

POD_SECURITY = {
    # node-exporter uses the host network, PID namespace and root file system.
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "baseline",
}


@dataclass(frozen=True, kw_only=True)
class ObservabilityArgs:
    plan: obs.ObservabilityPlan
    """Required. From ``ekstrain.assembly.observability.plan(cfg)``."""
    chart: Chart
    """Required. The kube-prometheus-stack chart (pinned in ekstrain/facts/versions.py)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the AWS resources (workspace, roles)."""


class Observability(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[<cluster>])``; AWS children use the
    default provider."""

    release: k8s.helm.v3.Release
    """The kube-prometheus-stack Helm release."""
    grafana_admin_password: pulumi.Output[str]
    """Grafana's generated admin password (secret)."""
    remote_write_url: pulumi.Output[str] | None
    """Amazon Managed Prometheus remote-write URL; None without a workspace."""

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:observability:Observability", name, None, opts)
        plan = args.plan
        after = dependencies(opts)  # the cluster: the gp3 class and add-ons
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(args.tags)
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=obs.NAMESPACE, labels={"app.kubernetes.io/part-of": "ekstrain", **POD_SECURITY}
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])

        password = random.RandomPassword(f"{name}-grafana-admin", length=32, special=False, opts=child)
        self.grafana_admin_password = pulumi.Output.secret(password.result)
        admin = k8s.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=obs.GRAFANA_ADMIN_SECRET, namespace=obs.NAMESPACE),
            type="Opaque",
            string_data={"admin-user": "admin", "admin-password": self.grafana_admin_password},
            opts=in_ns,
        )

        deps: list[pulumi.Resource] = [ns, admin, *after]
        self.remote_write_url = None
        if plan.amp_alias is not None:
            workspace = aws.amp.Workspace(f"{name}-amp", alias=plan.amp_alias, tags=tags, opts=child)
            role = aws.iam.Role(
                f"{name}-amp-writer",
                assume_role_policy=iam.pod_identity_trust(),
                description=f"Prometheus of {plan.cluster_name} writes to AMP",
                tags=tags,
                opts=child,
            )
            policy = aws.iam.RolePolicy(
                f"{name}-amp-writer",
                role=role.id,
                policy=iam.policy_document(
                    [{"Effect": "Allow", "Action": ["aps:RemoteWrite"], "Resource": workspace.arn}]
                ),
                opts=child,
            )
            association = aws.eks.PodIdentityAssociation(
                f"{name}-amp-writer",
                cluster_name=plan.cluster_name,
                namespace=obs.NAMESPACE,
                service_account=obs.PROMETHEUS_SA,
                role_arn=role.arn,
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[policy, *after]),
            )
            self.remote_write_url = workspace.prometheus_endpoint.apply(obs.remote_write_url)
            deps.append(association)

        self.release = release(
            name,
            release_name=obs.RELEASE,
            chart=args.chart,
            namespace=obs.NAMESPACE,
            values=plan.values(self.remote_write_url),
            parent=self,
            depends_on=deps,
        )

        if plan.efa_exporter:
            cm = obs.efa_exporter_configmap()
            script = resource(f"{name}-efa-exporter", cm, opts=in_ns)
            ds = obs.efa_exporter_daemonset()
            resource(f"{name}-efa-exporter", ds, opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, script]))
            svc = obs.metrics_service(obs.EFA_EXPORTER, obs.NAMESPACE, obs.EFA_EXPORTER_PORT)
            resource(f"{name}-efa-exporter", svc, opts=in_ns)
            netpol = obs.efa_exporter_network_policy()
            resource(f"{name}-efa-exporter", netpol, opts=in_ns)
        if plan.neuron_monitor:
            # neuron-monitor itself is a device-plugins DaemonSet in kube-system; this Service exposes it.
            svc = obs.metrics_service(obs.NEURON_MONITOR, "kube-system", obs.NEURON_MONITOR_PORT)
            resource(f"{name}-neuron-monitor", svc, opts=child)
        for uid, board in plan.dashboards.items():
            cm = obs.dashboard_configmap(uid, board)
            resource(f"{name}-dashboard-{uid}", cm, opts=in_ns)

        outputs: dict[str, Any] = {"grafanaAdminPassword": self.grafana_admin_password}
        if self.remote_write_url is not None:
            outputs["remoteWriteUrl"] = self.remote_write_url
        self.register_outputs(outputs)
