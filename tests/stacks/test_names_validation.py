"""Validation owns every name it lets through (one regression test per defect; each failed on the old code).

GIVEN prod (or dev) with one change WHEN the stack config is parsed THEN a name the program would derive twice, a
control character in a text setting, a boolean count, a bad notification email, a type Capacity Blocks do not
offer, or guarantees that leave the standing slurmd pods no room are refused with the key and the fix before any
resource is registered; and what AWS accepts (40 Unicode tags on a stack with room for them) is not refused.
"""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from conftest import REPO, stack_sections

from ekstrain.cli import render as render_cli
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

TODAY = dt.date(2026, 12, 3)
Change = Callable[[dict[str, Any]], None]


def _issues(change: Change, stack: str = "prod") -> list[tuple[str, str]] | None:
    """The (key, problem) refusals, or None when the stack is accepted."""
    sections = stack_sections(stack)
    change(sections)
    try:
        parse(sections, f"Pulumi.{stack}.yaml", today=TODAY)
    except ConfigError as exc:
        return [(i.key, i.problem) for i in exc.issues]
    return None


def _partition(name: str, max_nodes: int = 2, types: tuple[str, ...] = ("p5.48xlarge",)) -> dict[str, Any]:
    return {"name": name, "accelerator": "gpu", "instanceTypes": list(types), "maxNodes": max_nodes}


def _teams(*teams: dict[str, Any]) -> Change:
    return lambda s: s["schedulers"]["volcano"].update(teams=list(teams))


# ---- derived queue names --------------------------------------------------------------------------------------------


def test_a_partition_named_like_another_partitions_shared_queue_is_refused() -> None:
    def change(s: dict[str, Any]) -> None:
        s["partitions"].append(_partition("gpu-h100-shared"))
        _teams({"name": "a", "guarantees": {"gpu-h100": 1}})(s)

    issues = _issues(change)
    assert issues and any("would both be the Volcano queue 'gpu-h100-shared'" in p for _, p in issues), issues


def test_two_teams_queues_that_meet_across_partitions_are_refused() -> None:
    """gpu-h100 + team a-b and gpu-h100-a + team b both derive gpu-h100-a-b (no partition is named so)."""

    def change(s: dict[str, Any]) -> None:
        s["partitions"].append(_partition("gpu-h100-a"))
        _teams({"name": "a-b", "guarantees": {"gpu-h100": 1}}, {"name": "b", "guarantees": {"gpu-h100-a": 1}})(s)

    issues = _issues(change)
    assert issues and any(k == "ekstrain:schedulers.volcano.teams" and "'gpu-h100-a-b'" in p for k, p in issues), issues


