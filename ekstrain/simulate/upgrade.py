"""A Kubernetes minor upgrade played on the timeline while jobs run (mix entry ``upgrade: {at: H, to: "1.36"}``).

The documented order (EKS user guide, update-cluster.html: control plane first, then add-ons, then nodes; one minor
at a time): the control plane, the EKS add-ons one after another, the system managed node group rolled node by node,
and every Karpenter node drifts (its EC2NodeClass's AMI alias resolves the new version's AMI once the control plane
runs it). Karpenter replaces a drifted node only as the NodePool's budgets allow (the most restrictive active
Drifted budget, NodePool CRD v1.14.1 ``spec.disruption.budgets``; a scheduled budget is active from each cron match
for ``duration``), and never one running a pod annotated ``karpenter.sh/do-not-disrupt`` (every job pod the
platform renders) unless the NodePool sets ``terminationGracePeriod`` (then the pods go once it has passed). Once
Karpenter starts disrupting a node it taints it ``karpenter.sh/disrupted:NoSchedule``: nothing new lands there.

The simulator's minute 0 is Sunday 00:00 UTC (cron day 0), so a window ``0 2 * * 6`` opens at hour 146.

Reported: when the control plane, the add-ons and every node run the new version, the gangs disrupted (and whether
inside a window) and the accelerator-hours they lost. A gang disrupted while no window allowed it, or a fleet still
running old nodes when the mix ends, is a problem.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ekstrain.facts import versions

if TYPE_CHECKING:
    from ekstrain.simulate.timeline import SimNode, Timeline

CONTROL_PLANE_MINUTES = 30
"""EKS UpdateClusterVersion: the user guide says the update "takes several minutes"; reported control-plane updates
run 20-40 min, the middle is used."""
ADDONS = (
    "vpc-cni",
    "kube-proxy",
    "coredns",
    "eks-pod-identity-agent",
    "aws-ebs-csi-driver",
    "eks-node-monitoring-agent",
)
ADDON_MINUTES = 5
"""Per EKS UpdateAddon (a DaemonSet or Deployment rollout on the system nodes)."""
SYSTEM_NODE_MINUTES = 15
"""Per system node: EKS managed node group update (update-managed-node-group.html, "Managed node update behavior":
launch a node of the new version, cordon and drain an old one, terminate it), one at a time (maxUnavailable 1)."""
DRAIN_MINUTES = 2
"""From Karpenter's disruption decision to the node gone when pods must be evicted first; an empty node has nothing
to drain and goes within the minute."""
SIM_EPOCH = "Sunday 00:00 UTC"


@dataclass(frozen=True)
class Budget:
    nodes: str
    reasons: tuple[str, ...] | None
    schedule: str | None = None
    duration_minutes: int = 0

    def active(self, minute: int) -> bool:
        if self.schedule is None:
            return True
        start, period = _cron_start(self.schedule)
        return (minute - start) % period < self.duration_minutes

    def allows(self, total: int) -> int:
        if self.nodes.endswith("%"):
            return math.ceil(total * int(self.nodes[:-1]) / 100)
        return int(self.nodes)


def _cron_start(schedule: str) -> tuple[int, int]:
    """(minute of the period the cron matches, period in minutes) for ``M H * * D`` / ``M H * * *``; anything else
    is read as daily at its minute and hour (the program writes only these two forms)."""
    parts = schedule.split()
    if schedule.startswith("@") or len(parts) != 5:
        return 0, {"@weekly": 7 * 1440, "@hourly": 60}.get(schedule, 1440)
    minute, hour, _, _, dow = parts
    m = int(minute) if minute.isdigit() else 0
    h = int(hour) if hour.isdigit() else 0
    if dow.isdigit():
        return int(dow) * 1440 + h * 60 + m, 7 * 1440
    return h * 60 + m, 1440


def _minutes(duration: str) -> int:
    hours = re.search(r"([0-9]+)h", duration)
    mins = re.search(r"([0-9]+)m", duration)
    return (int(hours.group(1)) * 60 if hours else 0) + (int(mins.group(1)) if mins else 0)


@dataclass
class PoolDisruption:
    budgets: list[Budget]
    grace_minutes: int | None = None
    """NodePool ``terminationGracePeriod``: do-not-disrupt pods are evicted once it has passed (None: never)."""

    def drift_allowed(self, total: int, minute: int) -> int | None:
        """Drifted nodes the pool may be disrupting at ``minute`` (None: no budget bounds it)."""
        applying = [b for b in self.budgets if b.reasons is None or "Drifted" in b.reasons]
        active = [b.allows(total) for b in applying if b.active(minute)]
        if not self.budgets:
            return math.ceil(total * 0.1)  # Karpenter's default budget: 10% of the nodes
        return min(active) if active else None

    def window_open(self, minute: int) -> bool:
        allowed = self.drift_allowed(1, minute)
        return allowed is None or allowed > 0


def read_nodepool(obj: dict[str, Any]) -> PoolDisruption:
    spec = obj.get("spec") or {}
    budgets = []
    for b in (spec.get("disruption") or {}).get("budgets") or []:
        reasons = b.get("reasons")
        budgets.append(
            Budget(
                str(b.get("nodes", "10%")),
                tuple(reasons) if reasons else None,
                b.get("schedule"),
                _minutes(str(b.get("duration", "0m"))),
            )
        )
    grace = ((spec.get("template") or {}).get("spec") or {}).get("terminationGracePeriod")
    return PoolDisruption(budgets, _minutes(str(grace)) if grace else None)


class UpgradeError(ValueError):
    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = where, problem


def previous_minor(version: str) -> str:
    major, minor = version.split(".")
    return f"{major}.{int(minor) - 1}"


@dataclass
class Upgrade:
    at: int
    """Minute the upgrade is applied (`pulumi up` of the stack with the new kubernetesVersion)."""
    to: str
    pools: dict[str, PoolDisruption] = field(default_factory=dict)
    """NodePool -> its disruption (read from the build's NodePools)."""
    old: set[int] = field(default_factory=set)
    draining: dict[int, tuple[int, bool]] = field(default_factory=dict)
    """Node ident -> (minute it goes, whether the pool's window allowed the disruption when it began)."""
    control_plane_at: int | None = None
    addons_at: int | None = None
    system_at: int | None = None
    converged_at: int | None = None
    gangs: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    lost_hours: float = 0.0
    replaced: int = 0
    drifted: int = 0
    """Karpenter nodes replaced by drift (the other old ones left empty, consolidated, or with the system group)."""
    handovers: dict[str, set[str]] = field(default_factory=dict)
    """NodePool -> jobs that started on its drifted nodes after the control plane's update (the node was handed to
    new work instead of rolling)."""

    @property
    def source(self) -> str:
        return previous_minor(self.to)

    def validate(self, where: str) -> None:
        if self.to not in versions.KUBERNETES_RELEASES:
            known = ", ".join(versions.KUBERNETES_RELEASES)
            raise UpgradeError(f"{where}.to", f"{self.to!r} is not on the EKS calendar (known: {known})")

    # -- the clock --
    def tick(self, t: Timeline) -> None:
        now = t.now
        if now < self.at:
            return
        cp_done = self.at + CONTROL_PLANE_MINUTES
        addons_done = cp_done + len(ADDONS) * ADDON_MINUTES
        if now == cp_done:
            # From here Karpenter's AMI alias resolves the new version's AMI: every node that exists has drifted.
            self.control_plane_at = now
            self.old = {n.ident for n in t.nodes if n.state != "gone"}
        if now == addons_done:
            self.addons_at = now
        if now < cp_done:
            return
        self._roll_system(t, addons_done)
        for n in self.still_old(t):
            for j in t.on_node(n):
                if j.kind != "standing" and j.started_at is not None and j.started_at >= cp_done:
                    self.handovers.setdefault(n.pool, set()).add(j.name)
        self._finish_drains(t)
        self._drift(t)
        if self.converged_at is None and now >= addons_done and not self.still_old(t):
            self.converged_at = now

    def still_old(self, t: Timeline) -> list[SimNode]:
        return [n for n in t.nodes if n.ident in self.old and n.state != "gone"]

    def _roll_system(self, t: Timeline, addons_done: int) -> None:
        system = [n for n in t.nodes if n.pool == "system" and n.ident in self.old and n.state != "gone"]
        if not system or t.now < addons_done:
            if not system and self.system_at is None and t.now >= addons_done:
                self.system_at = t.now
            return
        # One node every SYSTEM_NODE_MINUTES: its replacement joins the same pool with the same room (surge first).
        if (t.now - addons_done) % SYSTEM_NODE_MINUTES == SYSTEM_NODE_MINUTES - 1:
            old = system[0]
            self.old.discard(old.ident)
            self.replaced += 1

    def _finish_drains(self, t: Timeline) -> None:
        for n in [n for n in t.nodes if n.ident in self.draining]:
            gone_at, allowed = self.draining[n.ident]
            if t.now < gone_at:
                continue
            del self.draining[n.ident]
            victims = [j for j in t.on_node(n) if j.kind != "standing" and j.state == "running"]
            before = sum(j.lost_accelerator_hours for j in victims)
            t.kill_node(n, f"node #{n.ident} replaced: drifted to Kubernetes {self.to} (upgrade)", drained=True)
            self.replaced += 1
            self.drifted += 1
            self.lost_hours += sum(j.lost_accelerator_hours for j in victims) - before
            for j in victims:
                j.hit_by_fault = True
                self.gangs.append(j.name)
                if not allowed:
                    self.outside.append(f"{j.name} at {t.now // 60}:{t.now % 60:02d}")

    def _drift(self, t: Timeline) -> None:
        for pool, disruption in self.pools.items():
            nodes = [n for n in t.nodes if n.pool == pool and n.state != "gone"]
            drifted = [n for n in nodes if n.ident in self.old and n.ident not in self.draining]
            if not drifted:
                continue
            allowed = disruption.drift_allowed(len(nodes), t.now)
            windowed = any(b.schedule for b in disruption.budgets if b.reasons is None or "Drifted" in b.reasons)
            busy = sum(1 for n in nodes if n.ident in self.draining)
            room = (len(drifted) if allowed is None else allowed) - busy
            for n in drifted:
                if room <= 0:
                    break
                if n.state != "ready":
                    continue
                blocked = any(j.kind != "standing" for j in t.on_node(n)) and disruption.grace_minutes is None
                if blocked:
                    continue  # karpenter.sh/do-not-disrupt pods: the node waits for its job
                room -= 1
                if not t.on_node(n):  # empty: deleted at once, the budget's room comes back next minute
                    t.kill_node(n, f"node #{n.ident} replaced: drifted to Kubernetes {self.to} (upgrade)")
                    self.replaced += 1
                    self.drifted += 1
                    continue
                n.state = "draining"  # karpenter.sh/disrupted:NoSchedule: nothing new binds here
                wait = disruption.grace_minutes if disruption.grace_minutes is not None else 0
                self.draining[n.ident] = (t.now + DRAIN_MINUTES + wait, windowed)

    # -- the report --
    def conclude(self, t: Timeline) -> tuple[list[str], list[str]]:
        def clock(m: int | None) -> str:
            return "-" if m is None else f"{m // 60}:{m % 60:02d}"

        left = self.still_old(t)
        lines = [
            f"UPGRADE {self.source} -> {self.to} applied at {clock(self.at)} (minute 0 = {SIM_EPOCH}): control plane "
            f"{clock(self.control_plane_at)}, add-ons {clock(self.addons_at)}, system node group "
            f"{clock(self.system_at)}, every node on {self.to} at {clock(self.converged_at)}; "
            f"{self.replaced} nodes replaced ({self.drifted} Karpenter nodes by drift), {len(self.gangs)} gangs "
            f"disrupted ({len(self.outside)} outside a window), {self.lost_hours:.1f} accelerator-hours lost"
        ]
        problems = []
        if self.converged_at is None:
            pools = sorted({n.pool for n in left})
            closed = [p for p in pools if p in self.pools and not self._ever_open(p, t.now)]
            problems.append(
                f"upgrade to {self.to} never converges: {len(left)} node(s) still on {self.source} at the end "
                f"({', '.join(pools)})"
                + (
                    f'; the Drifted budget of {", ".join(closed)} is nodes: "0" with no window: set '
                    "ekstrain:maintenance.window"
                    if closed
                    else "; their jobs kept them busy through every window: widen ekstrain:maintenance.window or "
                    "opt in with disruptGangsAfter"
                )
            )
        for pool, jobs in sorted(self.handovers.items()):
            if self.converged_at is not None and pool in self.pools and not self._ever_open(pool, t.now):
                problems.append(
                    f"upgrade to {self.to} never converges on a busy cluster: {pool}'s Drifted budget is "
                    f'nodes: "0" with no window, so its drifted nodes took new jobs ({", ".join(sorted(jobs))}) '
                    f"instead of rolling and left only when the pool emptied (every node on {self.to} at "
                    f"{clock(self.converged_at)}); set ekstrain:maintenance.window"
                )
        for o in self.outside:
            problems.append(f"upgrade disrupted gang {o} outside a maintenance window")
        return lines, problems

    def _ever_open(self, pool: str, until: int) -> bool:
        d = self.pools[pool]
        return any(d.window_open(m) for m in range(0, max(until, 7 * 1440), 30))


def read_entry(where: str, entry: Any, max_minutes: int) -> Upgrade:
    """The mix file's ``upgrade: {at: H, to: "1.36"}``."""
    if not isinstance(entry, dict) or set(entry) - {"at", "to"} or "to" not in entry:
        raise UpgradeError(where, "is not a mapping of `at` and `to`")
    at = entry.get("at", 0)
    if isinstance(at, bool) or not isinstance(at, int | float) or not 0 <= at * 60 < max_minutes:
        raise UpgradeError(f"{where}.at", f"{at!r} is not an hour inside the mix")
    up = Upgrade(int(at * 60), str(entry["to"]))
    up.validate(where)
    return up


def attach_pools(up: Upgrade, nodepools: list[dict[str, Any]]) -> None:
    for obj in nodepools:
        up.pools[str((obj.get("metadata") or {}).get("name"))] = read_nodepool(obj)
