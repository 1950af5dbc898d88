"""CloudWatch retention is one table: every value stack validation accepts, the components accept too."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import cfg_with

from ekstrain.components import args as component_args
from ekstrain.components.args import ComponentArgsError
from ekstrain.components.fsx import LustreArgs
from ekstrain.facts import cloudwatch
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.models import platform, storage


def test_GIVEN_the_validators_and_the_components_WHEN_their_retention_tables_are_read_THEN_they_are_the_one_table() -> (
    None
):
    assert component_args.LOG_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    assert storage.LOG_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    assert platform.CLOUDWATCH_RETENTION_DAYS is cloudwatch.RETENTION_DAYS
    # The API's longest value (ten years) is in it: the table that stopped at 2922 refused it in the program.
    assert max(cloudwatch.RETENTION_DAYS) == 3653


@pytest.mark.parametrize("days", cloudwatch.RETENTION_DAYS)
def test_GIVEN_a_retention_the_stack_accepts_WHEN_the_fsx_component_gets_it_THEN_it_accepts_it(days: int) -> None:
    def change(sections: dict[str, Any]) -> None:
        sections["storage"]["fsx"]["logRetentionDays"] = days

    # GIVEN prod with that retention, which stack validation accepts
    cfg = cfg_with(change)
    assert cfg.storage.fsx.log_retention_days == days
    # WHEN the FSx component's args are built as infra/storage.py builds them THEN they validate (3288 and 3653
    # raised here while validation accepted them: the component's copy of the table stopped at 2922)
    LustreArgs(
        cluster_name="training",
        vpc_id="vpc-1",
        subnet_id="subnet-1",
        client_security_group_id="sg-1",
        datasets_bucket="datasets",
        checkpoints_bucket="checkpoints",
        log_retention_days=cfg.storage.fsx.log_retention_days,
    )


def test_GIVEN_a_retention_cloudwatch_does_not_offer_WHEN_validated_THEN_both_refuse_it() -> None:
    with pytest.raises(ComponentArgsError, match="log_retention_days"):
        LustreArgs(
            cluster_name="training",
            vpc_id="vpc-1",
            subnet_id="subnet-1",
            client_security_group_id="sg-1",
            datasets_bucket="datasets",
            checkpoints_bucket="checkpoints",
            log_retention_days=3650,
        )
    with pytest.raises(ConfigError, match="logRetentionDays"):
        cfg_with(lambda sections: sections["storage"]["fsx"].__setitem__("logRetentionDays", 3650))
