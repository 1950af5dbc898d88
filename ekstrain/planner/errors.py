"""The one error type the planner raises for bad input; the CLI prints it as one line, exit code 2."""

from __future__ import annotations


class PlanError(ValueError):
    """A configuration that cannot be planned: unknown name, non-dividing degree, no fit, bad JSON."""
