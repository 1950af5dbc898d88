"""Subnet carving is pure; property-test it over every allowed VPC size and AZ count."""

from __future__ import annotations

import ipaddress
import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from ekstrain.layout.subnets import plan_subnets


@given(prefix=st.integers(16, 20), octet=st.integers(0, 15), azs=st.integers(2, 4))
def test_subnets_are_disjoint_and_inside_the_vpc(prefix: int, octet: int, azs: int) -> None:
    vpc = ipaddress.IPv4Network(f"10.{octet * 16}.0.0/{prefix}")
    zones = [f"us-west-2{c}" for c in "abcd"[:azs]]
    plan = plan_subnets(str(vpc), zones)
    nets = [ipaddress.IPv4Network(c) for c in [plan.efa, *plan.private.values(), *plan.public.values()]]
    assert all(n.subnet_of(vpc) for n in nets)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(nets, 2))
    assert set(plan.private) == set(plan.public) == set(zones)
    # The EFA subnet is the largest: EFA nodes and their pods share one AZ.
    assert ipaddress.IPv4Network(plan.efa).num_addresses == max(n.num_addresses for n in nets)


def test_prod_sized_plan() -> None:
    plan = plan_subnets("10.40.0.0/16", ["us-west-2a", "us-west-2b", "us-west-2c"])
    assert plan.efa == "10.40.0.0/18"
    assert plan.private["us-west-2a"] == "10.40.64.0/19"
    assert plan.public["us-west-2c"] == "10.40.200.0/22"


def test_reordering_or_removing_an_az_keeps_every_other_subnet() -> None:
    """Subnet CIDRs are replace-on-change: they follow the zone letter, not the list position."""
    base = plan_subnets("10.40.0.0/16", ["us-west-2a", "us-west-2b", "us-west-2c"])
    for zones in (
        ["us-west-2c", "us-west-2a", "us-west-2b"],
        ["us-west-2b", "us-west-2c"],
        ["us-west-2a", "us-west-2c"],
    ):
        plan = plan_subnets("10.40.0.0/16", zones)
        assert plan.efa == base.efa
        assert {az: plan.private[az] for az in zones} == {az: base.private[az] for az in zones}
        assert {az: plan.public[az] for az in zones} == {az: base.public[az] for az in zones}


@given(zones=st.sets(st.sampled_from([f"us-east-1{c}" for c in "abcdf"]), min_size=2, max_size=4))
def test_zone_slots_are_distinct_for_any_letters(zones: set[str]) -> None:
    plan = plan_subnets("10.40.0.0/16", sorted(zones, reverse=True))
    assert len(set(plan.private.values())) == len(zones) == len(set(plan.public.values()))


def test_a_local_zone_ending_in_the_same_letter_gets_its_own_subnets() -> None:
    # GIVEN a zone and a Local Zone whose names end in the same letter (found by the property below: "a", "0a")
    plan = plan_subnets("10.40.0.0/16", ["us-west-2a", "us-west-2-lax-1a"])
    # THEN each has its own subnets, and the zone keeps its letter's slot (as without the Local Zone)
    assert plan.private["us-west-2a"] != plan.private["us-west-2-lax-1a"]
    without = plan_subnets("10.40.0.0/16", ["us-west-2a", "us-west-2b"])
    assert plan.private["us-west-2a"] == without.private["us-west-2a"]


@example(zones={"a", "0a"})
@given(zones=st.sets(st.text(max_size=12), min_size=2, max_size=4))
def test_any_zone_names_get_distinct_slots_without_crashing(zones: set[str]) -> None:
    # GIVEN names a careless stack file may hold ("", "x", "us-east-1?") WHEN planned THEN distinct subnets, no
    # IndexError: the stack rules, not the subnet planner, report a bad name (found by a stack fuzz with "").
    plan = plan_subnets("10.40.0.0/16", sorted(zones))
    assert len(set(plan.private.values())) == len(zones) == len(set(plan.public.values()))
