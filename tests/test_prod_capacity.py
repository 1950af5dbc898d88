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
from support.jobs import FakePlanner
from support.simulate import HELM

from ekstrain.assembly.jobs import render as render_job
from ekstrain.cli import job as job_cli
from ekstrain.simulate.load import build_objects
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.stacks.models import StackConfig
from ekstrain.tooling import validation

BEFORE_THE_BLOCK = dt.date(2026, 12, 5)
needs_build = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


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


# ---- a spare node over the gang: examples/mix-spare-prod.yaml played with and without spareNodes -----------------


def _spare_mix(tmp_path: pathlib.Path, spare: bool) -> pathlib.Path:
    from test_simulate_timeline import _job

    gang = tmp_path / "gang.yaml"
    gang.write_text(yaml.safe_dump(_job("gpu-h100", "volcano", 8, "llama3-70b-megatron")))
    doc = yaml.safe_load((REPO / "examples" / "mix-spare-prod.yaml").read_text())
    assert doc["spareNodes"] == {"gpu-h100": 1}
    doc["jobs"][0]["file"] = str(gang)
    if not spare:
        del doc["spareNodes"]
    out = tmp_path / f"mix-{spare}.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


@needs_build
def test_a_spare_node_shortens_the_gangs_restart_by_the_sick_nodes_deletion(
    cluster: Any,  # noqa: F811
    prod_build: pathlib.Path,  # noqa: F811
    tmp_path: pathlib.Path,
) -> None:
    """GIVEN the 8-node gang on prod's 8-instance block and a GPU fault at 2 h WHEN played as shipped THEN the
    restart waits for the sick node's deletion (its NodeClaim fills the pool's limit): ends 6:53, 22.4 GPU-hours
    held; WHEN the block is one node over the gang (spareNodes) THEN the ninth launches at once: ends 6:48, 17.7
    GPU-hours held. The work lost past the last checkpoint is the same (the checkpoint interval decides it)."""
    from ekstrain.simulate.mix import platform_facts, read_mix
    from ekstrain.simulate.timeline import simulate_timeline

    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in build_objects(prod_build):
        by_kind.setdefault(o["kind"], []).append(o)
    runs = {}
    for spare in (False, True):
        mix = read_mix(_spare_mix(tmp_path, spare), prod_build)
        platform_facts(prod_build, by_kind, mix)
        report = simulate_timeline(cluster, mix)
        assert report.problems == [], report.lines()
        job = next(j for j in report.jobs if j.name == "Job/llama3-70b-megatron")
        held = report.idle["gpu-h100"]["held while the job restarts or its other nodes launch"] / 60
        runs[spare] = (job.ended_at, round(held, 1), round(job.lost_accelerator_hours, 1), job.all_waits)
    assert runs[False][:3] == (413, 22.4, 17.1)
    assert runs[True][:3] == (408, 17.7, 17.1)
    assert any("full until NodeRepair" in w for w in runs[False][3])
    assert not any("full until NodeRepair" in w for w in runs[True][3])


def test_spare_nodes_name_a_nodepool_of_the_build(tmp_path: pathlib.Path) -> None:
    from ekstrain.simulate.inputs import InputError
    from ekstrain.simulate.mix import read_mix

    build = tmp_path / "build"
    (build / "manifests" / "gpu-h100").mkdir(parents=True)
    (build / "manifests" / "gpu-h100" / "NodePool-gpu-h100.yaml").write_text("kind: NodePool\n")
    mix = tmp_path / "mix.yaml"
    for spare, key in (("{gpu-h200: 1}", "spareNodes.gpu-h200"), ("{gpu-h100: 0}", "spareNodes.gpu-h100")):
        mix.write_text(f"hours: 1\nspareNodes: {spare}\njobs: [{{notebook: {{partition: gpu-h100}}}}]\n")
        with pytest.raises(InputError) as exc:
            read_mix(mix, build)
        assert key in str(exc.value.report()), exc.value.report()
