"""The team's queue on every label and query a job produces.

GIVEN prod with teams (gpu-h100: llm; gpu-a100: llm, vision) WHEN ``ekstrain job render`` renders a job with and
without ``--team`` on each Volcano-scheduled template THEN every pod's ``ekstrain.io/queue`` label (what OpenCost's
spend by queue and the log agent's ``queue`` field read, assembly/logs.py FIELDS) names the queue the job runs in:
``<partition>-<team>``, or ``<partition>-shared`` without a team; and the job's log query shows that field.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import cfg_with
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly import logs
from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.assembly.jobs.render import render

TEAMS = [
    {"name": "llm", "guarantees": {"gpu-h100": 4, "gpu-a100": 8}},
    {"name": "vision", "guarantees": {"gpu-a100": 4}},
]
CFG = cfg_with(lambda s: s["schedulers"]["volcano"].update(teams=copy.deepcopy(TEAMS)))


def _pod_label_values(node: Any, out: set[str]) -> set[str]:
    """Every ``ekstrain.io/queue`` label value on any object or pod template inside ``node``."""
    if isinstance(node, dict):
        labels = (node.get("metadata") or {}).get("labels") if isinstance(node.get("metadata"), dict) else None
        if isinstance(labels, dict) and logs.QUEUE_LABEL in labels:
            out.add(labels[logs.QUEUE_LABEL])
        for value in node.values():
            _pod_label_values(value, out)
    elif isinstance(node, list):
        for value in node:
            _pod_label_values(value, out)
    return out


@pytest.mark.parametrize("scheduler", ["volcano", "mpijob", "trainjob", "rayjob", "bionemo"])
@pytest.mark.parametrize(("team", "want"), [("llm", "gpu-h100-llm"), (None, "gpu-h100-shared")])
def test_every_queue_label_names_the_queue_the_job_runs_in(scheduler: str, team: str | None, want: str) -> None:
    objects = render(spec_for("gpu-h100", nodes=2, name="t", team=team), CFG, scheduler, FakePlanner())
    assert _pod_label_values(objects, set()) == {want}


def test_a_partition_without_teams_keeps_its_own_queue() -> None:
    objects = render(spec_for("trainium", nodes=2, name="t"), CFG, "trainium", FakePlanner())
    assert _pod_label_values(objects, set()) == {"trainium"}


def test_the_log_query_shows_the_queue_field() -> None:
    """The queue field the log agent reads from the label is among the fields both queries show."""
    assert "queue" in joblogs.insights_query("volcano", "t", "training").splitlines()[0]
    assert "queue" in joblogs.first_failure_query("volcano", "t", "training").splitlines()[0]
    assert logs.FIELDS["queue"][0] == f"label:{logs.QUEUE_LABEL}"
