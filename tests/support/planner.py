"""The planner's costly results that several test modules assert on, computed once.

- ``left_out`` (a session fixture): ``validation.leave_one_source_out()``, 21 refits of every constant (~7 s of
  CPU), once per session however many xdist workers ask (support/shared.py). In a process that read it from another
  worker, ``validation.leave_one_source_out`` returns it from then on, so ``validation.coverage()`` and
  ``validation.bands()`` (which call it) read the same results the session computed instead of refitting.
- ``fit_on(sources)``: ``validation.fit_constants`` on those sources' fit rows, once per process (the shipped fit
  is asserted by three modules; "every Neuron page left out" by two tests).
- ``searched(...)``: one ``search`` per process for a shape several modules rank (Llama 3 405B on 2,048 p5).

Every value is the planner's own result for the same inputs; tests read them and never change them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from support import shared

if TYPE_CHECKING:
    from ekstrain.planner.efficiency import Efficiency
    from ekstrain.planner.plan import Plan
    from ekstrain.planner.validation import LeftOut


@pytest.fixture(scope="session")
def left_out(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LeftOut, ...]]:
    """Every source's rows predicted with the constants fitted without it (validation.leave_one_source_out)."""
    from ekstrain.planner import validation

    results = shared.once(tmp_path_factory, "leave-one-source-out", validation.leave_one_source_out)
    with pytest.MonkeyPatch.context() as patch:
        # the function is an lru_cache of no argument: in a worker that read the results, they are its value
        patch.setattr(validation, "leave_one_source_out", lambda: results)
        yield results


@functools.cache
def fit_on(sources: frozenset[str]) -> dict[str, Efficiency]:
    """``validation.fit_constants`` on the fit rows of ``sources``, in ``validation.rows()`` order."""
    from ekstrain.planner import calibration, validation

    return validation.fit_constants(m for m in validation.rows() if m.split == calibration.FIT and m.source in sources)


def fit_without(*left: str) -> dict[str, Efficiency]:
    """The constants fitted on the fit rows of every source but ``left``."""
    from ekstrain.planner import validation

    return fit_on(frozenset(validation.sources()) - set(left))


def shipped_fit() -> dict[str, Efficiency]:
    """The constants fitted on every fit row: what efficiency.py stores."""
    return fit_without()


@functools.cache
def searched(
    model: str, instance: str, nodes: int, global_batch: int, seq_len: int, top: int | None = None
) -> tuple[Plan, ...]:
    """``search(get_model(model), Fleet.from_instance(instance, nodes), global_batch, seq_len, top=top)``."""
    from ekstrain.planner import Fleet, get_model, search

    return tuple(search(get_model(model), Fleet.from_instance(instance, nodes), global_batch, seq_len, top=top))
