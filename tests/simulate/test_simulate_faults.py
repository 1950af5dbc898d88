"""The platform's own loops under fault, played by ``ekstrain simulate --timeline`` on prod.

GIVEN prod rendered offline (test_simulate's module fixture) and its gate DaemonSets' guard settings (the deadline,
the breaker, the leave thresholds, the recovery period: ``mix.gate_loop_facts``)
WHEN a gate check hangs, every node of a pool fails its pre-flight, or NetworkingReady flaps
THEN the rendered guard fails the hung node at its deadline, holds the pool after 3 failures instead of recycling,
and rides out a flap shorter than its threshold, with 0 problems; a guard without them (the old behaviour: no
deadline, no breaker, leave at once) gives a node held past the deadline, recycles past the breaker and a gang
restarted by a transient condition, each a PROBLEM.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml
from support.simulate import HELM
from test_simulate_timeline import _arrival, _gated, _job, _mix

from ekstrain.payloads import health_gate
from ekstrain.simulate import engine
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.load import build_objects
from ekstrain.simulate.mix import gate_loop_facts, read_mix
from ekstrain.simulate.timeline import Fault, Mix, Timeline
from ekstrain.tooling import validation

pytestmark = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


def _rendered(mix: Mix, build: pathlib.Path) -> Mix:
    """The mix with the gate's loops as the build configures them."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in build_objects(build):
        by_kind.setdefault(o["kind"], []).append(o)
    gate_loop_facts(by_kind, mix)
    return mix


def test_the_build_gives_the_guards_deadline_breaker_and_thresholds(prod_build: pathlib.Path) -> None:
    mix = _rendered(_mix(), prod_build)
    assert mix.gate_deadline["gpu-h100"] == health_gate.deadline_minutes("gpu") == 34
    assert mix.gate_deadline["trainium-trn1"] == health_gate.deadline_minutes("trainium") == 18
    assert mix.breaker["gpu-h100"] == (3, 60)
    assert mix.leave_after == {"AcceleratedHardwareReady": 1, "NetworkingReady": 5}
    assert mix.recover_minutes == 10


