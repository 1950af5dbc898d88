"""Names and labels that several components and the job templates must agree on."""

import re
from typing import Any

DNS_LABEL_PATTERN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
"""An RFC 1123 label, as Kubernetes checks names of namespaces, queues and objects (k8s.io/apimachinery
pkg/util/validation/validation.go ``IsDNS1123Label``): lowercase letters, digits and '-', alphanumeric at both ends,
at most :data:`DNS_LABEL_MAX` characters. The one rule stack validation, the components and the CLI read."""
DNS_LABEL_MAX = 63
DNS_LABEL = re.compile(DNS_LABEL_PATTERN)
DNS_SUBDOMAIN_PATTERN = rf"{DNS_LABEL_PATTERN}(\.{DNS_LABEL_PATTERN})*"
"""Labels joined by dots (``IsDNS1123Subdomain``, at most 253 characters): label prefixes, Helm release names."""


def is_dns_label(text: str, max_length: int = DNS_LABEL_MAX) -> bool:
    """``text`` is a DNS-1123 label of at most ``max_length`` characters (a caller may bound it tighter)."""
    return len(text) <= min(max_length, DNS_LABEL_MAX) and DNS_LABEL.fullmatch(text) is not None


TRAINING_NAMESPACE = "training"
"""Namespace for training workloads (jobs, PVCs, queues' jobs)."""

PARTITION_LABEL = "ekstrain.io/partition"
"""Node label carrying the partition name (Karpenter also sets ``karpenter.sh/nodepool``)."""
NODEPOOL_LABEL = "karpenter.sh/nodepool"
EFA_NODE_LABEL = "ekstrain.io/efa"
"""``"true"`` on nodes of EFA partitions: the EFA device plugin is scheduled only there."""
ACCELERATOR_LABEL = "ekstrain.io/accelerator"
"""``gpu`` or ``trainium``: where the NVIDIA or Neuron device plugin runs."""
TEAM_LABEL = "ekstrain.io/team"
"""The team a partition's nodes are charged to (``ekstrain:cost``); also the instances' cost-allocation tag."""
TAINT_VALUE = "true"
"""Accelerator nodes are tainted ``<accelerator resource>=true:NoSchedule``."""
STARTUP_TAINT_KEY = "ekstrain.io/health-gate"
STARTUP_TAINT: dict[str, str] = {"key": STARTUP_TAINT_KEY, "value": "pending", "effect": "NoSchedule"}
"""Karpenter startup taint of every accelerator NodePool (karpenter_specs writes it); the health gate's guard
removes it once the pre-flight passed (health_gate). Here because both read it."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
GPU_RESOURCE = "nvidia.com/gpu"
NEURON_RESOURCE = "aws.amazon.com/neuron"
"""Extended resources the device plugins advertise; accelerator nodes are tainted with the same keys."""

FSX_PV = "fsx-lustre"
FSX_PVC = "fsx-lustre"
"""Static ReadWriteMany PVC (in TRAINING_NAMESPACE) for datasets and checkpoints."""
EFS_STORAGE_CLASS = "efs-ap"
MODEL_STORE_PVC = "model-store"
"""EFS-backed PVC (in TRAINING_NAMESPACE) for shared model weights."""

SYSTEM_NODE_LABEL = "ekstrain.io/node-role"
"""``system`` on the managed system node group: controllers and add-ons run only there."""
SYSTEM_NODE_SELECTOR = {SYSTEM_NODE_LABEL: "system"}
SYSTEM_NODE_TERM = {"key": SYSTEM_NODE_LABEL, "operator": "In", "values": ["system"]}
"""The same placement as a node-affinity match expression."""
SYSTEM_NODE_AFFINITY: dict[str, Any] = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [SYSTEM_NODE_TERM]}]
        }
    }
}
"""For charts whose ``nodeSelector`` default is non-empty (so adding a key would not be a chart key):
an affinity expresses the same placement through an empty-by-default value."""
CRITICAL_ADDONS_TOLERATION = {"key": "CriticalAddonsOnly", "operator": "Exists"}
"""Lets add-on controllers run on nodes reserved for critical add-ons."""

DISCOVERY_TAG = "karpenter.sh/discovery"
"""``<cluster>`` on the subnets and security groups Karpenter's EC2NodeClasses select."""
SUBNET_ROLE_TAG = "ekstrain.io/subnet-role"
"""``private`` or ``efa``: which subnets a partition's nodes launch into."""
SG_ROLE_TAG = "ekstrain.io/sg-role"
"""``efa`` on the EFA security group."""


def placement_group_name(cluster_name: str, pool: str) -> str:
    """A NodePool's cluster placement group (the network creates it, Karpenter selects it): one per NodePool, i.e.
    per partition, or per EFA layout of a mixed partition (``trainium-trn1``, ``trainium-trn1n``)."""
    return f"{cluster_name}-{pool}"


STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
"""Pulumi's stack-name characters (alphanumerics, '-', '_', '.')."""


def stack_name_problem(stack: str) -> str | None:
    """Why ``stack`` is not a stack name (None when it is): Pulumi's characters, and never a path such as ``..``
    (the render's default output is build/<stack>, the diff's stack file Pulumi.<stack>.yaml)."""
    if not STACK_NAME.fullmatch(stack) or not stack.strip("."):
        return f"--stack {stack[:120]!r}: use letters, digits, '-', '_' or '.', not only dots (the stack name)"
    return None
