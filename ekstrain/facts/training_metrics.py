"""The progress metrics a training job exports, and how Prometheus finds them: the one place job templates,
the PodMonitor and the alerts (``ekstrain.assembly.alerts``) take these names from. docs/alerts.md documents
the contract for a training script.

A training process (rank 0 is enough; every rank may) serves, in the Prometheus text format on
``http://<pod>:PORT/metrics``, three gauges (no labels of their own; Prometheus adds the pod's namespace,
pod, node and the job's ``ekstrain.io/job`` label as ``training_job``):

- ``LAST_STEP``: Unix time (seconds) the last optimizer step finished. Set it to the process start time
  at start-up, so a job that never reaches its first step is seen as stuck too.
- ``LAST_CHECKPOINT``: Unix time the last checkpoint was completely written (every shard on FSx). At
  start-up: the time of the checkpoint it resumed from, or the process start time without one.
- ``CHECKPOINT_INTERVAL``: the checkpoint interval the job intends, in seconds (what the staleness alert
  compares the checkpoint's age with).

With ``prometheus_client``::

    from prometheus_client import Gauge, start_http_server
    start_http_server(int(os.environ.get("EKSTRAIN_METRICS_PORT", "9808")))
    step = Gauge("ekstrain_training_last_step_timestamp_seconds", "last finished optimizer step")
    step.set_to_current_time()   # at start, then after every step

The pod declares the port by name (``PORT_NAME``) so the PodMonitor selects it; a job without the port
is simply not scraped (and raises none of the job-progress alerts).
"""

from __future__ import annotations

import re
from typing import Any

from ekstrain.facts import names

LAST_STEP = "ekstrain_training_last_step_timestamp_seconds"
LAST_CHECKPOINT = "ekstrain_training_last_checkpoint_timestamp_seconds"
CHECKPOINT_INTERVAL = "ekstrain_training_checkpoint_interval_seconds"

PORT = 9808
"""Beside the EFA exporter's 9809; the process reads it from ``PORT_ENV``."""
PORT_NAME = "ekstrain-metrics"
PORT_ENV = "EKSTRAIN_METRICS_PORT"
PATH = "/metrics"
JOB_LABEL = "ekstrain.io/job"
"""The pod label every job template sets to the job's name (ekstrain.assembly.jobs.resolve.JOB_LABEL)."""
JOB_TARGET_LABEL = "training_job"
"""The label the PodMonitor copies ``JOB_LABEL`` into (``job`` is Prometheus's own: the scrape job)."""
POD_MONITOR = "ekstrain-training"


def container_port() -> dict[str, Any]:
    """The ``ports`` entry a training container adds to be scraped."""
    return {"name": PORT_NAME, "containerPort": PORT, "protocol": "TCP"}


def env() -> list[dict[str, str]]:
    """The env entry that tells the training process which port to serve."""
    return [{"name": PORT_ENV, "value": str(PORT)}]


def _pod_label_meta(label: str) -> str:
    """Prometheus's Kubernetes discovery label for a pod label (every character outside [a-zA-Z0-9_] becomes _)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def pod_monitor(scrape_interval: str) -> dict[str, Any]:
    """``prometheus.additionalPodMonitors`` entry of kube-prometheus-stack: every pod of the training namespace
    with a job label, on the named port."""
    return {
        "name": POD_MONITOR,
        "namespaceSelector": {"matchNames": [names.TRAINING_NAMESPACE]},
        "selector": {"matchExpressions": [{"key": JOB_LABEL, "operator": "Exists"}]},
        "podMetricsEndpoints": [
            {
                "port": PORT_NAME,
                "path": PATH,
                "interval": scrape_interval,
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"},
                    {"sourceLabels": [_pod_label_meta(JOB_LABEL)], "targetLabel": JOB_TARGET_LABEL},
                ],
            }
        ],
    }
