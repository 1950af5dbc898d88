"""A workload kind added by the recipe (CONTRIBUTING.md "Add a scheduler") is handled everywhere without other edits.

GIVEN ``ToyJob``, a kind defined only here: one WorkloadKind subclass (its pods under ``spec.members[*].pod``,
a key no generic ``template.spec`` walk finds) registered in ekstrain.workloads.registry, and its builder as one
row in assembly/jobs/render.py's SCHEDULERS
WHEN a ToyJob object is built, simulated, verified and its logs asked for
THEN the simulator places it as one Volcano gang in its queue (all members or none) and refuses it without its
CRD, its restart budget comes from the kind, the verifiers' pod-spec rule fires on a bad member pod, and
``job logs`` filters on its kind label.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ekstrain.assembly import logs as platform_logs
from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.assembly.jobs.pod import queue, worker_container, worker_template
from ekstrain.assembly.jobs.render import SCHEDULERS, Scheduler, render, scheduler_problem
from ekstrain.assembly.jobs.resolve import ResolvedRun
from ekstrain.facts import catalog, names
from ekstrain.infra.verify import admission, images, requests
from ekstrain.infra.verify.pods import inventory, pod_templates
from ekstrain.simulate import engine, timeline
from ekstrain.simulate.inputs import InputError, _Checker
from ekstrain.simulate.nodes import Node, allocatable, capacity
from ekstrain.simulate.workloads import expand
from ekstrain.workloads import registry
from ekstrain.workloads.base import Context, PodGroup, WorkloadKind


class ToyJob(WorkloadKind):
    kind = "ToyJob"
    group = "toy.example.com"
    version = "v1"
    plural = "toyjobs"
    log_kind = "ToyJob"
    schedulers = ("toyjob",)
    installed_by = ("volcano.enabled", True, "set ekstrain:schedulers.volcano.enabled: true")
    pod_templates = ("spec.members.*.pod",)
    restart_policy = "spec.retries whole-job restarts"
    queue_rule = "spec.queue"

    def pod_groups(self, obj: dict[str, Any], ctx: Context) -> list[PodGroup]:
        return [
            PodGroup(str(m["name"]), int(m.get("count", 1)), (m.get("pod") or {}).get("spec") or {})
            for m in (obj.get("spec") or {}).get("members") or []
        ]

    def queue(self, obj: dict[str, Any], groups: list[PodGroup], ctx: Context) -> str | None:
        return str((obj.get("spec") or {}).get("queue", "default"))

    def restart_budget(self, obj: dict[str, Any], ctx: Context, nodes: int) -> tuple[int, str]:
        retries = int((obj.get("spec") or {}).get("retries", 0))
        return retries, f"ToyJob retries {retries}"

    def check_shape(self, v: Any, spec: dict[str, Any], obj: dict[str, Any]) -> None:
        for i, m in enumerate(v.sequence(spec.get("members"), "spec.members")):
            m = v.mapping(m, f"spec.members[{i}]", required=True)
            v.count(m.get("count"), f"spec.members[{i}].count")
            v.template(m.get("pod"), f"spec.members[{i}].pod")


TOY = ToyJob()
INSTANCE = "p4d.24xlarge"


def build_toy(name: str, members: int, queue: str = "gpu-a100", **pod: Any) -> dict[str, Any]:
    """The toy's builder (what its assembly/jobs module would be): ``members`` workers of a whole node each
    (80 of a p4d.24xlarge's 96 vCPUs) in ``queue``."""
    container = {
        "name": "worker",
        "image": "public.ecr.aws/docker/library/busybox:1.36",
        "resources": {"requests": {"cpu": "80", "memory": "64Gi"}},
        **pod.pop("container", {}),
    }
    spec = {"schedulerName": "volcano", "containers": [container], **pod}
    return {
        "apiVersion": "toy.example.com/v1",
        "kind": "ToyJob",
        "metadata": {"name": name, "namespace": names.TRAINING_NAMESPACE},
        "spec": {
            "queue": queue,
            "retries": 2,
            "members": [{"name": f"m{i}", "count": 1, "pod": {"spec": spec}} for i in range(members)],
        },
    }


def build(r: ResolvedRun) -> list[dict[str, Any]]:
    """The toy's job builder as its assembly/jobs module would write it: one member per node, each the
    platform's worker pod (assembly/jobs/pod.py: queue, partition, requests, the job's log labels)."""
    container = worker_container(r, name="worker", command=["/bin/bash", "-c", "true"])
    member = worker_template(r, container, restartPolicy="Never")
    return [
        {
            "apiVersion": TOY.api_version,
            "kind": TOY.kind,
            "metadata": r.metadata(),
            "spec": {
                "queue": queue(r),
                "retries": r.spec.max_restarts,
                "members": [{"name": f"m{i}", "count": 1, "pod": member} for i in range(r.nodes)],
            },
        }
    ]


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToyJob]:
    monkeypatch.setitem(SCHEDULERS, "toyjob", Scheduler("toyjob", build, None, "toy gang"))
    registry.register(TOY)
    try:
        yield TOY
    finally:
        registry.unregister(TOY)


def _cluster(pool_nodes: int, crds: set[str] | None = None) -> engine.Cluster:
    it = catalog.get(INSTANCE)
    cap = capacity(it, it.efa_max_interfaces)
    node = Node("gpu-a100", it, {}, [], cap, allocatable(it, cap), {"nodes": float(pool_nodes)})
    return engine.Cluster([node], [], {}, {"gpu-a100": {}}, {}, {}, crds=crds)


