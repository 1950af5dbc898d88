"""``ekstrain simulate --timeline``: many jobs, shared NodePool limits and injected faults on prod.

GIVEN prod rendered offline (the module fixture of test_simulate: manifests + device-plugin, Slurm and
Volcano charts through helm template) and job templates rendered in memory
WHEN a mix is played minute by minute
THEN the platform defects once found show on the old settings and are gone on the rendered ones.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import pytest
import yaml
from conftest import cfg_with, stack_config
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import render, render_sbatch
from ekstrain.assembly.jupyterhub import profile
from ekstrain.cli.main import main
from ekstrain.payloads.health_gate import gate_minutes, gated
from ekstrain.simulate import engine, volcano
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.load import build_objects
from ekstrain.simulate.mix import notebook_pod, read_mix, stack_checkpoint_seconds
from ekstrain.simulate.timeline import Arrival, Fault, Mix, Timeline, simulate_timeline
from ekstrain.tooling import validation

pytestmark = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)
PROD = stack_config("prod")


def _job(partition: str, scheduler: str, nodes: int, name: str, **kw: Any) -> dict[str, Any]:
    kw.setdefault("global_batch", nodes * 64)  # divisible by every data-parallel degree the fake planner picks
    objects = render(spec_for(partition, nodes=nodes, name=name, **kw), PROD, scheduler, FakePlanner())
    # A TrainJob brings its own TrainingRuntime (looked up by name, as a mix file's runtimes are).
    RUNTIMES.update({o["metadata"]["name"]: o for o in objects if o["kind"] == "TrainingRuntime"})
    return next(o for o in objects if o["kind"] not in ("ConfigMap", "Service", "TrainingRuntime"))


def _arrival(obj: dict[str, Any], at_h: float, hours: float) -> Arrival:
    return Arrival(f"{obj['kind']}/{obj['metadata']['name']}", obj, int(at_h * 60), int(hours * 60))


RUNTIMES: dict[str, dict[str, Any]] = {}


def _mix(*arrivals: Arrival, faults: list[Fault] | None = None, hours: int = 30, **kw: Any) -> Mix:
    return Mix(list(arrivals), faults or [], minutes=hours * 60, repair=True, runtimes=dict(RUNTIMES), **kw)


def _notebook(prod_build: pathlib.Path, partition: str, gpus: int) -> dict[str, Any]:
    return notebook_pod(prod_build, partition, gpus, "test")


def _old_volcano(cluster: engine.Cluster) -> engine.Cluster:
    """Main's scheduler config: allocate/backfill with proportion, queues without guarantees."""
    config = volcano.parse_config(
        "actions: allocate, backfill\ntiers:\n- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}, {name: binpack}]\n"
    )
    return dataclasses.replace(cluster, scheduler_config=config, guarantees={})


def test_a_gang_is_starved_by_proportion_and_not_by_capacity(cluster: engine.Cluster) -> None:
    """GIVEN gangs queued on gpu-a100 and trainium beyond what runs, and an 8-node gpu-h100 gang, equal
    queue weights WHEN played on main's proportion config THEN the h100 gang waits for its cpu/memory share
    while its p5 nodes idle; on the rendered capacity config it starts once its nodes are up."""
    arrivals = [
        _arrival(_job("gpu-a100", "volcano", 12, "a100-1"), 0, 10),
        _arrival(_job("gpu-a100", "volcano", 12, "a100-2"), 0, 10),
        _arrival(_job("trainium", "volcano", 16, "trn-1", instance_type="trn1.32xlarge"), 0, 10),
        _arrival(_job("trainium", "volcano", 16, "trn-2", instance_type="trn1.32xlarge"), 0, 10),
        _arrival(_job("gpu-h100", "volcano", 8, "h100"), 0, 5),
    ]
    weights = {q: 1.0 for q in cluster.queues}
    old = simulate_timeline(_old_volcano(cluster), _mix(*arrivals, weights=weights))
    h100 = next(j for j in old.jobs if j.name == "Job/h100")
    assert any(r.startswith("proportion: queue gpu-h100") for r in h100.all_waits), h100.all_waits
    assert any("Job/h100: starved by proportion" in p for p in old.problems), old.problems
    new = simulate_timeline(cluster, _mix(*arrivals, weights=weights))
    h100 = next(j for j in new.jobs if j.name == "Job/h100")
    assert h100.state == "finished" and h100.first_started_at is not None and h100.first_started_at <= 15
    assert not any("starved" in p for p in new.problems), new.problems


