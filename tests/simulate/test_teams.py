"""Per-team Volcano queues inside a partition: ``ekstrain:schedulers.volcano.teams``.

GIVEN prod with teams added (and examples/stacks/Pulumi.reserved.yaml, which names two)
WHEN the queues, the scheduler config, the pods' queue annotations, the admission policies and the job templates
are built, and a timeline is played on the rendered example
THEN each partition a team names is a parent queue with a leaf per team (its guaranteed nodes) and ``-shared``,
Volcano's capacity plugin runs hierarchical, every pod names a leaf, and a team's guarantee is admitted at once
while others borrowed the rest (volcano v1.15.1 capacity.go, hierarchical-queue-on-capacity-plugin.md).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import pathlib
from typing import Any

import pytest
import yaml
from conftest import cfg_with, stack_config, stack_sections
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for
from test_one_ledger import celpy, gpu_pod

from ekstrain.assembly import jupyterhub
from ekstrain.assembly.jobs import render
from ekstrain.assembly.jobs.spec import JobRequestError
from ekstrain.assembly.schedulers import ledger, operators, slurm, teams, volcano
from ekstrain.assembly.schedulers.common import partition_facts
from ekstrain.facts import names
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

REPO = pathlib.Path(__file__).resolve().parents[2]
TEAMS = [
    {"name": "llm", "guarantees": {"gpu-h100": 4, "gpu-a100": 8}, "priority": 10},
    {"name": "vision", "guarantees": {"gpu-a100": 4}},
]


def _with_teams(s: dict[str, Any]) -> None:
    s["schedulers"]["volcano"]["teams"] = copy.deepcopy(TEAMS)


CFG = cfg_with(_with_teams)
PROD = stack_config("prod")


def _errors(change: Any) -> list[tuple[str, str]]:
    sections = stack_sections("prod")
    change(sections)
    with pytest.raises(ConfigError) as info:
        parse(sections, "Pulumi.prod.yaml", today=dt.date(2026, 12, 3))
    return [(i.key, i.problem) for i in info.value.issues]


def test_without_teams_nothing_changes() -> None:
    """GIVEN prod (no teams) THEN one queue per partition named like it, no parent, no hierarchy, pods name it."""
    assert [q["metadata"]["name"] for q in volcano.queues(PROD)] == ["gpu-a100", "gpu-h100", "trainium"]
    assert all("parent" not in q["spec"] for q in volcano.queues(PROD))
    assert "enableHierarchy" not in yaml.safe_dump(volcano.scheduler_config(teams.hierarchy(PROD)))
    assert teams.leaf_queues(PROD) == {"gpu-a100": ["gpu-a100"], "gpu-h100": ["gpu-h100"], "trainium": ["trainium"]}
    assert ledger.policies(["training"], teams.leaf_queues(PROD)) == ledger.policies(["training"])


def test_teams_make_parent_and_leaf_queues_valid_against_the_crd() -> None:
    """GIVEN llm (4 h100, 8 a100, priority 10) and vision (4 a100) WHEN the queues are built THEN gpu-a100 and
    gpu-h100 are parents (the whole partition), with a leaf per team (guarantee = deserved = its nodes,
    capability = the partition) and -shared (no guarantee); trainium keeps one queue; all valid against the
    pinned Volcano Queue CRD; the capacity plugin runs with enableHierarchy."""
    qs = {q["metadata"]["name"]: q["spec"] for q in volcano.queues(CFG)}
    assert sorted(qs) == [
        "gpu-a100",
        "gpu-a100-llm",
        "gpu-a100-shared",
        "gpu-a100-vision",
        "gpu-h100",
        "gpu-h100-llm",
        "gpu-h100-shared",
        "trainium",
    ]
    facts = {p.name: p for p in partition_facts(CFG)}
    a100 = facts["gpu-a100"]
    assert qs["gpu-a100-llm"] == {
        "parent": "gpu-a100",
        "reclaimable": False,
        "priority": 10,
        "capability": volcano.queue_capability(a100, 16),
        "deserved": volcano.queue_capability(a100, 8),
        "guarantee": {"resource": volcano.queue_capability(a100, 8)},
    }
    assert qs["gpu-a100-vision"]["guarantee"]["resource"][names.GPU_RESOURCE] == "32"
    assert qs["gpu-a100-vision"]["priority"] == 0
    assert "guarantee" not in qs["gpu-a100-shared"] and qs["gpu-a100-shared"]["parent"] == "gpu-a100"
    assert qs["gpu-a100"] == volcano.queue(CFG, a100)["spec"]  # the parent: the whole partition, as without teams
    assert "parent" not in qs["trainium"]
    for q in volcano.queues(CFG):
        assert validation.validate_object(q, "1.35") == [], q["metadata"]["name"]
    config = volcano.scheduler_config(teams.hierarchy(CFG))
    capacity = [p for t in config["tiers"] for p in t["plugins"] if p["name"] == "capacity"]
    assert capacity == [{"name": "capacity", "enableHierarchy": True}]
    values = volcano.volcano_values(CFG)["custom"]["scheduler_config_override"]
    assert yaml.safe_load(values) == config


def test_slurm_notebooks_and_runtimes_name_the_shared_leaf() -> None:
    """GIVEN teams on gpu-a100 and gpu-h100 THEN slurmd pods, notebook servers and the partition's
    ClusterTrainingRuntime name <partition>-shared there (a parent queue holds no job) and trainium's own queue."""
    for p in partition_facts(CFG):
        want = f"{p.name}-shared" if p.name != "trainium" else "trainium"
        meta = slurm._queue_metadata(CFG, p)["metadata"]["annotations"]
        # the pods join the partition's gang PodGroup, which sits in that same leaf queue
        assert meta == {"scheduling.volcano.sh/queue-name": want, "scheduling.k8s.io/group-name": f"slurm-{p.name}"}
        assert slurm.gang_podgroup(CFG, p)["spec"]["queue"] == want
        notebook = jupyterhub.profile(p.config, False, True, teams.shared_queue(CFG, p.name))
        assert notebook["kubespawner_override"]["extra_annotations"] == {"scheduling.volcano.sh/queue-name": want}
        runtime = operators.torch_runtime(CFG, p)
        assert runtime["spec"]["template"]["metadata"]["annotations"] == {"scheduling.volcano.sh/queue-name": want}
    hub = jupyterhub.chart_values(CFG)  # the profiles the release renders
    got = [p["kubespawner_override"]["extra_annotations"] for p in hub["singleuser"]["profileList"]]
    assert got == [{"scheduling.volcano.sh/queue-name": q} for q in ("gpu-a100-shared", "gpu-h100-shared", "trainium")]


