"""The one seam between job templates and the parallelism planner (``ekstrain.planner``).

:class:`PlannerBackend` is what the resolver needs: ranked plans for a model on ``nodes`` x an
instance type, and the evaluation of pinned degrees. :class:`RealPlanner` adapts
``ekstrain.planner`` (imported lazily, so rendering never imports it twice and tests can inject
a double); :func:`choose_plan` applies the RunSpec's pinned degrees and the fit check.
"""

from __future__ import annotations

import difflib
from typing import Any, Protocol

from ekstrain.assembly.jobs.spec import JobRequestError, RunSpec
from ekstrain.facts import catalog


class PlannerBackend(Protocol):
    def search(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **options: Any
    ) -> list[Any]: ...

    def evaluate(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **degrees: Any
    ) -> Any: ...


class RealPlanner:
    """``ekstrain.planner`` behind the :class:`PlannerBackend` interface."""

    def _model(self, name: str) -> Any:
        from ekstrain.planner import models

        getter = getattr(models, "get_model", None) or getattr(models, "get", None)
        catalog = getattr(models, "MODELS", None)
        try:
            if callable(getter):
                return getter(name)
            if isinstance(catalog, dict):
                return catalog[name]
        except (KeyError, ValueError) as exc:
            close = difflib.get_close_matches(name, list(catalog), n=1) if isinstance(catalog, dict) else []
            known = f"; fix: pass --model one of {', '.join(sorted(catalog))}" if isinstance(catalog, dict) else ""
            detail = (
                str(exc).strip("'\"")
                if not known
                else f"unknown model {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            )
            raise JobRequestError(f"{detail}{known}") from None
        raise JobRequestError(f"the planner has no model catalog to look up {name!r}")

    def _fleet(self, instance_type: str, nodes: int) -> Any:
        from ekstrain.planner.fleet import Fleet

        # The stack's own nodes: their EC2 network tiers narrow a group that spans many of them
        # (ekstrain/layout/topology.py)
        return Fleet.from_instance(instance_type, nodes, network_tiers=True)

    def search(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **options: Any
    ) -> list[Any]:
        from ekstrain import planner

        return list(
            planner.search(self._model(model), self._fleet(instance_type, nodes), global_batch, seq_len, **options)
        )

    def evaluate(
        self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int, **degrees: Any
    ) -> Any:
        from ekstrain import planner

        return planner.evaluate(self._model(model), self._fleet(instance_type, nodes), global_batch, seq_len, **degrees)


def plan_instance_type(plan: Any) -> str | None:
    """The instance type a plan was computed for: ``plan.instance_type`` or its fleet's name
    (``Fleet.from_instance`` names the fleet after the instance type)."""
    value = getattr(plan, "instance_type", None)
    if isinstance(value, str):
        return value
    fleet = getattr(plan, "fleet", None)
    for attr in ("instance_type", "name"):
        value = getattr(fleet, attr, None)
        if isinstance(value, str):
            return value
    return None


def framework_problem(framework: str, plan: Any) -> str | None:
    """Why ``framework``'s launcher cannot run ``plan`` (None: it can). The planner ranks layouts for the
    hardware; whether a launcher can express a layout is the job template's business."""
    if framework == "deepspeed" and getattr(plan, "pp", 1) > 1 and (getattr(plan, "zero", 0) or 0) >= 2:
        return "DeepSpeed's pipeline engine supports ZeRO stages 0 and 1 only"
    emitter = {"megatron": "megatron_args", "neuronx-distributed": "neuron_args"}.get(framework)
    fn = getattr(plan, emitter, None) if emitter else None
    if callable(fn):
        try:
            fn()
        except ValueError as exc:
            return str(exc)
    return None


def _matches(plan: Any, fixed: dict[str, Any]) -> bool:
    return all(getattr(plan, k, None) == v for k, v in fixed.items())


def _options(spec: RunSpec) -> dict[str, Any]:
    """What the planner is asked with: the RunSpec's planner options, its LoRA rank and the cost model of
    its framework (ekstrain/planner/frameworks.py), so the job runs the best plan *for its framework*:
    a DeepSpeed job is ranked with DeepSpeed's ZeRO model, not Megatron's."""
    from ekstrain.planner import frameworks

    options = dict(spec.planner_options)
    if spec.lora_rank is not None:
        options.setdefault("lora_rank", spec.lora_rank)
    options.setdefault("framework", frameworks.cost_model(spec.framework))
    return options


def choose_plan(spec: RunSpec, instance: catalog.InstanceType, backend: PlannerBackend) -> Any:
    """The planner's best fitting plan that honours every pinned degree of ``spec``."""
    instance_type = instance.name
    fixed = spec.fixed_degrees
    where = f"{spec.model} on {spec.nodes} x {instance_type} (global batch {spec.global_batch}, seq {spec.seq_len})"
    try:
        candidates = backend.search(
            spec.model, instance_type, spec.nodes, spec.global_batch, spec.seq_len, **_options(spec)
        )
    except JobRequestError:
        raise
    except ImportError as exc:
        raise JobRequestError(
            f"the parallelism planner is not available ({exc}); pass a precomputed plan "
            "(RunSpec.plan) or install ekstrain.planner"
        ) from None
    except (KeyError, ValueError, TypeError) as exc:
        if "fit" not in str(exc):
            raise JobRequestError(f"the planner rejected {where}: {exc}") from None
        candidates = []  # the planner raises when no layout fits: same answer as an empty list
    fitting = [p for p in candidates if getattr(p, "fits", True)]
    problems = {id(p): framework_problem(spec.framework, p) for p in fitting}
    runnable = [p for p in fitting if problems[id(p)] is None]
    if fitting and not runnable:
        raise JobRequestError(
            f"no plan that fits {where} can run under {spec.framework} "
            f"({problems[id(fitting[0])]}); choose another --framework"
        )
    fitting = runnable
    chosen = next((p for p in fitting if _matches(p, fixed)), None)
    if chosen is None and fixed and {"tp", "pp", "micro_batch"} <= fixed.keys():
        degrees = dict(fixed)
        if "dp" not in degrees:
            world = spec.nodes * instance.workers_per_node
            degrees["dp"] = max(1, world // (degrees["tp"] * degrees["pp"] * degrees.get("cp", 1)))
        try:
            chosen = backend.evaluate(
                spec.model, instance_type, spec.nodes, spec.global_batch, spec.seq_len, **{**_options(spec), **degrees}
            )
        except (KeyError, ValueError, TypeError) as exc:
            raise JobRequestError(f"the planner rejected the pinned degrees {fixed} for {where}: {exc}") from None
        if not getattr(chosen, "fits", True):
            raise JobRequestError(
                f"pinned degrees {fixed} do not fit {where} in accelerator memory; "
                "drop the pins to let the planner choose, or add nodes"
            )
        problem = framework_problem(spec.framework, chosen)
        if problem:
            raise JobRequestError(f"pinned degrees {fixed} cannot run under {spec.framework}: {problem}")
    if chosen is None:
        if fitting and fixed:
            raise JobRequestError(
                f"no fitting plan for {where} matches the pinned degrees {fixed}; "
                "pin tp, pp and micro batch together, or fewer degrees"
            )
        hint = "add nodes, use a partition with more accelerator memory, or fine-tune with LoRA (--lora-rank)"
        if spec.lora_rank is not None:
            hint = "add nodes or use a partition with more accelerator memory"
        raise JobRequestError(f"no parallel plan fits {where} in accelerator memory; {hint}")
    return chosen
