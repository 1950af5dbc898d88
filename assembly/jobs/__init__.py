"""Training job templates: one RunSpec, consistent workloads for every scheduler.

    from ekstrain.assembly.jobs import RunSpec, render
    objects = render(RunSpec(...), cfg, "volcano")

See docs/jobs.md.
"""

from ekstrain.assembly.jobs.render import SCHEDULERS, health_check, render, render_sbatch, resolve_for, to_yaml
from ekstrain.assembly.jobs.resolve import ResolvedRun, resolve
from ekstrain.assembly.jobs.spec import JobRequestError, RunSpec

__all__ = [
    "SCHEDULERS",
    "JobRequestError",
    "ResolvedRun",
    "RunSpec",
    "health_check",
    "render",
    "render_sbatch",
    "resolve",
    "resolve_for",
    "to_yaml",
]