def test_a_hung_check_is_failed_at_the_deadline_not_held_for_ever(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN the first node of a 2-node gang whose check hangs WHEN the guard has its deadline THEN the node is
    failed 34 min after it registered, Karpenter launches another and the job runs, no problem; WHEN it has none
    (before: the guard started only after every check exited) THEN the node keeps its startup taint for the whole
    run, Karpenter counts it as capacity for the pending pods, the job never starts: problems."""
    job = _arrival(_job("gpu-h100", "volcano", 2, "hang"), 0, 2)
    fault = [Fault(0, "preflight-hangs", "Job/hang")]
    run = Timeline(cluster, _rendered(_mix(job, faults=fault, gated_pools=_gated(prod_build)), prod_build))
    report = run.run()
    hang = next(j for j in report.jobs if j.name == "Job/hang")
    assert hang.state == "finished" and report.problems == [], report.problems
    node = next(n for n in run.nodes if n.hangs)
    assert node.gate_failed_at == 10 + 34  # launch, then the deadline from its registration
    assert hang.first_started_at == 44 + 14  # another launch and gate
    old = Timeline(cluster, _mix(job, faults=fault, gated_pools=_gated(prod_build)))
    before = old.run()
    assert any("past the gate's 34-min deadline" in p for p in before.problems), before.problems
    assert any("Job/hang did not finish" in p for p in before.problems)


def test_a_pool_that_fails_every_gate_is_held_not_recycled(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN every trn1 node failing its pre-flight for 3 hours under a 4-node Trainium job WHEN the breaker is
    rendered THEN the third failure holds the pool, no failed node is deleted and relaunched (0 recycles), and the
    job starts once the pool is resumed at the window's end; WHEN not (before) THEN each failed node is deleted
    after its hold and relaunched, about every 22 minutes for 3 hours: recycles past the breaker are problems."""
    job = _arrival(_job("trainium", "trainium", 4, "trn", instance_type="trn1.32xlarge"), 0, 4)
    fault = [Fault(0, "preflight-fails-pool", "Job/trn", window=180)]
    run = Timeline(cluster, _rendered(_mix(job, faults=fault, gated_pools=_gated(prod_build)), prod_build))
    report = run.run()
    trn = next(j for j in report.jobs if j.name == "Job/trn")
    assert trn.state == "finished" and report.problems == [], report.problems
    assert run.recycles == {}
    assert any("breaker held it: 3 gate failures in 60 min" in e for e in trn.events)
    assert trn.first_started_at == 180 + 12  # resumed at 3:00, a launch and the Trainium gate
    old = Timeline(cluster, _mix(job, faults=fault, gated_pools=_gated(prod_build)))
    before = old.run()
    recycled = sum(len(t) for t in old.recycles.values())
    assert recycled >= 4 * 7, old.recycles  # 4 nodes, every ~22 min for 3 h
    assert any("past the breaker's 3 in 60 min" in p for p in before.problems), before.problems


@pytest.mark.parametrize("minutes", [3])
def test_a_flap_shorter_than_the_threshold_restarts_nothing(
    minutes: int,
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN NetworkingReady=False for 3 minutes on a running gang's node WHEN the guard waits 5 minutes THEN no
    restart; WHEN it taints at once (before) THEN the 16-GPU gang restarts and that is a PROBLEM."""
    job = _arrival(_job("gpu-h100", "volcano", 2, "flap"), 0, 4)
    fault = [Fault(120, "condition-flap", "Job/flap", minutes=minutes)]
    report = Timeline(cluster, _rendered(_mix(job, faults=fault, gated_pools=_gated(prod_build)), prod_build)).run()
    flap = next(j for j in report.jobs if j.name == "Job/flap")
    assert flap.restarts == 0 and report.problems == [], report.problems
    before = Timeline(cluster, _mix(job, faults=fault, gated_pools=_gated(prod_build))).run()
    assert next(j for j in before.jobs if j.name == "Job/flap").restarts == 1
    assert any("restarted at 2:00 by a transient NetworkingReady=False" in p for p in before.problems), before.problems


def test_a_real_loss_of_networking_takes_the_node_out_and_it_comes_back(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN NetworkingReady=False for 8 minutes on one node of an 8-node gang that fills gpu-h100 WHEN the guard's
    threshold (5 min) passes THEN the gang restarts once (not a problem: not transient), and the node returns to
    service 10 minutes after the condition cleared, where the restart lands (the pool has no spare node)."""
    job = _arrival(_job("gpu-h100", "volcano", 8, "big"), 0, 6)
    fault = [Fault(120, "condition-flap", "Job/big", minutes=8)]
    run = Timeline(cluster, _rendered(_mix(job, faults=fault, gated_pools=_gated(prod_build)), prod_build))
    report = run.run()
    big = next(j for j in report.jobs if j.name == "Job/big")
    assert big.state == "finished" and big.restarts == 1 and report.problems == [], report.problems
    assert "2:05 NetworkingReady=False" in big.events[0]
    assert any("to service at 2:18" in w for w in big.all_waits)


def test_mix_files_take_the_new_kinds_and_refuse_bad_minutes(tmp_path: pathlib.Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}))

    def mix(*faults: dict[str, Any]) -> pathlib.Path:
        path = tmp_path / "mix.yaml"
        doc = {"hours": 2, "jobs": [{"file": str(job), "hours": 1}], "faults": list(faults)}
        path.write_text(yaml.safe_dump(doc))
        return path

    got = read_mix(
        mix(
            {"at": 0, "kind": "preflight-hangs", "job": "Pod/p"},
            {"at": 0, "kind": "preflight-fails-pool", "job": "Pod/p", "windowHours": 3},
            {"at": 1, "kind": "condition-flap", "job": "Pod/p", "minutes": 3},
        ),
        tmp_path,
    )
    assert [(f.kind, f.window, f.minutes) for f in got.faults] == [
        ("preflight-hangs", 72 * 60, 0),
        ("preflight-fails-pool", 180, 0),
        ("condition-flap", 72 * 60, 3),
    ]
    with pytest.raises(InputError, match="minutes.*is missing"):
        read_mix(mix({"at": 0, "kind": "condition-flap", "job": "Pod/p"}), tmp_path)
    with pytest.raises(InputError, match="only read by condition-flap"):
        read_mix(mix({"at": 0, "kind": "preflight-hangs", "job": "Pod/p", "minutes": 3}), tmp_path)


def test_networking_false_for_noderepairs_whole_window_gets_the_node_replaced(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN NetworkingReady=False for 40 minutes (past NodeRepair's 30) WHEN the guard took the node out at 5 THEN
    NodeRepair replaces it at 30 minutes, the gang restarts once on a new node: no problem."""
    job = _arrival(_job("gpu-h100", "volcano", 2, "down"), 0, 4)
    fault = [Fault(120, "condition-flap", "Job/down", minutes=40)]
    run = Timeline(cluster, _rendered(_mix(job, faults=fault, gated_pools=_gated(prod_build)), prod_build))
    report = run.run()
    down = next(j for j in report.jobs if j.name == "Job/down")
    assert down.state == "finished" and down.restarts == 1 and report.problems == [], report.problems
    replaced = next(n for n in run.nodes if n.repair_by == "NodeRepair")
    assert replaced.repair_at == 120 + 30 and replaced.state == "gone"
