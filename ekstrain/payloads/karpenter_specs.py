"""Karpenter EC2NodeClass and NodePool manifests for a partition, as plain dicts.

Pure functions: the Partition component turns them into CustomResources, the tests validate them
against the upstream Karpenter v1.14.1 CRDs (schema and CEL rules), and job templates can read
the same labels, taints and limits. Field choices and the disruption design are explained in
``docs/partitions.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ekstrain.facts import names
from ekstrain.facts.names import DISCOVERY_TAG, SG_ROLE_TAG, SUBNET_ROLE_TAG, placement_group_name
from ekstrain.layout.partitions import PartitionShape, layout_nodes

NODECLASS_API = "karpenter.k8s.aws/v1"
NODEPOOL_API = "karpenter.sh/v1"
ROOT_DEVICE = "/dev/xvda"
"""AL2023's root device name."""

CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
CAPACITY_RESERVATION_TYPE_LABEL = "karpenter.k8s.aws/capacity-reservation-type"
"""``default`` (an ODCR) or ``capacity-block`` on reserved nodes (karpenter.sh/docs/tasks/odcrs, v1.6+)."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"

# Which labels a partition may add: stacks/labels.py (Karpenter's restricted domains, ours).


def node_role_name(cluster_name: str) -> str:
    """IAM role of Karpenter nodes, named as Karpenter's getting-started guide names it."""
    return f"KarpenterNodeRole-{cluster_name}"


def controller_role_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter"


def interruption_queue_name(cluster_name: str) -> str:
    """SQS queue Karpenter reads interruption events from (the guide uses the cluster name)."""
    return cluster_name


