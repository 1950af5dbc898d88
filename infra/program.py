"""Compose the platform from a validated StackConfig. No config parsing or validation here."""

from __future__ import annotations

from typing import Any

import pulumi

from ekstrain.assembly import cost as cost_plan
from ekstrain.assembly import logs as logs_plan
from ekstrain.assembly.jupyterhub import plan as hub_plan
from ekstrain.assembly.observability import plan as obs_plan
from ekstrain.assembly.schedulers import autoscaling, ledger, mpi_operator, teams
from ekstrain.assembly.schedulers import operators as operator_values
from ekstrain.assembly.schedulers import slurm as slurm_values
from ekstrain.assembly.schedulers import volcano as volcano_values
from ekstrain.components.argocd import ArgoCd, ArgoCdArgs
from ekstrain.components.cluster import AdminPrincipal, Cluster, ClusterArgs
from ekstrain.components.cost import Cost, CostArgs
from ekstrain.components.device_plugins import DevicePlugins, DevicePluginsArgs
from ekstrain.components.health_gate import HealthGate, HealthGateArgs
from ekstrain.components.jupyterhub import JupyterHub, JupyterHubArgs
from ekstrain.components.karpenter import Karpenter, KarpenterArgs
from ekstrain.components.logs import Logs, LogsArgs
from ekstrain.components.network import Network, NetworkArgs
from ekstrain.components.node_health import ADDON_NAME as NODE_MONITORING_ADDON
from ekstrain.components.node_health import NodeHealth, NodeHealthArgs
from ekstrain.components.observability import Observability, ObservabilityArgs
from ekstrain.components.operators import Operators, OperatorsArgs
from ekstrain.components.partitions import HelperPool, HelperPoolArgs, Partition, PartitionArgs
from ekstrain.components.slurm import Slurm, SlurmArgs
from ekstrain.components.volcano import Volcano, VolcanoArgs
from ekstrain.facts import catalog, versions
from ekstrain.infra.storage import build_storage
from ekstrain.layout.partitions import shape
from ekstrain.payloads import health_gate
from ekstrain.payloads.karpenter_specs import HelperPoolSpec, PartitionSpec
from ekstrain.stacks.models import StackConfig
from ekstrain.tooling import validation


