"""The instance catalog and the EFA layout function (pure; property-tested over the catalog)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ekstrain.facts import catalog
from ekstrain.layout import efa

# Oracle from platform-anchors.md (d)1 (EC2 EfaInfo.MaximumEfaInterfaces).
EXPECTED_EFA = {
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
    "p6-b300.48xlarge": 16,
    "trn1.32xlarge": 8,
    "trn1n.32xlarge": 16,
    "trn2.48xlarge": 16,
    "trn1.2xlarge": 0,
    "g5.8xlarge": 1,
}
EFA_TYPES = sorted(n for n, t in catalog.CATALOG.items() if t.efa_capable)


@pytest.mark.parametrize(("name", "count"), sorted(EXPECTED_EFA.items()))
def test_catalog_efa_counts_match_ec2(name: str, count: int) -> None:
    assert catalog.get(name).efa_max_interfaces == count


@pytest.mark.parametrize(("name", "count"), [(n, c) for n, c in sorted(EXPECTED_EFA.items()) if c])
def test_layout_has_exactly_the_ec2_efa_count(name: str, count: int) -> None:
    assert efa.efa_count(efa.efa_layout(catalog.get(name))) == count


@given(st.sampled_from(EFA_TYPES))
def test_layout_invariants_hold_for_every_efa_type(name: str) -> None:
    # GIVEN any EFA-capable type; WHEN laid out; THEN Karpenter's CEL rules and EC2's limits hold.
    it = catalog.get(name)
    layout = efa.efa_layout(it)
    pairs = [(i.network_card_index, i.device_index) for i in layout]
    assert len(pairs) == len(set(pairs)), "unique (card, device) pairs"
    assert layout[0] == efa.NetworkInterface(0, 0, "interface"), "primary interface at card 0 device 0"
    assert sum(i.interface_type == "interface" for i in layout) == 1
    per_card = [i.network_card_index for i in layout if i.interface_type == "efa-only"]
    assert len(per_card) == len(set(per_card)), "at most one efa-only interface per card"
    assert all(i.device_index <= 1 for i in layout), "no device index above 1 (eksctl#7520)"
    assert all(i.network_card_index < it.network_cards for i in layout)
    assert set(per_card) <= set(it.efa_card_indices)


def test_p5_layout_is_the_aws_recommended_one() -> None:
    layout = efa.efa_layout(catalog.get("p5.48xlarge"))
    assert layout[:3] == [
        efa.NetworkInterface(0, 0, "interface"),
        efa.NetworkInterface(0, 1, "efa-only"),
        efa.NetworkInterface(1, 0, "efa-only"),
    ]
    assert max(i.device_index for i in layout) == 1


def test_p6_b300_keeps_card_zero_ena_only() -> None:
    layout = efa.efa_layout(catalog.get("p6-b300.48xlarge"))
    assert all(i.network_card_index != 0 for i in layout if i.interface_type == "efa-only")


def test_layout_refuses_types_without_efa() -> None:
    with pytest.raises(ValueError, match="no EFA"):
        efa.efa_layout(catalog.get("trn1.2xlarge"))


@pytest.mark.parametrize(
    ("name", "accelerated"),
    [
        ("p5.48xlarge", True),
        ("g5.8xlarge", True),
        ("trn1.32xlarge", True),
        ("inf2.xlarge", True),
        ("m7i.xlarge", False),
        ("c6i.large", False),
        ("r7g.2xlarge", False),
        ("gr6.4xlarge", False),
    ],
)
def test_is_accelerated(name: str, accelerated: bool) -> None:
    assert catalog.is_accelerated(name) is accelerated


def test_unknown_type_error_lists_known_types() -> None:
    with pytest.raises(catalog.UnknownInstanceType, match="p5.48xlarge"):
        catalog.get("p9.huge")


def test_catalog_doc_is_current() -> None:
    import pathlib

    doc = pathlib.Path(__file__).resolve().parent.parent / "docs" / "catalog.md"
    assert doc.read_text() == catalog.markdown(), "run: python -m ekstrain.cli.reference catalog > docs/catalog.md"
