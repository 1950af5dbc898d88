"""Capacity Block windows: the stack's window rules, the checkpoint signal, and the timeline playing a block's end.

GIVEN prod rendered offline (the module fixture of test_simulate) and an 8-node gpu-h100 gang
WHEN a Capacity Block under it ends at hour 12
THEN with the checkpoint signal it saves, exits, loses nothing past that checkpoint and resumes in the next block
("0 problems"); without the signal Karpenter's drain kills it and that is a PROBLEM.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib

import pytest
import yaml
from conftest import stack_config, stack_sections
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for
from test_simulate_timeline import _arrival, _gated, _job, _mix

from ekstrain.assembly.jobs import render, windows
from ekstrain.assembly.jobs.spec import JobRequestError
from ekstrain.layout import capacity_windows as cw
from ekstrain.simulate import engine
from ekstrain.simulate.capacity_windows import CapacityBlock, parse
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.mix import read_mix
from ekstrain.simulate.timeline import Fault, simulate_timeline
from ekstrain.stacks import loader
from ekstrain.stacks.errors import ConfigError
from ekstrain.tooling import validation

REPO = pathlib.Path(__file__).resolve().parents[2]
needs_build = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


def _blocks(signal: int | None) -> list[CapacityBlock]:
    return [CapacityBlock("gpu-h100", 0, 12 * 60, signal), CapacityBlock("gpu-h100", 13 * 60, 36 * 60, signal)]


def _play(cluster: engine.Cluster, signal: int | None):
    gang = _arrival(_job("gpu-h100", "volcano", 8, "pretrain"), 0, 20)
    return simulate_timeline(cluster, _mix(gang, hours=36, capacity_blocks=_blocks(signal)))


@needs_build
def test_the_signal_saves_before_the_drain_and_nothing_is_lost(cluster: engine.Cluster) -> None:
    report = _play(cluster, 60)
    text = "\n".join(report.lines())
    job = next(j for j in report.jobs if j.name == "Job/pretrain")
    assert report.problems == [], text
    assert job.state == "finished" and job.restarts == 0, text
    assert job.lost_accelerator_hours == 0.0
    assert "BLOCK 11:00 checkpoint signal to 1 job(s) on gpu-h100" in text
    assert "BLOCK 11:20 Karpenter drains" in text  # 40 min before the end at 12:00
    saved = [e for e in job.events if "checkpoint written" in e]
    assert saved and saved[0].startswith("11:15")  # the Mix default save, 843 s, rounded up to 15 min: before 11:20
    # it ran again only once the next block was active
    assert "BLOCK 13:00 Capacity Block for gpu-h100 active (ends 36:00)" in report.waits
    assert job.ended_at is not None and job.ended_at > 13 * 60


@needs_build
def test_without_the_signal_the_drain_is_a_problem(cluster: engine.Cluster) -> None:
    report = _play(cluster, None)
    problems = [p for p in report.problems if "Job/pretrain" in p]
    assert problems and "no checkpoint signal" in problems[0] and "checkpointSignalMinutes" in problems[0]
    job = next(j for j in report.jobs if j.name == "Job/pretrain")
    assert job.restarts == 1  # Karpenter's drain killed it; Volcano restarted it from its periodic checkpoint


@needs_build
def test_nothing_launches_before_a_block_starts(cluster: engine.Cluster) -> None:
    gang = _arrival(_job("gpu-h100", "volcano", 8, "early"), 0, 2)
    blocks = [CapacityBlock("gpu-h100", 4 * 60, 10 * 60, 60)]
    report = simulate_timeline(cluster, _mix(gang, hours=10, capacity_blocks=blocks))
    job = next(j for j in report.jobs if j.name == "Job/early")
    assert job.first_started_at is not None and job.first_started_at >= 4 * 60
    assert any("no active Capacity Block for partition gpu-h100" in w for w in job.waited)


def test_mix_blocks_name_the_key() -> None:
    with pytest.raises(InputError) as exc:
        parse(
            "mix: capacityBlocks", [{"partition": "gpu-h100", "start": 0, "end": 12, "checkpointSignalMinutes": 30}], 48
        )
    assert "checkpointSignalMinutes" in str(exc.value) and "40" in str(exc.value)
    with pytest.raises(InputError, match="end"):
        parse("mix: capacityBlocks", [{"partition": "gpu-h100", "start": 5, "end": 5.5}], 48)
    assert parse("m", [{"partition": "p", "start": 0, "end": 12}], 48) == [CapacityBlock("p", 0, 720, None)]


WINDOW = cw.Window(
    "gpu-h100",
    dt.datetime(2026, 12, 7, 11, 30, tzinfo=dt.timezone.utc),
    dt.datetime(2026, 12, 14, 11, 30, tzinfo=dt.timezone.utc),
    60,
)


def test_a_window_drains_40_minutes_before_its_end() -> None:
    assert cw.stamp(WINDOW.drain_at) == "2026-12-14T10:50:00Z"
    assert cw.stamp(WINDOW.signal_at) == "2026-12-14T10:30:00Z"  # type: ignore[arg-type]
    assert WINDOW.usable_hours == pytest.approx(7 * 24 - 40 / 60)


def test_a_job_longer_than_the_window_is_named() -> None:
    assert cw.job_fits(WINDOW, 100) is None
    why = cw.job_fits(WINDOW, 200)
    assert why is not None and "200 h" in why and "2026-12-14T10:50:00Z" in why
    late = dt.datetime(2026, 12, 13, 0, 0, tzinfo=dt.timezone.utc)
    assert cw.job_fits(WINDOW, 36, start=late) is not None


def test_the_signal_leaves_room_for_one_save() -> None:
    assert cw.signal_too_late(60, 281) is None  # 40 + 5 min
    why = cw.signal_too_late(42, 281)
    assert why is not None and "at least 45" in why


@needs_build
def test_the_example_mix_ends_a_block_under_the_gang_with_0_problems(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
    tmp_path: pathlib.Path,
) -> None:
    """GIVEN examples/mix-capacity-prod.yaml with its gang file rendered for prod WHEN played THEN the signal, the
    drain, nothing lost and 0 problems; the same mix without checkpointSignalMinutes has a PROBLEM."""
    gang = tmp_path / "gang.yaml"
    gang.write_text(yaml.safe_dump(_job("gpu-h100", "volcano", 8, "llama3-70b-megatron")))
    doc = yaml.safe_load((REPO / "examples" / "mix-capacity-prod.yaml").read_text())
    assert [b["end"] for b in doc["capacityBlocks"]][0] == 12
    doc["jobs"][0]["file"] = str(gang)
    with_signal = tmp_path / "mix.yaml"
    with_signal.write_text(yaml.safe_dump(doc))
    report = simulate_timeline(cluster, read_mix(with_signal, prod_build))
    assert report.problems == [], report.lines()
    job = report.jobs[-1]
    assert job.state == "finished" and job.lost_accelerator_hours == 0.0
    assert any("checkpoint signal to 1 job(s)" in w for w in report.waits)
    # a gang that restarts quickly after its clean exit does not start again on the ending block's nodes (they stay
    # until the drain): it would be killed there, so it waits for the block's end
    quick = read_mix(with_signal, prod_build)
    quick.restart_minutes = 1
    report = simulate_timeline(cluster, quick)
    assert report.problems == [], report.lines()
    for block in doc["capacityBlocks"]:
        del block["checkpointSignalMinutes"]
    without = tmp_path / "mix-no-signal.yaml"
    without.write_text(yaml.safe_dump(doc))
    report = simulate_timeline(cluster, read_mix(without, prod_build))
    assert any("no checkpoint signal" in p for p in report.problems), report.problems


def _block(sections: dict, **window: object) -> None:
    """prod's gpu-h100 on a Capacity Block with the given window keys."""
    part = next(p for p in sections["partitions"] if p["name"] == "gpu-h100")
    part["capacityType"] = "reserved"
    part["capacityReservation"] = {"type": "capacity-block", "ids": ["cr-0a1b2c3d4e5f60718"], "instanceCount": 8}
    part["capacityReservation"].update(window)


