"""A stack config's program run, shared by the tests that run the same edited config.

Two modules may run the program on the same edit of a shipped stack (the day-2 diff turning Slurm off and the
scheduler toggle removing it): the program is deterministic, so the second is handed the first's recording. Only for
tests that read a recording and never change it.
"""

from __future__ import annotations

from collections import OrderedDict

from ekstrain.infra import offline
from ekstrain.infra.program import build
from ekstrain.stacks.models import StackConfig

KEEP = 8
"""Recordings kept (the latest used): a few configs are shared, and a recording holds megabytes."""
_runs: OrderedDict[str, offline.Recording] = OrderedDict()


def shared_run(cfg: StackConfig) -> offline.Recording:
    """The program run offline for ``cfg`` (as tests/conftest.py's ``run_stack``), once per distinct config in this
    process. Read it, never mutate it."""
    key = cfg.model_dump_json()
    if key in _runs:
        _runs.move_to_end(key)
        return _runs[key]
    recording = offline.run(lambda: build(cfg), {"aws:region": cfg.region})
    _runs[key] = recording
    while len(_runs) > KEEP:
        _runs.popitem(last=False)
    return recording
