"""``ekstrain:maintenance``: when drifted nodes (a new AMI, a Kubernetes upgrade) may roll (docs/runbook-upgrade.md)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from ekstrain.payloads.karpenter_specs import DriftWindow
from ekstrain.stacks.models.base import Model

# NodePool CRD v1.14.1, spec.disruption.budgets[].duration and .nodes patterns.
DURATION = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
NODES = r"^((100|[0-9]{1,2})%|[0-9]+)$"
WINDOW_SCHEDULE = re.compile(r"([0-5]?[0-9]) ([01]?[0-9]|2[0-3]) \* \* ([0-6]|\*)")


class MaintenanceWindow(Model):
    schedule: str
    """Required. When the window opens, cron in UTC: ``M H * * D`` weekly (D 0-6, Sunday 0) or ``M H * * *`` daily,
    e.g. ``0 2 * * 6`` (Saturday 02:00)."""
    duration: str = Field(pattern=DURATION)
    """Required. How long it stays open, as Karpenter writes it: ``8h``, ``90m``, ``1h30m``."""

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        if not WINDOW_SCHEDULE.fullmatch(value):
            raise ValueError(f"{value!r}: write the window's start as 'M H * * D' (weekly) or 'M H * * *' (daily)")
        return value

    @property
    def minutes(self) -> int:
        hours = re.search(r"([0-9]+)h", self.duration)
        minutes = re.search(r"([0-9]+)m", self.duration)
        return (int(hours.group(1)) * 60 if hours else 0) + (int(minutes.group(1)) if minutes else 0)


class MaintenanceConfig(Model):
    window: MaintenanceWindow | None = None
    """@default none: drifted nodes never roll (every NodePool's Drifted budget is ``nodes: "0"``), so an AMI or
    Kubernetes upgrade leaves the fleet on the old version until an operator rolls it (docs/runbook-upgrade.md)."""
    drift_nodes: str = Field(default="100%", pattern=NODES)
    """@default 100%: drifted nodes each NodePool may be replacing at once inside the window (a count or a
    percentage). Nodes running a job's pods are never drifted, so this bounds only free nodes; a smaller budget leaves
    the rest schedulable and the next gang takes them (the simulator shows it), so training pools roll all at once."""
    disrupt_gangs_after: str | None = Field(default=None, pattern=DURATION)
    """@default none: a node running a job's pods (karpenter.sh/do-not-disrupt) waits for the job. Set (opt-in), the
    NodePools' terminationGracePeriod: Karpenter drains such a node anyway once this long has passed."""

    def drift_window(self) -> DriftWindow | None:
        if self.window is None:
            return None
        return DriftWindow(self.window.schedule, self.window.minutes, self.drift_nodes, self.disrupt_gangs_after)
