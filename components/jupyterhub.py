"""JupyterHub: the zero-to-jupyterhub release, its namespace and the read-only FSx volume.

Values come from :mod:`ekstrain.assembly.jupyterhub` (profiles per partition, EFS homes, culling, auth,
internal load balancer); this component registers them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from ekstrain.assembly import jupyterhub as hub
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts.versions import Chart


@dataclass(frozen=True, kw_only=True)
class JupyterHubArgs:
    plan: hub.HubPlan
    """Required. From ``ekstrain.assembly.jupyterhub.plan(cfg)``."""
    chart: Chart
    """Required. The jupyterhub chart (pinned in ekstrain/facts/versions.py)."""
    client_secret: pulumi.Input[str] | None = None
    """OAuth client secret (or the dummy password outside prod); kept secret in state. Required: the hub's pod
    reads it from the Secret ``jupyterhub-oauth`` this component creates (a release waiting on a Secret nobody
    creates fails the `up` at Helm's timeout). @default none, which is refused."""
    fsx_file_system_id: pulumi.Input[str]
    """Required. The FSx for Lustre file system users' home and data mount (``LustreStorage.file_system_id``)."""
    fsx_dns_name: pulumi.Input[str]
    """Required. Its DNS name (``LustreStorage.dns_name``)."""
    fsx_mount_name: pulumi.Input[str]
    """Required. Its Lustre mount name (``LustreStorage.mount_name``)."""


class JupyterHub(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(provider=<k8s provider>, depends_on=[...])``."""

    release: k8s.helm.v3.Release
    """The jupyterhub Helm release."""

    def __init__(self, name: str, args: JupyterHubArgs, opts: pulumi.ResourceOptions | None = None):
        if args.client_secret is None:
            raise ValueError(
                "JupyterHubArgs.client_secret: the hub needs its OAuth client secret (or the dummy password); "
                "pass it (from `pulumi config set --secret ekstrain:jupyterhubClientSecret ...`)"
            )
        super().__init__("ekstrain:jupyterhub:JupyterHub", name, None, opts)
        plan = args.plan
        after = dependencies(opts)  # the cluster, the EFS/FSx CSI drivers and the efs-ap class
        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=hub.NAMESPACE,
                labels={"app.kubernetes.io/part-of": "ekstrain", "pod-security.kubernetes.io/enforce": "baseline"},
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        capacity = plan.fsx_capacity_gib
        pv = hub.fsx_pv(args.fsx_file_system_id, args.fsx_dns_name, args.fsx_mount_name, capacity)
        pv_res = resource(f"{name}-fsx-pv", pv, opts=pulumi.ResourceOptions(parent=self))
        pvc = hub.fsx_pvc(capacity)
        pvc_res = resource(f"{name}-fsx-pvc", pvc, opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, pv_res]))
        deps: list[pulumi.Resource] = [ns, pvc_res, *after]
        secret = pulumi.Output.secret(args.client_secret) if args.client_secret is not None else None
        dummy = plan.dummy_auth
        if secret is not None and not dummy:
            s = hub.oauth_secret(secret)
            deps.append(resource(f"{name}-oauth", s, opts=pulumi.ResourceOptions(parent=self, depends_on=[ns])))
        # 32-byte hex keys: SHA-256 of a 64-character random password (the provider has no hex output that
        # the offline engine fakes; the digest keeps the password's entropy up to 256 bits).
        keys: dict[str, pulumi.Output[str]] = {
            k: pulumi.Output.secret(
                random.RandomPassword(
                    f"{name}-{k}", length=64, special=False, opts=pulumi.ResourceOptions(parent=self)
                ).result.apply(lambda v: hashlib.sha256(v.encode()).hexdigest())
            )
            for k in hub.GENERATED_SECRETS
        }
        # The hub's cookie secret and CryptKeeper key in a Secret of their own (hub.existingSecret), so that an Argo CD
        # Application can reference it instead of carrying the values.
        deps.append(
            resource(f"{name}-keys", hub.keys_secret(keys), opts=pulumi.ResourceOptions(parent=self, depends_on=[ns]))
        )
        self.release = release(
            name,
            release_name=hub.RELEASE,
            chart=args.chart,
            namespace=hub.NAMESPACE,
            values=hub.merged(plan.values(secret if dummy else None), hub.generated_secret_values(keys)),
            parent=self,
            depends_on=deps,
        )
        self.register_outputs({"namespace": hub.NAMESPACE})
