"""Per-stack scheduler choice: disabling one removes exactly its resources; prod's chain
partition -> NodeSet -> Slurm partition -> Volcano Queue agrees end to end."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stack_sections
from support.programs import shared_run

from ekstrain.infra.offline import Recording
from ekstrain.stacks.loader import parse

RELEASE = "kubernetes:helm.sh/v3:Release"
QUEUE = "kubernetes:scheduling.volcano.sh/v1beta1:Queue"


def subtree(rec: Recording, component_type: str) -> set[str]:
    (root,) = rec.of_type(component_type)
    out, todo = {root.urn}, [root.urn]
    while todo:
        for child in rec.children_of(todo.pop()):
            out.add(child.urn)
            todo.append(child.urn)
    return out


def urns(rec: Recording) -> set[str]:
    return {r.urn for r in rec.records}


def _run(change: Callable[[dict[str, Any]], None]) -> Recording:
    """prod with ``change`` applied to its schedulers (a run another module makes of the same config, such as the
    day-2 diff turning Slurm off, is shared: tests/support/programs.py)."""
    sections = stack_sections("prod")
    change(sections["schedulers"])
    return shared_run(parse(sections, "test", today=dt.date(2026, 12, 3))[0])


def _named(rec: Recording, type_: str, names: set[str]) -> set[str]:
    return {r.urn for r in rec.of_type(type_) if r.name in names}


CASES: dict[str, tuple[Callable[[dict[str, Any]], None], Callable[[Recording], set[str]]]] = {
    "slurm": (lambda s: s["slurm"].update(enabled=False), lambda p: subtree(p, "ekstrain:slurm:Slurm")),
    "mpi operator": (
        lambda s: s["mpiOperator"].update(enabled=False),
        lambda p: {r.urn for r in p.records if r.name.startswith("operators-mpi-operator-")},
    ),
    "kubeflow trainer": (
        lambda s: s["kubeflow"].update(flavor="none"),
        lambda p: (
            _named(p, RELEASE, {"operators-kubeflow-trainer"})
            | {r.urn for r in p.of_type("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")}
        ),
    ),
    "kuberay": (lambda s: s["kuberay"].update(enabled=False), lambda p: _named(p, RELEASE, {"operators-kuberay"})),
    "all operators": (
        lambda s: (
            s["mpiOperator"].update(enabled=False),
            s["kubeflow"].update(flavor="none"),
            s["kuberay"].update(enabled=False),
        ),
        lambda p: subtree(p, "ekstrain:operators:Operators"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_disabling_a_scheduler_removes_exactly_its_resources(case: str, prod_recording: Recording) -> None:
    change, expected = CASES[case]
    toggled = _run(change)
    removed = urns(prod_recording) - urns(toggled)
    assert removed == expected(prod_recording)
    assert urns(toggled) <= urns(prod_recording), "nothing new appears"


def test_disabling_volcano_removes_queues_and_kuberay_stops_using_it(prod_recording: Recording) -> None:
    toggled = _run(lambda s: s["volcano"].update(enabled=False, queueWeights={}))
    # Volcano's subtree goes, and so do the Slurm gangs, which are Volcano PodGroups and their sizer
    gangs = {r.urn for r in prod_recording.records if r.name.startswith("slurm-gang-")}
    assert gangs and all(r.name.startswith("slurm-gang-") is False for r in toggled.records)
    assert urns(prod_recording) - urns(toggled) == subtree(prod_recording, "ekstrain:volcano:Volcano") | gangs
    assert toggled.of_type(QUEUE) == []
    ray = next(r for r in toggled.of_type(RELEASE) if r.inputs["name"] == "kuberay-operator")
    assert "batchScheduler" not in ray.inputs["values"]


def test_dev_runs_only_volcano_and_mpi(dev_recording: Recording) -> None:
    scheduler_types = ("ekstrain:volcano:", "ekstrain:slurm:", "ekstrain:operators:")
    assert sorted(
        r.inputs["name"]
        for r in dev_recording.of_type(RELEASE)
        if dev_recording.top_component(r).type.startswith(scheduler_types)
    ) == ["volcano"]
    assert [r.name for r in dev_recording.of_type("kubernetes:apps/v1:Deployment")] == [
        "operators-mpi-operator-deployment-mpi-operator"
    ]
    assert dev_recording.of_type("ekstrain:slurm:Slurm") == []
    assert [r.inputs["metadata"]["name"] for r in dev_recording.of_type(QUEUE)] == ["gpu-small"]


def test_prod_partition_nodeset_slurm_partition_queue_chain(prod_recording: Recording) -> None:
    slurm = next(r for r in prod_recording.of_type(RELEASE) if r.inputs["name"] == "slurm").inputs["values"]
    queues = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in prod_recording.of_type(QUEUE)}
    max_nodes = {"gpu-a100": 16, "gpu-h100": 8, "trainium": 32}
    assert sorted(slurm["nodesets"]) == sorted(queues) == sorted(max_nodes)
    assert {p: ns["replicas"] for p, ns in slurm["nodesets"].items()} == {"gpu-a100": 0, "gpu-h100": 0, "trainium": 0}
    for part, n in max_nodes.items():
        nodeset = slurm["nodesets"][part]
        assert nodeset["podSpec"]["nodeSelector"]["ekstrain.io/partition"] == part
        assert nodeset["partition"]["enabled"] and nodeset["partition"]["configMap"]["MaxNodes"] == str(n)
        limits = nodeset["slurmd"]["resources"]["limits"]
        devices = {k: v for k, v in limits.items() if k not in ("cpu", "memory", "vpc.amazonaws.com/efa")}
        cap = queues[part]["capability"]
        # The queue admits exactly the nodes slurmd does not hold (prod: none held) in whole nodes of
        # the devices one slurmd pod holds; at least that many of its cpu/memory (the queue counts whole
        # instances, slurmd their allocatable) and of its EFA (in a mixed-layout partition trn1n nodes have
        # more interfaces than a slurmd pod asks for).
        n -= nodeset["replicas"]
        assert {k: int(cap[k]) for k in devices} == {k: v * n for k, v in devices.items()}
        assert int(cap["vpc.amazonaws.com/efa"]) >= limits["vpc.amazonaws.com/efa"] * n
        assert int(cap["cpu"]) >= int(limits["cpu"]) * n
        assert int(cap["memory"].removesuffix("Gi")) >= int(limits["memory"].removesuffix("Gi")) * n
