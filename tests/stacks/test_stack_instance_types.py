"""``ekstrain:instanceTypes``: instance types outside the built-in catalog, added from the stack file.

GIVEN a stack that names a type with its accelerator, EFA and sizing facts
WHEN it is validated and run offline
THEN partitions may use the type like a built-in one (its EFA layout in the EC2NodeClass), bad facts are refused
with the key and the fix, a built-in type is replaced only with ``override: true``, and the next stack loaded
does not see the type.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import run_stack, stack_sections

from ekstrain.facts import catalog
from ekstrain.layout import efa
from ekstrain.simulate.nodes import nodes_of
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

TODAY = dt.date(2026, 12, 3)
CUSTOM = "p5e.12xlarge"
"""A name the built-in catalog does not have (the facts below are the test's, not EC2's)."""


def custom_facts(**changes: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "accelerator": {"kind": "gpu", "model": "H200-SXM-141GB", "count": 2},
        "vcpus": 48,
        "memoryGiB": 512,
        "networkGbps": 800,
        "efa": {"maxInterfaces": 3, "networkCards": 4, "cardIndices": [1, 2, 3], "gpudirectRdma": True},
        "pricePerHourUsd": 15.5,
    }
    facts.update(changes)
    return facts


def with_custom(facts: dict[str, Any] | None = None, name: str = CUSTOM) -> dict[str, Any]:
    sections = stack_sections("dev")
    sections["instanceTypes"] = {name: facts or custom_facts()}
    sections["partitions"] = [
        {"name": "gpu-custom", "accelerator": "gpu", "instanceTypes": [name], "maxNodes": 2, "capacityType": "spot"}
    ]
    return sections


@pytest.fixture(autouse=True)
def builtins_only() -> Iterator[None]:
    yield
    catalog.use_stack_types({})


def refused(sections: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as info:
        parse(sections, "test", today=TODAY)
    return [(i.key, i.problem, i.fix) for i in info.value.issues]


def test_a_custom_type_joins_the_catalog_of_its_stack_only() -> None:
    cfg, warnings = parse(with_custom(), "test", today=TODAY)
    assert warnings == []
    it = catalog.get(CUSTOM)
    assert (it.family, it.accelerator_count, it.efa_max_interfaces, it.efa_card_indices) == ("gpu", 2, 3, (1, 2, 3))
    # The H200's figures come from the built-in accelerator of that model.
    assert it.accelerator == catalog.H200 and it.gpudirect_rdma and it.price_per_hour_usd == 15.5
    assert cfg.catalog_types()[CUSTOM] == it
    parse(stack_sections("dev"), "test", today=TODAY)
    assert CUSTOM not in catalog.known(), "the next stack loaded does not see the previous stack's types"
    with pytest.raises(catalog.UnknownInstanceType):
        catalog.get(CUSTOM)


def test_a_partition_of_a_custom_type_gets_its_efa_layout_in_the_ec2nodeclass() -> None:
    cfg, _ = parse(with_custom(), "test", today=TODAY)
    rec = run_stack(cfg)
    [node_class] = [
        r.inputs
        for r in rec.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
        if r.inputs["metadata"]["name"] == "gpu-custom"
    ]
    interfaces = node_class["spec"]["networkInterfaces"]
    # Primary ENA interface on card 0; one efa-only interface on each of the EFA cards 1-3 (card 0 carries none).
    assert interfaces == [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 2, "deviceIndex": 0, "interfaceType": "efa-only"},
        {"networkCardIndex": 3, "deviceIndex": 0, "interfaceType": "efa-only"},
    ]
    assert [i.to_karpenter() for i in efa.efa_layout(catalog.get(CUSTOM))] == interfaces
    [pool] = [
        r.inputs
        for r in rec.of_type("kubernetes:karpenter.sh/v1:NodePool")
        if r.inputs["metadata"]["name"] == "gpu-custom"
    ]
    assert pool["spec"]["limits"]["nvidia.com/gpu"] == "4", "2 GPUs x maxNodes 2"
    # AND the scheduling simulator launches the type as Karpenter would: its GPUs and the EFA interfaces attached
    [node] = nodes_of(pool, {"gpu-custom": node_class})
    assert node.instance == catalog.get(CUSTOM)
    assert (node.capacity["nvidia.com/gpu"], node.capacity["vpc.amazonaws.com/efa"]) == (2.0, 3.0)
    assert node.allocatable["cpu"] < 48


@pytest.mark.parametrize(
    ("name", "facts", "problem", "fix"),
    [
        ("p5.48xlarge", custom_facts(), "is a built-in type", "override: true"),
        (CUSTOM, custom_facts(override=True), "is not a built-in type", "remove override"),
        ("P5E 12XL", custom_facts(), "is not an EC2 instance type name", "family.size"),
        (
            CUSTOM,
            custom_facts(accelerator={"kind": "gpu", "model": "X1", "count": 8}),
            "memoryGiB, peakTflopsBf16, hbmGBytesPerS, intraNodeGBytesPerS are not given",
            "use a built-in model",
        ),
        (
            CUSTOM,
            custom_facts(efa={"maxInterfaces": 4, "networkCards": 4, "cardIndices": [1, 2, 3]}),
            "maxInterfaces 4 is more than the 3 EFA-capable cards",
            "cardIndices",
        ),
        (
            CUSTOM,
            custom_facts(efa={"maxInterfaces": 1, "networkCards": 2, "cardIndices": [2]}),
            "cardIndices [2] are not network cards",
            "use indices 0-1",
        ),
    ],
)
def test_bad_facts_are_refused_with_the_key_and_the_fix(
    name: str, facts: dict[str, Any], problem: str, fix: str
) -> None:
    issues = refused(with_custom(facts, name))
    assert any(key.startswith("ekstrain:instanceTypes") and problem in p and fix in f for key, p, f in issues), issues
    assert catalog.stack_types() == {}


def test_an_override_replaces_a_built_in_type_for_its_stack() -> None:
    facts = custom_facts(override=True, accelerator={"kind": "gpu", "model": "A10G-24GB", "count": 1})
    facts["efa"] = {"maxInterfaces": 1, "networkCards": 1}
    sections = with_custom(facts, "g5.8xlarge")
    parse(sections, "test", today=TODAY)
    assert catalog.get("g5.8xlarge").vcpus == 48
    catalog.use_stack_types({})
    assert catalog.get("g5.8xlarge").vcpus == 32, "the built-in facts are back for the next stack"


def test_unknown_type_points_at_instance_types() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0]["instanceTypes"] = [CUSTOM]
    [(key, problem, fix)] = [i for i in refused(sections) if "instanceTypes[0]" in i[0]]
    assert "is not in the instance catalog" in problem and f"ekstrain:instanceTypes.{CUSTOM}" in fix


def test_arm64_types_are_refused_in_partitions() -> None:
    [(key, problem, _)] = [
        i for i in refused(with_custom(custom_facts(architecture="arm64"))) if "instanceTypes[0]" in i[0]
    ]
    assert "arm64" in problem and "x86_64 only" in problem


def test_the_catalog_doc_example_is_a_valid_stack_addition() -> None:
    """GIVEN the ekstrain:instanceTypes example in docs/catalog.md WHEN added to the dev stack THEN it validates
    and its partition's type has the documented EFA interfaces."""
    import yaml
    from conftest import REPO

    text = (REPO / "docs" / "catalog.md").read_text()
    example = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    sections = stack_sections("dev")
    sections["instanceTypes"] = example["ekstrain:instanceTypes"]
    sections["partitions"] = example["ekstrain:partitions"]
    parse(sections, "test", today=TODAY)
    [name] = example["ekstrain:instanceTypes"]
    assert (
        efa.efa_count(efa.efa_layout(catalog.get(name)))
        == example["ekstrain:instanceTypes"][name]["efa"]["maxInterfaces"]
    )


def test_a_stack_type_with_regions_is_checked_against_them() -> None:
    """GIVEN a stack's own type that lists only us-east-1 under regions WHEN dev (us-west-2) uses it THEN refused,
    naming those regions as the source; listing us-west-2 too loads."""
    [(key, problem, fix)] = refused(with_custom(custom_facts(regions=["us-east-1"])))
    assert key == "ekstrain:partitions[0] (gpu-custom).instanceTypes"
    assert problem == (
        f"{CUSTOM} is not offered in us-west-2 (offered in us-east-1; ekstrain:instanceTypes.{CUSTOM}.regions)"
    )
    assert f"list us-west-2 under ekstrain:instanceTypes.{CUSTOM}.regions" in fix
    parse(with_custom(custom_facts(regions=["us-east-1", "us-west-2"])), "test", today=TODAY)
