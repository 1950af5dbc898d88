"""The one seam between job templates and the parallelism planner (``ekstrain.planner``).

:class:`PlannerBackend` is what the resolver needs: ranked plans for a model on ``nodes`` x an
instance type, and the evaluation of pinned degrees. :class:`RealPlanner` adapts
``ekstrain.planner`` (imported lazily, so rendering never imports it twice and tests can inject
a double); :func:`choose_plan` applies the RunSpec's pinned degrees and the fit check.
"""

from __future__ import annotations

from typing import Any, Protocol

from ekstrain.jobs.spec import JobRequestError, RunSpec


class PlannerBackend(Protocol):
    def search(self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int,
               **options: Any) -> list[Any]: ...

    def evaluate(self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int,
                 **degrees: Any) -> Any: ...


class RealPlanner:
    """``ekstrain.planner`` behind the :class:`PlannerBackend` interface."""

    def _model(self, name: str) -> Any:
        from ekstrain.planner import models

        for attr in ("get", "get_model", "model"):
            getter = getattr(models, attr, None)
            if callable(getter):
                try:
                    return getter(name)
                except KeyError:
                    break
        catalog = getattr(models, "MODELS", None)
        if isinstance(catalog, dict) and name in catalog:
            return catalog[name]
        known = sorted(catalog) if isinstance(catalog, dict) else []
        raise JobRequestError(f"unknown model {name!r} for the planner" + (f"; known: {', '.join(known)}"
                                                                          if known else ""))

    def _fleet(self, instance_type: str, nodes: int) -> Any:
        from ekstrain.planner.fleet import Fleet

        return Fleet.from_instance(instance_type, nodes)

    def search(self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int,
               **options: Any) -> list[Any]:
        from ekstrain import planner

        return list(planner.search(self._model(model), self._fleet(instance_type, nodes), global_batch, seq_len,
                                   **options))

    def evaluate(self, model: str, instance_type: str, nodes: int, global_batch: int, seq_len: int,
                 **degrees: Any) -> Any:
        from ekstrain import planner

        return planner.evaluate(self._model(model), self._fleet(instance_type, nodes), global_batch, seq_len,
                                **degrees)


def plan_instance_type(plan: Any) -> str | None:
    """The instance type a plan was computed for, wherever the planner keeps it."""
    for attr in ("instance_type", "instance"):
        value = getattr(plan, attr, None)
        if isinstance(value, str):
            return value
        if value is not None and isinstance(getattr(value, "name", None), str):
            return value.name
    fleet = getattr(plan, "fleet", None)
    if fleet is not None:
        return plan_instance_type(fleet)
    return None


def _matches(plan: Any, fixed: dict[str, Any]) -> bool:
    return all(getattr(plan, k, None) == v for k, v in fixed.items())


def _options(spec: RunSpec) -> dict[str, Any]:
    options = dict(spec.planner_options)
    if spec.lora_rank is not None:
        options.setdefault("lora_rank", spec.lora_rank)
    return options


def choose_plan(spec: RunSpec, instance_type: str, backend: PlannerBackend) -> Any:
    """The planner's best fitting plan that honours every pinned degree of ``spec``."""
    fixed = spec.fixed_degrees
    where = f"{spec.model} on {spec.nodes} x {instance_type} (global batch {spec.global_batch}, seq {spec.seq_len})"
    try:
        candidates = backend.search(spec.model, instance_type, spec.nodes, spec.global_batch, spec.seq_len,
                                    **_options(spec))
    except JobRequestError:
        raise
    except ImportError as exc:
        raise JobRequestError(f"the parallelism planner is not available ({exc}); pass a precomputed plan "
                              "(RunSpec.plan) or install ekstrain.planner") from None
    except (KeyError, ValueError, TypeError) as exc:
        raise JobRequestError(f"the planner rejected {where}: {exc}") from None
    fitting = [p for p in candidates if getattr(p, "fits", True)]
    chosen = next((p for p in fitting if _matches(p, fixed)), None)
    if chosen is None and fixed and {"tp", "pp", "micro_batch"} <= fixed.keys():
        try:
            chosen = backend.evaluate(spec.model, instance_type, spec.nodes, spec.global_batch, spec.seq_len,
                                      **{**_options(spec), **fixed})
        except (KeyError, ValueError, TypeError) as exc:
            raise JobRequestError(f"the planner rejected the pinned degrees {fixed} for {where}: {exc}") from None
        if not getattr(chosen, "fits", True):
            raise JobRequestError(f"pinned degrees {fixed} do not fit {where} in accelerator memory; "
                                  "drop the pins to let the planner choose, or add nodes")
    if chosen is None:
        if fitting and fixed:
            raise JobRequestError(f"no fitting plan for {where} matches the pinned degrees {fixed}; "
                                  "pin tp, pp and micro batch together, or fewer degrees")
        hint = "add nodes, use a partition with more accelerator memory, or fine-tune with LoRA (--lora-rank)"
        if spec.lora_rank is not None:
            hint = "add nodes or use a partition with more accelerator memory"
        raise JobRequestError(f"no parallel plan fits {where} in accelerator memory; {hint}")
    return chosen
