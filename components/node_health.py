"""Node health monitoring: the EKS node monitoring agent add-on, the signal Karpenter's NodeRepair acts on.

The agent (EKS add-on ``eks-node-monitoring-agent``, a DaemonSet on every node) reads kernel, NVIDIA
driver (GPU Xid, NVLink, DCGM), Neuron, EFA/network, storage and container-runtime logs and sets Node
conditions (``AcceleratedHardwareReady``, ``NetworkingReady``, ``StorageReady``, ``KernelReady``,
``ContainerRuntimeReady``) to False on a fault. With the Karpenter feature gate ``nodeRepair`` on
(components/karpenter.py) a node whose condition stays False past the provider's toleration
(karpenter-provider-aws v1.14.1 pkg/cloudprovider/cloudprovider.go RepairPolicies: 10 min for
accelerated hardware, 30 min for the others) is drained and replaced, so a restarted gang does not land
on the same sick node. EKS docs: "Detect node health issues and enable automatic node repair"
(https://docs.aws.amazon.com/eks/latest/userguide/node-health.html).

The add-on needs no IAM role; its DaemonSet tolerates every taint, so it runs on the tainted accelerator
nodes too. Version: ``ekstrain:versions.addons`` or EKS's default for the cluster version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

ADDON_NAME = "eks-node-monitoring-agent"


@dataclass(frozen=True, kw_only=True)
class NodeHealthArgs:
    cluster_name: str
    """Required. The EKS cluster the node monitoring agent add-on is installed in."""
    addon_version: str | None = None
    """@default None: EKS installs its default build for the cluster's Kubernetes version."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """@default none. Tags on the add-on."""


class NodeHealth(pulumi.ComponentResource):
    """Pass ``opts=ResourceOptions(depends_on=[<cluster component>])``: add-ons install once nodes exist."""

    addon_name: pulumi.Output[str]
    """The EKS add-on's name (``eks-node-monitoring-agent``)."""

    def __init__(self, name: str, args: NodeHealthArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:nodehealth:NodeHealth", name, None, opts)
        addon = aws.eks.Addon(
            f"{name}-agent",
            cluster_name=args.cluster_name,
            addon_name=ADDON_NAME,
            addon_version=args.addon_version,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=dict(args.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.addon_name = addon.addon_name
        self.register_outputs({"addonName": self.addon_name})
