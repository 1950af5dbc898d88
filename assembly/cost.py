"""Spend by team, queue and job, as data: OpenCost's chart values and price file, the cost-allocation tags, the
budget's notifications and the spend dashboard. Pure functions of a :class:`StackConfig`;
:mod:`ekstrain.components.cost` registers them.

Why OpenCost (chart 2.5.17) and not EKS split cost allocation data: OpenCost runs on the Prometheus the stack
already has, prices every node from the same catalog as SUMMARY.md and the simulator (its CSV provider,
opencost/opencost pkg/cloud/provider/csvprovider.go), and answers per pod label within minutes; split cost
allocation data arrives in the Cost and Usage Report a day later, per namespace/pod but without the queue and job
labels, and cannot be checked offline. The AWS side (tags on nodes and file systems, activated cost-allocation
tags, the budget) gives the bill the same stack/partition/team split.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.assembly import observability as obs
from ekstrain.facts import catalog, names, spend
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR
from ekstrain.payloads import health_gate, kms_policy

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

NAMESPACE = "opencost"
RELEASE = "opencost"
PRICES_CONFIGMAP = "opencost-node-prices"
PRICES_DIR = "/var/configs/ekstrain"
PRICES_FILE = "pricing.csv"
PROMETHEUS_PORT = 9090

ACCELERATOR_RESOURCES = 'resource=~"nvidia_com_gpu|aws_amazon_com_neuron"'
"""kube-state-metrics' names of the accelerator resources (``/`` and ``.`` become ``_``)."""