def _issues(**window: object) -> tuple[list[str], list[str]]:
    try:
        _, warnings = parse_with(lambda s: _block(s, **window))
    except ConfigError as exc:
        return [str(i) for i in exc.issues], []
    return [], warnings


def parse_with(change):  # type: ignore[no-untyped-def]
    sections = stack_sections("prod")
    change(sections)
    return loader.parse(sections, "test", today=dt.date(2026, 12, 5))


START, END = "2026-12-07T11:30:00Z", "2026-12-21T11:30:00Z"


def test_a_block_with_its_window_and_signal_loads_clean() -> None:
    errors, warnings = _issues(start=START, end=END, checkpointSignalMinutes=60)
    assert errors == [] and not [w for w in warnings if "capacityReservation" in w]


def test_a_block_without_window_or_signal_is_warned_with_the_key() -> None:
    _, warnings = _issues()
    assert any("(gpu-h100).capacityReservation.end: the Capacity Block's window is not given" in w for w in warnings)
    _, warnings = _issues(start=START, end=END)
    assert any(".capacityReservation.checkpointSignalMinutes: no checkpoint signal" in w for w in warnings)


def test_a_signal_too_close_to_the_drain_is_refused() -> None:
    # prod's 920 GiB checkpoint at 3,516 MB/s takes 281 s: the signal must be at least 40 + 5 min before the end
    errors, _ = _issues(start=START, end=END, checkpointSignalMinutes=42)
    assert errors and "checkpointSignalMinutes" in errors[0] and "at least 45" in errors[0]