@pytest.mark.parametrize("scheduler", ["volcano", "mpijob", "trainjob", "rayjob", "bionemo"])
def test_job_render_team_puts_the_job_in_its_team_queue(scheduler: str) -> None:
    """GIVEN --team llm on gpu-h100 WHEN a template renders THEN every queue it names is gpu-h100-llm; without
    --team it is gpu-h100-shared."""
    for team, want in (("llm", "gpu-h100-llm"), (None, "gpu-h100-shared")):
        objects = render(spec_for("gpu-h100", nodes=2, name="t", team=team), CFG, scheduler, FakePlanner())
        text = yaml.safe_dump_all(objects)
        found = {
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.strip().startswith(("queue:", "scheduling.volcano.sh/queue-name:", "volcano.sh/queue-name:"))
        }
        assert found == {want}, (scheduler, team, found)


def test_job_render_refuses_a_team_without_a_queue_in_the_partition() -> None:
    with pytest.raises(JobRequestError, match=r"--team: team 'vision' has no queue in partition gpu-h100 \(its "):
        render(spec_for("gpu-h100", nodes=2, name="t", team="vision"), CFG, "volcano", FakePlanner())
    with pytest.raises(JobRequestError, match="leave --team out"):
        render(spec_for("trainium", nodes=2, name="t", team="llm"), CFG, "trainium", FakePlanner())


# ---- admission: a pod names a leaf of the partition it selects -----------------------------------------------

TEAM_POLICIES = {
    o["metadata"]["name"]: o
    for o in ledger.policies(ledger.ledger_namespaces(CFG), teams.leaf_queues(CFG))
    if o["kind"] == "ValidatingAdmissionPolicy"
}


def _refusal(policy: str, obj: dict[str, Any]) -> str | None:
    spec = TEAM_POLICIES[policy]["spec"]
    env = celpy.Environment()
    activation = {"object": celpy.json_to_cel(obj)}
    for cond in spec.get("matchConditions", []):
        if not bool(env.program(env.compile(cond["expression"])).evaluate(activation)):
            return None
    for rule in spec["validations"]:
        if not bool(env.program(env.compile(rule["expression"])).evaluate(activation)):
            return str(rule["message"])
    return None


