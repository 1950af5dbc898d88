"""Cost: OpenCost and the budget.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.facts import spend
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig


def _cost(cfg: StackConfig) -> list[ConfigIssue]:
    """OpenCost reads the stack's Prometheus; a budget without a limit needs list prices for its default."""
    out = []
    c = cfg.cost
    if c.enabled and c.opencost and not cfg.observability.enabled:
        out.append(
            ConfigIssue(
                "ekstrain:cost.opencost",
                "OpenCost reads node and pod usage from the stack's Prometheus, which this stack does not install",
                "set ekstrain:observability.enabled: true, or ekstrain:cost.opencost: false",
            )
        )
    priced = spend.default_monthly_limit_usd((p.instance_types, p.max_nodes) for p in cfg.partitions)
    if c.enabled and c.budget.monthly_limit_usd is None and priced <= 0:
        out.append(
            ConfigIssue(
                "ekstrain:cost.budget.monthlyLimitUsd",
                "no partition instance type has an on-demand list price, so there is no default limit",
                "set ekstrain:cost.budget.monthlyLimitUsd to the monthly spend you expect",
            )
        )
    if c.enabled and len(c.budget.thresholds_percent) + (c.budget.forecast_percent is not None) > 5:
        out.append(
            ConfigIssue(
                "ekstrain:cost.budget.thresholdsPercent",
                "AWS allows 5 notifications per budget (the forecast one counts)",
                "keep at most 4 thresholds with forecastPercent, or 5 with forecastPercent: null",
            )
        )
    return out
