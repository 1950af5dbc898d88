"""Alerts on the signals that take a training node or job out of service: PrometheusRule groups as data.

:func:`rule_groups` is what the observability component installs (kube-prometheus-stack's
``additionalPrometheusRulesMap``, so the release that brings the Prometheus Operator CRDs creates the
PrometheusRule) and what tests/assembly/test_alerts.py runs through the real ``promtool check rules`` and
``promtool test rules``. Each alert's runbook is the section of docs/alerts.md named after it.

Where each signal comes from:

- GPU: dcgm-exporter 4.8.1's default counters (its chart's ``exporter-metrics-config-map``):
  ``DCGM_FI_DEV_XID_ERRORS`` (gauge, the last XID), ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter) and
  ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (gauge). The ECC volatile counters (``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL``) are
  commented out of that list: on A100/H100/H200/B200 an uncorrectable ECC error shows as XID 94/95 and a row
  remapped for it, which the defaults carry.
- Neuron: neuron-monitor's Prometheus front end (aws-neuron-sdk, neuron-monitor-prometheus.py):
  ``hardware_ecc_events_total{event_type}`` and ``execution_errors_total{error_type}``.
- EFA: the project's exporter (ekstrain/agents/efa_exporter.py): ``efa_hw_counter_total{device,port,counter}`` with
  the EFA driver's hw_counters (linux drivers/infiniband/hw/efa/efa_verbs.c: ``rdma_read_wr_err``,
  ``rdma_write_wr_err``, ``retrans_timeout_events``, ``unresponsive_remote_events``,
  ``impaired_remote_conn_events``, device-wide ``cmds_err``) and ``efa_devices``.
- Nodes and pods: kube-state-metrics (``kube_node_status_condition``, ``kube_node_spec_taint``,
  ``kube_node_labels`` with the labels :data:`NODE_LABELS_ALLOWLIST` lets through,
  ``kube_pod_container_status_restarts_total``, ``kube_job_status_failed``, and ``kube_pod_created`` /
  ``kube_job_created``, whose value changes when a controller recreates a pod or Job under the same name: how
  Volcano Job and JobSet restarts show without metrics of their own controllers, which nothing scrapes).
- Job progress: the gauges of ekstrain/facts/training_metrics.py, scraped by its PodMonitor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.facts import catalog, names, training_metrics
from ekstrain.layout import efa
from ekstrain.payloads import health_gate

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

RULES_NAME = "ekstrain-training"
"""Key of ``additionalPrometheusRulesMap``; the chart names the PrometheusRule ``<release>-<key>``."""
RUNBOOK_DOC = "docs/alerts.md"

CRITICAL = "critical"
WARNING = "warning"

PREFLIGHT_TAINT = names.STARTUP_TAINT_KEY
"""The startup taint of accelerator NodePools that the pre-flight gate removes (ekstrain/payloads/health_gate.py)."""
PREFLIGHT_ALERT_MINUTES = max(15, 3 * max(health_gate.gate_minutes(f) for f in (catalog.GPU, catalog.TRAINIUM)))
"""A node still carrying the startup taint this long: the gate hangs or its checks keep failing. Three times the
longest gate (GPU: DCGM diag level 2, the counts and a single-node collective), and at least 15 minutes, since a
new node first pulls the gate's images (the DCGM image is several GB)."""

NODE_AGENT_CONDITIONS: dict[str, int] = health_gate.REPAIR_MINUTES
"""Node conditions the EKS node monitoring agent sets False on a fault -> minutes Karpenter's NodeRepair
tolerates them before it replaces the node (one table: ekstrain/payloads/health_gate.py ``REPAIR_MINUTES``)."""
NOT_READY_MINUTES = 5
"""Ready not True this long on a partition node: the gang on it is stalled (Karpenter's own repair of a NotReady
node waits 30 min, karpenter core pkg/controllers/node/health)."""

