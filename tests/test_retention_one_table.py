"""CloudWatch retention is one table: every value stack validation accepts, the components accept too."""

from __future__ import annotations

from typing import Any

import pytest

from ekstrain import cloudwatch
from ekstrain.components import args as component_args
from ekstrain.stacks.models import platform, storage
from tests.conftest import cfg_with, run_stack


def test_GIVEN_the_validators_and_the_components_WHEN_their_retention_tables_are_read_THEN_they_are_the_one_table() -> (
    None
):
    assert component_args.LOG_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    assert storage.LOG_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    assert platform.CLOUDWATCH_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    # The API's longest value (ten years) is in it: the table that stopped at 2922 refused it in the program.
    assert max(cloudwatch.RETENTION_DAYS) == 3653


@pytest.mark.parametrize("days", [2922, 3288, 3653])
def test_GIVEN_a_long_fsx_log_retention_WHEN_prod_runs_THEN_the_log_group_gets_it(days: int) -> None:
    def change(sections: dict[str, Any]) -> None:
        sections["storage"]["fsx"]["logRetentionDays"] = days

    # WHEN the stack validates and the program runs (the program used to raise in LustreArgs past 2922)
    recording = run_stack(cfg_with(change))
    groups = [
        r for r in recording.of_type("aws:cloudwatch/logGroup:LogGroup") if "fsx" in r.name and "flow" not in r.name
    ]
    # THEN the FSx log group carries the retention the stack asked for
    assert groups and all(g.inputs["retentionInDays"] == days for g in groups)