def ksm_label(key: str) -> str:
    """``ekstrain.io/queue`` -> ``label_ekstrain_io_queue`` (kube-state-metrics' sanitised label name)."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in key)


def cost_tags(cfg: StackConfig, stack: str, partition: str | None = None) -> dict[str, str]:
    """The cost-allocation tags of a resource: the stack, and the partition and its team (or the stack's team for
    shared resources such as the file systems)."""
    if not cfg.cost.enabled:
        return {}
    tags = {spend.STACK_TAG: stack, spend.TEAM_TAG: cfg.team_of(partition) if partition else cfg.cost.team}
    if partition:
        tags[spend.PARTITION_TAG] = partition
    return tags


def instance_types(cfg: StackConfig) -> list[str]:
    return sorted(
        {t for p in cfg.partitions for t in p.instance_types} | set(cfg.cluster.system_node_group.instance_types)
    )


def pricing_configmap(cfg: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": PRICES_CONFIGMAP,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "ekstrain"},
        },
        "data": {PRICES_FILE: spend.opencost_pricing_csv(cfg.region, instance_types(cfg))},
    }


def chart_values(cfg: StackConfig) -> dict[str, Any]:
    """Values of the opencost chart (every key exists in its upstream values.yaml)."""
    return {
        "opencost": {
            "exporter": {
                "defaultClusterId": cfg.cluster.name,
                # The CSV provider: node prices from ekstrain.facts.catalog, matched by the instance-type label.
                "extraEnv": {"USE_CSV_PROVIDER": "true", "CSV_PATH": f"{PRICES_DIR}/{PRICES_FILE}"},
                "extraVolumeMounts": [{"name": "node-prices", "mountPath": PRICES_DIR, "readOnly": True}],
                "resources": {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "runAsUser": 1001,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
            },
            "prometheus": {
                "internal": {
                    "enabled": True,
                    "serviceName": f"{obs.RELEASE}-prometheus",
                    "namespaceName": obs.NAMESPACE,
                    "port": PROMETHEUS_PORT,
                }
            },
            "metrics": {"serviceMonitor": {"enabled": True}},
            "ui": {"enabled": False},
            "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        },
        "extraVolumes": [{"name": "node-prices", "configMap": {"name": PRICES_CONFIGMAP}}],
    }


# ---- the spend dashboard ------------------------------------------------------------------------------------

ACCEL_ALLOCATABLE = f"sum by (node) (kube_node_status_allocatable{{{ACCELERATOR_RESOURCES}}})"
RUNNING_REQUESTS = (
    f"sum by (node) (kube_pod_container_resource_requests{{{ACCELERATOR_RESOURCES}}}"
    ' * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1))'
)
PENDING_REQUESTS = (
    f'sum by (node) (kube_pod_container_resource_requests{{{ACCELERATOR_RESOURCES},node!=""}}'
    ' * on (namespace, pod) group_left () (max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1))'
)
NOT_READY = 'max by (node) (kube_node_status_condition{condition="Ready",status="true"}) == 0'
UNHEALTHY = (
    "max by (node) (kube_node_status_condition{condition=~"
    f'"{"|".join(health_gate.REPAIR_MINUTES)}",status="false"}}) == 1'
)
"""The EKS node monitoring agent's conditions (components/node_health.py), which Karpenter's NodeRepair acts on."""
COST_PER_ACCELERATOR = f"(max by (node) (node_total_hourly_cost) / on (node) {ACCEL_ALLOCATABLE})"
"""OpenCost's hourly node price (the catalog's) per accelerator of the node."""


def idle_queries(cfg: StackConfig) -> dict[str, str]:
    """Idle accelerators now, in the simulator's categories (ekstrain/simulate/idle_accounting.py ``account``),
    summed over the stack's accelerator nodes. A category the cluster cannot see from metrics is not drawn:
    "stranded" (the simulator knows why a job cannot start; the cluster only sees pods Pending on a node, counted
    with "held")."""
    gated = f'max by (node) (kube_node_spec_taint{{key="{names.STARTUP_TAINT_KEY}"}})'
    healthy = (
        f"({ACCEL_ALLOCATABLE} unless on (node) ({NOT_READY}) unless on (node) ({UNHEALTHY})"
        f" unless on (node) ({gated}))"
    )
    out = {
        "launching": (
            f"sum(({ACCEL_ALLOCATABLE} and on (node) ({NOT_READY})) unless on (node) ({UNHEALTHY})) or vector(0)"
        ),
        "unhealthy": f"sum({ACCEL_ALLOCATABLE} and on (node) ({UNHEALTHY})) or vector(0)",
        # Ready, but the health gate's startup taint is still on (ekstrain/payloads/health_gate.py): checked, not yet
        # usable
        "health gate pre-flight": (
            f"sum(({ACCEL_ALLOCATABLE} and on (node) ({gated})) unless on (node) ({NOT_READY})"
            f" unless on (node) ({UNHEALTHY})) or vector(0)"
        ),
        "held while the job restarts or its other nodes launch": (
            f"sum(({PENDING_REQUESTS}) unless on (node) ({RUNNING_REQUESTS})) or vector(0)"
        ),
        "fragments (part of a node in use)": (
            f"sum(({healthy} - on (node) {RUNNING_REQUESTS}) and on (node) ({RUNNING_REQUESTS} > 0)) or vector(0)"
        ),
    }
    empty = f"{healthy} unless on (node) ({RUNNING_REQUESTS} > 0) unless on (node) ({PENDING_REQUESTS} > 0)"
    # A partition with consolidateAfter: Never (a reservation paid anyway) keeps its empty nodes: the simulator
    # counts those apart from the window a consolidating partition waits before removing one.
    never = sorted(p.name for p in cfg.partitions if p.effective_consolidate_after == "Never")
    if never:
        kept = f'max by (node) (kube_node_labels{{{ksm_label(names.PARTITION_LABEL)}=~"{"|".join(never)}"}})'
        out["consolidateAfter window"] = f"sum(({empty}) unless on (node) ({kept})) or vector(0)"
        out["kept empty (consolidateAfter: Never, a reservation paid anyway)"] = (
            f"sum(({empty}) and on (node) ({kept})) or vector(0)"
        )
    else:
        out["consolidateAfter window"] = f"sum({empty}) or vector(0)"
    if cfg.schedulers.slurm.enabled:
        # Slurm's idle nodes held by slurmd pods, times the partition's accelerators per node.
        terms = [
            f'(max(slurm_partition_nodes_idle{{partition="{p.name}"}}) or vector(0))'
            f" * {catalog.get(p.instance_types[0]).accelerator_count}"
            for p in cfg.partitions
        ]
        out["standing slurmd nodes without a Slurm job"] = " + ".join(terms)
    return out


def spend_panels(cfg: StackConfig) -> list[tuple[str, str, str]]:
    """(title, PromQL, unit): dollars per hour by queue, team and job; idle accelerators by category."""
    queue = ksm_label("ekstrain.io/queue")
    job = ksm_label("ekstrain.io/job")
    part = ksm_label(names.PARTITION_LABEL)
    team = ksm_label("ekstrain.io/team")
    pod_cost = (
        f"sum by (namespace, pod) (kube_pod_container_resource_requests{{{ACCELERATOR_RESOURCES}}}"
        f" * on (node) group_left () {COST_PER_ACCELERATOR})"
    )
    panels = [
        (
            "Spend by queue ($/h, whole nodes: idle included)",
            f"sum by ({part}) (max by (node) (node_total_hourly_cost) * on (node) group_left ({part})"
            f' max by (node, {part}) (kube_node_labels{{{part}!=""}}))',
            "currencyUSD",
        ),
        (
            "Spend by team ($/h)",
            f"sum by ({team}) (max by (node) (node_total_hourly_cost) * on (node) group_left ({team})"
            f' max by (node, {team}) (kube_node_labels{{{team}!=""}}))',
            "currencyUSD",
        ),
        (
            "Accelerator spend by queue, requested ($/h)",
            f"sum by ({queue}) ({pod_cost} * on (namespace, pod) group_left ({queue})"
            f' max by (namespace, pod, {queue}) (kube_pod_labels{{{queue}!=""}}))',
            "currencyUSD",
        ),
        (
            "Accelerator spend by job ($/h)",
            f"topk(20, sum by ({job}) ({pod_cost} * on (namespace, pod) group_left ({job})"
            f' max by (namespace, pod, {job}) (kube_pod_labels{{{job}!=""}})))',
            "currencyUSD",
        ),
    ]
    for category, expr in idle_queries(cfg).items():
        panels.append((f"Idle accelerators: {category}", expr, "short"))
    total = " + ".join(f"({e})" for e in idle_queries(cfg).values())
    panels.append(("Idle accelerator-hours, last 24 h", f"sum_over_time(({total})[24h:5m]) / 12", "short"))
    return panels


def dashboard(cfg: StackConfig) -> dict[str, Any]:
    return obs.dashboard("spend", "Spend by team, queue and job (OpenCost)", spend_panels(cfg))


def promql(cfg: StackConfig) -> list[str]:
    return [expr for _, expr, _ in spend_panels(cfg)]


# ---- budget --------------------------------------------------------------------------------------------------


def monthly_limit_usd(cfg: StackConfig) -> float:
    b = cfg.cost.budget
    if b.monthly_limit_usd is not None:
        return b.monthly_limit_usd
    return spend.default_monthly_limit_usd((p.instance_types, p.max_nodes) for p in cfg.partitions)


def notifications(cfg: StackConfig) -> list[dict[str, Any]]:
    """(threshold %, ACTUAL|FORECASTED) the budget notifies its topic at."""
    b = cfg.cost.budget
    out = [{"threshold": float(t), "notification_type": "ACTUAL"} for t in sorted(b.thresholds_percent)]
    if b.forecast_percent is not None:
        out.append({"threshold": float(b.forecast_percent), "notification_type": "FORECASTED"})
    return out


def topic_policy(topic_arn: str, account: str) -> str:
    """AWS Budgets may publish to the topic, for this account's budgets only
    (docs.aws.amazon.com/cost-management/latest/userguide/budgets-sns-policy.html)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "BudgetsPublish",
                    "Effect": "Allow",
                    "Principal": {"Service": "budgets.amazonaws.com"},
                    "Action": "SNS:Publish",
                    "Resource": topic_arn,
                    "Condition": {"StringEquals": {"aws:SourceAccount": account}},
                }
            ],
        }
    )


