"""Slurm on Kubernetes (Slinky v1.2): cert-manager, the operator CRDs, the operator, then the
``slurm`` chart with one NodeSet and one Slurm partition per ekstrain partition.

Also owns the objects the chart expects but does not create: the ``slurm`` namespace, a static
FSx PV/PVC pair in it (PVCs are namespaced; the storage component's ``fsx-lustre`` PVC lives in
``training``), and the accounting MariaDB with its generated password.

The FSx inputs are optional: None (storage not wired) skips the PV/PVC, and the slurmd and login
pods stay Pending on the missing ``fsx-lustre`` claim until it exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from ekstrain.assembly.schedulers import autoscaling
from ekstrain.assembly.schedulers import slurm as build
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts.versions import Chart


@dataclass(frozen=True, kw_only=True)
class SlurmArgs:
    crds_chart: Chart
    """Required. The slurm-operator CRDs chart (pinned in ekstrain/facts/versions.py)."""
    operator_chart: Chart
    """Required. The slurm-operator chart."""
    slurm_chart: Chart
    """Required. The slurm (cluster) chart."""
    operator_values: Mapping[str, Any]
    """Required. Helm values of the operator (``ekstrain.assembly.schedulers.slurm``)."""
    slurm_values: Mapping[str, Any]
    """Required. Helm values of the Slurm cluster: controller, NodeSets per partition, login set."""
    cert_manager_chart: Chart | None = None
    """@default None: no cert-manager release (the operator values must then say certManager.enabled=false)."""
    cert_manager_values: Mapping[str, Any] = field(default_factory=dict)
    """@default none. Helm values of the cert-manager chart."""
    accounting: bool = True
    """@default true: MariaDB + Secret for slurmdbd."""
    accounting_volume_gib: int = 20
    """@default 20."""
    fsx_file_system_id: pulumi.Input[str] | None = None
    """@default None: no FSx PV/PVC in the slurm namespace (storage not wired)."""
    fsx_dns_name: pulumi.Input[str] | None = None
    """@default None."""
    fsx_mount_name: pulumi.Input[str] | None = None
    """@default None."""
    fsx_capacity_gib: int = 1200
    """@default 1200: the PV's nominal capacity (Lustre does not enforce it)."""
    keda_chart: Chart | None = None
    """@default None: no KEDA release, NodeSets keep their replicas (scaled by hand)."""
    keda_values: Mapping[str, Any] = field(default_factory=dict)
    """@default none. Helm values of the KEDA chart (``ekstrain.assembly.schedulers.autoscaling.keda_values``)."""
    gang_objects: Sequence[Mapping[str, Any]] = ()
    """@default none. With Volcano: one PodGroup per partition its slurmd pods name and the sizer keeping it at the
    NodeSet's replicas (``ekstrain.assembly.schedulers.slurm.gang_objects``), so a job's nodes are admitted together;
    created with the namespace, before the slurm release's pods."""
    scaled_objects: Sequence[Mapping[str, Any]] = ()
    """@default none. One KEDA ScaledObject per NodeSet (``autoscaling.scaled_objects``): created after the KEDA
    release (its CRDs and webhook) and the slurm release (the NodeSets they scale)."""


