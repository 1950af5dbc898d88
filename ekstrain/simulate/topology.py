"""Network positions in ``ekstrain simulate --timeline``: each node of a type EC2 reports a topology for gets a
position when it launches, and every start of a gang reports the HyperNode tier its nodes span.

The layout is a stated assumption (ekstrain/topology.py ``layout``: 16 instances under one layer-3 network node,
4 layer-3 nodes under a layer-2 node, filled in launch order per NodePool; AWS publishes no counts, your block's
``aws ec2 describe-capacity-reservation-topology`` shows the real one). A gang whose Volcano ``networkTopology`` is
hard and whose nodes span a wider tier than ``highestTierAllowed`` is a PROBLEM: Volcano would have kept it pending
(this model reports the violation; it does not yet hold the gang back).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ekstrain import topology

if TYPE_CHECKING:
    from ekstrain.simulate.timeline_state import Job, SimNode, TimelineState


def position(t: TimelineState, node: SimNode) -> tuple[str, ...] | None:
    name = node.candidate.instance.name
    if name not in topology.LAYERS:
        return None
    index = sum(1 for n in t.nodes if n.pool == node.pool and n.ident < node.ident)
    return topology.layout(index, topology.LAYERS[name])


def constraint(job: Job) -> dict[str, Any] | None:
    spec = job.arrival.obj.get("spec") or {}
    found = spec.get("networkTopology")
    if found is None:
        found = ((spec.get("podGroupPolicy") or {}).get("volcano") or {}).get("networkTopology")
    return found if isinstance(found, dict) else None


def on_start(t: TimelineState, job: Job) -> None:
    """Called when a job's pods all run: one TOPOLOGY line per start, a PROBLEM when a hard tier is exceeded."""
    nodes = {n.ident: n for _, n in job.bound if n.state != "gone"}
    positions = [p for p in (position(t, n) for n in nodes.values()) if p is not None]
    if len(positions) < 2:
        return
    tier = topology.tiers_spanned(positions)
    asked = constraint(job)
    hard = asked is not None and asked.get("mode", "hard") == "hard"
    text = (
        f"hard: tier <= {asked.get('highestTierAllowed', 1)}"
        if hard and asked
        else ("soft" if asked else "no constraint")
    )
    t.topology_lines.append(f"TOPOLOGY {job.name}: {len(positions)} nodes span tier {tier} ({text})")
    if hard and asked and tier > int(asked.get("highestTierAllowed", 1)):
        t.problems.append(
            f"{job.name}: its {len(positions)} nodes span network tier {tier}, wider than its hard networkTopology "
            f"highestTierAllowed {asked.get('highestTierAllowed', 1)}"
        )
