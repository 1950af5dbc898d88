"""DaemonSets that must have a pod on every node kind do: the log agent ships the kernel's XID lines and
the workload's output of every node, so a node kind it cannot land on is a node whose logs are lost.

Node kinds are what the stack can launch: every (NodePool, instance type) as the simulator builds them from the
recorded NodePools and EC2NodeClasses (labels as Karpenter sets them, the pool's ``taints`` and ``startupTaints``),
and the managed node groups (their labels and taints). A DaemonSet lands on a kind when kube-scheduler's filters pass
(``ekstrain/simulate/match.py``: node selector, required node affinity, taints and tolerations), the same rules the
simulator plays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ekstrain.assembly import logs
from ekstrain.infra import offline
from ekstrain.infra.verify import Check
from ekstrain.simulate import match
from ekstrain.simulate.nodes import nodes_of

CHECK_NAME = "node agents: a pod on every node kind"
EVERY_NODE = {(logs.NAMESPACE, logs.RELEASE)}
"""(namespace, name) of the DaemonSets that must run on every node."""
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"


def node_kinds(rec: offline.Recording) -> list[tuple[str, dict[str, set[str]], list[dict[str, Any]]]]:
    """(kind, labels, taints) of every node the stack can have."""
    classes = {r.inputs["metadata"]["name"]: {"spec": r.inputs.get("spec", {})} for r in rec.of_type(NODECLASS)}
    kinds = []
    for r in rec.of_type(NODEPOOL):
        pool = {"metadata": {"name": r.inputs["metadata"]["name"]}, "spec": r.inputs.get("spec", {})}
        startup = list(pool["spec"].get("template", {}).get("spec", {}).get("startupTaints") or [])
        for node in nodes_of(pool, classes):
            kinds.append((f"{node.pool}/{node.instance.name}", node.labels, [*node.taints, *startup]))
    effects = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
    for g in rec.of_type(NODEGROUP):
        labels = {k: {str(v)} for k, v in (g.inputs.get("labels") or {}).items()}
        taints = [
            {"key": t.get("key"), "value": t.get("value"), "effect": effects.get(t.get("effect", ""), t.get("effect"))}
            for t in g.inputs.get("taints") or []
        ]
        kinds.append((f"nodegroup/{g.inputs.get('nodeGroupName') or g.name}", labels, taints))
    return sorted(kinds, key=lambda k: k[0])  # the engine registers resources in no fixed order


def check(rec: offline.Recording, objects: Iterable[dict[str, Any]]) -> Check:
    c = Check(CHECK_NAME, what="DaemonSets")
    kinds = node_kinds(rec)
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") != "DaemonSet" or (meta.get("namespace"), meta.get("name")) not in EVERY_NODE:
            continue
        c.checked += 1
        pod = obj["spec"]["template"]["spec"]
        missed = [kind for kind, labels, taints in kinds if not match.lands(pod, labels, taints)]
        if missed:
            c.problems.append(
                f"DaemonSet {meta['namespace']}/{meta['name']} has no pod on {', '.join(missed)}: its node selector, "
                "affinity or tolerations exclude them (tolerate every taint: operator Exists)"
            )
    if not kinds:
        c.note = "no node kinds recorded"
    return c