def _pod(queue: str, partition: str = "gpu-h100") -> dict[str, Any]:
    pod = gpu_pod(schedulerName="volcano", nodeSelector={names.PARTITION_LABEL: partition})
    pod["metadata"]["annotations"] = {"scheduling.volcano.sh/queue-name": queue}
    return pod


def test_admission_accepts_the_partitions_leaves_and_refuses_the_rest() -> None:
    """GIVEN the team policies WHEN pods name a leaf of their partition THEN admitted; the parent queue, another
    partition's leaf or a leaf of another partition's team THEN refused, the message naming the fix."""
    for queue in ("gpu-h100-llm", "gpu-h100-shared"):
        assert _refusal(ledger.POD_POLICY, _pod(queue)) is None, queue
    assert _refusal(ledger.POD_POLICY, _pod("trainium", "trainium")) is None  # no teams there: its own queue
    for queue in ("gpu-h100", "gpu-a100-llm", "gpu-a100-vision", "gpu-h100-vision"):
        message = _refusal(ledger.POD_POLICY, _pod(queue))
        assert message is not None and "<partition>-<team>" in message and "--team" in message, queue
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "queue": "gpu-a100-vision",
            "tasks": [{"template": {"spec": {"nodeSelector": {names.PARTITION_LABEL: "gpu-a100"}}}}],
        },
    }
    assert _refusal(ledger.JOB_POLICY, job) is None
    for queue in ("gpu-a100", "gpu-h100-llm", "default"):
        assert _refusal(ledger.JOB_POLICY, {**job, "spec": {**job["spec"], "queue": queue}}) is not None, queue


# ---- config errors name the key --------------------------------------------------------------------------------


def _teams(*entries: dict[str, Any]) -> Any:
    return lambda s: s["schedulers"]["volcano"].update(teams=list(entries))


@pytest.mark.parametrize(
    ("entries", "key", "words"),
    [
        ([{"name": "llm", "guarantees": {"gpu-b200": 2}}], "teams[0] (llm).guarantees.gpu-b200", "not a partition"),
        ([{"name": "llm", "guarantees": {"gpu-h100": 9}}], "teams[0] (llm).guarantees.gpu-h100", "outside 0..maxNodes"),
        (
            [{"name": "a", "guarantees": {"gpu-h100": 5}}, {"name": "b", "guarantees": {"gpu-h100": 4}}],
            "teams",
            "add up to 9 nodes, more than its maxNodes 8",
        ),
        ([{"name": "shared", "guarantees": {"gpu-h100": 1}}], "teams[0] (shared).name", "'shared'"),
        (
            [{"name": "a", "guarantees": {"gpu-h100": 1}}, {"name": "a", "guarantees": {"gpu-a100": 1}}],
            "teams[1] (a).name",
            "two teams",
        ),
    ],
)
def test_bad_teams_name_the_key(entries: list[dict[str, Any]], key: str, words: str) -> None:
    errors = _errors(_teams(*entries))
    assert any(k == f"ekstrain:schedulers.volcano.{key}" and words in p for k, p in errors), errors


def test_teams_need_volcano_and_distinct_queue_names() -> None:
    def off(s: dict[str, Any]) -> None:
        _teams({"name": "llm", "guarantees": {"gpu-h100": 1}})(s)
        s["schedulers"]["volcano"]["enabled"] = False

    assert any("Volcano is off" in p for k, p in _errors(off) if k == "ekstrain:schedulers.volcano.teams")

    def collide(s: dict[str, Any]) -> None:
        s["partitions"].append(
            {"name": "gpu-h100-x", "accelerator": "gpu", "instanceTypes": ["p5.48xlarge"], "maxNodes": 1}
        )
        _teams({"name": "x", "guarantees": {"gpu-h100": 1}})(s)

    assert any("'gpu-h100-x', the name of another partition's queue" in p for _, p in _errors(collide))


def test_guarantees_covering_a_partition_warn() -> None:
    sections = stack_sections("prod")
    _teams({"name": "llm", "guarantees": {"gpu-h100": 8}})(sections)
    _, warnings = parse(sections, "Pulumi.prod.yaml", today=dt.date(2026, 12, 3))
    assert any(w.startswith("ekstrain:schedulers.volcano.teams: the guarantees in gpu-h100 cover") for w in warnings)


