"""Offline scheduling simulation: would each workload start on an empty cluster of this stack?

Pure logic over plain dicts (no Pulumi): the rendered NodePools/EC2NodeClasses, DaemonSets, Volcano's
scheduler config and Queues, Slinky NodeSets, and the workload objects. ``ekstrain simulate``
(ekstrain/cli/simulate.py) is the CLI.
"""

from ekstrain.simulate.engine import Blocked, Cluster, simulate

__all__ = ["Blocked", "Cluster", "simulate"]
