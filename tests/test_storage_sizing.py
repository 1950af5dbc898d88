"""Checkpoint sizing helper: exact numbers, and properties over random sizes and targets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.cli import storage as storage_cli
from ekstrain.layout import storage_sizing as sz

GIB = 2**30


def test_throughput_is_capacity_tib_times_tier() -> None:
    assert sz.throughput_mb_s("PERSISTENT_2", 4800, 250) == 4800 / 1024 * 250 == 1171.875
    assert sz.throughput_mb_s("SCRATCH_2", 1200, None) == 1200 / 1024 * 200
    assert sz.throughput_mb_s("SCRATCH_2", 2400, 1000) == 2400 / 1024 * 200, "SCRATCH_2 ignores a tier"


def test_prod_checkpoint_save_time() -> None:
    # GIVEN the prod stack: PERSISTENT_2 4800 GiB @ 250 MB/s/TiB and a 1043 GiB checkpoint
    result = sz.report(sz.gib_to_bytes(1043), 300, "PERSISTENT_2", 4800, 250)
    # THEN a save takes 1043 GiB / 1171.875 MB/s = 955.7 s: over the 300 s target
    assert result.configured.save_seconds == pytest.approx(1043 * GIB / 1171.875e6)
    assert round(result.configured.save_seconds) == 956
    assert not result.meets_target
    # AND the cheapest fix keeps the capacity and takes the 1000 MB/s/TiB tier (239 s)
    assert result.recommended is not None
    assert (result.recommended.capacity_gib, result.recommended.per_unit_throughput) == (4800, 1000)
    assert round(result.recommended.save_seconds) == 239
    assert "TOO SLOW" in result.summary() and "4800 GiB @ 1000" in result.summary()


def test_small_checkpoint_fits_smallest_file_system() -> None:
    result = sz.report(10 * GIB, 300, "PERSISTENT_2", 1200, 125)
    assert result.meets_target
    assert result.recommended is not None and result.recommended.capacity_gib == 1200
    assert result.recommended.per_unit_throughput == 125


def test_recommended_capacities_follow_lustre_steps() -> None:
    assert sz.smallest_capacity(100 * GIB, 300, "SCRATCH_2", 200) == 2400
    assert sz.smallest_capacity(1, 300, "PERSISTENT_2", 125, min_capacity_gib=3000) == 4800


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="125, 250, 500, 1000"):
        sz.save_seconds(GIB, "PERSISTENT_2", 1200, 300)
    with pytest.raises(ValueError, match="> 0"):
        sz.smallest_capacity(GIB, 0, "PERSISTENT_2", 250)


def test_cli_reports_and_exits_nonzero_when_too_slow(capsys: pytest.CaptureFixture[str]) -> None:
    code = storage_cli.main(["--checkpoint-gib", "1043", "--capacity-gib", "4800", "--throughput", "250"])
    assert code == 1
    assert "save 956 s" in capsys.readouterr().out
    assert storage_cli.main(["--checkpoint-bytes", str(GIB), "--deployment-type", "SCRATCH_2"]) == 0
    with pytest.raises(SystemExit):
        storage_cli.main(["--checkpoint-gib", "1", "--capacity-gib", "3000"])


valid_capacities = st.one_of(st.just(1200), st.integers(1, 200).map(lambda n: n * 2400))
sizes = st.integers(0, 50 * 2**40)
targets = st.floats(10, 7200)


@settings(max_examples=200, deadline=None)
@given(sizes, valid_capacities, st.sampled_from(sz.PERSISTENT_2_TIERS), st.sampled_from(sz.PERSISTENT_2_TIERS))
def test_more_throughput_is_never_slower(size: int, capacity: int, tier_a: int, tier_b: int) -> None:
    low, high = sorted((tier_a, tier_b))
    assert sz.save_seconds(size, "PERSISTENT_2", capacity, high) <= sz.save_seconds(size, "PERSISTENT_2", capacity, low)
    bigger = capacity + 2400 if capacity >= 2400 else 2400
    assert sz.save_seconds(size, "PERSISTENT_2", bigger, low) <= sz.save_seconds(size, "PERSISTENT_2", capacity, low)


@settings(max_examples=200, deadline=None)
@given(sizes, targets, st.sampled_from(["PERSISTENT_2", "SCRATCH_2"]), valid_capacities)
def test_recommendation_always_meets_target(size: int, target: float, deployment: str, minimum: int) -> None:
    rec = sz.recommend(size, target, deployment, minimum)  # type: ignore[arg-type]
    if rec is None:
        # Only when even the largest searched file system at the fastest tier is too slow.
        fastest = 1000 if deployment == "PERSISTENT_2" else None
        assert sz.save_seconds(size, deployment, sz.MAX_RECOMMENDED_CAPACITY_GIB, fastest) > target  # type: ignore[arg-type]
        return
    assert rec.save_seconds <= target
    assert rec.capacity_gib >= minimum and sz.valid_capacity(rec.capacity_gib)
    # Minimal: one step smaller (still >= minimum) would miss the target.
    smaller = rec.capacity_gib - 2400 if rec.capacity_gib > 2400 else (1200 if rec.capacity_gib == 2400 else 0)
    if smaller >= max(minimum, 1200):
        assert sz.save_seconds(size, deployment, smaller, rec.per_unit_throughput) > target  # type: ignore[arg-type]


def test_unreachable_target_gives_no_recommendation() -> None:
    # 4.7 TB in 10 s needs ~470 GB/s: beyond any SCRATCH_2 file system the search considers.
    assert sz.recommend(4_687_500_000_001, 10, "SCRATCH_2") is None
    assert "no capacity/tier" in sz.report(4_687_500_000_001, 10, "SCRATCH_2", 1200, None).summary()