class Slurm(pulumi.ComponentResource):
    accounting_password: pulumi.Output[str] | None
    """The slurmdbd MariaDB password (secret); None without accounting."""
    slurm_release: k8s.helm.v3.Release
    """The slurm cluster Helm release."""

    def __init__(self, name: str, args: SlurmArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:slurm:Slurm", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The cluster (its node group runs the webhook, operator and database pods every wait below needs).
        after = dependencies(opts)

        cert = None
        if args.cert_manager_chart is not None:
            cert = release(
                f"{name}-cert-manager",
                release_name="cert-manager",
                chart=args.cert_manager_chart,
                namespace=build.CERT_MANAGER_NAMESPACE,
                values=args.cert_manager_values,
                parent=self,
                create_namespace=True,
                depends_on=after,
            )
        crds = release(
            f"{name}-operator-crds",
            release_name="slurm-operator-crds",
            chart=args.crds_chart,
            namespace=build.OPERATOR_NAMESPACE,
            values={},
            parent=self,
            depends_on=[*after, *([cert] if cert else [])],
            create_namespace=True,
        )
        operator = release(
            f"{name}-operator",
            release_name="slurm-operator",
            chart=args.operator_chart,
            namespace=build.OPERATOR_NAMESPACE,
            values=args.operator_values,
            parent=self,
            depends_on=[*after, crds, *([cert] if cert else [])],
            create_namespace=True,
        )

        ns = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": build.NAMESPACE},
            opts=pulumi.ResourceOptions(parent=self, depends_on=after),
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])
        before_chart: list[pulumi.Resource] = [operator, ns]

        if args.fsx_file_system_id is not None:
            pv_name = f"{build.NAMESPACE}-fsx-lustre"
            pv = build.fsx_pv(
                pv_name, args.fsx_file_system_id, args.fsx_dns_name, args.fsx_mount_name, args.fsx_capacity_gib
            )
            pv_res = resource(f"{name}-fsx-pv", pv, opts=child)
            pvc = build.fsx_pvc(pv_name, args.fsx_capacity_gib)
            before_chart.append(
                resource(f"{name}-fsx-pvc", pvc, opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, pv_res]))
            )

        # The chart's auth/slurm and JWT keys, generated once here: the chart's own randAscii would differ on
        # every render without cluster access (Argo CD), i.e. OutOfSync for ever and a key rotation on sync.
        for option in build.AUTH_KEYS:
            key = random.RandomPassword(f"{name}-{option}", length=build.AUTH_KEY_LENGTH, special=True, opts=child)
            secret_obj = build.auth_key_secret(option, pulumi.Output.secret(key.result))
            before_chart.append(resource(f"{name}-{option}", secret_obj, opts=in_ns))

        self.accounting_password = None
        if args.accounting:
            # Letters, digits and URL/conf-safe punctuation only: slurmdbd.conf StoragePass and
            # DB URLs break on '#', quotes, '@' or ':'.
            password = random.RandomPassword(
                f"{name}-db-password", length=32, special=True, override_special="-_.", opts=child
            )
            root_password = random.RandomPassword(
                f"{name}-db-root-password", length=32, special=True, override_special="-_.", opts=child
            )
            self.accounting_password = pulumi.Output.secret(password.result)
            secret = build.mariadb_secret(self.accounting_password, pulumi.Output.secret(root_password.result))
            db_secret = resource(f"{name}-db-secret", secret, opts=in_ns)
            svc = build.mariadb_service()
            db_svc = resource(f"{name}-db", svc, opts=in_ns)
            sts = build.mariadb_statefulset(args.accounting_volume_gib)
            db = resource(f"{name}-db", sts, opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, db_secret]))
            policy = build.mariadb_network_policy()
            resource(f"{name}-db", policy, opts=in_ns)
            before_chart += [db_secret, db_svc, db]

        gang: list[pulumi.Resource] = []
        # The Deployment last: it reads the ServiceAccount and the script's ConfigMap.
        for obj in sorted(args.gang_objects, key=lambda o: o["kind"] == "Deployment"):
            # The sizer owns the PodGroups' spec from here on: a later `up` leaves its minMember alone.
            ignore = ["spec"] if obj["kind"] == "PodGroup" else None
            after_gang = [ns, *gang] if obj["kind"] == "Deployment" else [ns]
            gang_opts = pulumi.ResourceOptions(parent=self, depends_on=after_gang, ignore_changes=ignore)
            kind = obj["kind"].lower()
            gang.append(resource(f"{name}-gang-{kind}-{obj['metadata']['name']}", obj, opts=gang_opts))
        before_chart += gang

        self.slurm_release = release(
            f"{name}-cluster",
            release_name=build.RELEASE,
            chart=args.slurm_chart,
            namespace=build.NAMESPACE,
            values=args.slurm_values,
            parent=self,
            depends_on=before_chart,
            create_namespace=False,
        )
        if args.keda_chart is not None:
            keda = release(
                f"{name}-keda",
                release_name=autoscaling.KEDA_RELEASE,
                chart=args.keda_chart,
                namespace=autoscaling.KEDA_NAMESPACE,
                values=args.keda_values,
                parent=self,
                create_namespace=True,
                depends_on=after,
            )
            after_both = pulumi.ResourceOptions(parent=self, depends_on=[keda, self.slurm_release])
            for so in args.scaled_objects:
                resource(f"{name}-scale-{so['metadata']['name']}", so, opts=after_both)
        outputs: dict[str, Any] = {"namespace": build.NAMESPACE}
        if self.accounting_password is not None:
            outputs["accountingPassword"] = self.accounting_password
        self.register_outputs(outputs)
