"""Observability as data: kube-prometheus-stack values, the GPU/Neuron/EFA scrape targets, the
EFA exporter objects, Prometheus sizing and the Grafana dashboards.

Pure functions of a :class:`StackConfig`; :mod:`ekstrain.components.observability` registers them.
ServiceMonitors are declared through the chart's ``prometheus.additionalServiceMonitors`` so they
are created by the same release that installs the Prometheus Operator CRDs (no ordering problem,
and the chart render validates them).
"""

from __future__ import annotations

import functools
import importlib
import json
import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.agents import efa_exporter
from ekstrain.assembly import alerts
from ekstrain.facts import catalog, names, promql_names, training_metrics, versions
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR
from ekstrain.layout.controller_resources import MEDIUM, SMALL, sized
from ekstrain.layout.prometheus_sizing import (
    prometheus_memory_gib,
    prometheus_storage_gib,
)  # shared with stacks/rules/quotas.py
from ekstrain.payloads import health_gate, pod_security

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

NAMESPACE = "monitoring"
RELEASE = "kube-prometheus-stack"
PROMETHEUS_SA = "prometheus"
"""Fixed ServiceAccount name: the Pod Identity association for AMP remote write matches it."""
GRAFANA_ADMIN_SECRET = "grafana-admin"
DASHBOARD_LABEL = {"grafana_dashboard": "1"}
"""The label the chart's Grafana sidecar loads dashboards from (its default label and value)."""
EFA_EXPORTER = "efa-exporter"
EFA_EXPORTER_PORT = 9809
NEURON_MONITOR = "neuron-monitor"
NEURON_MONITOR_PORT = 8000
DCGM_PORT_NAME = "metrics"

COST_POD_LABELS = ("ekstrain.io/job", "ekstrain.io/job-kind", "ekstrain.io/queue", names.PARTITION_LABEL)
COST_NODE_LABELS = (names.PARTITION_LABEL, names.ACCELERATOR_LABEL, names.TEAM_LABEL)
"""Labels kube-state-metrics exports as ``kube_pod_labels`` / ``kube_node_labels`` (``--metric-labels-allowlist``)
with ``ekstrain:cost``: the spend dashboard (assembly/cost.py) groups by them."""

RETENTION_SIZE_FRACTION = 0.85
"""retentionSize: Prometheus deletes old blocks before the volume fills."""


def storage_gib(cfg: StackConfig) -> int:
    o = cfg.observability
    if o.storage_gib is not None:
        return o.storage_gib
    return prometheus_storage_gib(
        o.retention_days,
        o.scrape_interval_seconds,
        sum(p.max_nodes for p in cfg.partitions),
        cfg.cluster.system_node_group.max_size,
    )


def prometheus_resources(cfg: StackConfig) -> dict[str, Any]:
    """Prometheus's container: memory from the active series of the largest fleet
    (ekstrain/layout/prometheus_sizing.py);
    cpu 500m: a few hundred thousand series at a 30 s scrape are ~10-20k samples/s, a fraction of a core."""
    gib = prometheus_memory_gib(sum(p.max_nodes for p in cfg.partitions), cfg.cluster.system_node_group.max_size)
    return sized("500m", f"{gib}Gi", f"{2 * gib}Gi")


ALERTMANAGER_RESOURCES = sized("20m", "64Mi", "256Mi")
"""One Alertmanager holding a few hundred alerts and their silences: tens of MiB."""
CONFIG_RELOADER_RESOURCES = sized("10m", "32Mi", "64Mi")
"""The operator's config-reloader sidecars (watch a file, POST /-/reload): kube-prometheus-stack's values.yaml
comments 50Mi as a limit for them."""
ADMISSION_JOB_RESOURCES = SMALL
"""The chart's admission-create/-patch hook Jobs (kube-webhook-certgen: write one Secret, patch one webhook)."""


def has(cfg: StackConfig, family: str) -> bool:
    return any(p.accelerator == family for p in cfg.partitions)


def has_efa(cfg: StackConfig) -> bool:
    return any(p.efa for p in cfg.partitions)


