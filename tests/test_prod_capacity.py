"""Prod's capacity as shipped: the 64-GPU partition on a Capacity Block, the training AZ by ID with every partition's
types offered there, and the seeded cases refused (or warned) with the stack key and the fix.

GIVEN Pulumi.prod.yaml
THEN gpu-h100 is reserved on a Capacity Block of exactly the gang (8 x p5.48xlarge: maxNodes 8, no spare node, the
reason in docs/capacity.md) with a window and a checkpoint signal, and it loads without a capacity or zone warning
WHEN a partition type is not offered in the training AZ ID (an EFA partition or not) THEN refused with the key and fix
WHEN the block gives no checkpoint signal and a job plans longer than its window THEN `ekstrain job render --hours`
refuses it naming capacityReservation.checkpointSignalMinutes; with the signal it is a warning.
"""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pytest
import yaml
from conftest import REPO, stack_config, stack_sections
from test_jobs_support import FakePlanner

from ekstrain.assembly.jobs import render as render_job
from ekstrain.cli import job as job_cli
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.stacks.models import StackConfig

BEFORE_THE_BLOCK = dt.date(2026, 12, 5)


def _load(change: Any = None) -> tuple[list[str], list[str]]:
    sections = stack_sections("prod")
    if change is not None:
        change(sections)
    try:
        _, warnings = parse(sections, "test", today=BEFORE_THE_BLOCK)
    except ConfigError as exc:
        return [str(i) for i in exc.issues], []
    return [], warnings


def test_prod_runs_its_64_gpu_partition_on_a_capacity_block_in_an_az_chosen_by_id() -> None:
    cfg: StackConfig = stack_config("prod")
    h100 = next(p for p in cfg.partitions if p.name == "gpu-h100")
    cr = h100.capacity_reservation
    assert h100.capacity_type == "reserved" and h100.capacity_block and cr is not None
    assert cr.ids and cr.instance_count == h100.max_nodes == 8  # the gang exactly: no spare (docs/capacity.md)
    assert cr.start is not None and cr.end is not None and cr.checkpoint_signal_minutes == 60
    assert not h100.wants_placement_group  # EC2 co-locates a block's instances
    assert h100.effective_consolidate_after == "Never"  # the block is paid whether or not a node runs
    assert cfg.network.training_availability_zone_id == "usw2-az2"
    offered = set(cfg.network.training_zone_instance_types)
    assert all(t in offered for p in cfg.partitions for t in p.instance_types)
    errors, warnings = _load()
    assert errors == []
    assert not [w for w in warnings if "capacityReservation" in w or "trainingZone" in w or "AvailabilityZone" in w]


def test_a_partition_type_not_offered_in_the_zone_id_is_refused_with_key_and_fix() -> None:
    def no_p5(s: dict[str, Any]) -> None:
        s["network"]["trainingZoneInstanceTypes"].remove("p5.48xlarge")

    errors, _ = _load(no_p5)
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "ekstrain:partitions[1] (gpu-h100).instanceTypes: p5.48xlarge not offered in the training AZ usw2-az2"
    )
    assert "fix: pick a training AZ whose ID offers them" in errors[0]


def test_a_partition_without_efa_is_checked_against_the_zone_id_too() -> None:
    """Every NodePool requires the training AZ, EFA or not: a non-EFA partition whose type the AZ ID does not offer
    would never launch either (the check used to skip partitions without EFA)."""

    def small(s: dict[str, Any]) -> None:
        s["partitions"].append(
            {"name": "gpu-small", "accelerator": "gpu", "instanceTypes": ["g5.8xlarge"], "maxNodes": 2, "efa": False}
        )

    errors, _ = _load(small)
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "ekstrain:partitions[3] (gpu-small).instanceTypes: g5.8xlarge not offered in the training AZ usw2-az2"
    )

    def listed(s: dict[str, Any]) -> None:
        small(s)
        s["network"]["trainingZoneInstanceTypes"].append("g5.8xlarge")

    assert _load(listed)[0] == []


def _run_job_render(stack_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch, hours: int) -> int:
    monkeypatch.setattr(job_cli, "render", lambda spec, cfg, scheduler: render_job(spec, cfg, scheduler, FakePlanner()))
    from ekstrain.cli import main as cli

    argv = ["job", "render", "--stack-file", str(stack_file), "--partition", "gpu-h100", "--scheduler", "volcano"]
    argv += ["--nodes", "8", "--image", "img:1", "--model", "llama3-70b", "--global-batch", "512"]
    argv += ["--seq-len", "8192", "--hours", str(hours)]
    return cli.main(argv)


def test_a_run_longer_than_prods_block_without_a_signal_is_refused_with_the_key(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """400 h is longer than the whole 14-day block (335.3 h to Karpenter's drain), whatever the day it is run."""
    doc = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    h100 = next(p for p in doc["config"]["ekstrain:partitions"] if p["name"] == "gpu-h100")
    del h100["capacityReservation"]["checkpointSignalMinutes"]
    no_signal = tmp_path / "Pulumi.prod.yaml"
    no_signal.write_text(yaml.safe_dump(doc))
    assert _run_job_render(no_signal, monkeypatch, 400) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(("error:", "fix:"))]
    assert lines[0].startswith("error: ekstrain job render: --hours: the job plans 400 h but the Capacity Block")
    assert "no checkpoint signal" in lines[0]
    assert lines[1].startswith("fix: set ekstrain:partitions[1] (gpu-h100).capacityReservation.checkpointSignalMinutes")
    assert "Traceback" not in err

    # prod as shipped gives the signal: the same run is rendered, with a warning naming the signal's time
    assert _run_job_render(REPO / "Pulumi.prod.yaml", monkeypatch, 400) == 0
    captured = capsys.readouterr()
    assert "warning: ekstrain job render: --hours: the job plans 400 h" in captured.err
    assert "checkpoint signal at 2027-01-18T10:30:00Z" in captured.err
    assert "EKSTRAIN_CHECKPOINT_AT" in captured.out
