"""Prometheus volume sizing from retention, scrape interval and node counts (pure).

One source for the render's values (``assembly/observability.py``) and the stack rules that refuse a
size beyond any EBS volume (``stacks/rules/quotas.py``).
"""

from __future__ import annotations

import math

# Prometheus sizing (prometheus.io/docs/prometheus/latest/storage: ~1-2 bytes per sample on disk).
BYTES_PER_SAMPLE = 2.0
SERIES_PER_ACCELERATOR_NODE = 6000
"""node-exporter ~1.5k, kubelet/cAdvisor ~2.5k, DCGM or neuron-monitor ~1.5k, EFA ~0.5k."""
SERIES_PER_SYSTEM_NODE = 3000
SERIES_BASE = 20000
"""kube-state-metrics, API server, operators, Prometheus itself."""
HEADROOM = 1.5
"""WAL, compaction and head block on top of the retained blocks."""


def prometheus_storage_gib(
    retention_days: int, scrape_interval_s: int, accelerator_nodes: int, system_nodes: int
) -> int:
    """Volume size for ``retention_days`` of samples from every node the stack can have, rounded up to 10 GiB."""
    series = accelerator_nodes * SERIES_PER_ACCELERATOR_NODE + system_nodes * SERIES_PER_SYSTEM_NODE + SERIES_BASE
    data = series * (86400 / scrape_interval_s) * retention_days * BYTES_PER_SAMPLE * HEADROOM
    return max(10, math.ceil(data / 2**30 / 10) * 10)


def active_series(accelerator_nodes: int, system_nodes: int) -> int:
    """Series Prometheus holds in its head block when every node the stack can have is up."""
    return accelerator_nodes * SERIES_PER_ACCELERATOR_NODE + system_nodes * SERIES_PER_SYSTEM_NODE + SERIES_BASE


HEAD_BYTES_PER_SERIES = 8 * 1024
"""Prometheus memory per active series: about 3-4 KiB for the head block's series, labels and chunks (Prometheus
tsdb docs/format and Brian Brazil, "How much RAM does Prometheus 2.x need for cardinality and ingestion?",
robustperception.io, 2018), doubled for the Go heap's GOGC=100 growth and query working memory."""
PROMETHEUS_MIN_MEMORY_GIB = 1


def prometheus_memory_gib(accelerator_nodes: int, system_nodes: int) -> int:
    """Prometheus's memory request for the stack's largest fleet, rounded up to a GiB; its limit is twice that
    (compaction and WAL replay after a restart peak above the steady head)."""
    need = active_series(accelerator_nodes, system_nodes) * HEAD_BYTES_PER_SERIES / 2**30
    return max(PROMETHEUS_MIN_MEMORY_GIB, math.ceil(need))


AMP_INGEST_TIERS_USD_PER_10M = ((2e9, 0.90), (250e9, 0.35), (float("inf"), 0.16))
"""Amazon Managed Service for Prometheus metric-sample ingestion, USD per 10 million samples per month by tier: the
first 2 billion, the next 250 billion, beyond (aws.amazon.com/prometheus/pricing, us-east-1/us-west-2 list prices
as read December 2026; storage $0.03/GB-month and queries $0.10 per billion samples processed come on top)."""


def samples_per_month(series: int, scrape_interval_s: int, days: float = 30) -> float:
    """Samples ``series`` produce in a month at one sample per scrape."""
    return series * days * 86400 / scrape_interval_s


def amp_ingestion_usd(samples: float) -> float:
    """Monthly AMP ingestion charge for ``samples`` samples (:data:`AMP_INGEST_TIERS_USD_PER_10M`)."""
    total, left = 0.0, samples
    for size, price in AMP_INGEST_TIERS_USD_PER_10M:
        take = min(left, size)
        total += take / 1e7 * price
        left -= take
        if left <= 0:
            break
    return total
