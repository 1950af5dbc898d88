"""The nodes Karpenter can launch for a NodePool, with the allocatable it computes for them.

Follows karpenter-provider-aws v1.14 ``pkg/providers/instancetype/types.go``:

- ``computeCapacity``: cpu = vCPUs; memory = MiB - ceil(MiB x VM_MEMORY_OVERHEAD_PERCENT) (``memory()``,
  default ``--vm-memory-overhead-percent`` 0.075); pods = ENI-limited for AL2023 (``pods()`` ->
  ``ENILimitedPods``: default network card's max ENIs x (IPv4 per ENI - 1) + 2); ``nvidia.com/gpu``,
  ``aws.amazon.com/neuron`` from the accelerator count; ``vpc.amazonaws.com/efa`` = EfaInfo
  MaximumEfaInterfaces (``efas()``), capped here by the EFA interfaces the EC2NodeClass attaches, since
  the EFA device plugin advertises only attached devices.
- ``KubeReservedResources``: cpu 6 % of the first core, 1 % of the second, 0.5 % of cores 3-4, 0.25 %
  of the rest; memory 11 MiB x pods + 255 MiB. ``EvictionThreshold``: memory.available 100Mi.
- allocatable = capacity - kubeReserved - systemReserved (none set) - evictionThreshold.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ekstrain.facts import catalog
from ekstrain.simulate.quantity import parse

VM_MEMORY_OVERHEAD_PERCENT = 0.075
MIB = 2**20
EVICTION_MEMORY = 100 * MIB
CPU_RESERVED_STEPS = ((0, 1, 0.06), (1, 2, 0.01), (2, 4, 0.005), (4, math.inf, 0.0025))
"""(from core, to core, share of each core in that range) reserved for the kubelet (types.go)."""

ENI_MAX_PODS: dict[str, int] = {
    # amazon-eks-ami files/eni-max-pods.txt = Karpenter's ENILimitedPods on the default network card.
    "p4d.24xlarge": 737,
    "p4de.24xlarge": 737,
    "p5.48xlarge": 100,
    "p5e.48xlarge": 100,
    "p5en.48xlarge": 100,
    "trn1.32xlarge": 247,
    "trn1n.32xlarge": 247,
    "trn1.2xlarge": 58,
    "g5.8xlarge": 234,
    "g5.48xlarge": 345,
}
DEFAULT_MAX_PODS = 110
"""kubelet's default for types not in the table above."""

WELL_KNOWN_ARCH = "amd64"

MEMORY_PER_VCPU = {"m": 4, "c": 2, "r": 8}
"""GiB per vCPU of the general-purpose families a system node group may use (m7i, c7i, r7i, ...)."""


def general_purpose(name: str) -> catalog.InstanceType | None:
    """vCPU/memory of an m/c/r instance type from its name (m7i.2xlarge = 8 vCPU, 32 GiB)."""
    m = re.fullmatch(r"([mcr])\d+[a-z]*\.(\d*)(x?large)", name)
    if not m:
        return None
    vcpus = 2 if m.group(3) == "large" else 4 * int(m.group(2) or 1)
    return catalog.InstanceType(
        name,
        "cpu",
        catalog.A10G,
        0,
        vcpus,
        vcpus * MEMORY_PER_VCPU[m.group(1)],
        12,
        efa_max_interfaces=0,
        network_cards=1,
    )


@dataclass
class Node:
    """One instance type a NodePool may launch."""

    pool: str
    instance: catalog.InstanceType
    labels: dict[str, set[str]]
    """Label key -> values the node can carry (Karpenter narrows requirements to one at launch)."""
    taints: list[dict[str, Any]]
    capacity: dict[str, float]
    allocatable: dict[str, float]
    pool_limits: dict[str, float] = field(default_factory=dict)


def kube_reserved_cpu(vcpus: int) -> float:
    return sum(max(0.0, min(vcpus, hi) - lo) * share for lo, hi, share in CPU_RESERVED_STEPS)


