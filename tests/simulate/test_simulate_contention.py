"""``ekstrain simulate --timeline`` under contention: what costs money is a problem.

GIVEN prod rendered offline (the module fixture of test_simulate) and job templates rendered in memory
WHEN teams' gangs, Slurm (NodeSets scaled by KEDA) and notebooks share a partition
THEN slurmd pods count in their partition's Volcano queue, a gang waits before admission (never after it for
longer than a node launch), an EC2 shortage is played as Karpenter retries it, and idle paid nodes beyond the
partition's consolidation policy are problems.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest
import yaml
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for
from test_simulate_timeline import PROD, _arrival, _job, _mix

from ekstrain.assembly.jobs import render_sbatch
from ekstrain.simulate import engine
from ekstrain.simulate.engine import nodeset_queue
from ekstrain.simulate.mix import read_mix
from ekstrain.simulate.timeline import FAULT_KINDS, Arrival, Fault, simulate_timeline
from ekstrain.tooling import validation

pytestmark = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)
REPO = pathlib.Path(__file__).resolve().parents[2]


def _sbatch(partition: str, nodes: int, name: str, at_h: float, hours: float) -> Arrival:
    text = render_sbatch(spec_for(partition, nodes=nodes, name=name), PROD, FakePlanner())
    obj = {"kind": "ConfigMap", "metadata": {"name": name}, "data": {f"{name}.sbatch": text}}
    return Arrival(f"sbatch/{name}", obj, int(at_h * 60), int(hours * 60))


def _outside_queue(cluster: engine.Cluster) -> engine.Cluster:
    """Main before one ledger: the NodeSet's slurmd pods scheduled by the default scheduler, outside every queue."""
    nodesets = {}
    for part, ns in cluster.nodesets.items():
        ns = yaml.safe_load(yaml.safe_dump(ns))
        ns["spec"]["template"]["spec"].pop("schedulerName", None)
        nodesets[part] = ns
    return dataclasses.replace(cluster, nodesets=nodesets)


def test_scaled_slurmd_pods_count_in_their_partition_queue(cluster: engine.Cluster) -> None:
    """GIVEN a 4-node sbatch on gpu-a100 (KEDA scales its NodeSet) and then a 14-node Volcano gang (16 nodes in
    the partition) WHEN the slurmd pods bypass the queue THEN the queue admits the gang, which stops at the
    NodePool limit: problems; WHEN they are in the queue (the render) THEN the gang waits before admission, starts
    within a node launch of it, and nothing is stranded."""
    assert nodeset_queue(cluster.nodesets["gpu-a100"]) == "gpu-a100"
    assert "gpu-a100" in cluster.autoscaled
    sbatch = _sbatch("gpu-a100", 4, "ft", 0, 4)
    gang = _arrival(_job("gpu-a100", "volcano", 14, "gang"), 0.5, 3)

    old = simulate_timeline(_outside_queue(cluster), _mix(sbatch, gang, hours=12))
    assert "Job/gang: admitted by its queue but unbindable at the NodePool limit" in old.problems, old.problems
    assert any(p.startswith("Job/gang: started ") and "after its queue admitted it" in p for p in old.problems)

    new = simulate_timeline(cluster, _mix(sbatch, gang, hours=12))
    assert new.problems == [], new.problems
    job = next(j for j in new.jobs if j.name == "Job/gang")
    assert job.state == "finished" and job.admitted_at is not None and job.first_started_at is not None
    assert job.admitted_at >= 4 * 60 + 10  # after the sbatch's 4 nodes went back to the queue
    assert job.first_started_at - job.admitted_at <= 10
    assert any(r.startswith("Volcano enqueue (capacity)") for r in job.waited), job.waited
    assert not any(k.startswith("stranded") for k in new.idle.get("gpu-a100", {}))
    (after, slurm) = [w for w in new.waits if w.startswith("WAITS")]  # (TOPOLOGY lines follow them)
    assert after.startswith("WAITS after admission") and "0 of 2 longer than a node launch" in after, after
    assert slurm.startswith("WAITS sbatch arrival to start: longest 10 min"), slurm


def test_an_sbatch_waits_in_the_queue_while_gangs_hold_the_partition(cluster: engine.Cluster) -> None:
    """GIVEN an 8-node gang holding gpu-h100 WHEN a 2-node sbatch arrives THEN KEDA's slurmd pods wait for the
    queue (no node launched for them, nothing stranded) and start when the gang has finished."""
    gang = _arrival(_job("gpu-h100", "volcano", 8, "gang"), 0, 3)
    sbatch = _sbatch("gpu-h100", 2, "ft", 1, 2)
    report = simulate_timeline(cluster, _mix(gang, sbatch, hours=10))
    assert report.problems == [], report.problems
    job = next(j for j in report.jobs if j.name == "sbatch/ft")
    assert job.state == "finished" and job.first_started_at is not None
    assert job.first_started_at >= 3 * 60 + 10
    assert any(
        r.startswith("NodeSet scaled by 2: gang of 2 slurmd pods") and "Volcano enqueue (capacity)" in r
        for r in job.waited
    ), job.waited


