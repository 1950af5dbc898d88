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

The add-on needs no IAM role. Its node agent tolerates every taint (chart 1.7.0 default ``operator: Exists``), but
its DCGM host engine (``dcgm-server``, which the agent reads GPU health from) tolerates none by default, so on the
``nvidia.com/gpu``-tainted GPU nodes it would not run and the DCGM checks would be blind: ``configuration_values``
(``ekstrain.payloads.health_gate.agent_configuration``) states both tolerations (partition taints, the health gate's
startup and unhealthy taints) and turns the NVIDIA, Neuron and networking monitors on. Version:
``ekstrain:versions.addons`` or EKS's default for the cluster version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from ekstrain.components.deps import dependencies

ADDON_NAME = "eks-node-monitoring-agent"


@dataclass(frozen=True, kw_only=True)
class NodeHealthArgs:
    cluster_name: str
    """Required. The EKS cluster the node monitoring agent add-on is installed in."""
    addon_version: str | None = None
    """@default None: EKS installs its default build for the cluster's Kubernetes version."""
    configuration_values: Mapping[str, Any] | None = None
    """@default None: the chart's defaults (its DCGM host engine then tolerates no taint). The add-on's
    ``configurationValues`` (chart 1.7.0 values keys), e.g. ``ekstrain.payloads.health_gate.agent_configuration``."""
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
            configuration_values=(
                None if args.configuration_values is None else json.dumps(args.configuration_values, sort_keys=True)
            ),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=dict(args.tags),
            # The cluster is named by a plain string: without the caller's depends_on the add-on would be created
            # while the cluster does not exist yet (its contract: ekstrain/contracts/kinds.py CLUSTER).
            opts=pulumi.ResourceOptions(parent=self, depends_on=dependencies(opts)),
        )
        self.addon_name = addon.addon_name
        self.register_outputs({"addonName": self.addon_name})
