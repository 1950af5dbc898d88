"""Device plugins and accelerator metrics, scheduled only where the hardware is.

- NVIDIA device plugin + DCGM exporter: GPU partition nodes (``ekstrain.io/accelerator=gpu``);
- EFA device plugin: EFA partition nodes only (``ekstrain.io/efa=true``): on nodes without EFA
  devices it crash-loops (aws/sagemaker-hyperpod-cli#367);
- Neuron chart (device plugin + scheduler extension, node problem detector off) and a
  neuron-monitor DaemonSet: Trainium nodes (``ekstrain.io/accelerator=trainium``).

Each is installed only when the stack has a partition that needs it. Every values key exists in
the chart's upstream values.yaml (tests check it), except the DCGM exporter chart, whose
values.yaml is not pinned in shared/upstream: its values are kept to three well-known keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.assembly import observability as obs
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts import names
from ekstrain.facts.catalog import GPU, TRAINIUM
from ekstrain.facts.names import CRITICAL_ADDONS_TOLERATION, SYSTEM_NODE_LABEL
from ekstrain.facts.versions import NEURON_CUSTOM_SCHEDULER_TAGS, NEURON_MONITOR_IMAGE, Chart
from ekstrain.layout.controller_resources import SMALL, sized

NAMESPACE = "kube-system"
GPU_RESOURCE = "nvidia.com/gpu"
NEURON_RESOURCE = "aws.amazon.com/neuron"
NEURON_MONITOR_PORT = obs.NEURON_MONITOR_PORT


def _toleration(key: str) -> dict[str, str]:
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def _only_on(label: str, value: str) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": label, "operator": "In", "values": [value]}]}]
            }
        }
    }


def nvidia_values() -> dict[str, Any]:
    # The chart's default affinity wants NFD / GFD labels this platform does not run; replace it.
    return {
        "nodeSelector": {names.ACCELERATOR_LABEL: GPU},
        "affinity": _only_on(names.ACCELERATOR_LABEL, GPU),
        "tolerations": [CRITICAL_ADDONS_TOLERATION, _toleration(GPU_RESOURCE)],
        "gfd": {"enabled": False},
        "resources": SMALL,
    }


def dcgm_values() -> dict[str, Any]:
    # serviceMonitor defaults to on upstream and needs the Prometheus Operator CRDs; the
    # observability stack turns it on when it installs them.
    return {
        "nodeSelector": {names.ACCELERATOR_LABEL: GPU},
        # On a quarantined node too (the gate's NoExecute taint): its XID/ECC counters explain why it left.
        "tolerations": [_toleration(GPU_RESOURCE), obs.QUARANTINE_TOLERATION],
        "serviceMonitor": {"enabled": False},
    }


def efa_values(efa_instance_types: Sequence[str]) -> dict[str, Any]:
    return {
        "nodeSelector": {names.EFA_NODE_LABEL: "true"},
        # EFA partitions are GPU or Trainium nodes: tolerate both accelerator taints.
        "tolerations": [_toleration(GPU_RESOURCE), _toleration(NEURON_RESOURCE)],
        # The chart's affinity lists instance types; list exactly the stack's EFA types.
        "supportedInstanceLabels": {"keys": ["node.kubernetes.io/instance-type"], "values": sorted(efa_instance_types)},
    }


def neuron_values(trainium_instance_types: Sequence[str], kubernetes_version: str) -> dict[str, Any]:
    return {
        # The chart's device-plugin affinity is built from this list; 1.0.0's default lacks trn2.
        "neuronInstances": sorted(trainium_instance_types),
        "devicePlugin": {"nodeSelector": {names.ACCELERATOR_LABEL: TRAINIUM}},
        "scheduler": {
            "enabled": True,
            # The kube-scheduler runs on the system node group. The extension's own Deployment takes
            # scheduler.nodeSelector/tolerations only in the chart's defaultScheduler mode (and never
            # scheduler.affinity): with the custom scheduler it has neither, so none is set here.
            "customScheduler": {
                "affinity": _only_on(SYSTEM_NODE_LABEL, "system"),
                "image": {"tag": NEURON_CUSTOM_SCHEDULER_TAGS[kubernetes_version]},
                "resources": sized("100m", "128Mi", "256Mi"),
            },
        },
        "npd": {"enabled": False},
    }


def neuron_monitor_daemonset() -> dict[str, Any]:
    """neuron-monitor (no chart): Prometheus metrics of the Neuron devices on :8000."""
    labels = {"app.kubernetes.io/name": "neuron-monitor"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "neuron-monitor", "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(NEURON_MONITOR_PORT),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": {
                    "nodeSelector": {names.ACCELERATOR_LABEL: TRAINIUM},
                    "tolerations": [_toleration(NEURON_RESOURCE), obs.QUARANTINE_TOLERATION],
                    "priorityClassName": "system-node-critical",
                    "automountServiceAccountToken": False,
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "volumes": [{"name": "tmp", "emptyDir": {}}],
                    "containers": [
                        {
                            "name": "neuron-monitor",
                            "image": NEURON_MONITOR_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/opt/bin/entrypoint.sh"],
                            "args": ["--port", str(NEURON_MONITOR_PORT)],
                            "ports": [{"name": "metrics", "containerPort": NEURON_MONITOR_PORT}],
                            "env": [{"name": "GOMEMLIMIT", "value": "160MiB"}],
                            "resources": {
                                "requests": {"cpu": "250m", "memory": "128Mi"},
                                "limits": {"cpu": "500m", "memory": "256Mi"},
                            },
                            "livenessProbe": {
                                "httpGet": {"path": "/metrics", "port": "metrics"},
                                "initialDelaySeconds": 30,
                                "periodSeconds": 30,
                                "timeoutSeconds": 10,
                            },
                            "readinessProbe": {
                                "httpGet": {"path": "/metrics", "port": "metrics"},
                                "periodSeconds": 15,
                                "timeoutSeconds": 10,
                            },
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                            # Reads the Neuron driver's sysfs and devices; nothing else is granted.
                            "securityContext": {
                                "privileged": True,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }


NEURON_DEFAULT_REQUESTS = {"cpu": "50m", "memory": "128Mi"}
"""What a kube-system container that sets no requests gets at admission. neuron-helm-chart 1.0.0 has no
resources value for its scheduler extension and device plugin (templates scheduler-extn.yaml,
device-plugin-daemonset.yaml), which would otherwise run BestEffort (evicted first); every other kube-system
workload of the stack sets its own (an EKS add-on that sets cpu only gets the memory default)."""


def default_requests_limit_range() -> dict[str, Any]:
    """LimitRange of kube-system: ``defaultRequest`` only (no default limit, no min/max), so it fills gaps and
    refuses nothing (kubernetes plugin/pkg/admission/limitranger)."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "default-requests", "namespace": NAMESPACE},
        "spec": {"limits": [{"type": "Container", "defaultRequest": dict(NEURON_DEFAULT_REQUESTS)}]},
    }