def max_pods(instance: str) -> int:
    return ENI_MAX_PODS.get(instance, DEFAULT_MAX_PODS)


def capacity(it: catalog.InstanceType, efa_attached: int | None) -> dict[str, float]:
    mib = it.memory_gib * 1024
    cap = {
        "cpu": float(it.vcpus),
        "memory": float((mib - math.ceil(mib * VM_MEMORY_OVERHEAD_PERCENT)) * MIB),
        "pods": float(max_pods(it.name)),
    }
    if it.family == catalog.GPU:
        cap["nvidia.com/gpu"] = float(it.accelerator_count)
    elif it.family == catalog.TRAINIUM:
        cap["aws.amazon.com/neuron"] = float(it.accelerator_count)
        cap["aws.amazon.com/neuroncore"] = float(it.neuron_cores)
    if it.efa_capable:
        efa = it.efa_max_interfaces if efa_attached is None else min(it.efa_max_interfaces, efa_attached)
        cap["vpc.amazonaws.com/efa"] = float(efa)
    return cap


def allocatable(it: catalog.InstanceType, cap: dict[str, float]) -> dict[str, float]:
    out = dict(cap)
    out["cpu"] = cap["cpu"] - kube_reserved_cpu(it.vcpus)
    out["memory"] = cap["memory"] - (11 * cap["pods"] + 255) * MIB - EVICTION_MEMORY
    return out


def _requirement_labels(requirements: list[dict[str, Any]]) -> dict[str, set[str]]:
    labels: dict[str, set[str]] = {}
    for r in requirements:
        if r.get("operator") == "In":
            labels[r["key"]] = set(map(str, r.get("values", [])))
    return labels


def _attached_efa(node_class: dict[str, Any] | None) -> int | None:
    if not node_class:
        return None
    interfaces = node_class.get("spec", {}).get("networkInterfaces")
    if not interfaces:
        return None
    return sum(1 for i in interfaces if i.get("interfaceType") in ("efa", "efa-only"))


def nodes_of(pool: dict[str, Any], node_classes: dict[str, dict[str, Any]]) -> list[Node]:
    """Every (NodePool, instance type) Karpenter could launch: the catalog and the loaded stack's own types
    (``ekstrain:instanceTypes``); other instance types are skipped."""
    name = pool["metadata"]["name"]
    template = pool["spec"]["template"]
    spec = template.get("spec", {})
    reqs = _requirement_labels(spec.get("requirements", []))
    ref = spec.get("nodeClassRef", {}).get("name")
    node_class = node_classes.get(ref) if ref else None
    limits = {k: parse(v) for k, v in (pool["spec"].get("limits") or {}).items()}
    out = []
    for it_name in sorted(reqs.get("node.kubernetes.io/instance-type", set())):
        found = catalog.known().get(it_name) or general_purpose(it_name)
        if found is None:
            continue
        it = found
        family, size = it_name.split(".", 1)
        labels = {k: set(v) for k, v in reqs.items()}
        labels.update({k: {str(v)} for k, v in (template.get("metadata", {}).get("labels") or {}).items()})
        labels.update(
            {
                "node.kubernetes.io/instance-type": {it_name},
                "karpenter.sh/nodepool": {name},
                "karpenter.k8s.aws/instance-family": {family},
                "karpenter.k8s.aws/instance-size": {size},
                "kubernetes.io/os": labels.get("kubernetes.io/os", {"linux"}),
                "kubernetes.io/arch": labels.get("kubernetes.io/arch", {WELL_KNOWN_ARCH}),
            }
        )
        labels.setdefault("karpenter.sh/capacity-type", {"on-demand"})
        cap = capacity(it, _attached_efa(node_class))
        out.append(
            Node(
                pool=name,
                instance=it,
                labels=labels,
                taints=list(spec.get("taints") or []),
                capacity=cap,
                allocatable=allocatable(it, cap),
                pool_limits=limits,
            )
        )
    return out
