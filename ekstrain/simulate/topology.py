"""Network positions in ``ekstrain simulate --timeline``: each node of a type EC2 reports a topology for gets a
position when it launches; a gang is placed within the tier its template asks for, or waits; every start of a gang
reports the HyperNode tier its nodes span.

The layout is a stated assumption (ekstrain/layout/topology.py ``LAYOUTS``: 16 instances under one layer-3 network node,
4 layer-3 nodes under a layer-2 node, filled in launch order per NodePool; AWS publishes no counts, your block's
``aws ec2 describe-capacity-reservation-topology`` shows the real one; a mix's ``networkLayout`` overrides it per
instance type).

Placement follows Volcano v1.15.1 with the network-topology-aware plugin in the scheduler config
(assembly/schedulers/volcano.py):

- hard (``networkTopology.mode: hard``): allocate.go tries the job on each HyperNode of the plugin's gradients, tier
  by tier up to ``highestTierAllowed`` (network_topology_aware.go ``hyperNodeGradientFn``); none that holds every pod
  -> the gang stays pending. Karpenter launches no node for it when the pods fit the nodes there are: its own
  scheduling simulation knows no HyperNodes, so the gang waits for room inside one tier;
- soft, and the podAffinity preference of MPIJob/PyTorchJob workers: the lowest tier that holds the gang, else
  spread (the report says so).

Without the plugin a hard constraint is inert (framework/session_plugins.go ``HyperNodeGradientForJobFn`` returns the
cluster's top HyperNode): the gang lands anywhere and a span wider than it asked is a PROBLEM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ekstrain.layout import topology
from ekstrain.simulate import volcano
from ekstrain.simulate.inputs import InputError

if TYPE_CHECKING:
    from ekstrain.simulate.nodes import Node
    from ekstrain.simulate.timeline_state import Job, SimNode, TimelineState
    from ekstrain.simulate.workloads import PodGroup

PLUGIN = "network-topology-aware"

Need = tuple["PodGroup", "Node | None", dict[str, float], int]
Plan = list[tuple["SimNode", dict[str, float], "PodGroup"]]


def parse_layout(where: str, value: Any) -> dict[str, tuple[int, int]]:
    """A mix's ``networkLayout``: ``{<instance type>: {nodesPerLayer3: N, layer3PerLayer2: M}}`` for types EC2 reports
    a topology for (ekstrain/layout/topology.py ``LAYERS``)."""
    if not isinstance(value, dict) or not value:
        raise InputError(where, f"is {value!r}", "give `<instance type>: {nodesPerLayer3: 16, layer3PerLayer2: 4}`")
    out: dict[str, tuple[int, int]] = {}
    for name, entry in value.items():
        at = f"{where}.{name}"
        if name not in topology.LAYERS:
            raise InputError(
                at,
                "is not a type EC2 reports a network topology for",
                "use one of " + ", ".join(sorted(topology.LAYERS)),
            )
        if not isinstance(entry, dict) or set(entry) - {"nodesPerLayer3", "layer3PerLayer2"}:
            raise InputError(at, f"is {entry!r}", "give {nodesPerLayer3: N, layer3PerLayer2: M}")
        counts = []
        for key, default in (
            ("nodesPerLayer3", topology.LAYOUT_NODES_PER_LAYER3),
            ("layer3PerLayer2", topology.LAYOUT_LAYER3_PER_LAYER2),
        ):
            number = entry.get(key, default)
            if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 10_000:
                raise InputError(f"{at}.{key}", f"is {number!r}", "give a whole number from 1 to 10000")
            counts.append(number)
        out[str(name)] = (counts[0], counts[1])
    return out


def layout_of(t: TimelineState, instance_type: str) -> tuple[int, int]:
    return t.mix.network_layout.get(instance_type) or topology.LAYOUTS.get(
        instance_type, (topology.LAYOUT_NODES_PER_LAYER3, topology.LAYOUT_LAYER3_PER_LAYER2)
    )


def position(t: TimelineState, node: SimNode) -> tuple[str, ...] | None:
    name = node.candidate.instance.name
    if name not in topology.LAYERS:
        return None
    index = sum(1 for n in t.nodes if n.pool == node.pool and n.ident < node.ident)
    per_l3, l3_per_l2 = layout_of(t, name)
    # each NodePool is its own placement group: its network nodes are its own
    return tuple(f"{node.pool}/{x}" for x in topology.layout(index, topology.LAYERS[name], per_l3, l3_per_l2))


def aware(t: TimelineState) -> bool:
    """The scheduler config runs the network-topology-aware plugin (read from the build)."""
    return PLUGIN in volcano.plugins(t.cluster.scheduler_config)


def constraint(job: Job, runtimes: dict[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The gang's ``networkTopology`` (Volcano Job, or a TrainJob's runtime PodGroup policy), or ``{"mode": "soft"}``
    for pods that prefer a network-node layer through podAffinity (MPIJob, PyTorchJob; ekstrain/layout/topology.py
    ``preferred_pod_affinity``)."""
    spec = job.arrival.obj.get("spec") or {}
    found = spec.get("networkTopology")
    runtime = (runtimes or {}).get(str((spec.get("runtimeRef") or {}).get("name")), {})
    for policy in (spec, runtime.get("spec") or {}):  # a TrainJob's PodGroup policy is in its runtime
        if found is None:
            found = ((policy.get("podGroupPolicy") or {}).get("volcano") or {}).get("networkTopology")
    if isinstance(found, dict):
        return found
    return {"mode": "soft"} if _by_affinity(job) else None


