"""Elastic Slurm: KEDA scales each Slinky NodeSet from Slurm's own queue, so no one scales a NodeSet by hand.

As Slinky documents (slurm-operator v1.2.1 docs/usage/autoscaling.md): slurmctld exports Slurm's metrics
(``controller.metrics.enabled`` makes the operator write ``MetricsType=metrics/openmetrics``:
internal/builder/controllerbuilder/controller_config.go), Prometheus scrapes them through the chart's
ServiceMonitor, and one KEDA ScaledObject per NodeSet targets the NodeSet's scale subresource with a Prometheus
trigger, ``idleReplicaCount: 0`` and ``maxReplicaCount`` the partition's maxNodes.

The trigger asks for the nodes the partition's jobs need, not Slinky's example count of pending jobs:

    nodes allocated or mixed + the most nodes one pending (not held) job asks for

(Slurm metrics, https://slurm.schedmd.com/metrics.html, /metrics/partitions: ``slurm_partition_nodes_alloc``,
``slurm_partition_nodes_mixed``, ``slurm_partition_jobs_min_job_nodes_nohold`` = the max of the min_nodes of
the partition's pending jobs excluding held ones). With ``metricType: AverageValue`` and threshold 1 the HPA
wants ceil(metric / 1) replicas (Kubernetes HPA algorithm: desired = ceil(current x metric / (target x current))
for an AverageValue target), so an 8-node sbatch on an empty partition scales its NodeSet 0 -> 8 in one step,
and a second job is added when it becomes the largest pending one. When no node is busy and nothing is pending
the trigger is inactive (metric 0 <= activationThreshold 0) and, after ``cooldownPeriod``, KEDA scales the
NodeSet to ``idleReplicaCount`` 0 (KEDA scaledobject spec). Scale-in never kills a job: the operator drains the
Slurm node of a condemned pod and deletes it only once drained (internal/controller/nodeset/nodeset_sync.go
``processCondemned``), and Karpenter then consolidates the empty node.

``schedulers.slurm.nodesetReplicas`` is the floor (``minReplicaCount``); with a floor of 0 the NodeSet idles at
0 (KEDA needs ``idleReplicaCount`` < ``minReplicaCount``, so minReplicaCount is 1 once active).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ekstrain.assembly import observability
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

KEDA_NAMESPACE = "keda"
KEDA_RELEASE = "keda"
SCALED_OBJECT_API = "keda.sh/v1alpha1"
NODESET_API = "slinky.slurm.net/v1beta1"
WORKER_PREFIX = "slurm-worker"
"""The slurm chart names each NodeSet ``<release>-worker-<key>`` (templates/nodeset/nodeset-cr.yaml, release
``slurm``); the key is the partition name (assembly/schedulers/slurm.py)."""
POLLING_SECONDS = 30
"""KEDA's default pollingInterval (30 s), written out: how soon an sbatch is seen (the chart's ServiceMonitor
scrapes every 30 s too)."""
COOLDOWN_SECONDS = 300
"""KEDA's default cooldownPeriod: how long the queue stays empty before the NodeSet goes to 0."""
PROMETHEUS_PORT = 9090


def prometheus_url() -> str:
    """kube-prometheus-stack's Prometheus Service (``<release>-prometheus``, port 9090; ``ekstrain:observability``)."""
    return f"http://{observability.RELEASE}-prometheus.{observability.NAMESPACE}.svc:{PROMETHEUS_PORT}"


def nodes_needed_query(partition: str) -> str:
    sel = f'{{partition="{partition}"}}'
    return (
        f"(max(slurm_partition_nodes_alloc{sel}) or vector(0))"
        f" + (max(slurm_partition_nodes_mixed{sel}) or vector(0))"
        f" + (max(slurm_partition_jobs_min_job_nodes_nohold{sel}) or vector(0))"
    )


def nodeset_name(partition: str) -> str:
    return f"{WORKER_PREFIX}-{partition}"


def scaled_object(cfg: StackConfig, p: PartitionFacts, namespace: str) -> dict[str, Any]:
    floor = cfg.schedulers.slurm.nodeset_replicas.get(p.name, p.config.min_nodes)
    bounds: dict[str, Any] = {"minReplicaCount": floor} if floor > 0 else {"idleReplicaCount": 0, "minReplicaCount": 1}
    return {
        "apiVersion": SCALED_OBJECT_API,
        "kind": "ScaledObject",
        "metadata": {"name": nodeset_name(p.name), "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": NODESET_API, "kind": "NodeSet", "name": nodeset_name(p.name)},
            **bounds,
            "maxReplicaCount": p.config.max_nodes,
            "pollingInterval": POLLING_SECONDS,
            "cooldownPeriod": COOLDOWN_SECONDS,
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": prometheus_url(),
                        "query": nodes_needed_query(p.name),
                        "threshold": "1",
                        "activationThreshold": "0",
                    },
                }
            ],
        },
    }


def scaled_objects(cfg: StackConfig, namespace: str) -> list[dict[str, Any]]:
    """One ScaledObject per NodeSet (every partition has one) when ``schedulers.slurm.autoscale``."""
    if not (cfg.schedulers.slurm.enabled and cfg.schedulers.slurm.autoscale):
        return []
    return [scaled_object(cfg, p, namespace) for p in partition_facts(cfg)]


def controller_metrics(cfg: StackConfig) -> dict[str, Any]:
    """``controller.metrics`` of the slurm chart: slurmctld's OpenMetrics endpoints and their ServiceMonitor."""
    if not cfg.schedulers.slurm.autoscale:
        return {}
    return {"metrics": {"enabled": True, "serviceMonitor": {"enabled": True}}}


def keda_values() -> dict[str, Any]:
    """KEDA's operator, metrics API server and webhooks on the system nodes (the chart's defaults request
    100m/100Mi each; values.yaml ``resources``)."""
    # image.pullPolicy: the chart's Always re-pulls pinned tags on every start (values.yaml); IfNotPresent.
    return {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "image": {"pullPolicy": "IfNotPresent"}}