def service_monitors(cfg: StackConfig) -> list[dict[str, Any]]:
    """``prometheus.additionalServiceMonitors``: DCGM exporter, neuron-monitor and the EFA exporter."""
    interval = f"{cfg.observability.scrape_interval_seconds}s"
    relabel = [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]
    out = []
    if has(cfg, catalog.GPU):
        out.append(
            {
                "name": "dcgm-exporter",
                "selector": {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}},
                "namespaceSelector": {"matchNames": ["kube-system"]},
                "endpoints": [{"port": DCGM_PORT_NAME, "interval": interval, "relabelings": relabel}],
            }
        )
    if has(cfg, catalog.TRAINIUM):
        out.append(
            {
                "name": NEURON_MONITOR,
                "selector": {"matchLabels": {"app.kubernetes.io/name": NEURON_MONITOR}},
                "namespaceSelector": {"matchNames": ["kube-system"]},
                "endpoints": [{"port": "metrics", "interval": interval, "relabelings": relabel}],
            }
        )
    if has_efa(cfg):
        out.append(
            {
                "name": EFA_EXPORTER,
                "selector": {"matchLabels": {"app.kubernetes.io/name": EFA_EXPORTER}},
                "namespaceSelector": {"matchNames": [NAMESPACE]},
                "endpoints": [{"port": "metrics", "interval": interval, "relabelings": relabel}],
            }
        )
    return out


def remote_write_url(prometheus_endpoint: str) -> str:
    """AMP workspace endpoint (ends with '/') -> its remote-write URL."""
    return prometheus_endpoint.rstrip("/") + "/api/v1/remote_write"


def chart_values(cfg: StackConfig, remote_write: Any = None) -> dict[str, Any]:
    """Values of kube-prometheus-stack (every key exists in its upstream values.yaml)."""
    o = cfg.observability
    size = storage_gib(cfg)
    spec: dict[str, Any] = {
        "scrapeInterval": f"{o.scrape_interval_seconds}s",
        "retention": f"{o.retention_days}d",
        "retentionSize": f"{int(size * RETENTION_SIZE_FRACTION)}GiB",
        "storageSpec": {
            "volumeClaimTemplate": {
                "spec": {
                    "storageClassName": "gp3",
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": f"{size}Gi"}},
                }
            }
        },
        # Pick up ServiceMonitors/PodMonitors/rules of every release, not only this one's.
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
        "externalLabels": {"cluster": cfg.cluster.name},
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        "resources": prometheus_resources(cfg),
    }
    values = {
        "crds": {"enabled": True},
        # The training alerts (ekstrain/assembly/alerts.py): a PrometheusRule of this release, after its CRDs.
        "additionalPrometheusRulesMap": alerts.prometheus_rules_map(cfg),
        # EKS runs the control plane: its scheduler, controller manager and etcd are not scrapable,
        # and kube-proxy binds its metrics to localhost.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
        "grafana": {
            "admin": {"existingSecret": GRAFANA_ADMIN_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            "defaultDashboardsTimezone": "utc",
            "resources": MEDIUM,
            "sidecar": {"resources": SMALL},
        },
        "kube-state-metrics": {
            "resources": sized("50m", "128Mi", "256Mi"),
            # The node labels the alerts join on (a node's partition, its instance type's EFA layout), and with
            # cost allocation the pod and node labels the spend dashboard groups by.
            "metricLabelsAllowlist": [
                *([f"pods=[{','.join(COST_POD_LABELS)}]"] if cfg.cost.enabled else []),
                "nodes=[{}]".format(
                    ",".join(
                        dict.fromkeys(alerts.NODE_LABELS_ALLOWLIST + (COST_NODE_LABELS if cfg.cost.enabled else ()))
                    )
                ),
            ],
        },
        "prometheus-node-exporter": {
            "resources": sized("20m", "32Mi", "64Mi"),
            # The chart's default (every NoSchedule taint) and the gate's quarantine: a node tainted unhealthy keeps
            # the metrics that explain why (prometheus-node-exporter chart values.yaml ``tolerations``).
            "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}, QUARANTINE_TOLERATION],
        },
        "prometheusOperator": {
            "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
            "resources": MEDIUM,
            # Without these the operator's --config-reloader-*-request flags are 0: no request on the
            # config-reloader sidecars of the Prometheus and Alertmanager pods.
            "prometheusConfigReloader": {"resources": CONFIG_RELOADER_RESOURCES},
            "admissionWebhooks": {"patch": {"resources": ADMISSION_JOB_RESOURCES}},
        },
        "alertmanager": {
            "alertmanagerSpec": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": ALERTMANAGER_RESOURCES}
        },
        "prometheus": {
            "serviceAccount": {"create": True, "name": PROMETHEUS_SA},
            "additionalServiceMonitors": service_monitors(cfg),
            "additionalPodMonitors": [training_metrics.pod_monitor(f"{o.scrape_interval_seconds}s")],
            "prometheusSpec": spec,
        },
    }
    if remote_write is not None:
        # Only the series the dashboards and alert rules read reach Amazon Managed Prometheus (it bills per sample
        # ingested): writeRelabelConfigs keep those names, derived from the PromQL itself (remote_write_keep_list).
        spec["remoteWrite"] = [
            {
                "url": remote_write,
                "sigv4": {"region": cfg.region},
                "writeRelabelConfigs": promql_names.keep_relabel(remote_write_keep_list(cfg, values)),
            }
        ]
    return values


QUERY_SOURCES: tuple[tuple[str, str], ...] = (("ekstrain.assembly.cost", "promql"),)
"""Other modules' PromQL (``module``, function of the stack config returning expressions) the keep-list reads too:
the spend dashboard's queries. A module or function that is not there (a stack or build without it) adds none."""


def remote_write_queries(cfg: StackConfig, values: dict[str, Any] | None = None) -> list[str]:
    """Every PromQL expression the stack's dashboards and alert rules evaluate: this module's dashboards, the rules
    the chart values carry (``additionalPrometheusRulesMap``: any ``expr`` at any depth), and :data:`QUERY_SOURCES`."""
    exprs = [e for board in dashboards(cfg).values() for e in promql_names.queries(board)]
    exprs += list(promql_names.queries(values or {}))
    for module, function in QUERY_SOURCES:
        try:
            source = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError):
            continue
        exprs += list(source(cfg))
    return exprs