def test_the_simulator_expands_the_toy_kind_as_one_gang_in_its_queue(toy: ToyJob) -> None:
    w = expand(build_toy("t", 3), {})
    assert w is not None
    assert (w.name, w.volcano_queue, w.gang) == ("ToyJob/t", "gpu-a100", True)
    assert [(g.role, g.count) for g in w.groups] == [("m0", 1), ("m1", 1), ("m2", 1)]
    assert timeline.restart_budget(build_toy("t", 3), {}, 3) == (2, "ToyJob retries 2")
    assert registry.crd_of(build_toy("t", 1)) == "toyjobs.toy.example.com"


def test_the_simulator_places_all_members_or_none(toy: ToyJob) -> None:
    fits = engine.simulate(_cluster(pool_nodes=3), [build_toy("fits", 3)])
    assert not fits.blocked
    assert fits.started == [
        "STARTS ToyJob/fits: m0 x1 -> gpu-a100/p4d.24xlarge, m1 x1 -> gpu-a100/p4d.24xlarge, "
        "m2 x1 -> gpu-a100/p4d.24xlarge"
    ]
    # Four one-node members on a pool of three: the gang is refused whole, not three started and one pending.
    too_big = engine.simulate(_cluster(pool_nodes=3), [build_toy("big", 4)])
    assert too_big.started == [] and {b.workload for b in too_big.blocked} == {"ToyJob/big"}
    assert any("limit" in b.reason.lower() for b in too_big.blocked), too_big.blocked


def test_the_simulator_refuses_the_toy_without_its_crd(toy: ToyJob) -> None:
    result = engine.simulate(_cluster(pool_nodes=3, crds={"mpijobs.kubeflow.org"}), [build_toy("t", 1)])
    assert result.started == []
    assert any("no toyjobs.toy.example.com CRD" in b.reason for b in result.blocked)


def test_the_simulators_input_checks_read_the_toy_shape(toy: ToyJob) -> None:
    bad = build_toy("t", 1)
    bad["spec"]["members"][0]["count"] = -1
    with pytest.raises(InputError) as err:
        _Checker("toy.yaml").check(bad)
    assert "spec.members[0].count" in str(err.value)


def test_the_verifiers_walk_the_toy_pod_templates(toy: ToyJob) -> None:
    obj = build_toy("t", 2)
    found = pod_templates(obj, "test")
    assert [t.path for t in found] == ["spec.members[0].pod.spec", "spec.members[1].pod.spec"]
    # A member pod that runs privileged breaks the baseline Pod Security level (pod-security-admission
    # policy/check_privileged.go): the admission check reports it by the toy's path.
    bad = build_toy("bad", 1, container={"securityContext": {"privileged": True}})
    templates = pod_templates(bad, "test")
    result = admission.check(templates, {names.TRAINING_NAMESPACE: "baseline"}, inventory([("test", bad)]))
    assert any("ToyJob" in p and "spec.members[0].pod.spec" in p and "privileged" in p for p in result.problems), (
        result.problems
    )
    levels = {names.TRAINING_NAMESPACE: "baseline"}
    assert not admission.check(pod_templates(obj, "test"), levels, inventory([])).problems


def test_the_container_checks_walk_the_toy_pods(toy: ToyJob) -> None:
    bare = build_toy("bare", 1, container={"resources": {}, "image": "busybox"})
    assert requests.missing_requests(bare) == [
        f"ToyJob/{names.TRAINING_NAMESPACE}/bare container members.pod.spec worker: no cpu or memory request "
        "(BestEffort/evicted first)"
    ]
    assert any("busybox" in p and "Docker Official Image" in p for p in images.check([bare]).problems)


def test_job_logs_build_the_toy_selector(toy: ToyJob) -> None:
    assert joblogs.selector("toyjob", "t", "training") == 'namespace = "training" and job = "t" and job_kind = "ToyJob"'
    assert joblogs.pod_labels("toyjob", "gpu-a100")[platform_logs.JOB_KIND_LABEL] == "ToyJob"
    assert "toyjob" in joblogs.JOB_KINDS
    assert "ToyJob t" in joblogs.job_logs("toyjob", "t", "training", "c", "us-west-2").script


def test_job_render_knows_whether_the_toy_controller_is_installed(toy: ToyJob) -> None:
    from conftest import cfg_with, stack_config

    assert scheduler_problem(stack_config("prod"), "toyjob") is None
    off = cfg_with(lambda s: s["schedulers"].setdefault("volcano", {}).update(enabled=False))
    problem = scheduler_problem(off, "toyjob")
    assert problem is not None and "set ekstrain:schedulers.volcano.enabled: true" in problem


def test_job_render_builds_the_toy_and_every_reader_takes_it(toy: ToyJob) -> None:
    from conftest import stack_config
    from test_jobs_support import FakePlanner
    from test_jobs_templates import spec_for

    (obj,) = render(spec_for("gpu-h100", nodes=2, name="toy-run"), stack_config("prod"), "toyjob", FakePlanner())
    assert (obj["apiVersion"], obj["kind"]) == ("toy.example.com/v1", "ToyJob")
    labels = obj["spec"]["members"][0]["pod"]["metadata"]["labels"]
    assert labels[platform_logs.JOB_KIND_LABEL] == "ToyJob" and labels[platform_logs.QUEUE_LABEL] == "gpu-h100"
    w = expand(obj, {})
    assert w is not None and (w.volcano_queue, w.gang, [g.count for g in w.groups]) == ("gpu-h100", True, [1, 1])
    assert [t.path for t in pod_templates(obj, "test")] == ["spec.members[0].pod.spec", "spec.members[1].pod.spec"]


def test_a_scheduler_name_is_claimed_once() -> None:
    class Clash(WorkloadKind):
        kind = "Clash"
        schedulers = ("mpijob",)

    with pytest.raises(ValueError, match="mpijob"):
        registry.register(Clash())