def test_a_window_on_an_odcr_or_backwards_is_refused() -> None:
    errors, _ = _issues(start=END, end=START)
    assert errors and "is not after start" in errors[0]
    errors, _ = _issues(start="2026-12-07T11:30:00", end=END)
    assert errors and "UTC" in errors[0]

    def odcr(s: dict) -> None:
        _block(s, start=START, end=END)
        next(p for p in s["partitions"] if p["name"] == "gpu-h100")["capacityReservation"]["type"] = "default"

    with pytest.raises(ConfigError) as exc:
        parse_with(odcr)
    assert "set type: capacity-block" in str(exc.value)


def _block_cfg(**window: object):  # type: ignore[no-untyped-def]
    return parse_with(lambda s: _block(s, start=START, end=END, **window))[0]


BEFORE = dt.datetime(2026, 12, 5, tzinfo=dt.timezone.utc)


def test_jobs_on_the_block_carry_the_checkpoint_signal() -> None:
    cfg = _block_cfg(checkpointSignalMinutes=60)
    objects = render(spec_for("gpu-h100", nodes=8, name="pretrain", global_batch=512), cfg, "volcano", FakePlanner())
    job = next(o for o in objects if o["kind"] == "Job")
    env = {
        e["name"]: e.get("value")
        for t in job["spec"]["tasks"]
        for c in t["template"]["spec"]["containers"]
        for e in c.get("env", [])
    }
    assert env[cw.CHECKPOINT_AT_ENV] == "2026-12-21T10:30:00Z" and env[cw.CAPACITY_END_ENV] == "2026-12-21T11:30:00Z"
    # another partition: no signal
    other = render(spec_for("gpu-a100", nodes=2, name="other"), cfg, "volcano", FakePlanner())
    assert cw.CHECKPOINT_AT_ENV not in yaml.safe_dump(other)


def test_a_run_longer_than_the_window_without_a_signal_is_refused_with_the_key() -> None:
    cfg = _block_cfg()
    spec = spec_for("gpu-h100", nodes=8, name="pretrain", global_batch=512, planned_hours=400)
    with pytest.raises(JobRequestError) as exc:
        windows.check(spec, cfg, BEFORE)
    text = str(exc.value)
    assert "ekstrain:partitions[1] (gpu-h100).capacityReservation.checkpointSignalMinutes" in text
    assert "400 h" in text and "2026-12-21T10:50:00Z" in text
    assert windows.check(dataclasses.replace(spec, planned_hours=100), cfg, BEFORE) is None


def test_with_a_signal_the_long_run_is_only_warned() -> None:
    cfg = _block_cfg(checkpointSignalMinutes=60)
    spec = spec_for("gpu-h100", nodes=8, name="pretrain", global_batch=512, planned_hours=400)
    note = windows.check(spec, cfg, BEFORE)
    assert note is not None and "checkpoint signal at 2026-12-21T10:30:00Z" in note


def test_summary_lists_the_window_and_what_runs_in_it() -> None:
    from ekstrain.stacks import capacity_rules

    text = "\n".join(capacity_rules.summary_lines(_block_cfg(checkpointSignalMinutes=60)))
    assert "## Capacity Block windows" in text
    assert (
        "- gpu-h100: 2026-12-07T11:30:00Z to 2026-12-21T11:30:00Z (335.3 h usable); drain 2026-12-21T10:50:00Z; "
        "checkpoint signal 2026-12-21T10:30:00Z (60 min before the end)" in text
    )
    assert "Volcano queue(s) gpu-h100" in text and "Slurm partition gpu-h100" in text
    assert capacity_rules.summary_lines(stack_config("dev")) == []