def test_notebooks_outside_volcano_make_an_admitted_gang_unbindable(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN one 1-GPU notebook on gpu-h100 and then an 8-node gang WHEN the notebook bypasses Volcano (main's
    profiles) THEN the queue admits the gang, Karpenter stops at the NodePool limit and the launched p5 nodes
    idle; WHEN it joins the partition's queue (the rendered profiles) THEN the gang waits at admission and no
    node is stranded."""
    gang = _arrival(_job("gpu-h100", "volcano", 8, "gang"), 0.5, 4)
    inside = _notebook(prod_build, "gpu-h100", 1)
    assert inside["spec"]["schedulerName"] == "volcano"
    assert inside["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": "gpu-h100"}
    outside = yaml.safe_load(yaml.safe_dump(inside))
    del outside["spec"]["schedulerName"]
    old = simulate_timeline(cluster, _mix(_arrival(outside, 0, 10), gang, hours=20))
    assert any("Job/gang: admitted by its queue but unbindable" in p for p in old.problems), old.problems
    assert any("stranded" in p for p in old.problems), old.problems
    new = simulate_timeline(cluster, _mix(_arrival(inside, 0, 10), gang, hours=20))
    job = next(j for j in new.jobs if j.name == "Job/gang")
    assert job.state == "finished" and new.problems == [], new.problems
    assert any("Volcano enqueue (capacity)" in r for r in job.waited)


NO_VOLCANO = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))


@pytest.mark.parametrize("scheduler", ["mpijob", "trainjob"])
def test_operator_jobs_outside_volcano_make_an_admitted_gang_unbindable(
    cluster: engine.Cluster,
    scheduler: str,
) -> None:
    """GIVEN a 4-node MPIJob/TrainJob on gpu-h100 (8 nodes) and then an 8-node Volcano gang WHEN the job's
    pods bypass Volcano (main's templates: no schedulingPolicy, no podGroupPolicy; operator without gang
    scheduling) THEN the queue admits the gang, Karpenter stops at the NodePool limit and the timeline
    names the bypass; WHEN the job goes through the partition's queue (the rendered templates, the MPI
    operator patched with --gang-scheduling=volcano) THEN the gang waits at admission and nothing strands."""
    assert cluster.gang_kinds == frozenset({"MPIJob"})  # read from the render (operators' gang flags)
    gang = _arrival(_job("gpu-h100", "volcano", 8, f"gang-{scheduler}"), 0.5, 4)
    main_job = render(
        spec_for("gpu-h100", nodes=4, name=f"old-{scheduler}", global_batch=256), NO_VOLCANO, scheduler, FakePlanner()
    )
    RUNTIMES.update({o["metadata"]["name"]: o for o in main_job if o["kind"] == "TrainingRuntime"})
    old_job = next(o for o in main_job if o["kind"] not in ("ConfigMap", "Service", "TrainingRuntime"))
    main_cluster = dataclasses.replace(cluster, gang_kinds=frozenset())
    old = simulate_timeline(main_cluster, _mix(_arrival(old_job, 0, 10), gang, hours=20))
    assert any(f"Job/gang-{scheduler}: admitted by its queue but unbindable" in p for p in old.problems), old.problems
    assert any("bypass Volcano queue gpu-h100" in p for p in old.problems), old.problems
    new_job = _job("gpu-h100", scheduler, 4, f"new-{scheduler}")
    new = simulate_timeline(cluster, _mix(_arrival(new_job, 0, 10), gang, hours=20))
    job = next(j for j in new.jobs if j.name == f"Job/gang-{scheduler}")
    assert job.state == "finished" and new.problems == [], new.problems
    assert any("Volcano enqueue (capacity)" in r for r in job.waited)
    assert next(j for j in new.jobs if j.name.endswith(f"new-{scheduler}")).kind == "volcano"


def test_the_rendered_profiles_put_notebooks_in_the_partition_queue() -> None:
    p = PROD.partitions[0]
    assert profile(p, True, volcano=True)["kubespawner_override"]["scheduler_name"] == "volcano"
    assert "scheduler_name" not in profile(p, True, volcano=False)["kubespawner_override"]


def test_bad_hardware_gets_the_restarted_job_until_nodes_are_repaired(cluster: engine.Cluster) -> None:
    """GIVEN a GPU fault on a node of a running MPIJob WHEN NodeRepair is off THEN the restarted job lands on
    the same sick node until its restarts are gone; WHEN on THEN the node is replaced and the job resumes."""
    job = _arrival(_job("gpu-a100", "mpijob", 4, "bert"), 0, 6)
    fault = [Fault(120, "node-unhealthy", "MPIJob/bert")]
    off = simulate_timeline(cluster, dataclasses.replace(_mix(job, faults=fault), repair=False))
    bert = next(j for j in off.jobs if j.name == "MPIJob/bert")
    assert bert.state == "failed" and "same sick node" in bert.failure
    on = simulate_timeline(cluster, _mix(job, faults=fault))
    bert = next(j for j in on.jobs if j.name == "MPIJob/bert")
    assert bert.state == "finished" and bert.restarts >= 1
    assert any(line.startswith("FAULT MPIJob/bert: resumed from its checkpoint; finished") for line in on.faults)


def test_a_maintenance_notice_drains_only_with_the_health_rule(cluster: engine.Cluster) -> None:
    """GIVEN an AWS Health notice 3 days ahead for a node of a running gang WHEN the notice drains (main's
    EventBridge rule) THEN the gang dies at once, its pods' 120 s too short for an 843 s checkpoint; WHEN not
    (the rendered stack) THEN it runs on."""
    job = _arrival(_job("gpu-h100", "volcano", 2, "long"), 0, 10)
    fault = [Fault(180, "health-notice", "Job/long", window=72 * 60)]
    drained = simulate_timeline(cluster, _mix(job, faults=fault, health_rule=True))
    long = next(j for j in drained.jobs if j.name == "Job/long")
    assert long.restarts == 1 and "pods got 120 s, a checkpoint takes 843 s" in long.events[0]
    kept = simulate_timeline(cluster, _mix(job, faults=fault))
    long = next(j for j in kept.jobs if j.name == "Job/long")
    assert long.restarts == 0 and long.state == "finished" and "maintenance window at 75:00" in long.events[0]


def test_every_scheduler_resumes_after_a_lost_node_or_says_why_not(cluster: engine.Cluster) -> None:
    """GIVEN a node lost under each scheduler's job WHEN played THEN each either resumes from its checkpoint or
    its FAULT line names the restart rule that ended it."""
    jobs = [
        _job("gpu-h100", "volcano", 2, "v"),
        _job("gpu-a100", "mpijob", 2, "m"),
        _job("gpu-a100", "trainjob", 2, "t"),
        _job("gpu-h100", "rayjob", 2, "r"),
        _job("trainium", "trainium", 2, "n", instance_type="trn1.32xlarge"),
    ]
    arrivals = [_arrival(o, 0, 3) for o in jobs]
    faults = [Fault(60, "node-lost", a.name) for a in arrivals]
    report = simulate_timeline(cluster, _mix(*arrivals, faults=faults, hours=10))
    assert len(report.faults) == len(jobs), report.faults
    for line in report.faults:
        assert "resumed from its checkpoint; finished" in line or "no restart left (" in line, line


def test_a_fault_hits_the_nodes_an_sbatch_job_scaled_its_nodeset_to(cluster: engine.Cluster) -> None:
    """GIVEN prod's gpu-a100 NodeSet at 0 replicas and a 2-node sbatch job (its NodeSet scaled for it) WHEN one
    of its nodes is lost THEN the fault hits that node and Slurm requeues the job, which resumes."""
    assert cluster.nodesets["gpu-a100"]["spec"]["replicas"] == 0
    text = render_sbatch(spec_for("gpu-a100", name="ft"), PROD, FakePlanner())
    sbatch = {"kind": "ConfigMap", "metadata": {"name": "ft"}, "data": {"ft.sbatch": text}}
    job = Arrival("sbatch/ft", sbatch, 0, 180)
    report = simulate_timeline(cluster, _mix(job, faults=[Fault(60, "node-lost", "sbatch/ft")], hours=8))
    assert report.problems == [], report.problems
    (line,) = report.faults
    assert line.startswith("FAULT sbatch/ft: resumed from its checkpoint; finished"), line
    assert "standing slurmd nodes without a Slurm job" not in report.idle.get("gpu-a100", {})


def test_a_spot_interruption_drains_and_the_job_resumes(cluster: engine.Cluster) -> None:
    job = _arrival(_job("gpu-h100", "volcano", 2, "s"), 0, 3)
    report = simulate_timeline(cluster, _mix(job, faults=[Fault(60, "spot-interruption", "Job/s")], hours=8))
    (line,) = report.faults
    assert line.startswith("FAULT Job/s: resumed from its checkpoint; finished")


def test_ray_heads_and_launchers_get_the_cpu_pool_when_system_nodes_are_full(
    cluster: engine.Cluster,
) -> None:
    """GIVEN six 1-node RayJobs at once (4-vCPU/16-GiB heads) beside the platform's controllers WHEN the
    cpu-helpers pool is absent (main) THEN heads wait for room on the fixed system nodes; WHEN present THEN
    every job starts within the launch time."""
    rays = [_arrival(_job("gpu-h100", "rayjob", 1, f"ray{i}"), 0, 2) for i in range(6)]
    without = dataclasses.replace(cluster, nodes=[n for n in cluster.nodes if n.pool != "cpu-helpers"])
    old = simulate_timeline(without, _mix(*rays, hours=6))
    waits = [r for j in old.jobs for r in j.waited]
    assert any("waits for room on the system nodes" in r for r in waits), waits
    new = simulate_timeline(cluster, _mix(*rays, hours=6))
    started = [j.first_started_at for j in new.jobs if j.name.startswith("RayJob/")]
    assert len(started) == 6 and all(t is not None and t <= 15 for t in started), started


def test_cli_plays_a_mix_and_refuses_a_bad_one(
    prod_build: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    obj = _job("gpu-h100", "volcano", 2, "cli")
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(obj))
    mix = tmp_path / "mix.yaml"
    mix.write_text(
        yaml.safe_dump(
            {
                "hours": 6,
                "jobs": [
                    {"file": str(tmp_path / "job.yaml"), "at": 0, "hours": 2},
                    {"notebook": {"partition": "gpu-a100", "accelerators": 2}, "at": 0, "hours": 1},
                ],
                "faults": [{"at": 1, "kind": "node-lost", "job": "Job/cli"}],
            }
        )
    )
    args = ["simulate", "--stack", "prod", "--build", str(prod_build), "--timeline", str(mix)]
    assert main(args) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "JOB Job/cli [volcano]" in out and "FAULT Job/cli: resumed from its checkpoint" in out
    assert "PARTITION gpu-h100: idle" in out
    mix.write_text(yaml.safe_dump({"jobs": [{"file": str(tmp_path / "job.yaml")}], "faults": [{"kind": "meteor"}]}))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "faults[0].kind: is 'meteor'" in err and "fix: use one of node-lost" in err


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"jobs": []}, "jobs: is empty or not a list"),
        ({"hours": "two", "jobs": [{"notebook": {"partition": "gpu-a100"}}]}, "hours: is 'two'"),
        ({"jobs": [{"notebook": {"partition": "nope"}}]}, "no JupyterHub profile for partition 'nope'"),
        ({"jobs": [{"notebook": {"partition": "gpu-a100", "accelerators": 3}}]}, "3 is no choice"),
        ({"jobs": [{"at": 1}]}, "needs exactly one of file or notebook"),
        ({"jobs": [{"notebook": {"partition": "gpu-a100"}}], "extra": 1}, "unknown key(s) extra"),
    ],
)
def test_bad_mix_files_name_the_key(
    doc: dict[str, Any],
    problem: str,
    prod_build: pathlib.Path,
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as info:
        read_mix(path, prod_build)
    assert problem in info.value.report() and "\nfix: " in info.value.report()


# ---- the health gate ---------------------------------------------------------------------------------------


def _gated(prod_build: pathlib.Path) -> set[str]:
    return {o["metadata"]["name"] for o in build_objects(prod_build) if o["kind"] == "NodePool" and gated(o)}


def test_the_gate_adds_its_minutes_to_a_launch(cluster: engine.Cluster, prod_build: pathlib.Path) -> None:
    """GIVEN prod's NodePools with the startup taint WHEN a GPU and a Trainium job launch nodes THEN each starts
    after the launch plus its gate (DCGM diag level 2 + collective + counts: 4 min GPU, 2 min Trainium); without
    the gate after the launch alone."""
    pools = _gated(prod_build)
    assert {"gpu-a100", "gpu-h100", "trainium-trn1", "trainium-trn1n"} <= pools
    gpu = _arrival(_job("gpu-h100", "volcano", 2, "g"), 0, 1)
    trn = _arrival(_job("trainium", "trainium", 2, "n", instance_type="trn1.32xlarge"), 0, 1)
    on = simulate_timeline(cluster, _mix(gpu, trn, gated_pools=pools))
    off = simulate_timeline(cluster, _mix(gpu, trn))
    started = {j.name: j.first_started_at for j in on.jobs}
    assert (
        started["Job/g"] == 10 + gate_minutes("gpu") == 14 and started["Job/n"] == 10 + gate_minutes("trainium") == 12
    )
    assert {j.name: j.first_started_at for j in off.jobs}["Job/g"] == 10
    assert on.idle["gpu-h100"]["health gate pre-flight"] == 2 * 8 * 4  # 2 nodes x 8 GPUs x 4 minutes


def test_a_sick_node_leaves_service_at_once_and_the_restart_lands_elsewhere(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN a GPU fault under a running MPIJob WHEN the gate's guard taints the node NoExecute THEN the job restarts
    once, on healthy nodes only, and NodeRepair removes the sick node 10 minutes later; WHEN no taint keeps pods
    off it (main before the health gate) THEN the restart lands on the sick node, burns a second restart, and that is a
    PROBLEM."""
    job = _arrival(_job("gpu-a100", "mpijob", 4, "bert"), 0, 6)
    fault = [Fault(120, "node-unhealthy", "MPIJob/bert")]
    gated_run = Timeline(cluster, _mix(job, faults=fault, gated_pools=_gated(prod_build)))
    report = gated_run.run()
    bert = next(j for j in report.jobs if j.name == "MPIJob/bert")
    assert bert.state == "finished" and bert.restarts == 1 and report.problems == [], report.problems
    assert "ekstrain.io/unhealthy:NoExecute" in bert.events[0]
    # started at 0:14 (launch + gate), checkpoint at 90 min of training, fault at 106: 16 min x 32 GPUs lost
    assert "16 min lost" in bert.events[0] and bert.lost_accelerator_hours == pytest.approx(16 * 32 / 60)
    sick = next(n for n in gated_run.nodes if n.repair_at is not None)
    assert sick.repair_at == 120 + 10 and sick.state == "gone"
    old = simulate_timeline(cluster, _mix(job, faults=fault))
    bert = next(j for j in old.jobs if j.name == "MPIJob/bert")
    assert bert.restarts == 2 and "same sick node" in bert.events[1]
    assert any("onto node #" in p and "marked unhealthy" in p for p in old.problems), old.problems