def build(cfg: StackConfig) -> dict[str, Any]:
    """Create every component for ``cfg``; return the stack outputs."""
    # Files the program applies, read before anything registers (a ConfigError naming the fix when absent).
    mpijob_crd = None
    if cfg.schedulers.mpi_operator.enabled:
        mpijob_crd = mpi_operator.mpijob_crd(validation.upstream_dir())
    tags = cfg.common_tags
    c = cfg.cluster
    stack = pulumi.get_stack()
    existing = cfg.network.existing_vpc
    zones = cfg.network.availability_zones
    # An existing VPC (ekstrain:network.existingVpc): its subnets carry none of the discovery tags, so the
    # partitions and the helper pool select them (and the EFA security group) by id below.
    network_args: dict[str, Any] = (
        {"vpc_cidr": cfg.network.vpc_cidr, "nat_gateways": cfg.network.nat_gateways}
        if existing is None
        else {
            "existing_vpc_id": existing.vpc_id,
            # In availabilityZones order: EFS mount targets pair the private subnet ids with the zones.
            "existing_private_subnet_ids": {az: existing.private_subnets[az].id for az in zones},
            "existing_efa_subnet_ids": {az: s.id for az, s in existing.efa_subnets.items()},
            "existing_public_subnet_ids": [s.id for s in existing.public_subnets],
            "existing_efa_security_group_id": existing.efa_security_group_id,
        }
    )
    network = Network(
        "network",
        NetworkArgs(
            cluster_name=c.name,
            region=cfg.region,
            availability_zones=zones,
            training_availability_zone=cfg.network.training_availability_zone,
            # One cluster placement group per NodePool: per partition, or per EFA layout of a mixed one.
            placement_group_partitions=[
                layout.name
                for p in cfg.partitions
                if p.wants_placement_group
                for layout in shape(p.name, p.accelerator, p.instance_types, p.efa).layouts()
            ],
            retain_efa_subnet=cfg.storage.protect and cfg.storage.fsx.enabled,
            tags=tags,
            **network_args,
        ),
    )

    cluster = Cluster(
        "cluster",
        ClusterArgs(
            cluster_name=c.name,
            region=cfg.region,
            kubernetes_version=c.kubernetes_version,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            public_subnet_ids=network.public_subnet_ids,
            endpoint_public_access=c.api_public,
            public_access_cidrs=c.api_public_cidrs,
            deploy_cidrs=c.deploy_cidrs,
            deploy_security_group_ids=c.deploy_security_group_ids,
            admin_principals=[
                AdminPrincipal(principal_arn=a.principal_arn, access_policy=a.access_policy) for a in c.admin_access
            ],
            deploy_role_arn=c.deploy_role_arn,
            preview_role_arn=c.preview_role_arn,
            preview_access_policy=c.preview_access_policy,
            protect=cfg.storage.protect,
            log_types=c.log_types,
            secrets_encryption=c.secrets_encryption,
            deletion_protection=c.deletion_protection,
            system_instance_types=c.system_node_group.instance_types,
            system_min_size=c.system_node_group.min_size,
            system_desired_size=c.system_node_group.desired_size,
            system_max_size=c.system_node_group.max_size,
            system_disk_size_gib=c.system_node_group.disk_size_gib,
            addon_versions={
                name: cfg.versions.addon(name, c.kubernetes_version)
                for name in ("vpc-cni", "coredns", "kube-proxy", "eks-pod-identity-agent", "aws-ebs-csi-driver")
            },
            system_release_version=versions.system_node_release_version(c.kubernetes_version),
            tags=tags,
        ),
    )

    # Storage: S3 buckets, FSx for Lustre + DRAs, EFS, CSI drivers, training namespace and PVCs.
    storage = build_storage(cfg, network, cluster, extra_tags=cost_plan.cost_tags(cfg, stack))
    storage_outputs: dict[str, Any] = {
        "datasetsBucket": storage.buckets.datasets_bucket,
        "checkpointsBucket": storage.buckets.checkpoints_bucket,
        "trainingNamespace": storage.volumes.namespace_name,
    }
    if storage.fsx:
        storage_outputs.update(
            fsxFileSystemId=storage.fsx.file_system_id,
            fsxDnsName=storage.fsx.dns_name,
            fsxMountName=storage.fsx.mount_name,
        )
    if storage.efs:
        storage_outputs.update(
            efsFileSystemId=storage.efs.file_system_id, efsModelsAccessPointId=storage.efs.access_point_id
        )
    # Node health: the EKS node monitoring agent sets the conditions Karpenter's NodeRepair replaces nodes on.
    NodeHealth(
        "node-health",
        NodeHealthArgs(
            cluster_name=c.name,
            addon_version=cfg.versions.addon(NODE_MONITORING_ADDON, c.kubernetes_version),
            configuration_values=health_gate.agent_configuration(
                [catalog.get(p.instance_types[0]).accelerator_resource for p in cfg.partitions]
            ),
            tags=tags,
        ),
        opts=pulumi.ResourceOptions(depends_on=[cluster]),
    )
    # Compute: Karpenter, one Partition (EC2NodeClass + NodePool) per partition, device plugins.
    k8s_after_cluster = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster])
    karpenter = Karpenter(
        "karpenter",
        KarpenterArgs(
            cluster_name=c.name,
            region=cfg.region,
            chart=cfg.versions.chart("karpenter"),
            crd_chart=cfg.versions.chart("karpenter-crd"),
            tags=tags,
        ),
        opts=k8s_after_cluster,
    )
    node_pools = []
    private_subnet_ids = efa_subnet_ids = efa_sg_ids = None
    if existing is not None:
        private_subnet_ids = [existing.private_subnets[az].id for az in zones]
        efa_subnet_ids = [existing.efa_subnets[cfg.network.training_availability_zone].id]
        efa_sg_ids = network.efa_security_group_id.apply(lambda sg: [sg])
    gated: list[PartitionSpec] = []
    partitions: list[Partition] = []
    for p in cfg.partitions:
        spec = PartitionSpec(
            name=p.name,
            shape=shape(p.name, p.accelerator, p.instance_types, p.efa),
            cluster_name=c.name,
            availability_zone=cfg.network.training_availability_zone,
            max_nodes=p.max_nodes,
            capacity_type=p.capacity_type,
            placement_group=p.wants_placement_group,
            capacity_reservation_ids=tuple(p.capacity_reservation.ids) if p.capacity_reservation else (),
            capacity_reservation_tags=p.capacity_reservation.tags if p.capacity_reservation else {},
            capacity_reservation_type=p.capacity_reservation.type if p.capacity_reservation else "default",
            root_volume_gib=p.root_volume_gib,
            consolidate_after=p.effective_consolidate_after,
            weight=p.weight,
            labels=p.labels,
            team=cfg.team_of(p.name) if cfg.cost.enabled else None,
            ami_alias_version=cfg.versions.ami_alias_version,
            drift_window=cfg.maintenance.drift_window(),
        )
        gated.append(spec)
        partition = Partition(
            p.name,
            PartitionArgs(
                spec=spec,
                node_role_name=karpenter.node_role_name,
                cluster_security_group_id=cluster.cluster_security_group_id,
                placement_group_names={
                    layout.name: network.placement_group_names[layout.name]
                    for layout in shape(p.name, p.accelerator, p.instance_types, p.efa).layouts()
                    if layout.name in network.placement_group_names
                },
                # By id on an existing VPC, as the tags select them otherwise: the EFA subnet and the EFA SG
                # (EFA partitions) or the private subnets (the zone requirement keeps nodes in the training AZ).
                subnet_ids=None if existing is None else (efa_subnet_ids if p.efa else private_subnet_ids),
                security_group_ids=None if existing is None else (efa_sg_ids if p.efa else []),
                tags={**tags, **cost_plan.cost_tags(cfg, stack, p.name)},
            ),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[karpenter.release]),
        )
        node_pools.append(partition.node_pool_names)
        partitions.append(partition)
    # The health gate: every accelerator NodePool's pre-flight (its startup taint is in the NodePool) and the guard
    # that takes a sick node out of service at once (ekstrain/payloads/health_gate.py, docs/health.md).
    HealthGate(
        "health-gate",
        HealthGateArgs(partitions=gated),
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[karpenter.release, *partitions]),
    )
    # Untainted CPU pool: MPI launchers and Ray heads scale with the jobs instead of filling the system nodes.
    HelperPool(
        "cpu-helpers",
        HelperPoolArgs(
            spec=HelperPoolSpec(
                cluster_name=c.name,
                availability_zone=cfg.network.training_availability_zone,
                ami_alias_version=cfg.versions.ami_alias_version,
                drift_window=cfg.maintenance.drift_window(),
            ),
            node_role_name=karpenter.node_role_name,
            cluster_security_group_id=cluster.cluster_security_group_id,
            subnet_ids=None if existing is None else private_subnet_ids,
            tags=tags,
        ),
        opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[karpenter.release]),
    )
    types_of = lambda pred: sorted({t for p in cfg.partitions if pred(p) for t in p.instance_types})  # noqa: E731
    DevicePlugins(
        "device-plugins",
        DevicePluginsArgs(
            charts={
                n: cfg.versions.chart(n)
                for n in ("nvidia-device-plugin", "dcgm-exporter", "aws-efa-k8s-device-plugin", "neuron-helm-chart")
            },
            kubernetes_version=c.kubernetes_version,
            gpu_instance_types=types_of(lambda p: p.accelerator == catalog.GPU),
            efa_instance_types=types_of(lambda p: p.efa),
            trainium_instance_types=types_of(lambda p: p.accelerator == catalog.TRAINIUM),
        ),
        # The charts' Deployments (neuron scheduler, DCGM) run on system nodes: Helm's wait needs the node group.
        opts=k8s_after_cluster,
    )

    outputs: dict[str, Any] = dict(storage_outputs)
    # ---- platform pieces (ekstrain:observability, ekstrain:jupyterhub, ekstrain:delivery) ----
    observability: Observability | None = None
    if cfg.observability.enabled:
        observability = Observability(
            "observability",
            ObservabilityArgs(plan=obs_plan(cfg), chart=cfg.versions.chart("kube-prometheus-stack"), tags=tags),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]),
        )
        outputs["grafanaAdminPassword"] = observability.grafana_admin_password
        if observability.remote_write_url is not None:
            outputs["ampRemoteWriteUrl"] = observability.remote_write_url
    if cfg.logging.enabled:
        log_agent = Logs(
            "logs",
            LogsArgs(plan=logs_plan.plan(cfg), chart=cfg.versions.chart("fluent-bit"), tags=tags),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]),
        )
        outputs.update({f"{k}LogGroup": v for k, v in log_agent.log_group_names.items()})
    if cfg.cost.enabled:
        spend = Cost(
            "cost",
            CostArgs(
                plan=cost_plan.plan(cfg, stack),
                chart=cfg.versions.chart("opencost") if cfg.cost.opencost and observability is not None else None,
                tags=tags,
            ),
            opts=pulumi.ResourceOptions(
                provider=cluster.provider, depends_on=[d for d in (cluster, observability) if d is not None]
            ),
        )
        outputs["budgetTopicArn"] = spend.topic_arn
    if cfg.jupyterhub.enabled and storage.fsx:
        JupyterHub(
            "jupyterhub",
            JupyterHubArgs(
                plan=hub_plan(cfg),
                chart=cfg.versions.chart("jupyterhub"),
                client_secret=pulumi.Output.secret(cfg.jupyterhub_client_secret)
                if cfg.jupyterhub_client_secret
                else None,
                fsx_file_system_id=storage.fsx.file_system_id,
                fsx_dns_name=storage.fsx.dns_name,
                fsx_mount_name=storage.fsx.mount_name,
            ),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster, storage.csi, storage.volumes]),
        )
    if cfg.delivery.argocd:
        ArgoCd(
            "argocd",
            ArgoCdArgs(
                chart=cfg.versions.chart("argo-cd"),
                platform_charts=[cfg.versions.chart(n) for n in versions.DEFAULT_CHARTS if n != "argo-cd"],
            ),
            opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster]),
        )
    # ---- schedulers (ekstrain:schedulers) ----
    sched = cfg.schedulers
    k8s_opts = pulumi.ResourceOptions(provider=cluster.provider, depends_on=[cluster])
    volcano = None
    if sched.volcano.enabled:
        volcano = Volcano(
            "volcano",
            VolcanoArgs(
                chart=cfg.versions.chart("volcano"),
                values=volcano_values.volcano_values(cfg),
                queues=volcano_values.queues(cfg),
                admission_policies=ledger.policies(ledger.ledger_namespaces(cfg), teams.leaf_queues(cfg)),
            ),
            opts=k8s_opts,
        )
    if sched.slurm.enabled:
        # The shared file system mounted by slurmd and login pods: a PV/PVC in the slurm namespace
        # pointing at the same FSx file system (rules require FSx when Slurm is enabled).
        fsx: dict[str, Any] = {}
        if storage.fsx:
            fsx = {
                "file_system_id": storage.fsx.file_system_id,
                "dns_name": storage.fsx.dns_name,
                "mount_name": storage.fsx.mount_name,
            }
        slurm = Slurm(
            "slurm",
            SlurmArgs(
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
                keda_chart=cfg.versions.chart("keda") if sched.slurm.autoscale else None,
                keda_values=autoscaling.keda_values(),
                scaled_objects=autoscaling.scaled_objects(cfg, slurm_values.NAMESPACE),
                gang_objects=slurm_values.gang_objects(cfg),
            ),
            # slurmd pods name their partition's queue (the ledger): the queues come first; the chart's
            # ServiceMonitor (autoscale) needs the Prometheus Operator's CRDs
            opts=pulumi.ResourceOptions.merge(
                k8s_opts,
                pulumi.ResourceOptions(depends_on=[d for d in (volcano, observability) if d is not None]),
            ),
        )
        if slurm.accounting_password is not None:
            outputs["slurmAccountingPassword"] = slurm.accounting_password
    if sched.mpi_operator.enabled or sched.kubeflow.flavor != "none" or sched.kuberay.enabled:
        Operators(
            "operators",
            OperatorsArgs(
                mpi_operator=sched.mpi_operator.enabled,
                mpijob_crd=mpijob_crd,
                kubeflow_flavor=sched.kubeflow.flavor,
                trainer_chart=cfg.versions.chart("kubeflow-trainer") if sched.kubeflow.flavor == "trainer" else None,
                trainer_values=operator_values.trainer_values(),
                training_runtimes=operator_values.torch_runtimes(cfg) if sched.kubeflow.flavor == "trainer" else (),
                kuberay_chart=cfg.versions.chart("kuberay-operator") if sched.kuberay.enabled else None,
                kuberay_values=operator_values.kuberay_values(cfg),
                gang_args=operator_values.gang_args(cfg),
            ),
            opts=k8s_opts
            if volcano is None
            else pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[volcano])),
        )  # KubeRay's batch scheduler

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
        "karpenterInterruptionQueue": karpenter.queue_name,
        "karpenterNodeRole": karpenter.node_role_name,
        "karpenterControllerRoleArn": karpenter.controller_role_arn,
        "nodePools": pulumi.Output.all(*node_pools).apply(lambda pools: [n for ns in pools for n in ns]),
    }
