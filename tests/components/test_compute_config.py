"""Impossible partitions are refused before any resource registers, naming the key and the fix."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stack_sections

from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

P0 = "ekstrain:partitions[0] (gpu-small)"


def _errors(sections: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    return [(i.key, f"{i.problem} | {i.fix}") for i in caught.value.issues]


def _part(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["partitions"][0].update(changes)


CASES: dict[str, tuple[Callable[[dict[str, Any]], Any], str, str]] = {
    "unknown instance type": (_part(instanceTypes=["p9.96xlarge"]), f"{P0}.instanceTypes[0]", "catalog"),
    "EFA on a type without EFA": (
        _part(accelerator="trainium", instanceTypes=["trn1.2xlarge"]),
        "ekstrain:partitions[0] (gpu-small).instanceTypes[0]",
        "efa: false",
    ),
    "placement group without EFA": (_part(efa=False, placementGroup=True), f"{P0}.placementGroup", "efa: true"),
    "beyond the reservation": (
        _part(
            capacityType="reserved", maxNodes=3, capacityReservation={"tags": {"purpose": "train"}, "instanceCount": 2}
        ),
        f"{P0}.maxNodes",
        "lower maxNodes to 2",
    ),
    "trn2 on Kubernetes 1.31": (
        lambda s: (
            s["cluster"].update(kubernetesVersion="1.31"),
            _part(accelerator="trainium", instanceTypes=["trn2.48xlarge"])(s),
        ),
        f"{P0}.instanceTypes[0]",
        "1.32",
    ),
    "warm nodes": (_part(minNodes=1), f"{P0}.minNodes", "minNodes: 0"),
    "Karpenter label domain": (
        _part(labels={"karpenter.sh/owner": "me"}),
        f"{P0}.labels.karpenter.sh/owner",
        "reserved",
    ),
    "platform label domain": (
        _part(labels={"ekstrain.io/partition": "other"}),
        f"{P0}.labels.ekstrain.io/partition",
        "reserved",
    ),
    "bad label value": (
        _part(labels={"team.example.com/owner": "not ok!"}),
        f"{P0}.labels.team.example.com/owner",
        "label value",
    ),
    "cluster name too long for Karpenter's IAM role": (
        lambda s: s["cluster"].update(name="c" * 47),
        "ekstrain:cluster.name",
        "at most 46",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_impossible_partition_is_refused(case: str) -> None:
    mutate, key, words = CASES[case]
    sections = stack_sections("dev")
    mutate(sections)
    errors = _errors(sections)
    assert any(k == key and words in text for k, text in errors), errors


@pytest.mark.parametrize(
    "field,value",
    [("consolidateAfter", "5 minutes"), ("rootVolumeGiB", 20000), ("capacityReservation", {"ids": ["cr-ABC"]})],
)
def test_field_level_partition_errors_name_the_field(field: str, value: Any) -> None:
    sections = stack_sections("dev")
    sections["partitions"][0][field] = value
    errors = _errors(sections)
    assert any(k.startswith("ekstrain:partitions[0]") and field in k for k, _ in errors), errors


def test_valid_extras_are_accepted() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0].update(
        labels={"team.example.com/owner": "llm"},
        consolidateAfter="2h",
        capacityType="reserved",
        capacityReservation={"ids": ["cr-0123456789abcdef0"]},
    )
    cfg, _ = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    part = cfg.partitions[0]
    assert part.effective_consolidate_after == "2h"
    assert part.labels == {"team.example.com/owner": "llm"}


def test_reserved_partition_in_a_placement_group_warns() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0].update(capacityType="reserved", capacityReservation={"ids": ["cr-0123456789abcdef0"]})
    _, warnings = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    assert any(w.startswith(f"{P0}.placementGroup") and "placementGroup: false" in w for w in warnings), warnings
    sections["partitions"][0]["placementGroup"] = False
    _, warnings = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    assert not any("placementGroup" in w for w in warnings)


def test_a_capacity_block_has_no_placement_group_and_refuses_one() -> None:
    """GIVEN a reserved partition whose reservation is a Capacity Block WHEN loaded THEN it wants no placement group
    (EC2 co-locates a block's instances) and no warning; WHEN placementGroup: true THEN the error names the key."""
    sections = stack_sections("dev")
    block = {"tags": {"ekstrain.io/block": "llm"}, "type": "capacity-block", "instanceCount": 2}
    # a type EC2 sells as a Capacity Block (dev's g5.8xlarge is not: that is refused on its own)
    sections["partitions"][0].update(capacityType="reserved", capacityReservation=block, instanceTypes=["p5.48xlarge"])
    cfg, warnings = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    assert cfg.partitions[0].capacity_block and not cfg.partitions[0].wants_placement_group
    assert not any("placementGroup" in w for w in warnings), warnings
    sections["partitions"][0]["placementGroup"] = True
    errors = _errors(sections)
    assert any(k == f"{P0}.placementGroup" and "Capacity Block" in m for k, m in errors), errors
    sections["partitions"][0].pop("placementGroup")
    sections["partitions"][0]["capacityReservation"] = {**block, "type": "block"}
    assert any(k.startswith(f"{P0}.capacityReservation.type") for k, _ in _errors(sections)), _errors(sections)
