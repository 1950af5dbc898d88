"""Parallelism planner: memory, step time and the best (dp, tp, pp, cp, ep, ...) layout for a fleet.

Pure Python (no Pulumi). Public API::

    from ekstrain.planner import search, evaluate, Plan
    plans = search(get_model("llama3-70b"), Fleet.from_instance("p5.48xlarge", 16), 512, 8192)

or with the inputs as spec objects (ModelSpec, Fleet, TrainingSpec with its Software switches, SearchSpace)::

    training = TrainingSpec(512, 8192, software=frameworks.software_for("megatron-lm"))
    plans = search_specs(get_model("llama3-70b"), Fleet.from_instance("p5.48xlarge", 16), training, SearchSpace(top=5))
    plan = build_plan(model, fleet, training, ParallelConfig(tp=8, pp=1, dp=16, micro_batch=1))
"""

from ekstrain.planner.errors import PlanError
from ekstrain.planner.fleet import Fleet
from ekstrain.planner.models import MODELS, ModelSpec, get_model
from ekstrain.planner.parallel import ParallelConfig
from ekstrain.planner.perf import DEFAULT_EFFICIENCY, Efficiency
from ekstrain.planner.plan import Plan, build_plan, evaluate
from ekstrain.planner.search import SearchSpace, search, search_specs
from ekstrain.planner.software import Software
from ekstrain.planner.training import TrainingSpec

__all__ = [
    "DEFAULT_EFFICIENCY",
    "MODELS",
    "Efficiency",
    "ParallelConfig",
    "SearchSpace",
    "Software",
    "Fleet",
    "ModelSpec",
    "Plan",
    "PlanError",
    "TrainingSpec",
    "build_plan",
    "evaluate",
    "get_model",
    "search",
    "search_specs",
]
