"""Empty-cluster scheduling: for every pod of every workload, a node Karpenter (or the system node group)
would give it, with Volcano admission and Slinky NodeSets in front. Rules and their upstream sources are
in nodes.py (Karpenter capacity), match.py (kube-scheduler filters) and volcano.py (admission)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ekstrain.simulate import match, volcano
from ekstrain.simulate.nodes import DEFAULT_MAX_PODS, Node
from ekstrain.simulate.quantity import parse, show
from ekstrain.simulate.workloads import QUEUE_ANNOTATION, PodGroup, Workload, expand
from ekstrain.workloads import registry

DEVICE_PLUGINS: dict[str, tuple[str, ...]] = {
    # container image fragment -> extended resources that DaemonSet's plugin advertises on its node
    "nvidia/k8s-device-plugin": ("nvidia.com/gpu",),
    "aws-efa-k8s-device-plugin": ("vpc.amazonaws.com/efa",),
    "neuron-device-plugin": ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "aws.amazon.com/neurondevice"),
}
EXTENDED = (
    "nvidia.com/gpu",
    "vpc.amazonaws.com/efa",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
)

ADDON_DAEMONSETS: tuple[tuple[str, dict[str, str]], ...] = (
    # EKS managed add-ons run on every node (tolerate all taints) but are not in the rendered manifests;
    # requests from their default manifests (vpc-cni aws-node, kube-proxy, ebs-csi-node x3 containers).
    ("aws-node", {"cpu": "25m"}),
    ("kube-proxy", {"cpu": "100m"}),
    ("ebs-csi-node", {"cpu": "30m", "memory": "120Mi"}),
)


@dataclass
class Cluster:
    nodes: list[Node]
    """Karpenter NodePool candidates and the system node group."""
    daemonsets: list[tuple[str, dict[str, Any]]]
    """(name, pod spec) of every rendered DaemonSet."""
    scheduler_config: dict[str, Any]
    queues: dict[str, dict[str, float]]
    """Volcano queue -> spec.capability."""
    runtimes: dict[str, dict[str, Any]]
    nodesets: dict[str, dict[str, Any]]
    """Slurm partition -> NodeSet object."""
    guarantees: dict[str, dict[str, float]] = field(default_factory=dict)
    """Volcano queue -> spec.guarantee.resource."""
    parents: dict[str, str] = field(default_factory=dict)
    """Volcano queue -> spec.parent (team queues under their partition's: assembly/schedulers/teams.py)."""
    controllers: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    """(Kind/name, replicas, pod spec) of the platform's Deployments and StatefulSets (the timeline places
    them first: they hold system-node room before any job arrives)."""
    crds: set[str] | None = None
    """``<plural>.<group>`` of the CRDs the stack installs; None: not known (every kind served)."""
    scale_nodesets: bool = False
    autoscaled: frozenset[str] = frozenset()
    """Partitions whose NodeSet a KEDA ScaledObject scales to what the Slurm queue needs (up to maxNodes)."""
    """Model the documented Slurm procedure: scale a partition's NodeSet to the job's nodes before sbatch."""
    gang_kinds: frozenset[str] = frozenset()
    """Kinds whose operator runs with Volcano gang scheduling (load.py reads the operators' flags)."""


@dataclass
class Blocked:
    workload: str
    role: str
    reason: str

    def line(self) -> str:
        return f"BLOCKED {self.workload} {self.role}: {self.reason}"


@dataclass
class Result:
    blocked: list[Blocked] = field(default_factory=list)
    started: list[str] = field(default_factory=list)


def _taint(t: dict[str, Any]) -> str:
    return f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"


def _ds_on(cluster: Cluster, node: Node) -> list[tuple[str, dict[str, Any]]]:
    return [(n, s) for n, s in cluster.daemonsets if match.lands(s, node.labels, node.taints)]


def free(cluster: Cluster, node: Node) -> dict[str, float]:
    """Allocatable minus DaemonSet requests (Karpenter's daemonset overhead); extended resources only
    where the DaemonSet of their device plugin runs."""
    out = dict(node.allocatable)
    landed = _ds_on(cluster, node)
    advertised = {
        r
        for _, s in landed
        for c in s.get("containers", [])
        for frag, res in DEVICE_PLUGINS.items()
        if frag in str(c.get("image", ""))
        for r in res
    }
    for r in EXTENDED:
        if r in out and r not in advertised:
            out[r] = 0.0
    for _, s in landed:
        for r, v in match.pod_requests(s).items():
            if r in out:
                out[r] -= v
    for _, addon in ADDON_DAEMONSETS:
        for r, q in addon.items():
            out[r] -= parse(q)
    out["pods"] = out.get("pods", float(DEFAULT_MAX_PODS)) - len(landed) - len(ADDON_DAEMONSETS)
    return out


def _shortfall(req: dict[str, float], avail: dict[str, float], node: Node) -> str | None:
    for r, v in sorted(req.items()):
        have = avail.get(r, 0.0)
        if v > have + 1e-9:
            if r in EXTENDED and node.allocatable.get(r, 0) > 0 and have == 0:
                return f"{r} {show(r, v)} requested but no device-plugin DaemonSet for it runs on {node.pool} nodes"
            return f"{r} {show(r, v)} > {show(r, have)} allocatable on {node.instance.name} ({node.pool})"
    return None


def per_node(req: dict[str, float], avail: dict[str, float]) -> int:
    counts = [math.floor(avail.get(r, 0.0) / v + 1e-9) for r, v in req.items() if v > 0]
    pods = int(avail.get("pods", DEFAULT_MAX_PODS))
    return min([*counts, pods]) if counts else pods


def place(cluster: Cluster, group: PodGroup) -> tuple[Node | None, str]:
    """The first node the group's pods fit, or None and why none does."""
    req = {**match.pod_requests(group.spec), "pods": 1.0}
    reasons: list[str] = []
    for node in cluster.nodes:
        s = group.spec
        if not match.selector_matches(s.get("nodeSelector") or {}, node.labels):
            continue
        if not match.affinity_matches(s.get("affinity"), node.labels):
            continue
        bad = match.untolerated(s.get("tolerations") or [], node.taints)
        if bad:
            reasons.append(f"{node.pool}/{node.instance.name}: untolerated taint {_taint(bad[0])}")
            continue
        short = _shortfall(req, free(cluster, node), node)
        if short:
            reasons.append(short)
            continue
        return node, ""
    if not reasons:
        sel = ", ".join(f"{k}={v}" for k, v in (group.spec.get("nodeSelector") or {}).items()) or "its affinity"
        return None, f"no NodePool or node group has a node matching {sel}"
    return None, reasons[0]


def _requests_total(groups: list[PodGroup]) -> dict[str, float]:
    total: dict[str, float] = {}
    for g in groups:
        for r, v in match.pod_requests(g.spec).items():
            total[r] = total.get(r, 0.0) + v * g.count
    return total


def _min_resources(w: Workload) -> dict[str, float]:
    """What Volcano's enqueue weighs for the workload's PodGroup: ``minResources`` as set, else every pod's
    requests (one pod's when the PodGroup's minMember is 1)."""
    if w.min_resources is not None:
        return {r: parse(v) for r, v in w.min_resources.items()}
    if not w.gang:
        return _requests_total([PodGroup(g.role, 1, g.spec) for g in w.groups[:1]])
    return _requests_total(w.groups)


def _replicas(ns: dict[str, Any]) -> int:
    return int(ns["spec"].get("replicas", 1) or 0)


def standing(cluster: Cluster, skip: str | None = None) -> list[tuple[PodGroup, Node]]:
    """The slurmd pods NodeSets keep running (``spec.replicas``) and the node each lands on: they hold
    their nodes whether or not Slurm has work, so every other workload sees the rest of the pool's limits.
    ``skip`` leaves out the partition whose Slurm job is being simulated (it runs on those pods)."""
    out = []
    for part, ns in sorted(cluster.nodesets.items()):
        group = PodGroup("slurmd", _replicas(ns), nodeset_pod(ns))
        if part == skip or group.count == 0:
            continue
        node, _ = place(cluster, group)
        if node is not None:
            out.append((group, node))
    return out


def _limits(cluster: Cluster, w: Workload, placed: list[tuple[PodGroup, Node]]) -> list[Blocked]:
    """NodePool spec.limits over the nodes the workload needs plus the nodes standing slurmd pods hold
    (karpenter pkg/controllers/provisioning: a NodeClaim whose capacity would exceed the pool's limits is
    not launched)."""
    use: dict[str, dict[str, float]] = {}
    placed = placed + standing(cluster, skip=str(w.slurm["partition"]) if w.slurm else None)
    for g, node in placed:
        if not node.pool_limits:
            continue
        fit = max(1, per_node({**match.pod_requests(g.spec), "pods": 1.0}, free(cluster, node)))
        n = math.ceil(g.count / fit)
        u = use.setdefault(node.pool, {})
        u["nodes"] = u.get("nodes", 0.0) + n
        for r, v in node.capacity.items():
            u[r] = u.get(r, 0.0) + n * v
    out = []
    for pool, u in use.items():
        limits = next(node.pool_limits for _, node in placed if node.pool == pool)
        for r, lim in sorted(limits.items()):
            if u.get(r, 0.0) > lim + 1e-9:
                out.append(Blocked(w.name, "*", f"NodePool {pool} limit {r}={lim:g} < {u[r]:g} needed"))
    return out


def _nodeset_groups(cluster: Cluster, w: Workload) -> tuple[list[PodGroup], list[str]]:
    part, nodes = w.slurm.get("partition"), int(w.slurm.get("nodes", 1))
    ns = cluster.nodesets.get(str(part))
    if ns is None:
        return [], [f"no Slinky NodeSet serves Slurm partition {part!r}"]
    problems = []
    replicas = _replicas(ns)
    if replicas < nodes and not (cluster.scale_nodesets or part in cluster.autoscaled):
        problems.append(
            f"NodeSet {ns['metadata']['name']} has {replicas} replicas < {nodes} nodes asked and nothing scales it: "
            "Slurm holds the job (schedulers.slurm.autoscale: true, or scale it by hand: kubectl scale nodeset)"
        )
    # The job runs on the NodeSet's pods: all of them hold nodes (scaled up to the job's size if asked).
    return [PodGroup("slurmd", max(nodes, replicas), nodeset_pod(ns))], problems


def nodeset_queue(ns: dict[str, Any]) -> str | None:
    """The Volcano queue of a NodeSet's slurmd pods: its pod template's ``scheduling.volcano.sh/queue-name`` when
    the pods are scheduled by Volcano (assembly/schedulers/slurm.py), else None (they bypass the queues)."""
    template = ns["spec"].get("template") or {}
    if (template.get("spec") or {}).get("schedulerName") != "volcano":
        return None
    return str(((template.get("metadata") or {}).get("annotations") or {}).get(QUEUE_ANNOTATION, "default"))


def nodeset_pod(ns: dict[str, Any]) -> dict[str, Any]:
    """The slurmd pod a Slinky NodeSet creates: its template plus the slurmd container (slurm-operator
    internal/builder/nodeset: template.spec + spec.slurmd as container ``slurmd``, spec.logfile sidecar)."""
    spec = ns["spec"]
    pod = dict((spec.get("template") or {}).get("spec") or {})
    slurmd = {
        "name": "slurmd",
        "image": spec.get("slurmd", {}).get("image"),
        "resources": spec.get("slurmd", {}).get("resources") or {},
    }
    logfile = {
        "name": "logfile",
        "image": spec.get("logfile", {}).get("image"),
        "resources": spec.get("logfile", {}).get("resources") or {},
    }
    pod["containers"] = [slurmd, logfile]
    return pod


def nodeset_workloads(cluster: Cluster) -> list[dict[str, Any]]:
    """Each Slinky NodeSet as a workload of its slurmd pods (at least one: what scaling it up creates)."""
    return [
        {
            "kind": "Pod",
            # the template's metadata too: its queue-name annotation puts the pod in its partition's queue
            "metadata": {
                **((ns["spec"].get("template") or {}).get("metadata") or {}),
                "name": f"{ns['metadata']['name']}-0",
            },
            "spec": nodeset_pod(ns),
        }
        for ns in cluster.nodesets.values()
    ]


def unserved(cluster: Cluster, obj: dict[str, Any]) -> str | None:
    """Why no controller acts on ``obj``: the stack installs no CRD for its kind (the API server would
    refuse the object, and nothing would create its pods)."""
    crd = registry.crd_of(obj)
    if cluster.crds is None or crd is None or crd in cluster.crds:
        return None
    return (
        f"this stack installs no {crd} CRD: the API server refuses the object and no operator creates its pods "
        "(enable the operator under ekstrain:schedulers, e.g. kubeflow.flavor: training-operator for PyTorchJob)"
    )


def simulate(cluster: Cluster, objects: list[dict[str, Any]]) -> Result:
    result = Result()
    # Empty cluster: only the system node group exists (its free cpu/memory; no accelerator, no EFA).
    idle: dict[str, float] = {}
    for node in cluster.nodes:
        if node.pool == "system":
            for r, v in free(cluster, node).items():
                if r in ("cpu", "memory"):
                    idle[r] = idle.get(r, 0.0) + v
    # A TrainJob may bring its own (namespaced) TrainingRuntime in the same file (assembly/jobs/trainjob.py).
    runtimes = {**cluster.runtimes, **{o["metadata"]["name"]: o for o in objects if o.get("kind") == "TrainingRuntime"}}
    for obj in objects:
        w = expand(obj, runtimes, cluster.gang_kinds)
        if w is None:
            continue
        if w.slurm:
            groups, problems = _nodeset_groups(cluster, w)
            w.groups, w.problems = groups, w.problems + problems
            ns = cluster.nodesets.get(str(w.slurm.get("partition")))
            w.volcano_queue = nodeset_queue(ns) if ns else None  # the slurmd pods' queue admits them
        blocked = [Blocked(w.name, "*", p) for p in w.problems]
        missing = unserved(cluster, obj)
        if missing:
            blocked.append(Blocked(w.name, "*", missing))
        if w.volcano_queue is not None:
            req = _min_resources(w)
            why = volcano.queue_block(w.volcano_queue, cluster.queues, req) or volcano.enqueue_block(
                cluster.scheduler_config,
                req,
                idle,
                w.volcano_queue,
                cluster.queues,
                cluster.guarantees,
                parents=cluster.parents,
            )
            if why:
                blocked.append(Blocked(w.name, "*", why))
        placed: list[tuple[PodGroup, Node]] = []
        for g in w.groups:
            if g.count == 0:
                continue
            found, why = place(cluster, g)
            if found is None:
                blocked.append(Blocked(w.name, f"{g.role} x{g.count}", why))
            else:
                placed.append((g, found))
        if not blocked:
            blocked += _limits(cluster, w, placed)
        if blocked:
            result.blocked += blocked
        else:
            where = ", ".join(f"{g.role} x{g.count} -> {n.pool}/{n.instance.name}" for g, n in placed)
            result.started.append(f"STARTS {w.name}: {where}")
    return result