def _spare(cluster: engine.Cluster, pool: str, nodes: int, spare: int) -> engine.Cluster:
    """The cluster with ``pool``'s NodePool limits raised from ``nodes`` to ``nodes + spare`` nodes' worth."""
    scale = (nodes + spare) / nodes
    out = [
        dataclasses.replace(n, pool_limits={k: v * scale for k, v in n.pool_limits.items()}) if n.pool == pool else n
        for n in cluster.nodes
    ]
    return dataclasses.replace(cluster, nodes=out)


@needs_build
def test_one_spare_node_shortens_the_restart_after_a_sick_node(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN the 8-node gang on gpu-h100 and one node turning sick at 2 h WHEN the NodePool holds exactly the gang
    THEN the restart waits for NodeRepair to delete the sick node (its NodeClaim counts against the limit); WHEN it
    holds one node over the gang (a 9-instance reservation) THEN the restart launches the spare at once: it finishes
    earlier and the other 7 nodes idle less."""
    gang = _arrival(_job("gpu-h100", "volcano", 8, "big"), 0, 6)
    fault = [Fault(120, "node-unhealthy", "Job/big")]
    gated = _gated(prod_build)  # the health gate's guard keeps the restart off the sick node
    exact = simulate_timeline(cluster, _mix(gang, faults=fault, hours=10, gated_pools=gated))
    spare = simulate_timeline(_spare(cluster, "gpu-h100", 8, 1), _mix(gang, faults=fault, hours=10, gated_pools=gated))
    a, b = (next(j for j in r.jobs if j.name == "Job/big") for r in (exact, spare))
    assert a.state == b.state == "finished"
    assert b.ended_at is not None and a.ended_at is not None and b.ended_at < a.ended_at
    held = [
        r.idle.get("gpu-h100", {}).get("held while the job restarts or its other nodes launch", 0.0) / 60
        for r in (exact, spare)
    ]
    assert held[1] < held[0], held
    assert any("full until NodeRepair" in w for w in a.all_waits)
    assert not any("full until NodeRepair" in w for w in b.all_waits)


def _zone(**network: object) -> tuple[list[str], list[str]]:
    def change(s: dict) -> None:
        for key in ("trainingAvailabilityZoneId", "trainingZoneInstanceTypes"):  # prod's own, replaced by the case's
            s["network"].pop(key, None)
        s["network"].update(network)

    try:
        _, warnings = parse_with(change)
    except ConfigError as exc:
        return [str(i) for i in exc.issues], []
    return [], warnings


def test_the_zone_id_prefix_of_a_region() -> None:
    from ekstrain.stacks.capacity_rules import zone_id_prefix

    assert [
        zone_id_prefix(r) for r in ("us-west-2", "us-east-1", "ap-northeast-1", "eu-central-1", "us-gov-west-1")
    ] == [
        "usw2",
        "use1",
        "apne1",
        "euc1",
        "usgw1",
    ]


def test_a_zone_id_of_another_region_is_refused() -> None:
    errors, _ = _zone(trainingAvailabilityZoneId="use1-az4")  # prod is us-west-2
    assert errors and errors[0].startswith("ekstrain:network.trainingAvailabilityZoneId: use1-az4 is not an AZ ID")
    assert "describe-availability-zones" in errors[0]


def test_without_offerings_the_render_says_it_cannot_know() -> None:
    errors, warnings = _zone(trainingAvailabilityZoneId="usw2-az2")
    assert errors == []
    assert any("cannot know whether" in w and "p5.48xlarge" in w and "usw2-az2" in w for w in warnings)


def test_a_type_not_offered_in_the_zone_id_is_refused_with_key_and_fix() -> None:
    offered = ["p4d.24xlarge", "p4de.24xlarge", "trn1.32xlarge", "trn1n.32xlarge"]  # no p5 in this AZ ID
    errors, _ = _zone(trainingAvailabilityZoneId="usw2-az2", trainingZoneInstanceTypes=offered)
    assert len(errors) == 1
    assert errors[0].startswith("ekstrain:partitions[1] (gpu-h100).instanceTypes: p5.48xlarge not offered in")
    assert "fix: pick a training AZ whose ID offers them" in errors[0]
    ok, warnings = _zone(trainingAvailabilityZoneId="usw2-az2", trainingZoneInstanceTypes=[*offered, "p5.48xlarge"])
    assert ok == [] and not any("trainingZone" in w for w in warnings)