# ---- the timeline on team queues --------------------------------------------------------------------------------


def _team_cluster(cluster: Any) -> Any:
    """prod's rendered cluster with CFG's queues and hierarchical scheduler config (what rendering CFG gives)."""
    from ekstrain.simulate.quantity import parse

    qs = volcano.queues(CFG)
    return dataclasses.replace(
        cluster,
        queues={
            "default": {},
            **{q["metadata"]["name"]: {k: parse(v) for k, v in q["spec"]["capability"].items()} for q in qs},
        },
        guarantees={
            q["metadata"]["name"]: {k: parse(v) for k, v in q["spec"].get("guarantee", {}).get("resource", {}).items()}
            for q in qs
        },
        parents={q["metadata"]["name"]: q["spec"]["parent"] for q in qs if "parent" in q["spec"]},
        scheduler_config=volcano.scheduler_config(teams.hierarchy(CFG)),
    )


def _team_job(name: str, nodes: int, team: str | None, at_h: float, hours: float) -> Any:
    from ekstrain.simulate.timeline import Arrival

    obj = next(
        o
        for o in render(
            spec_for("gpu-h100", nodes=nodes, name=name, team=team, global_batch=nodes * 64),
            CFG,
            "volcano",
            FakePlanner(),
        )
        if o["kind"] == "Job"
    )
    return Arrival(f"Job/{name}", obj, int(at_h * 60), int(hours * 60))


@pytest.mark.skipif(HELM is None or validation.upstream_dir() is None, reason="needs helm and the upstream charts")
def test_a_team_guarantee_is_admitted_while_others_borrowed_the_rest(cluster: Any) -> None:
    """GIVEN gpu-h100 (8 nodes) with llm guaranteed 4 WHEN a job of no team takes the 4 unguaranteed nodes, then llm
    asks for 4 THEN llm's gang is admitted on arrival and runs a node launch later; a second job of no team waits
    for its queue (-shared may only borrow the unguaranteed 4), and llm's second gang waits for the parent (the
    partition is full): both before admission, nothing stranded, no problem."""
    from ekstrain.simulate.timeline import Mix, simulate_timeline

    team_cluster = _team_cluster(cluster)
    jobs = [
        _team_job("borrower", 4, None, 0, 4),
        _team_job("llm-a", 4, "llm", 0.5, 4),
        _team_job("borrower-2", 2, None, 1, 1),
        _team_job("llm-b", 2, "llm", 1, 1),
    ]
    report = simulate_timeline(team_cluster, Mix(jobs, minutes=12 * 60, repair=True))
    assert report.problems == [], report.problems
    by = {j.name: j for j in report.jobs}
    assert by["Job/llm-a"].admitted_at == 30 and by["Job/llm-a"].first_started_at == 40
    second = by["Job/borrower-2"]
    assert second.admitted_at is not None and second.admitted_at >= 4 * 60 + 10
    assert any(
        "queue gpu-h100-shared realCapability nvidia.com/gpu 32 < 32 in use + 16 asked" in r for r in second.waited
    ), second.waited
    llm_b = by["Job/llm-b"]
    assert any(
        "queue gpu-h100-llm's parent gpu-h100 realCapability nvidia.com/gpu 64 < 64 in use" in r for r in llm_b.waited
    ), llm_b.waited
    assert not any(k.startswith("stranded") for k in report.idle.get("gpu-h100", {}))


@pytest.mark.skipif(HELM is None or validation.upstream_dir() is None, reason="needs helm and the upstream charts")
def test_a_job_in_the_parent_queue_is_refused(cluster: Any) -> None:
    """GIVEN team queues under gpu-h100 WHEN a gang names gpu-h100 itself (bypassing the admission policy) THEN the
    simulator says Volcano refuses it: only leaf queues hold jobs."""
    from ekstrain.simulate import volcano as sim_volcano

    team_cluster = _team_cluster(cluster)
    why = sim_volcano.enqueue_block(
        team_cluster.scheduler_config,
        {names.GPU_RESOURCE: 8.0},
        {},
        "gpu-h100",
        team_cluster.queues,
        team_cluster.guarantees,
        parents=team_cluster.parents,
    )
    assert why is not None and "only leaf queues hold jobs" in why