@dataclass(frozen=True)
class DriftWindow:
    """When drifted nodes may roll (a node upgrade: new AMI, new Kubernetes version) and how many at once.

    Karpenter applies the most restrictive active budget (NodePool CRD v1.14.1, ``spec.disruption.budgets``: "If
    there are multiple active budgets, Karpenter uses the most restrictive value"; a budget with ``schedule`` and
    ``duration`` is active only from each cron match for that long, UTC). There is no "only during" budget, so the
    window is written as its complement: ``nodes: "0"`` for Drifted from the window's end for the rest of the period,
    plus ``nodes`` for Drifted always; inside the window only the second is active."""

    schedule: str
    """Cron (UTC) of the window's start: ``M H * * *`` (daily) or ``M H * * D`` (weekly, D in 0-6)."""
    duration_minutes: int
    """How long the window stays open."""
    nodes: str = "1"
    """Drifted nodes a NodePool may replace at once inside the window (a count or a percentage)."""
    gang_grace: str | None = None
    """None: nodes running a job's pods (``karpenter.sh/do-not-disrupt``) never drift. Set (opt-in), the NodePool's
    ``terminationGracePeriod``: Karpenter drains such a node anyway once that long has passed (its docs:
    do-not-disrupt pods are respected "until the terminationGracePeriod is reached")."""

    @property
    def period_minutes(self) -> int:
        return 7 * 24 * 60 if self.schedule.split()[4] != "*" else 24 * 60

    def start_minute(self) -> int:
        """Minutes from the period's start (Sunday 00:00 for weekly, 00:00 for daily) to the window's start."""
        minute, hour, _, _, dow = self.schedule.split()
        return (int(dow) * 24 * 60 if dow != "*" else 0) + int(hour) * 60 + int(minute)

    def closed_budget(self) -> dict[str, Any]:
        """The ``nodes: "0"`` Drifted budget active from the window's end until its next start."""
        end = (self.start_minute() + self.duration_minutes) % self.period_minutes
        dow = self.schedule.split()[4]
        day = "*" if dow == "*" else str(end // (24 * 60))
        rest = self.period_minutes - self.duration_minutes
        hours, minutes = divmod(rest, 60)
        return {
            "nodes": "0",
            "reasons": ["Drifted"],
            "schedule": f"{end % 60} {(end // 60) % 24} * * {day}",
            "duration": f"{hours}h{minutes}m" if minutes else f"{hours}h",
        }

    def is_open(self, minute_of_period: float) -> bool:
        """Whether the window is open ``minute_of_period`` minutes after the period's start."""
        return (minute_of_period - self.start_minute()) % self.period_minutes < self.duration_minutes


@dataclass(frozen=True, kw_only=True)
class PartitionSpec:
    """Everything the manifests of one partition depend on."""

    name: str
    """Required. Partition name: NodePool, EC2NodeClass, ``ekstrain.io/partition`` label."""
    shape: PartitionShape
    """Required. Instance types, family and EFA (``ekstrain.layout.partitions.shape(name, family, types, efa)``)."""
    cluster_name: str
    """Required. The EKS cluster's name (discovery tags, placement group name)."""
    availability_zone: str
    """Required. The single training AZ: EFA traffic cannot cross subnets, placement groups are zonal."""
    max_nodes: int
    """Required. Most nodes at once (NodePool limits; split over EFA layouts); at least 1."""
    capacity_type: str = "on-demand"
    """@default on-demand; ``spot`` or ``reserved``."""
    placement_group: bool = False
    """@default false: select the ``<cluster>-<NodePool>`` placement group when true (one per EFA layout)."""
    capacity_reservation_ids: tuple[str, ...] = ()
    """@default none. ``cr-...`` ids Karpenter may launch into."""
    capacity_reservation_tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags selecting capacity reservations."""
    capacity_reservation_type: str = "default"
    """@default default (On-Demand Capacity Reservations); ``capacity-block``: only EC2 Capacity Blocks for ML (the
    NodePool requires ``karpenter.k8s.aws/capacity-reservation-type In [capacity-block]``)."""
    root_volume_gib: int = 500
    """@default 500 (GiB, gp3, encrypted)."""
    consolidate_after: str = "10m"
    """@default 10m: how long a node must be empty before Karpenter removes it (about a GPU node's launch
    time: keeping an empty node longer than a new one takes to launch only costs)."""
    weight: int | None = None
    """@default none."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra node labels; @default none."""
    team: str | None = None
    """@default none. The ``ekstrain.io/team`` node label (OpenCost and the spend dashboard group by it)."""
    ami_alias_version: str = "latest"
    """@default latest; pin per stack (a new AMI drifts every node)."""
    pool_name: str | None = None
    """NodePool/EC2NodeClass name; @default the partition name (set per layout by :func:`layout_specs`)."""
    drift_window: DriftWindow | None = None
    """@default none: drifted nodes never roll while they run anything (budget ``nodes: "0"`` for Drifted); set, they
    roll inside the window (``ekstrain:maintenance``)."""

    @property
    def resource_name(self) -> str:
        return self.pool_name or self.name

    @property
    def efa(self) -> bool:
        return self.shape.efa_enabled

    @property
    def accelerator_limit(self) -> int:
        return self.max_nodes * self.shape.accelerators_per_node


def layout_specs(spec: PartitionSpec) -> list[PartitionSpec]:
    """One spec per EFA layout of the partition (itself when it has one): same partition name, labels,
    placement group and taints; its own instance types, EFA interfaces, name and a share of maxNodes."""
    pools = layout_nodes(spec.shape, spec.max_nodes)
    if len(pools) == 1:
        return [spec]
    return [replace(spec, shape=layout, max_nodes=nodes, pool_name=layout.name) for layout, nodes in pools]


def node_labels(spec: PartitionSpec) -> dict[str, str]:
    """Labels every node of the partition carries (device plugins and jobs select on them)."""
    labels = {**spec.labels, names.PARTITION_LABEL: spec.name, names.ACCELERATOR_LABEL: spec.shape.family}
    if spec.efa:
        labels[names.EFA_NODE_LABEL] = "true"
    if spec.team:
        labels[names.TEAM_LABEL] = spec.team
    return labels


def node_taints(spec: PartitionSpec) -> list[dict[str, str]]:
    """Only pods that ask for the accelerator (and tolerate it) land on accelerator nodes."""
    return [{"key": spec.shape.accelerator_resource, "value": names.TAINT_VALUE, "effect": "NoSchedule"}]


def limits(spec: PartitionSpec) -> dict[str, str]:
    """The accelerator limit is the binding one (all types of a partition have the same count);
    ``nodes`` states maxNodes directly (a layout's share of it in a mixed partition)."""
    return {spec.shape.accelerator_resource: str(spec.accelerator_limit), "nodes": str(spec.max_nodes)}


def disruption(spec: PartitionSpec) -> dict[str, Any]:
    """Training-safe disruption: Karpenter may only remove nodes that are empty.

    - ``WhenEmpty``: never consolidate a node that runs a pod (no bin-packing of training ranks);
    - budget ``nodes: "0"`` for ``Drifted`` and ``Underutilized``: a new AMI, a changed EC2NodeClass
      or a cheaper shape never replaces a node with a job on it (drift is rolled out by an operator
      between jobs, see docs/partitions.md); with WhenEmpty, Underutilized never fires, the budget
      makes that explicit;
    - ``Empty`` nodes may all go at once after ``consolidateAfter``: nothing runs on them;
    - with a maintenance window (:class:`DriftWindow`), Drifted nodes roll inside it, ``nodes`` at a time, and
      never outside it; nodes running a job's pods still wait for the job (do-not-disrupt) unless the stack opted in.
    """
    return {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": spec.consolidate_after,
        "budgets": _budgets(spec.drift_window),
    }


def _budgets(window: DriftWindow | None) -> list[dict[str, Any]]:
    if window is None:
        return [{"nodes": "0", "reasons": ["Drifted", "Underutilized"]}, {"nodes": "100%", "reasons": ["Empty"]}]
    return [
        {"nodes": "0", "reasons": ["Underutilized"]},
        {"nodes": "100%", "reasons": ["Empty"]},
        {"nodes": window.nodes, "reasons": ["Drifted"]},
        window.closed_budget(),
    ]


def requirements(spec: PartitionSpec) -> list[dict[str, Any]]:
    """``reserved``: Karpenter launches only into the EC2NodeClass's ``capacityReservationSelectorTerms``
    (karpenter.sh/docs/tasks/odcrs); a capacity-block partition also requires that reservation type, so an ODCR the
    tags happen to match is never used instead of the block."""
    reqs = [
        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": [t.name for t in spec.shape.instance_types]},
        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": [spec.capacity_type]},
        {"key": ZONE_LABEL, "operator": "In", "values": [spec.availability_zone]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    ]
    if spec.capacity_type == "reserved" and spec.capacity_reservation_type == "capacity-block":
        reqs.insert(2, {"key": CAPACITY_RESERVATION_TYPE_LABEL, "operator": "In", "values": ["capacity-block"]})
    return reqs


def node_pool(spec: PartitionSpec) -> dict[str, Any]:
    pool_spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": node_labels(spec)},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": spec.resource_name},
                "requirements": requirements(spec),
                "taints": node_taints(spec),
                # No pod lands before the health gate's pre-flight passed and its guard removed this taint
                # (ekstrain/payloads/health_gate.py; Karpenter does not count startup taints when it places pods).
                "startupTaints": [dict(names.STARTUP_TAINT)],
                # Expiry is forceful and ignores budgets and do-not-disrupt: never for training.
                "expireAfter": "Never",
                # No terminationGracePeriod unless the stack opted in (DriftWindow.gang_grace): it lets drift evict
                # do-not-disrupt training pods once it has passed.
                **(
                    {"terminationGracePeriod": spec.drift_window.gang_grace}
                    if spec.drift_window and spec.drift_window.gang_grace
                    else {}
                ),
            },
        },
        "limits": limits(spec),
        "disruption": disruption(spec),
    }
    if spec.weight is not None:
        pool_spec["weight"] = spec.weight
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": spec.resource_name, "labels": {names.PARTITION_LABEL: spec.name}},
        "spec": pool_spec,
    }