def topic_key_policy(key_arn: str) -> dict[str, Any]:
    """The topic's key: the account administers it; AWS Budgets may encrypt messages to the topic."""
    _, account = kms_policy.arn_account(key_arn)
    return kms_policy.key_policy(
        key_arn,
        "ekstrain-budget-topic",
        {
            "Sid": "BudgetsEncrypt",
            "Effect": "Allow",
            "Principal": {"Service": "budgets.amazonaws.com"},
            "Action": ["kms:GenerateDataKey*", "kms:Decrypt"],
            "Resource": "*",
            "Condition": {"StringEquals": {"aws:SourceAccount": account}},
        },
    )


@dataclass(frozen=True, kw_only=True)
class CostPlan:
    cluster_name: str
    stack: str
    budget_name: str
    monthly_limit_usd: float
    notifications: list[dict[str, Any]]
    emails: list[str]
    tag_keys: tuple[str, ...]
    opencost_values: dict[str, Any] | None
    pricing_configmap: dict[str, Any] | None
    dashboard: dict[str, Any] | None


def plan(cfg: StackConfig, stack: str) -> CostPlan:
    opencost = cfg.cost.opencost and cfg.observability.enabled
    return CostPlan(
        cluster_name=cfg.cluster.name,
        stack=stack,
        budget_name=f"{cfg.cluster.name}-monthly",
        monthly_limit_usd=monthly_limit_usd(cfg),
        notifications=notifications(cfg),
        emails=list(cfg.cost.budget.notify_emails),
        # Activated in Cost Explorer only in a later `up` that declares the keys billed (a first `up` cannot).
        tag_keys=spend.COST_ALLOCATION_TAGS if cfg.cost.activate_cost_allocation_tags else (),
        opencost_values=chart_values(cfg) if opencost else None,
        pricing_configmap=pricing_configmap(cfg) if opencost else None,
        dashboard=dashboard(cfg) if opencost else None,
    )
