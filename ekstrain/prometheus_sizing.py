"""Prometheus volume sizing from retention, scrape interval and node counts (pure).

One source for the render's values (``assembly/observability.py``) and the stack rules that refuse a
size beyond any EBS volume (``stacks/rules.py``).
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