GPU_FATAL_XIDS: tuple[int, ...] = (48, 61, 62, 64, 74, 79, 94, 95, 119, 120, 140)
"""XIDs after which the GPU must leave service (drain, reset or replace), from NVIDIA's XID catalog
(docs.nvidia.com/deploy/xid-errors): 48 double-bit ECC, 61/62 internal micro-controller halt, 64 row-remapper
failure, 74 NVLink error, 79 fallen off the bus, 94/95 contained/uncontained ECC error, 119/120 GSP timeout/error,
140 unrecovered ECC. Others (13, 31, 43, 45: mostly the application's fault) raise the warning."""
ERROR_WINDOW = "15m"
"""Range of the ``increase()`` of the error counters, and how long an alert on one error event stays firing."""

EFA_ERROR_COUNTERS: tuple[str, ...] = (
    "rdma_read_wr_err",
    "rdma_write_wr_err",
    "retrans_timeout_events",
    "unresponsive_remote_events",
    "impaired_remote_conn_events",
    "cmds_err",
)
"""EFA hw_counters that count failures (linux drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_PORT_STATS /
EFA_DEFINE_DEVICE_STATS; the retransmit and remote ones since linux 6.6, absent on older kernels)."""
EFA_MISSING_MINUTES = 5

NODE_LABELS_ALLOWLIST = (names.PARTITION_LABEL, "node.kubernetes.io/instance-type")
"""Node labels kube-state-metrics exports on ``kube_node_labels`` (``--metric-labels-allowlist``): the alerts
name a node's partition and compare its EFA devices with its instance type's layout."""
PARTITION = "partition"
"""The label the node alerts carry the node's partition in."""

RESTART_WINDOW = "15m"
STUCK_AFTER_MINUTES = 30
"""No optimizer step for this long: PyTorch's NCCL watchdog kills a rank after its collective timeout (10 min by
default, torch.distributed init_process_group) and prod's checkpoint save takes about 5 min; a job that is
still silent after both is hung somewhere the watchdog does not see (data loading, storage, a deadlock)."""
CHECKPOINT_STALE_FACTOR = 2
"""The last checkpoint is older than this many of the job's own checkpoint intervals: saves fail or are skipped."""


@dataclass(frozen=True, kw_only=True)
class Alert:
    name: str
    expr: str
    for_minutes: int
    severity: str
    summary: str
    """Annotation; may use ``{{ $labels.<name> }}`` and ``{{ $value }}`` only."""
    description: str

    def rule(self) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": f"{self.for_minutes}m",
            "labels": {"severity": self.severity},
            "annotations": {
                "summary": self.summary,
                "description": self.description,
                "runbook": f"{RUNBOOK_DOC}#{self.name.lower()}",
            },
        }


def node_label(label: str) -> str:
    """The label name kube-state-metrics gives a node label on ``kube_node_labels``."""
    return "label_" + "".join(c if c.isalnum() else "_" for c in label)


def with_partition(expr: str) -> str:
    """``expr`` (one series per ``node``) restricted to partition nodes, with their partition as ``partition``."""
    src = node_label(names.PARTITION_LABEL)
    nodes = f'max by (node, {src}) (kube_node_labels{{{src}!=""}})'
    return f'({expr}) * on (node) group_left ({PARTITION}) label_replace({nodes}, "{PARTITION}", "$1", "{src}", "(.+)")'


def _any_of(metric: str, values: tuple[int, ...]) -> str:
    return " or ".join(f"{metric} == {v}" for v in values)