def _by_affinity(job: Job) -> bool:
    for g in job.workload.groups:
        terms = ((g.spec.get("affinity") or {}).get("podAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution"
        ) or []
        if any(
            str(term.get("podAffinityTerm", {}).get("topologyKey", "")).startswith(topology.LABEL_PREFIX)
            for term in terms
        ):
            return True
    return False


def _hard(asked: dict[str, Any] | None) -> bool:
    return asked is not None and asked.get("mode", "hard") == "hard"


def fill(
    t: TimelineState, job: Job, needs: list[Need], allowed: Callable[[SimNode], bool] | None = None
) -> tuple[Plan, list[Need]]:
    """``try_start``'s trial packing of ``needs`` onto the ready nodes (first fit, in node order), on the nodes
    ``allowed`` admits: the plan, and what is left of each need that did not fit (its count the pods short)."""
    plan: Plan = []
    short: list[Need] = []
    trial = {n.ident: dict(n.free) for n in t.nodes}
    for g, candidate, req, count in needs:
        placed = 0
        for n in t.nodes:
            if not t.usable(n) or not t._lands(g, n) or t.reserved(n, job):
                continue
            if allowed is not None and not allowed(n):
                continue
            while placed < count and all(trial[n.ident].get(r, 0.0) + 1e-9 >= v for r, v in req.items() if v > 0):
                for r, v in req.items():
                    trial[n.ident][r] = trial[n.ident].get(r, 0.0) - v
                plan.append((n, req, g))
                placed += 1
        if placed < count:
            short.append((g, candidate, req, count - placed))
    return plan, short


def _pack(t: TimelineState, job: Job, needs: list[Need], members: set[int], positioned: set[int]) -> Plan | None:
    """``try_start``'s trial packing, with the ``positioned`` nodes limited to ``members`` (one HyperNode)."""
    plan, short = fill(t, job, needs, lambda n: n.ident not in positioned or n.ident in members)
    return None if short else plan


def place(t: TimelineState, job: Job, needs: list[Need], plan: Plan) -> tuple[Plan, str | None]:
    """Called by ``try_start`` when the nodes there are hold every pod of a gang (``plan``): the plan within the
    lowest tier that holds it (at most the hard ``highestTierAllowed``), or the reason the gang waits."""
    asked = constraint(job, t.mix.runtimes)
    if asked is None or not (aware(t) or _by_affinity(job)):
        return plan, None  # a networkTopology is read by the plugin only; pod affinity by nodeorder
    hard = _hard(asked) and aware(t)
    positioned = [(n, position(t, n)) for n in t.nodes if n.state != "gone"]
    placed = [(n, p) for n, p in positioned if p is not None]
    if not placed:
        return plan, None
    depth = min(len(p) for _, p in placed)
    highest = int(asked.get("highestTierAllowed", 1) or 1) if hard else depth + 1
    for tier in range(1, min(highest, depth) + 1):
        domains: dict[tuple[str, ...], set[int]] = {}
        for n, p in placed:
            domains.setdefault(p[: depth - tier + 1], set()).add(n.ident)
        # the fullest HyperNode first (the plugin's bin packing), then by name
        busy = {key: sum(1 for n, p in placed if n.ident in members and n.holders) for key, members in domains.items()}
        for key in sorted(domains, key=lambda k: (-busy[k], k)):
            within = _pack(t, job, needs, domains[key], {n.ident for n, _ in placed})
            if within is not None:
                if tier > 1:
                    t.topology_notes[job.name] = f"no tier-{tier - 1} HyperNode had room for all its pods"
                else:
                    t.topology_notes.pop(job.name, None)
                return within, None
    if hard:
        why = (
            f"networkTopology hard, highestTierAllowed {highest}: no tier-{highest} HyperNode has room for all its "
            "pods (Volcano keeps the gang pending; Karpenter sees room on the nodes there are and launches none)"
        )
        return [], why
    t.topology_notes[job.name] = "no HyperNode had room for all its pods: spread"
    return plan, None


def on_start(t: TimelineState, job: Job) -> None:
    """Called when a job's pods all run: one TOPOLOGY line per start, a PROBLEM when a hard tier is exceeded."""
    nodes = {n.ident: n for _, n in job.bound if n.state != "gone"}
    positions = [p for p in (position(t, n) for n in nodes.values()) if p is not None]
    if len(positions) < 2:
        return
    tier = topology.tiers_spanned(positions)
    asked = constraint(job, t.mix.runtimes)
    hard = _hard(asked)
    text = (
        f"hard: tier <= {asked.get('highestTierAllowed', 1)}"
        if hard and asked
        else ("soft" if asked else "no constraint")
    )
    note = t.topology_notes.pop(job.name, "")
    if note:
        text += f"; {note}"
    if hard and not aware(t):
        text += f"; not enforced: the scheduler config has no {PLUGIN} plugin"
    t.topology_lines.append(f"TOPOLOGY {job.name}: {len(positions)} nodes span tier {tier} ({text})")
    if hard and asked and tier > int(asked.get("highestTierAllowed", 1)):
        t.problems.append(
            f"{job.name}: its {len(positions)} nodes span network tier {tier}, wider than its hard networkTopology "
            f"highestTierAllowed {asked.get('highestTierAllowed', 1)}"
        )
