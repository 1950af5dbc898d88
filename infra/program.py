"""Compose the platform from a validated StackConfig. No config parsing or validation here."""

from __future__ import annotations

from typing import Any

import pulumi

from components.cluster import AdminPrincipal, Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from components.operators import Operators, OperatorsArgs
from components.slurm import Slurm, SlurmArgs
from components.volcano import Volcano, VolcanoArgs
from ekstrain.schedulers import operators as operator_values
from ekstrain.schedulers import slurm as slurm_values
from ekstrain.schedulers import volcano as volcano_values
from stacks.models import StackConfig


def build(cfg: StackConfig) -> dict[str, Any]:
    """Create every component for ``cfg``; return the stack outputs."""
    tags = cfg.common_tags
    c = cfg.cluster

    network = Network("network", NetworkArgs(
        cluster_name=c.name,
        region=cfg.region,
        vpc_cidr=cfg.network.vpc_cidr,
        availability_zones=cfg.network.availability_zones,
        training_availability_zone=cfg.network.training_availability_zone,
        nat_gateways=cfg.network.nat_gateways,
        placement_group_partitions=[p.name for p in cfg.partitions if p.wants_placement_group],
        tags=tags,
    ))

    cluster = Cluster("cluster", ClusterArgs(
        cluster_name=c.name,
        region=cfg.region,
        kubernetes_version=c.kubernetes_version,
        vpc_id=network.vpc_id,
        private_subnet_ids=network.private_subnet_ids,
        public_subnet_ids=network.public_subnet_ids,
        endpoint_public_access=c.endpoint_public_access,
        public_access_cidrs=c.public_access_cidrs,
        admin_principals=[AdminPrincipal(principal_arn=a.principal_arn, access_policy=a.access_policy)
                          for a in c.admin_access],
        log_types=c.log_types,
        secrets_encryption=c.secrets_encryption,
        deletion_protection=c.deletion_protection,
        system_instance_types=c.system_node_group.instance_types,
        system_min_size=c.system_node_group.min_size,
        system_desired_size=c.system_node_group.desired_size,
        system_max_size=c.system_node_group.max_size,
        system_disk_size_gib=c.system_node_group.disk_size_gib,
        addon_versions={name: cfg.versions.addon(name)
                        for name in ("vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent",
                                     "aws-ebs-csi-driver")},
        tags=tags,
    ))

    outputs: dict[str, Any] = {}
    # ---- schedulers (ekstrain:schedulers) ----
    sched = cfg.schedulers
    k8s_opts = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster])
    volcano = None
    if sched.volcano.enabled:
        volcano = Volcano("volcano", VolcanoArgs(
            chart=cfg.versions.chart("volcano"), values=volcano_values.volcano_values(),
            queues=volcano_values.queues(cfg)), opts=k8s_opts)
    if sched.slurm.enabled:
        # Storage wiring (at merge): {"file_system_id": ..., "dns_name": ..., "mount_name": ...} from
        # the storage component's FSx outputs. Empty = no PV/PVC in the slurm namespace, and the
        # slurmd/login pods stay Pending on the fsx-lustre claim until it exists.
        fsx: dict[str, Any] = {}
        slurm = Slurm("slurm", SlurmArgs(
            cert_manager_chart=cfg.versions.chart("cert-manager") if sched.slurm.cert_manager else None,
            cert_manager_values=slurm_values.cert_manager_values(),
            crds_chart=cfg.versions.chart("slurm-operator-crds"),
            operator_chart=cfg.versions.chart("slurm-operator"),
            slurm_chart=cfg.versions.chart("slurm"),
            operator_values=slurm_values.operator_values(cfg),
            slurm_values=slurm_values.slurm_values(cfg),
            accounting=sched.slurm.accounting,
            accounting_volume_gib=sched.slurm.accounting_volume_gib,
            fsx_file_system_id=fsx.get("file_system_id"),
            fsx_dns_name=fsx.get("dns_name"),
            fsx_mount_name=fsx.get("mount_name"),
            fsx_capacity_gib=cfg.storage.fsx.storage_capacity_gib,
        ), opts=k8s_opts)
        if slurm.accounting_password is not None:
            outputs["slurmAccountingPassword"] = slurm.accounting_password
    if sched.mpi_operator.enabled or sched.kubeflow.flavor != "none" or sched.kuberay.enabled:
        Operators("operators", OperatorsArgs(
            mpi_operator=sched.mpi_operator.enabled,
            kubeflow_flavor=sched.kubeflow.flavor,
            trainer_chart=cfg.versions.chart("kubeflow-trainer") if sched.kubeflow.flavor == "trainer" else None,
            trainer_values=operator_values.trainer_values(),
            training_runtimes=operator_values.torch_runtimes(cfg) if sched.kubeflow.flavor == "trainer" else (),
            kuberay_chart=cfg.versions.chart("kuberay-operator") if sched.kuberay.enabled else None,
            kuberay_values=operator_values.kuberay_values(cfg),
            after=[volcano] if volcano is not None else [],
        ), opts=k8s_opts)

    return outputs | {
        "clusterName": cluster.cluster_name,
        "kubeconfig": cluster.kubeconfig,
        "oidcProviderArn": cluster.oidc_provider_arn,
        "clusterSecurityGroupId": cluster.cluster_security_group_id,
        "vpcId": network.vpc_id,
        "publicSubnetIds": network.public_subnet_ids,
        "privateSubnetIds": network.private_subnet_ids,
        "efaSubnetId": network.efa_subnet_id,
        "efaSecurityGroupId": network.efa_security_group_id,
        "placementGroups": pulumi.Output.from_input(network.placement_group_names),
    }