def test_insufficient_capacity_retries_and_the_gang_holds_what_launched(cluster: engine.Cluster) -> None:
    """GIVEN a 4-node trn1 gang and EC2 with 2 more trn1.32xlarge, then none for an hour WHEN played THEN 2 nodes
    launch, the rest fail and are retried (Karpenter's 3-minute unavailable-offering cache) until capacity is
    back, the gang holds its 2 empty nodes meanwhile (their own idle category), starts a launch after the window,
    and the FAULT line says so; no problem (the wait is the injected fault's)."""
    assert "insufficient-capacity" in FAULT_KINDS
    trn = _job("trainium", "trainium", 4, "trn", instance_type="trn1.32xlarge")
    fault = Fault(60, "insufficient-capacity", "Job/trn", window=60, nodes=2)
    report = simulate_timeline(cluster, _mix(_arrival(trn, 1, 2), faults=[fault], hours=6))
    assert report.problems == [], report.problems
    job = next(j for j in report.jobs if j.name == "Job/trn")
    assert job.admitted_at == 60 and job.first_started_at == 2 * 60 + 10
    assert any("InsufficientInstanceCapacity" in r for r in job.waited), job.waited
    held = report.idle["trainium"]["held while EC2 has no capacity for the rest (insufficient-capacity)"]
    assert held == pytest.approx(2 * 16 * 50)  # 2 nodes x 16 Neuron devices, from their launch (1:10) to 2:00
    (line,) = report.faults
    assert line.startswith("FAULT Job/trn: launch failed for lack of EC2 capacity, started 70 min after admission")
    assert "1 of 1 longer than a node launch (1 hit by an injected fault)" in report.waits[0]


def test_standing_slurmd_nodes_idle_beyond_consolidation_are_a_problem(cluster: engine.Cluster) -> None:
    """GIVEN gpu-a100's NodeSet with a floor of 2 slurmd pods (nodesetReplicas) and no Slurm job WHEN played THEN
    the two never-empty p4d nodes are idle beyond consolidateAfter: a problem naming nodesetReplicas."""
    nodesets = dict(cluster.nodesets)
    ns = yaml.safe_load(yaml.safe_dump(nodesets["gpu-a100"]))
    ns["spec"]["replicas"] = 2
    nodesets["gpu-a100"] = ns
    floor = dataclasses.replace(cluster, nodesets=nodesets)
    notebook = _arrival(_job("gpu-h100", "volcano", 1, "small"), 0, 1)
    report = simulate_timeline(floor, _mix(notebook, hours=4))
    (problem,) = report.problems
    assert re.fullmatch(
        r"gpu-a100: 6[0-9]\.[0-9] idle paid accelerator-hours on slurmd nodes without a Slurm job, kept beyond the "
        r"partition's consolidateAfter \(schedulers\.slurm\.nodesetReplicas floor\)",
        problem,
    ), problem


def test_the_contention_mix_names_only_rendered_examples_and_every_scheduler_kind() -> None:
    """GIVEN examples/mix-prod-contention.yaml WHEN its job files are read THEN each is written by
    examples/render-all.sh or examples/contention/render.sh, and it has every scheduler kind prod runs, notebooks
    and Slurm on the same partitions (make simulate plays it)."""
    doc = yaml.safe_load((REPO / "examples" / "mix-prod-contention.yaml").read_text())
    scripts = (REPO / "examples" / "render-all.sh").read_text() + (
        REPO / "examples" / "contention" / "render.sh"
    ).read_text()
    files = [j["file"] for j in doc["jobs"] if "file" in j]
    for f in files:
        out = "$OUT/" + f.split("/", 2)[2]
        assert out in scripts, f
    names = " ".join(files)
    for kind in ("sbatch", "mpijob", "trainjob", "rayjob", "volcano", "trainium", "bionemo"):
        assert kind in names or kind in {"trainium"} and "trn" in names, kind
    notebooks = {j["notebook"]["partition"] for j in doc["jobs"] if "notebook" in j}
    assert notebooks == {"gpu-a100", "gpu-h100", "trainium"}
    makefile = (REPO / "Makefile").read_text()
    assert "examples/mix-prod-contention.yaml" in makefile and "examples/contention/render.sh" in makefile
    assert "examples/mix-reserved-teams.yaml" in makefile and "examples/contention/render-teams.sh" in makefile
    teams_mix = yaml.safe_load((REPO / "examples" / "mix-reserved-teams.yaml").read_text())
    teams_script = (REPO / "examples" / "contention" / "render-teams.sh").read_text()
    for j in teams_mix["jobs"]:
        assert "$OUT/" + j["file"].split("/", 2)[2] in teams_script, j