def gpu_alerts() -> list[Alert]:
    xid = "DCGM_FI_DEV_XID_ERRORS"
    fatal = f"max by (node, gpu) ({_any_of(xid, GPU_FATAL_XIDS)})"
    return [
        Alert(
            name="GpuXidFatal",
            expr=fatal,
            for_minutes=0,
            severity=CRITICAL,
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} reported XID {{ $value }}",
            description="An XID after which the GPU must be drained and reset or replaced. The node monitoring agent "
            f"sets AcceleratedHardwareReady=False and Karpenter replaces the node after "
            f"{NODE_AGENT_CONDITIONS['AcceleratedHardwareReady']} minutes.",
        ),
        Alert(
            name="GpuXidError",
            expr=f"max by (node, gpu) ({xid} > 0) unless {fatal}",
            for_minutes=0,
            severity=WARNING,
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} reported XID {{ $value }}",
            description="A non-fatal XID: usually the application's (13, 31, 43, 45); read the job's log.",
        ),
        Alert(
            name="GpuUncorrectableEccError",
            expr=f"sum by (node, gpu) (increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[{ERROR_WINDOW}])) > 0",
            for_minutes=0,
            severity=CRITICAL,
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} remapped a row for an uncorrectable ECC error",
            description="Memory the GPU was using is lost; the remap takes effect at the next GPU reset. "
            "The job on the node must restart elsewhere.",
        ),
        Alert(
            name="GpuRowRemapFailure",
            expr="max by (node, gpu) (DCGM_FI_DEV_ROW_REMAP_FAILURE) > 0",
            for_minutes=0,
            severity=CRITICAL,
            summary="GPU {{ $labels.gpu }} of {{ $labels.node }} failed to remap a row",
            description="The GPU has run out of spare rows: it must be replaced (the node terminated).",
        ),
    ]


def neuron_alerts() -> list[Alert]:
    return [
        Alert(
            name="NeuronUncorrectableEccError",
            expr="sum by (node, neuron_device_index) (increase(hardware_ecc_events_total"
            f'{{event_type=~"mem_ecc_uncorrected|sram_ecc_uncorrected"}}[{ERROR_WINDOW}])) > 0',
            for_minutes=0,
            severity=CRITICAL,
            summary="Neuron device {{ $labels.neuron_device_index }} of {{ $labels.node }} had an uncorrectable "
            "ECC error",
            description="Device memory or SRAM lost data; the job on the node must restart elsewhere.",
        ),
        Alert(
            name="NeuronHardwareError",
            expr=f'sum by (node) (increase(execution_errors_total{{error_type="hardware"}}[{ERROR_WINDOW}])) > 0',
            for_minutes=0,
            severity=CRITICAL,
            summary="The Neuron runtime on {{ $labels.node }} reported hardware execution errors",
            description="neuron-monitor counted executions that failed with a hardware error.",
        ),
    ]


def efa_expected(cfg: StackConfig) -> dict[str, int]:
    """Instance type -> EFA devices its nodes have: the interfaces of the layout Karpenter attaches."""
    out: dict[str, int] = {}
    for p in cfg.partitions:
        if p.efa:
            for t in p.instance_types:
                out[t] = efa.efa_count(efa.efa_layout(catalog.get(t)))
    return dict(sorted(out.items()))


def efa_alerts(cfg: StackConfig) -> list[Alert]:
    itype = node_label("node.kubernetes.io/instance-type")
    expected = " or ".join(
        f'max by (node) (kube_node_labels{{{itype}="{t}"}}) * {n}' for t, n in efa_expected(cfg).items()
    )
    counters = "|".join(EFA_ERROR_COUNTERS)
    return [
        Alert(
            name="EfaDeviceMissing",
            expr=f"max by (node) (efa_devices) < on (node) ({expected})",
            for_minutes=EFA_MISSING_MINUTES,
            severity=CRITICAL,
            summary="{{ $labels.node }} has {{ $value }} EFA devices, fewer than its instance type attaches",
            description="An EFA interface is gone: collectives run slower or fail. The node should leave service.",
        ),
        Alert(
            name="EfaErrors",
            expr=f'sum by (node, device, counter) (increase(efa_hw_counter_total{{counter=~"{counters}"}}'
            f"[{ERROR_WINDOW}])) > 0",
            for_minutes=0,
            severity=WARNING,
            summary="EFA device {{ $labels.device }} of {{ $labels.node }} counts {{ $labels.counter }}",
            description="Work-request errors, retransmit timeouts or unresponsive peers on an EFA device.",
        ),
    ]


