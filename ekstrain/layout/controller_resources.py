"""Requests (and memory limits) of the platform's controllers, set through each chart's values.

Without requests a pod is BestEffort: the kubelet evicts it first under node pressure and the scheduler
places it with no room reserved, so on the fixed system nodes a launcher or Ray head can starve Argo CD,
the hub or cert-manager. Sizes are a controller's steady use on a cluster of this platform's
scale (tens of nodes, a few hundred pods) with headroom; the memory limit stops a leak from taking the
node. CPU is not limited (no throttling of reconcile loops). ``infra/verify/requests.py`` checks every
rendered Deployment, StatefulSet and DaemonSet container has cpu and memory requests.
"""

from __future__ import annotations

from typing import Any


def sized(cpu: str, memory: str, memory_limit: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory_limit}}


SMALL = sized("20m", "64Mi", "128Mi")
"""Sidecars, webhooks and per-node plugins."""
MEDIUM = sized("100m", "256Mi", "512Mi")
"""Single-purpose operators (cert-manager, Slurm operator, Trainer, Prometheus operator)."""
LARGE = sized("250m", "1Gi", "2Gi")
"""Controllers that cache every object they manage (Argo CD's application controller)."""
