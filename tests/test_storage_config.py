"""Storage config rules: bad FSx capacity/throughput/paths/events are rejected with the key path,
and the checkpoint save-time warning fires exactly when the configured FSx is too slow."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stack_sections
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

TODAY = dt.date(2026, 12, 3)
FSX = "ekstrain:storage.fsx"


def _issues(sections: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.test.yaml", today=TODAY)
    return [(i.key, i.problem, i.fix) for i in caught.value.issues]


def _fsx(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["storage"]["fsx"].update(changes)


def _persistent(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return _fsx(**{"deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 250, **changes})


BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "capacity off-step": (_fsx(storageCapacityGiB=3600), f"{FSX}.storageCapacityGiB", "2400 or 4800"),
    "capacity below minimum": (_fsx(storageCapacityGiB=600), f"{FSX}.storageCapacityGiB", "1200"),
    "capacity 1800": (_persistent(storageCapacityGiB=1800), f"{FSX}.storageCapacityGiB", "multiple of 2400"),
    "PERSISTENT_2 tier 200": (
        _persistent(perUnitStorageThroughput=200),
        f"{FSX}.perUnitStorageThroughput",
        "125, 250, 500, 1000",
    ),
    "PERSISTENT_2 without tier": (
        _fsx(deploymentType="PERSISTENT_2", perUnitStorageThroughput=None),
        f"{FSX}.perUnitStorageThroughput",
        "125, 250, 500, 1000",
    ),
    "SCRATCH_2 with tier": (_fsx(perUnitStorageThroughput=250), f"{FSX}.perUnitStorageThroughput", "null"),
    "SCRATCH_2 with KMS": (
        _fsx(kmsKeyArn="arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
        f"{FSX}.kmsKeyArn",
        "PERSISTENT_2",
    ),
    "unknown deployment": (_fsx(deploymentType="PERSISTENT_1"), f"{FSX}.deploymentType", "SCRATCH_2"),
    "same paths": (_fsx(checkpointPath="/data"), f"{FSX}.checkpointPath", "/checkpoints"),
    "nested paths": (_fsx(checkpointPath="/data/ckpt"), f"{FSX}.checkpointPath", "sibling"),
    "relative path": (_fsx(dataPath="data"), f"{FSX}.dataPath", "/data"),
    "trailing slash": (_fsx(dataPath="/data/"), f"{FSX}.dataPath", "no trailing slash"),
    "unknown event": (_fsx(autoImportEvents=["NEW", "RENAMED"]), f"{FSX}.autoImportEvents[1]", "DELETED"),
    "duplicate event": (_fsx(autoExportEvents=["NEW", "NEW"]), f"{FSX}.autoExportEvents", "at most once"),
    "chunk size": (_fsx(importedFileChunkSizeMiB=0), f"{FSX}.importedFileChunkSizeMiB", "greater than"),
    "same bucket": (
        lambda s: s["storage"].update(buckets={"datasetsBucket": "ml-data", "checkpointsBucket": "ml-data"}),
        "ekstrain:storage.buckets.checkpointsBucket",
        "two different buckets",
    ),
    "bad bucket name": (
        lambda s: s["storage"].update(buckets={"datasetsBucket": "ML_Data"}),
        "ekstrain:storage.buckets.datasetsBucket",
        "lowercase",
    ),
    "unknown storage key": (
        lambda s: s["storage"]["fsx"].update(throughput=250),
        f"{FSX}.throughput",
        "perUnitStorageThroughput",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_storage_config_names_key_and_fix(case: str) -> None:
    mutate, key, word = BAD[case]
    sections = stack_sections("dev")
    mutate(sections)
    issues = _issues(sections)
    assert any(k == key and word in problem + " " + fix for k, problem, fix in issues), issues


@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 9600, 120000])
@pytest.mark.parametrize("tier", [125, 250, 500, 1000])
def test_valid_persistent_2_combinations_pass(capacity: int, tier: int) -> None:
    sections = stack_sections("dev")
    _persistent(storageCapacityGiB=capacity, perUnitStorageThroughput=tier)(sections)
    cfg, _ = parse(sections, today=TODAY)
    assert (cfg.storage.fsx.storage_capacity_gib, cfg.storage.fsx.per_unit_storage_throughput) == (capacity, tier)


def test_disabled_fsx_skips_fsx_rules() -> None:
    sections = stack_sections("dev")
    sections["schedulers"].pop("slurm", None)
    _fsx(enabled=False, storageCapacityGiB=3000)(sections)
    cfg, _ = parse(sections, today=TODAY)
    assert not cfg.storage.fsx.enabled


def _checkpoint_warnings(sections: dict[str, Any]) -> list[str]:
    _, warnings = parse(sections, today=TODAY)
    return [w for w in warnings if w.startswith("ekstrain:storage.checkpoint")]


def test_prod_warns_that_its_fsx_cannot_save_a_70b_checkpoint_in_time() -> None:
    warnings = _checkpoint_warnings(stack_sections("prod"))
    assert len(warnings) == 1
    # 920 GiB = the planner's checkpoint_bytes for llama3-70b (Pulumi.prod.yaml) at 1,172 MB/s.
    assert "843 s" in warnings[0] and "targetSaveSeconds 300" in warnings[0]
    assert "storageCapacityGiB: 7200 and perUnitStorageThroughput: 500" in warnings[0]


def test_no_warning_when_the_checkpoint_fits_or_is_unknown() -> None:
    sections = stack_sections("prod")
    sections["storage"]["checkpoint"]["targetSaveSeconds"] = 1000
    assert _checkpoint_warnings(sections) == []
    sections["storage"]["checkpoint"].pop("sizeGiB")
    sections["storage"]["checkpoint"]["targetSaveSeconds"] = 10
    assert _checkpoint_warnings(sections) == []


def test_scratch_without_export_warns_about_losing_checkpoints() -> None:
    sections = stack_sections("dev")
    _fsx(autoExportEvents=[])(sections)
    _, warnings = parse(sections, today=TODAY)
    assert any(w.startswith(f"{FSX}.autoExportEvents") and "lost" in w for w in warnings)


def test_unprotected_prod_warns() -> None:
    sections = stack_sections("prod")
    sections["storage"]["protect"] = False
    _, warnings = parse(sections, today=TODAY)
    assert any(w.startswith("ekstrain:storage.protect") for w in warnings)


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(st.integers(1200, 250_000), st.integers(1, 100).map(lambda n: n * 2400)),
    st.sampled_from(["SCRATCH_2", "PERSISTENT_2"]),
    st.sampled_from([125, 250, 300, 1000]),
)
def test_fsx_rules_accept_exactly_the_aws_combinations(capacity: int, deployment: str, tier: int) -> None:
    sections = stack_sections("dev")
    _fsx(
        deploymentType=deployment,
        storageCapacityGiB=capacity,
        perUnitStorageThroughput=tier if deployment == "PERSISTENT_2" else None,
    )(sections)
    valid = (capacity == 1200 or capacity % 2400 == 0) and (deployment == "SCRATCH_2" or tier != 300)
    if valid:
        parse(sections, today=TODAY)
    else:
        keys = {k for k, _, _ in _issues(sections)}
        expected = set()
        if not (capacity == 1200 or capacity % 2400 == 0):
            expected.add(f"{FSX}.storageCapacityGiB")
        if deployment == "PERSISTENT_2" and tier == 300:
            expected.add(f"{FSX}.perUnitStorageThroughput")
        assert keys == expected