def test_a_colliding_stack_file_is_one_clean_error_before_registration(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through `ekstrain render`: exit 2, the key, no traceback (it was a duplicate-URN traceback)."""
    doc = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    doc["config"]["ekstrain:partitions"].append(_partition("gpu-h100-shared"))
    doc["config"]["ekstrain:schedulers"]["volcano"]["teams"] = [{"name": "a", "guarantees": {"gpu-h100": 1}}]
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = render_cli.main(["--stack", "x", "--stack-file", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "ekstrain:schedulers.volcano.teams" in err, err
    assert not (tmp_path / "out" / "resources.yaml").exists()


# ---- text, counts, emails -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["H100\nSXM", "H100\tSXM", "H100\x1b[31m", "H100\u2028", "H100\u202e"])
def test_a_control_character_in_an_accelerator_model_is_refused(bad: str) -> None:
    facts = {"accelerator": {"kind": "gpu", "model": bad, "count": 8, "memoryGiB": 80, "peakTflopsBf16": 989,
             "hbmGBytesPerS": 3350, "intraNodeGBytesPerS": 450}}  # fmt: skip
    issues = _issues(lambda s: s.update(instanceTypes={"p5x.48xlarge": facts}))
    assert issues and any(
        k == "ekstrain:instanceTypes.p5x.48xlarge.accelerator.model" and "control character" in p for k, p in issues
    ), issues


def test_a_newline_in_a_node_label_value_is_refused() -> None:
    issues = _issues(lambda s: s["partitions"][0].update(labels={"tier": "a\nb"}))
    assert issues and any(k.endswith(".labels") and "newline" in p for k, p in issues), issues


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("maxNodes", lambda s: s["partitions"][0].update(maxNodes=True)),
        ("guarantees", _teams({"name": "a", "guarantees": {"gpu-h100": True}})),
        ("nodesetReplicas", lambda s: s["schedulers"]["slurm"].update(nodesetReplicas={"gpu-a100": True})),
        ("queueWeights", lambda s: s["schedulers"]["volcano"].update(queueWeights={"gpu-h100": True})),
        ("retentionDays", lambda s: s["logging"].update(retentionDays=True)),
    ],
)
def test_a_boolean_is_never_a_count(where: str, change: Change) -> None:
    issues = _issues(change)
    assert issues and any(where in k and "boolean" in p for k, p in issues), issues


@pytest.mark.parametrize(
    "email",
    ["team@example.com\nBcc: x@evil.test", "team@example.com\t", "<team@example.com>", "Team <team@example.com>",
     "a@b.com,c@d.com", "<script>@x.com", "team@example", '"q"@example.com'],
)  # fmt: skip
def test_a_notification_email_must_be_one_plain_address(email: str) -> None:
    issues = _issues(lambda s: s["cost"]["budget"].update(notifyEmails=[email]))
    assert issues and any(k == "ekstrain:cost.budget.notifyEmails" for k, _ in issues), issues


@pytest.mark.parametrize("email", ["ml-costs@example.com", "first.last+budget@sub.example.co.uk", "o'brien@x.io"])
def test_plain_addresses_pass(email: str) -> None:
    assert _issues(lambda s: s["cost"]["budget"].update(notifyEmails=[email])) is None


# ---- Capacity Blocks, standing pods ---------------------------------------------------------------------------------


def _capacity_block(types: list[str]) -> Change:
    def change(s: dict[str, Any]) -> None:
        s["partitions"][0].update(
            instanceTypes=types,
            capacityType="reserved",
            capacityReservation={"ids": ["cr-0123456789abcdef0"], "type": "capacity-block"},
        )

    return change


def test_a_capacity_block_of_a_type_blocks_do_not_offer_is_refused() -> None:
    issues = _issues(_capacity_block(["p4d.24xlarge", "p3dn.24xlarge"]))
    assert issues and any(
        k.endswith("instanceTypes[1]") and "not sold as an EC2 Capacity Block" in p for k, p in issues
    ), issues
    assert _issues(_capacity_block(["p4d.24xlarge", "p4de.24xlarge"])) is None


def test_guarantees_that_leave_the_standing_slurmd_pods_no_room_are_refused() -> None:
    def change(s: dict[str, Any]) -> None:
        s["schedulers"]["slurm"]["nodesetReplicas"] = {"gpu-h100": 3}
        _teams({"name": "a", "guarantees": {"gpu-h100": 6}})(s)

    issues = _issues(change)
    assert issues and any(k == "ekstrain:schedulers.slurm.nodesetReplicas.gpu-h100" for k, _ in issues), issues

    def fits(s: dict[str, Any]) -> None:
        s["schedulers"]["slurm"]["nodesetReplicas"] = {"gpu-h100": 2}
        _teams({"name": "a", "guarantees": {"gpu-h100": 6}})(s)

    assert _issues(fits) is None


# ---- tags: no false rejection ---------------------------------------------------------------------------------------

UNICODE_TAGS = {
    **{f"チーム{i}": f"値 {i}" for i in range(10)},
    **{f"équipe-{i}": f"coût centre {i}" for i in range(10)},
    **{f"Kostenstelle{i}": f"Größe {i}" for i in range(10)},
    **{f"فريق{i}": f"قيمة\u3000{i}" for i in range(10)},  # the ideographic space is a space separator (Zs)
}


def test_forty_unicode_tags_fit_a_stack_whose_own_tags_leave_room() -> None:
    """dev has no cost tags: Project, Environment, ManagedBy and Karpenter's six leave 41 of AWS's 50."""
    assert len(UNICODE_TAGS) == 40
    assert _issues(lambda s: s.update(tags=dict(UNICODE_TAGS)), "dev") is None


def test_the_tag_budget_counts_this_stacks_own_tags() -> None:
    issues = _issues(lambda s: s.update(tags=dict(UNICODE_TAGS)), "prod")  # cost tags: 12 of the program's
    assert issues and any("make 52 tags per resource" in p for _, p in issues), issues
    too_many = {**UNICODE_TAGS, "a": "1", "b": "2"}
    assert _issues(lambda s: s.update(tags=too_many), "dev")