def test_a_gang_that_fills_its_pool_waits_for_node_repair_not_stranded(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN an 8-node gang on gpu-h100 (maxNodes 8) WHEN one node turns sick THEN the restart waits until
    NodeRepair deletes it (the sick node's NodeClaim counts against the limit), then one launch and one gate, and
    runs on: one restart, no problem."""
    job = _arrival(_job("gpu-h100", "volcano", 8, "big"), 0, 6)
    report = simulate_timeline(
        cluster, _mix(job, faults=[Fault(120, "node-unhealthy", "Job/big")], gated_pools=_gated(prod_build))
    )
    big = next(j for j in report.jobs if j.name == "Job/big")
    assert big.state == "finished" and big.restarts == 1 and report.problems == [], report.problems
    assert any("full until NodeRepair replaces unhealthy node" in w for w in big.all_waits)


def test_checkpoint_save_time_comes_from_the_stack_fsx(
    prod_build: pathlib.Path,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """GIVEN prod's FSx (7200 GiB PERSISTENT_2 at 500 MB/s/TiB) and its 920 GiB checkpoint WHEN a mix gives no
    checkpointSaveSeconds THEN the timeline uses 281 s (ekstrain storage), not a literal."""
    assert stack_checkpoint_seconds(PROD.storage.fsx, PROD.storage.checkpoint, "m") == 281
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(_job("gpu-h100", "volcano", 1, "ck")))
    mix = tmp_path / "mix.yaml"
    mix.write_text(yaml.safe_dump({"hours": 2, "jobs": [{"file": str(tmp_path / "job.yaml"), "hours": 1}]}))
    assert main(["simulate", "--stack", "prod", "--build", str(prod_build), "--timeline", str(mix)]) == 0
    assert "checkpoint save 281 s)" in capsys.readouterr().out


def test_a_node_that_fails_its_preflight_never_takes_the_job(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN the first node launched for a 2-node gang is sick WHEN the pool is gated THEN its pre-flight fails, the
    job never runs there (no restart, no problem), Karpenter launches another node and the guard deletes the sick
    one 10 minutes later; WHEN not gated THEN the gang starts on the sick node and that is a PROBLEM."""
    job = _arrival(_job("gpu-h100", "volcano", 2, "pf"), 0, 2)
    fault = [Fault(0, "preflight-fails", "Job/pf")]
    run = Timeline(cluster, _mix(job, faults=fault, gated_pools=_gated(prod_build)))
    report = run.run()
    pf = next(j for j in report.jobs if j.name == "Job/pf")
    assert pf.state == "finished" and pf.restarts == 0 and report.problems == [], report.problems
    sick = next(n for n in run.nodes if n.sick_from_start)
    assert sick.repair_at == 14 + 10
    assert report.idle["gpu-h100"]["unhealthy"] == 8 * 10  # idle (never busy) for the 10 minutes it was sick
    assert pf.first_started_at == 14 + 14  # a second launch and gate after the first node failed its pre-flight
    old = simulate_timeline(cluster, _mix(job, faults=fault))
    assert any("marked unhealthy" in p for p in old.problems), old.problems


def test_node_repair_waits_while_too_much_of_a_pool_is_unhealthy(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN two 2-node jobs on gpu-a100 (4 nodes: Karpenter tolerates ceil(20% x 4) = 1 unhealthy) WHEN both lose
    a node to a GPU fault at once THEN NodeRepair holds both sick nodes past its 10 minutes until the replacements
    joined the pool (6 nodes: 2 allowed); the jobs still restart once each, elsewhere, with no problem."""
    a = _arrival(_job("gpu-a100", "volcano", 2, "a"), 0, 4)
    b = _arrival(_job("gpu-a100", "volcano", 2, "b"), 0, 4)
    faults = [Fault(120, "node-unhealthy", "Job/a"), Fault(120, "node-unhealthy", "Job/b")]
    run = Timeline(cluster, _mix(a, b, faults=faults, gated_pools=_gated(prod_build)))
    report = run.run()
    assert report.problems == [] and [j.restarts for j in report.jobs if j.name in ("Job/a", "Job/b")] == [1, 1]
    sick = [n for n in run.nodes if n.repair_by == "NodeRepair"]
    assert len(sick) == 2 and all(n.state == "gone" and (n.repair_at or 0) > 120 + 10 for n in sick)