def remote_write_keep_list(cfg: StackConfig, values: dict[str, Any] | None = None) -> list[str]:
    """The metric names remote write keeps (:func:`remote_write_queries`, ekstrain/facts/promql_names.py)."""
    return promql_names.keep_list(remote_write_queries(cfg, values))


# ---- EFA exporter and the neuron-monitor Service -------------------------------------------------


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "ekstrain"}


QUARANTINE_TOLERATION: dict[str, str] = {
    "key": health_gate.UNHEALTHY_TAINT_KEY,
    "operator": "Exists",
    "effect": "NoExecute",
}
"""Exporters stay on a node the health gate's guard quarantined (``ekstrain.io/unhealthy:NoExecute`` evicts every
pod that does not tolerate it): the metrics that explain a sick node must not vanish the moment it is taken out."""


def efa_exporter_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": EFA_EXPORTER, "namespace": NAMESPACE, "labels": _labels(EFA_EXPORTER)},
        "data": {"efa_exporter.py": pathlib.Path(efa_exporter.__file__).read_text()},
    }


def efa_exporter_daemonset() -> dict[str, Any]:
    sel = {"app.kubernetes.io/name": EFA_EXPORTER}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": EFA_EXPORTER, "namespace": NAMESPACE, "labels": _labels(EFA_EXPORTER)},
        "spec": {
            "selector": {"matchLabels": sel},
            "template": {
                "metadata": {"labels": _labels(EFA_EXPORTER)},
                "spec": {
                    "nodeSelector": {names.EFA_NODE_LABEL: "true"},
                    "tolerations": [
                        *(
                            {"key": r, "operator": "Exists", "effect": "NoSchedule"}
                            for r in ("nvidia.com/gpu", "aws.amazon.com/neuron")
                        ),
                        QUARANTINE_TOLERATION,
                    ],
                    "automountServiceAccountToken": False,
                    "securityContext": pod_security.restricted_pod(),
                    "containers": [
                        {
                            "name": "exporter",
                            "image": versions.EFA_EXPORTER_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["python3", "/opt/efa/efa_exporter.py"],
                            "env": [
                                {"name": "EFA_SYSFS", "value": "/host/sys/class/infiniband"},
                                {"name": "PORT", "value": str(EFA_EXPORTER_PORT)},
                            ],
                            "ports": [{"name": "metrics", "containerPort": EFA_EXPORTER_PORT}],
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 30},
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", "port": "metrics"},
                                "periodSeconds": 60,
                                "timeoutSeconds": 5,
                            },
                            "resources": {
                                "requests": {"cpu": "20m", "memory": "32Mi"},
                                "limits": {"cpu": "200m", "memory": "64Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            # /sys/class/infiniband entries are symlinks into /sys/devices: mount /sys.
                            "volumeMounts": [
                                {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
                                {"name": "script", "mountPath": "/opt/efa", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                        {"name": "script", "configMap": {"name": EFA_EXPORTER}},
                    ],
                },
            },
        },
    }


def efa_exporter_network_policy() -> dict[str, Any]:
    """Only the metrics port is reachable (Prometheus scrapes it); nothing else gets in."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": EFA_EXPORTER, "namespace": NAMESPACE, "labels": _labels(EFA_EXPORTER)},
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": EFA_EXPORTER}},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": [{"protocol": "TCP", "port": EFA_EXPORTER_PORT}]}],
        },
    }


def metrics_service(name: str, namespace: str, port: int) -> dict[str, Any]:
    """Headless Service the ServiceMonitor selects (one endpoint per exporter pod)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(name)},
        "spec": {
            "clusterIP": "None",
            "selector": {"app.kubernetes.io/name": name},
            "ports": [{"name": "metrics", "port": port, "targetPort": "metrics", "protocol": "TCP"}],
        },
    }


# ---- dashboards ------------------------------------------------------------------------------------

PanelDef = tuple[str, str, str]
"""(title, PromQL, unit)."""

DASHBOARDS: dict[str, tuple[str, list[PanelDef]]] = {
    "gpu-utilisation": (
        "GPU utilisation (DCGM)",
        [
            ("GPU utilisation by node", "avg by (node) (DCGM_FI_DEV_GPU_UTIL)", "percent"),
            ("GPU utilisation by GPU", "DCGM_FI_DEV_GPU_UTIL", "percent"),
            ("GPU memory used", "sum by (node) (DCGM_FI_DEV_FB_USED) * 1024 * 1024", "bytes"),
            ("Tensor core activity", "avg by (node) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) * 100", "percent"),
            ("Power", "sum by (node) (DCGM_FI_DEV_POWER_USAGE)", "watt"),
            ("GPU temperature", "max by (node) (DCGM_FI_DEV_GPU_TEMP)", "celsius"),
        ],
    ),
    "neuron-utilisation": (
        "Neuron utilisation (neuron-monitor)",
        [
            ("NeuronCore utilisation by node", "avg by (node) (neuroncore_utilization_ratio) * 100", "percent"),
            ("NeuronCore utilisation by core", "neuroncore_utilization_ratio * 100", "percent"),
            ("Neuron device memory used", "sum by (node) (neuron_runtime_memory_used_bytes)", "bytes"),
            ("Execution errors", "sum by (node) (rate(execution_errors_total[5m]))", "ops"),
            ("Hardware ECC events", "sum by (node) (increase(hardware_ecc_events_total[1h]))", "short"),
        ],
    ),
    "efa-traffic": (
        "EFA traffic",
        [
            ("EFA transmit by node", 'sum by (node) (rate(efa_hw_counter_total{counter="tx_bytes"}[1m]))', "Bps"),
            ("EFA receive by node", 'sum by (node) (rate(efa_hw_counter_total{counter="rx_bytes"}[1m]))', "Bps"),
            ("RDMA read", 'sum by (node) (rate(efa_hw_counter_total{counter="rdma_read_bytes"}[1m]))', "Bps"),
            ("RDMA write", 'sum by (node) (rate(efa_hw_counter_total{counter="rdma_write_bytes"}[1m]))', "Bps"),
            ("Receive drops", 'sum by (node) (rate(efa_hw_counter_total{counter="rx_drops"}[5m]))', "pps"),
            ("EFA devices per node", "efa_devices", "short"),
        ],
    ),
    "job-health": (
        "Training job health",
        [
            (
                "Training pods by phase",
                f'sum by (phase) (kube_pod_status_phase{{namespace="{names.TRAINING_NAMESPACE}"}})',
                "short",
            ),
            (
                "Container restarts (15m)",
                "sum by (pod) (increase(kube_pod_container_status_restarts_total"
                f'{{namespace="{names.TRAINING_NAMESPACE}"}}[15m]))',
                "short",
            ),
            (
                "Training pods pending",
                f'sum(kube_pod_status_phase{{namespace="{names.TRAINING_NAMESPACE}",phase="Pending"}}) or vector(0)',
                "short",
            ),
            (
                "Nodes not ready",
                'sum(kube_node_status_condition{condition="Ready",status!="true"}) or vector(0)',
                "short",
            ),
            ("GPU XID errors", "sum by (node) (DCGM_FI_DEV_XID_ERRORS > 0) or vector(0)", "short"),
            (
                "Failed jobs",
                f'sum(kube_job_status_failed{{namespace="{names.TRAINING_NAMESPACE}"}}) or vector(0)',
                "short",
            ),
        ],
    ),
}


def dashboard(uid: str, title: str, panels: list[PanelDef]) -> dict[str, Any]:
    """A Grafana dashboard (schemaVersion 39) of time-series panels, two per row."""
    return {
        "uid": f"ekstrain-{uid}",
        "title": title,
        "tags": ["ekstrain"],
        "timezone": "utc",
        "schemaVersion": 39,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": []},
        "panels": [
            {
                "id": i + 1,
                "type": "timeseries",
                "title": t,
                "datasource": {"type": "prometheus", "uid": "prometheus"},
                "gridPos": {"h": 8, "w": 12, "x": (i % 2) * 12, "y": (i // 2) * 8},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "targets": [{"refId": "A", "expr": expr, "datasource": {"type": "prometheus", "uid": "prometheus"}}],
            }
            for i, (t, expr, unit) in enumerate(panels)
        ],
    }


def dashboards(cfg: StackConfig) -> dict[str, dict[str, Any]]:
    """The dashboards that apply to the stack's hardware."""
    want = {
        "gpu-utilisation": has(cfg, catalog.GPU),
        "neuron-utilisation": has(cfg, catalog.TRAINIUM),
        "efa-traffic": has_efa(cfg),
        "job-health": True,
    }
    return {uid: dashboard(uid, title, panels) for uid, (title, panels) in DASHBOARDS.items() if want[uid]}


def dashboard_configmap(uid: str, board: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"dashboard-{uid}",
            "namespace": NAMESPACE,
            "labels": {**DASHBOARD_LABEL, "app.kubernetes.io/part-of": "ekstrain"},
        },
        "data": {f"{uid}.json": json.dumps(board, indent=1, sort_keys=True)},
    }


@dataclass(frozen=True, kw_only=True)
class ObservabilityPlan:
    """What the Observability component needs from the stack config, and nothing else of it."""

    cluster_name: str
    amp_alias: str | None
    """AMP workspace alias; None: no AMP workspace (no remote write)."""
    efa_exporter: bool
    neuron_monitor: bool
    dashboards: dict[str, dict[str, Any]]
    values: Callable[[Any], dict[str, Any]]
    """Chart values given the remote-write URL (an Output, or None without AMP)."""


def plan(cfg: StackConfig) -> ObservabilityPlan:
    amp = cfg.observability.amp
    return ObservabilityPlan(
        cluster_name=cfg.cluster.name,
        amp_alias=(amp.workspace_alias or f"{cfg.cluster.name}-metrics") if amp.enabled else None,
        efa_exporter=has_efa(cfg),
        neuron_monitor=has(cfg, "trainium"),
        dashboards=dashboards(cfg),
        values=functools.partial(chart_values, cfg),
    )