def subnet_selector(spec: PartitionSpec) -> list[dict[str, Any]]:
    """EFA partitions: the single EFA subnet; others: the private subnets (the zone requirement
    keeps them in the training AZ)."""
    role = "efa" if spec.efa else "private"
    return [{"tags": {DISCOVERY_TAG: spec.cluster_name, SUBNET_ROLE_TAG: role}}]


def security_group_selector(spec: PartitionSpec, cluster_security_group_id: Any) -> list[dict[str, Any]]:
    """The EKS cluster SG (control plane and every node talk through it), plus the EFA SG
    (all traffic to and from itself) on EFA partitions."""
    terms: list[dict[str, Any]] = [{"id": cluster_security_group_id}]
    if spec.efa:
        terms.append({"tags": {DISCOVERY_TAG: spec.cluster_name, SG_ROLE_TAG: "efa"}})
    return terms


def capacity_reservation_selector(spec: PartitionSpec) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = [{"id": i} for i in spec.capacity_reservation_ids]
    if spec.capacity_reservation_tags:
        terms.append({"tags": dict(spec.capacity_reservation_tags)})
    return terms


# Pods get AWS credentials from EKS Pod Identity; hop limit 1 keeps non-host-network pods away from the node
# role's instance credentials. One definition for every EC2NodeClass (partitions and the CPU helper pool).
METADATA_OPTIONS: dict[str, Any] = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def root_volume(gib: int) -> list[dict[str, Any]]:
    """The encrypted gp3 root volume of every EC2NodeClass."""
    return [
        {
            "deviceName": ROOT_DEVICE,
            "rootVolume": True,
            "ebs": {"volumeSize": f"{gib}Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
        }
    ]


def ec2_node_class(
    spec: PartitionSpec,
    *,
    node_role: Any,
    cluster_security_group_id: Any,
    placement_group: Any = None,
    tags: Mapping[str, str] | None = None,
    subnet_terms: Any = None,
    security_group_terms: Any = None,
) -> dict[str, Any]:
    """``node_role``, ``cluster_security_group_id`` and ``placement_group`` may be Outputs;
    ``placement_group`` defaults to the ``<cluster>-<partition>`` name when the spec wants one.
    ``subnet_terms`` / ``security_group_terms`` (lists of ``{"id": ...}``, or an Output of one) replace the
    tag selectors (:func:`subnet_selector`, :func:`security_group_selector`): subnets of an existing VPC."""
    class_spec: dict[str, Any] = {
        "role": node_role,
        # The AL2023 alias resolves the NVIDIA or Neuron accelerated variant per instance type;
        # never AL2 (no EKS-optimized AL2 AMI from Kubernetes 1.33).
        "amiSelectorTerms": [{"alias": f"al2023@{spec.ami_alias_version}"}],
        "subnetSelectorTerms": subnet_selector(spec) if subnet_terms is None else subnet_terms,
        "securityGroupSelectorTerms": (
            security_group_selector(spec, cluster_security_group_id)
            if security_group_terms is None
            else security_group_terms
        ),
        "metadataOptions": dict(METADATA_OPTIONS),
        "blockDeviceMappings": root_volume(spec.root_volume_gib),
        # Several NICs cannot be combined with a public IP (aws/karpenter-provider-aws#5666).
        "associatePublicIPAddress": False,
        "tags": {**(tags or {}), names.PARTITION_LABEL: spec.name},
    }
    if all(t.instance_store_gib > 0 for t in spec.shape.instance_types):
        # kubelet, containerd and emptyDir on the NVMe instance store, striped.
        class_spec["instanceStorePolicy"] = "RAID0"
    if spec.efa:
        class_spec["networkInterfaces"] = [i.to_karpenter() for i in spec.shape.network_interfaces]
    if spec.placement_group:
        # One cluster placement group per NodePool layout (``<cluster>-<pool>``: the partition's name when it has one).
        pg = (
            placement_group
            if placement_group is not None
            else placement_group_name(spec.cluster_name, spec.resource_name)
        )
        class_spec["placementGroupSelector"] = {"name": pg}
    reservations = capacity_reservation_selector(spec)
    if reservations:
        class_spec["capacityReservationSelectorTerms"] = reservations
    return {
        "apiVersion": NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": spec.resource_name, "labels": {names.PARTITION_LABEL: spec.name}},
        "spec": class_spec,
    }


# ---- the CPU pool for job helpers (MPI launchers, Ray heads, operators' small pods) -------------------

HELPER_POOL = "cpu-helpers"
"""NodePool/EC2NodeClass name of the untainted CPU pool."""
HELPER_NODE_ROLE = "cpu-helpers"
"""Its ``ekstrain.io/node-role`` label (system components select ``system``, so they never land here)."""
HELPER_INSTANCE_TYPES = ("m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge", "c7i.2xlarge", "c7i.4xlarge", "r7i.2xlarge")
"""Small general-purpose types: an MPI launcher asks 2 vCPU, a Ray head 4 vCPU/16 GiB."""
HELPER_MAX_VCPUS = 256
"""@default 256 vCPUs: 64 Ray heads or 128 launchers at once; a partition's own limit is much larger."""


@dataclass(frozen=True, kw_only=True)
class HelperPoolSpec:
    """The untainted CPU NodePool. Without it, launchers and Ray heads (no accelerator, no toleration) fit
    only on the fixed system nodes, which no autoscaler grows: a few concurrent RayJobs held the rest."""

    cluster_name: str
    """Required. The EKS cluster's name (subnet discovery tags)."""
    availability_zone: str
    """Required. The training AZ: launchers talk to their workers, heads to theirs (no cross-AZ traffic)."""
    max_vcpus: int = HELPER_MAX_VCPUS
    """@default 256 vCPUs: the pool's limit."""
    ami_alias_version: str = "latest"
    """@default latest; pin per stack like the partitions."""
    consolidate_after: str = "5m"
    """@default 5m empty before removal: helpers come and go with jobs."""
    drift_window: DriftWindow | None = None
    """@default none: drifted helper nodes never roll while busy; set, the partitions' window
    (``ekstrain:maintenance``)."""


def helper_node_pool(spec: HelperPoolSpec) -> dict[str, Any]:
    """Untainted, on-demand, in the training AZ; removed only when empty (a launcher's eviction ends its
    MPIJob, a head's its Ray cluster), so the same WhenEmpty budgets as the partitions."""
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": HELPER_POOL},
        "spec": {
            "template": {
                "metadata": {"labels": {names.SYSTEM_NODE_LABEL: HELPER_NODE_ROLE}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": HELPER_POOL},
                    "requirements": [
                        {"key": INSTANCE_TYPE_LABEL, "operator": "In", "values": list(HELPER_INSTANCE_TYPES)},
                        {"key": CAPACITY_TYPE_LABEL, "operator": "In", "values": ["on-demand"]},
                        {"key": ZONE_LABEL, "operator": "In", "values": [spec.availability_zone]},
                        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                    "expireAfter": "Never",
                },
            },
            "limits": {"cpu": str(spec.max_vcpus)},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": spec.consolidate_after,
                "budgets": _budgets(spec.drift_window),
            },
        },
    }


def helper_node_class(
    spec: HelperPoolSpec,
    *,
    node_role: Any,
    cluster_security_group_id: Any,
    tags: Mapping[str, str] | None = None,
    subnet_terms: Any = None,
) -> dict[str, Any]:
    """AL2023 standard AMI, the private subnets (by tag, or ``subnet_terms``), the cluster SG, IMDSv2 hop
    limit 1, encrypted gp3 root."""
    return {
        "apiVersion": NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": HELPER_POOL},
        "spec": {
            "role": node_role,
            "amiSelectorTerms": [{"alias": f"al2023@{spec.ami_alias_version}"}],
            "subnetSelectorTerms": (
                [{"tags": {DISCOVERY_TAG: spec.cluster_name, SUBNET_ROLE_TAG: "private"}}]
                if subnet_terms is None
                else subnet_terms
            ),
            "securityGroupSelectorTerms": [{"id": cluster_security_group_id}],
            "metadataOptions": dict(METADATA_OPTIONS),
            "blockDeviceMappings": root_volume(100),
            "associatePublicIPAddress": False,
            "tags": dict(tags or {}),
        },
    }