def neuron_monitor_network_policy() -> dict[str, Any]:
    """Only the metrics port is reachable (by Prometheus scrapers anywhere in the cluster)."""
    labels = {"app.kubernetes.io/name": "neuron-monitor"}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "neuron-monitor", "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "podSelector": {"matchLabels": labels},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": NEURON_MONITOR_PORT}]}],
        },
    }


@dataclass(frozen=True, kw_only=True)
class DevicePluginsArgs:
    charts: Mapping[str, Chart]
    """Required. Chart name -> pinned chart (``cfg.versions.chart(name)``) for the plugins that are needed."""
    kubernetes_version: str
    """Required. Picks the kube-scheduler image of the Neuron scheduler extension."""
    gpu_instance_types: Sequence[str] = ()
    """@default none: instance types of GPU partitions; none = no NVIDIA plugin, no DCGM exporter."""
    efa_instance_types: Sequence[str] = ()
    """@default none: instance types of EFA partitions; none = no EFA plugin."""
    trainium_instance_types: Sequence[str] = ()
    """@default none: instance types of Trainium partitions; none = no Neuron chart, no neuron-monitor."""


def plugin_values(args: DevicePluginsArgs) -> dict[str, dict[str, Any]]:
    """Chart name -> values, for exactly the charts the stack's hardware needs."""
    out: dict[str, dict[str, Any]] = {}
    if args.gpu_instance_types:
        out["nvidia-device-plugin"] = nvidia_values()
        out["dcgm-exporter"] = dcgm_values()
    if args.efa_instance_types:
        out["aws-efa-k8s-device-plugin"] = efa_values(args.efa_instance_types)
    if args.trainium_instance_types:
        out["neuron-helm-chart"] = neuron_values(args.trainium_instance_types, args.kubernetes_version)
    return out


RELEASE_NAMES = {
    "nvidia-device-plugin": "nvidia-device-plugin",
    "dcgm-exporter": "dcgm-exporter",
    "aws-efa-k8s-device-plugin": "aws-efa-k8s-device-plugin",
    "neuron-helm-chart": "neuron",
}


class DevicePlugins(pulumi.ComponentResource):
    def __init__(self, name: str, args: DevicePluginsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("ekstrain:device_plugins:DevicePlugins", name, None, opts)
        self.releases: dict[str, k8s.helm.v3.Release] = {}
        after = dependencies(opts)  # the cluster: its system node group runs the charts' Deployments
        neuron_after = after
        if args.trainium_instance_types:
            # Before the Neuron chart: LimitRanger fills requests only as a pod is admitted.
            limits = resource(
                f"{name}-default-requests",
                default_requests_limit_range(),
                opts=pulumi.ResourceOptions(parent=self, depends_on=after),
            )
            neuron_after = [*after, limits]
        for chart_name, values in plugin_values(args).items():
            chart = args.charts[chart_name]
            self.releases[chart_name] = release(
                f"{name}-{RELEASE_NAMES[chart_name]}",
                release_name=RELEASE_NAMES[chart_name],
                chart=chart,
                namespace=NAMESPACE,
                values=values,
                parent=self,
                depends_on=neuron_after if chart_name == "neuron-helm-chart" else after,
            )
        if args.trainium_instance_types:
            ds = neuron_monitor_daemonset()
            resource(f"{name}-neuron-monitor", ds, opts=pulumi.ResourceOptions(parent=self, depends_on=after))
            policy = neuron_monitor_network_policy()
            resource(f"{name}-neuron-monitor", policy, opts=pulumi.ResourceOptions(parent=self, depends_on=after))
        self.register_outputs({"releases": sorted(RELEASE_NAMES[c] for c in self.releases)})