def node_alerts() -> list[Alert]:
    hw = "AcceleratedHardwareReady"
    others = "|".join(c for c in NODE_AGENT_CONDITIONS if c != hw)
    ready = 'max by (node) (kube_node_status_condition{condition="Ready",status="true"}) == 0'
    return [
        Alert(
            name="TrainingNodeNotReady",
            expr=with_partition(ready),
            for_minutes=NOT_READY_MINUTES,
            severity=CRITICAL,
            summary="{{ $labels.node }} of partition {{ $labels.partition }} is not Ready",
            description=f"Ready has not been True for {NOT_READY_MINUTES} minutes: the jobs on it are stalled.",
        ),
        Alert(
            name="NodeAcceleratedHardwareNotReady",
            expr=with_partition(f'max by (node) (kube_node_status_condition{{condition="{hw}",status="false"}}) == 1'),
            for_minutes=1,
            severity=CRITICAL,
            summary="{{ $labels.node }} of partition {{ $labels.partition }}: " + hw + "=False",
            description="The node monitoring agent found a GPU, Neuron or EFA fault. Karpenter replaces the node "
            f"after {NODE_AGENT_CONDITIONS[hw]} minutes.",
        ),
        Alert(
            name="NodeHealthConditionFalse",
            expr=with_partition(
                f'max by (node, condition) (kube_node_status_condition{{condition=~"{others}",status="false"}}) == 1'
            ),
            for_minutes=5,
            severity=WARNING,
            summary="{{ $labels.node }} of partition {{ $labels.partition }}: {{ $labels.condition }}=False",
            description="The node monitoring agent found a kernel, network, storage or container-runtime fault. "
            f"Karpenter replaces the node after {NODE_AGENT_CONDITIONS['KernelReady']} minutes.",
        ),
        Alert(
            name="NodePoolBreakerOpen",
            expr=with_partition(
                f'max by (node) (kube_node_spec_taint{{key="{health_gate.UNHEALTHY_TAINT_KEY}",'
                f'value="{health_gate.BREAKER_TAINT_VALUE}"}}) > 0'
            ),
            for_minutes=0,
            severity=CRITICAL,
            summary="The health gate's breaker holds the NodePool of partition {{ $labels.partition }} "
            "({{ $labels.node }} kept)",
            description=f"{health_gate.BREAKER_FAILURES} nodes of the pool failed their pre-flight within "
            f"{health_gate.BREAKER_WINDOW_SECONDS // 60} minutes: the guard set the NodePool's limits.nodes to "
            f"{health_gate.HELD_LIMIT} and keeps the failed node instead of recycling it. Nothing launches in that "
            "pool until it is resumed.",
        ),
        Alert(
            name="NodePreflightTooLong",
            expr=with_partition(f'max by (node) (kube_node_spec_taint{{key="{PREFLIGHT_TAINT}"}}) > 0'),
            for_minutes=PREFLIGHT_ALERT_MINUTES,
            severity=WARNING,
            summary="{{ $labels.node }} of partition {{ $labels.partition }} is still in pre-flight",
            description=f"The startup taint {PREFLIGHT_TAINT} is still on the node after {PREFLIGHT_ALERT_MINUTES} "
            "minutes: the gate hangs or keeps failing, and the node is paid for without taking work.",
        ),
    ]


