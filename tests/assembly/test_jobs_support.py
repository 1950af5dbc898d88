"""tests/support/jobs.py's doubles behave as what they stand in for: the planner's contract, the kubelet's expansion."""

from __future__ import annotations

from support.jobs import FakePlanner, kubelet_expand


def test_fake_planner_covers_the_world_and_the_batch() -> None:
    plans = FakePlanner().search("llama3-8b", "p4d.24xlarge", 4, 256, 4096)
    assert plans and all(p.tp * p.pp * p.dp == 32 and p.micro_batch * p.dp * p.grad_accum == 256 for p in plans)
    assert plans[0].fits


def test_kubelet_expand_follows_the_kubelet() -> None:
    assert kubelet_expand("a$$b $(X) $(Y) $$(X) $( $x", {"X": "1"}) == "a$b 1 $(Y) $(X) $( $x"