def test_a_mix_fault_reads_nodes(tmp_path: pathlib.Path, prod_build: pathlib.Path) -> None:
    """GIVEN a mix with an insufficient-capacity fault WHEN read THEN its window and spare instances are kept."""
    job = tmp_path / "j.yaml"
    job.write_text(yaml.safe_dump(_job("gpu-h100", "volcano", 2, "g")))
    mix = tmp_path / "mix.yaml"
    mix.write_text(
        f"jobs: [{{file: {job}, at: 0, hours: 1}}]\n"
        "faults: [{at: 0, kind: insufficient-capacity, job: Job/g, windowHours: 2, nodes: 1}]\n"
    )
    (fault,) = read_mix(mix, prod_build).faults
    assert (fault.kind, fault.window, fault.nodes) == ("insufficient-capacity", 120, 1)


def test_insufficient_capacity_delays_an_sbatch_before_its_nodeset_scales(cluster: engine.Cluster) -> None:
    """GIVEN a 2-node sbatch on gpu-h100 and EC2 without p5.48xlarge for an hour from its arrival WHEN played THEN
    KEDA's slurmd pods wait for the launches (the fault is injected on the type its NodeSet's pods land on) and the
    job starts a launch after the window; a FAULT line, no problem."""
    sbatch = _sbatch("gpu-h100", 2, "ft", 1, 2)
    fault = Fault(60, "insufficient-capacity", "sbatch/ft", window=60, nodes=0)
    report = simulate_timeline(cluster, _mix(sbatch, faults=[fault], hours=6))
    assert report.problems == [], report.problems
    job = next(j for j in report.jobs if j.name == "sbatch/ft")
    assert job.first_started_at == 2 * 60 + 10, job.waited
    assert report.faults[0].startswith("FAULT sbatch/ft: launch failed for lack of EC2 capacity, started 70 min")


def test_consolidate_after_never_keeps_empty_reserved_nodes(cluster: engine.Cluster) -> None:
    """GIVEN a NodePool with consolidateAfter Never (a reserved partition) WHEN the build's facts are read THEN its
    empty nodes are never removed, and their idle time is its own category (the reservation is paid anyway)."""
    from ekstrain.simulate.mix import _go_minutes
    from ekstrain.simulate.timeline import NEVER

    assert _go_minutes("Never") == NEVER and _go_minutes("10m") == 10 and _go_minutes("1h30m") == 90
    gang = _arrival(_job("gpu-h100", "volcano", 2, "gang"), 0, 1)
    mix = _mix(gang, hours=4)
    mix.consolidate_minutes = {"gpu-h100": NEVER}
    report = simulate_timeline(cluster, mix)
    idle = report.idle["gpu-h100"]
    kept = idle["kept empty (consolidateAfter: Never, a reservation paid anyway)"]
    assert kept == pytest.approx(2 * 8 * (4 * 60 - 69))  # 2 nodes x 8 GPUs from the job's end (1:09) to 4:00
    assert report.problems == []


def test_an_sbatch_is_admitted_whole_not_partly(cluster: engine.Cluster) -> None:
    """GIVEN a 6-node gang on gpu-h100 (8 nodes) WHEN a 4-node sbatch arrives THEN KEDA adds 4 slurmd pods in the
    partition's gang PodGroup: none is admitted while only 2 fit (before, each was its own PodGroup: 2 were admitted
    and held 2 launched p5 nodes idle for 2 hours, stranded), all 4 when the gang has finished, and nothing strands
    (tests/simulate/test_slurm_gangs.py has the old render beside it)."""
    gang = _arrival(_job("gpu-h100", "volcano", 6, "gang"), 0, 3)
    sbatch = _sbatch("gpu-h100", 4, "ft", 1, 2)
    report = simulate_timeline(cluster, _mix(gang, sbatch, hours=8))
    job = next(j for j in report.jobs if j.name == "sbatch/ft")
    # the gang ends at 3:09; the 4 pods are admitted together at 3:10 and bind on its nodes, still there
    assert job.admitted_at == job.first_started_at == 3 * 60 + 10, (job.admitted_at, job.first_started_at)
    assert not any("slurmd pods run, Slurm waits" in r for r in job.waited), job.waited
    assert report.problems == [], report.problems
