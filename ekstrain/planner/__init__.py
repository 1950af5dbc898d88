"""Parallelism planner: memory, step time and the best (dp, tp, pp, cp, ep, ...) layout for a fleet.

Pure Python (no Pulumi). Public API::

    from ekstrain.planner import search, evaluate, Plan
    plans = search(get_model("llama3-70b"), Fleet.from_instance("p5.48xlarge", 16), 512, 8192)
"""

from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import Fleet
from ekstrain.planner.models import MODELS, ModelSpec, get_model
from ekstrain.planner.perf import DEFAULT_EFFICIENCY, Efficiency
from ekstrain.planner.plan import Plan, evaluate
from ekstrain.planner.search import search
from ekstrain.planner.training import TrainingSpec

__all__ = [
    "DEFAULT_EFFICIENCY",
    "MODELS",
    "Efficiency",
    "Fleet",
    "ModelSpec",
    "Plan",
    "PlanError",
    "TrainingSpec",
    "evaluate",
    "get_model",
    "search",
]