def job_alerts() -> list[Alert]:
    ns = names.TRAINING_NAMESPACE
    job = training_metrics.JOB_TARGET_LABEL
    step = f"max by (namespace, {job}) ({training_metrics.LAST_STEP})"
    saved = f"max by (namespace, {job}) ({training_metrics.LAST_CHECKPOINT})"
    interval = f"max by (namespace, {job}) ({training_metrics.CHECKPOINT_INTERVAL})"
    return [
        Alert(
            name="TrainingPodRestarted",
            expr=f'sum by (namespace, pod) (increase(kube_pod_container_status_restarts_total{{namespace="{ns}"}}'
            f"[{RESTART_WINDOW}])) > 0",
            for_minutes=0,
            severity=WARNING,
            summary="Training pod {{ $labels.pod }} restarted",
            description="A container of a training pod restarted in place (MPIJob and PyTorchJob workers restart "
            "on the same node): one retry of the job's budget is spent.",
        ),
        Alert(
            name="TrainingJobPodFailed",
            expr=f'sum by (namespace, job_name) (increase(kube_job_status_failed{{namespace="{ns}"}}'
            f"[{RESTART_WINDOW}])) > 0",
            for_minutes=0,
            severity=WARNING,
            summary="A pod of Job {{ $labels.job_name }} failed",
            description="A pod of a batch Job in the training namespace (a JobSet's or TrainJob's Job, a Trainium "
            "Job, an MPIJob launcher) failed: one of its backoffLimit retries is spent.",
        ),
        Alert(
            name="TrainingPodRecreated",
            expr=f'changes(max by (namespace, pod) (kube_pod_created{{namespace="{ns}"}})[{RESTART_WINDOW}:1m]) > 0',
            for_minutes=0,
            severity=WARNING,
            summary="Training pod {{ $labels.pod }} was deleted and created again",
            description="A pod came back under the same name with a new creation time: a Volcano Job restart "
            "(its pods are <job>-<task>-<index>) or an MPIJob worker the operator recreated.",
        ),
        Alert(
            name="TrainingJobRecreated",
            expr=f'changes(max by (namespace, job_name) (kube_job_created{{namespace="{ns}"}})[{RESTART_WINDOW}:1m])'
            " > 0",
            for_minutes=0,
            severity=WARNING,
            summary="Job {{ $labels.job_name }} was deleted and created again",
            description="A batch Job came back under the same name: a JobSet restart (a TrainJob's or a "
            "ClusterTrainingRuntime's JobSet recreates all its Jobs, <jobset>-<replicatedJob>-<index>).",
        ),
        Alert(
            name="TrainingJobStuck",
            expr=f"time() - {step} > {STUCK_AFTER_MINUTES * 60}",
            for_minutes=0,
            severity=CRITICAL,
            summary="Training job {{ $labels." + job + f" }}}} has made no step for {STUCK_AFTER_MINUTES} minutes",
            description="Its pods are still scraped but the last optimizer step is old: the job hangs while "
            "holding every accelerator of its nodes.",
        ),
        Alert(
            name="TrainingCheckpointStale",
            expr=f"time() - {saved} > {CHECKPOINT_STALE_FACTOR} * {interval}",
            for_minutes=0,
            severity=WARNING,
            summary="Training job {{ $labels." + job + " }} has not checkpointed for "
            f"{CHECKPOINT_STALE_FACTOR} intervals",
            description="A fault now would lose more work than the job planned for: saves fail or are skipped.",
        ),
    ]


def rule_groups(cfg: StackConfig) -> list[dict[str, Any]]:
    """The rule groups for the stack's hardware (a group's alerts only where its exporter runs)."""
    families: list[tuple[str, list[Alert]]] = []
    if any(p.accelerator == catalog.GPU for p in cfg.partitions):
        families.append(("gpu", gpu_alerts()))
    if any(p.accelerator == catalog.TRAINIUM for p in cfg.partitions):
        families.append(("neuron", neuron_alerts()))
    if any(p.efa for p in cfg.partitions):
        families.append(("efa", efa_alerts(cfg)))
    families += [("nodes", node_alerts()), ("jobs", job_alerts())]
    return [{"name": f"ekstrain-{family}", "rules": [a.rule() for a in alerts]} for family, alerts in families]


def alerts(cfg: StackConfig) -> list[dict[str, Any]]:
    """Every alerting rule of :func:`rule_groups`."""
    return [r for g in rule_groups(cfg) for r in g["rules"]]


def prometheus_rules_map(cfg: StackConfig) -> dict[str, Any]:
    """kube-prometheus-stack's ``additionalPrometheusRulesMap``."""
    return {RULES_NAME: {"groups": rule_groups(cfg)}}
