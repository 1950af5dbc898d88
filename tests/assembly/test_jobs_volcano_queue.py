"""Every training template the platform renders goes through its partition's Volcano queue.

GIVEN prod (Volcano on, one queue per partition) and every template on every partition it applies to
WHEN rendered
THEN each accelerator pod is gang-scheduled by Volcano in the partition's queue: the Volcano Job and
RayJob as before, the MPIJob/PyTorchJob through ``runPolicy.schedulingPolicy`` (their operators are
patched to gang-schedule with Volcano), the TrainJob through its runtime's ``podGroupPolicy.volcano``, the
Indexed Job through ``schedulerName: volcano`` + the queue and min-member annotations; without Volcano
nothing names it (a ``schedulerName: volcano`` pod would never bind).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from conftest import cfg_with, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import CASES, accelerator_containers, pod_specs, spec_for

from ekstrain.assembly.jobs import render
from ekstrain.assembly.schedulers import operators
from ekstrain.components.operators import manifest_transform
from ekstrain.simulate.workloads import expand

PROD = stack_config("prod")
NO_VOLCANO = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))
QUEUE = "scheduling.volcano.sh/queue-name"


def _main_object(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] not in ("ConfigMap", "Service", "TrainingRuntime"))


def _runtime(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "TrainingRuntime")


def queue_of(objects: list[dict[str, Any]]) -> tuple[str | None, bool]:
    """(the Volcano queue the accelerator pods are admitted by, every accelerator pod names Volcano)."""
    obj = _main_object(objects)
    kind, spec = obj["kind"], obj["spec"]
    if kind == "Job" and obj["apiVersion"].startswith("batch.volcano.sh"):
        return spec["queue"], spec["schedulerName"] == "volcano"
    if kind in ("RayJob", "RayCluster"):
        labels = obj["metadata"]["labels"]
        return labels.get("volcano.sh/queue-name"), labels.get("ray.io/scheduler-name") == "volcano"
    if kind in ("MPIJob", "PyTorchJob"):
        policy = spec["runPolicy"].get("schedulingPolicy") or {}
        return policy.get("queue"), "queue" in policy  # the gang-scheduling operator sets schedulerName
    if kind == "TrainJob":
        rt = _runtime(objects)["spec"]
        pods = pod_specs(rt["template"])
        named = bool(pods) and all(p.get("schedulerName") == "volcano" for p in pods)
        ann = (rt["template"].get("metadata") or {}).get("annotations") or {}
        return ann.get(QUEUE), "volcano" in (rt.get("podGroupPolicy") or {}) and named
    if kind == "Job":  # Indexed Job
        template = spec["template"]
        min_member = (obj["metadata"].get("annotations") or {}).get("scheduling.volcano.sh/group-min-member")
        gang = min_member == str(spec["parallelism"]) and template["spec"].get("schedulerName") == "volcano"
        return template["metadata"]["annotations"].get(QUEUE), gang
    raise AssertionError(f"unexpected kind {kind}")


@pytest.mark.parametrize(("scheduler", "partition"), [c for c in CASES if c[0] != "slurm"])
def test_every_template_goes_through_the_partition_queue(scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    assert accelerator_containers(_main_object(objects))
    assert queue_of(objects) == (partition, True), scheduler


def test_mpijob_gang_is_the_workers_so_the_launcher_can_wait_for_them() -> None:
    """WaitForWorkersReady creates the launcher after the workers: minAvailable must be the workers alone
    (the operator's default workers + 1 would never be met) and minResources their requests."""
    job = _main_object(render(spec_for("gpu-h100", nodes=4), PROD, "mpijob", FakePlanner()))
    policy = job["spec"]["runPolicy"]["schedulingPolicy"]
    assert job["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert policy["minAvailable"] == 4
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert policy["minResources"]["nvidia.com/gpu"] == 4 * worker["resources"]["requests"]["nvidia.com/gpu"]
    assert policy["minResources"]["vpc.amazonaws.com/efa"] == 4 * 32


@pytest.mark.parametrize("scheduler", ["mpijob", "trainjob", "trainium", "pytorchjob"])
def test_without_volcano_no_template_names_it(scheduler: str) -> None:
    partition = "trainium" if scheduler == "trainium" else "gpu-a100"
    objects = render(spec_for(partition), NO_VOLCANO, scheduler, FakePlanner())
    text = repr(objects)
    assert "volcano" not in text, scheduler


def test_partition_runtimes_gang_in_their_queue() -> None:
    for rt in operators.torch_runtimes(PROD):
        part = rt["metadata"]["labels"]["ekstrain.io/partition"]
        assert rt["spec"]["podGroupPolicy"] == {"volcano": {}}
        assert rt["spec"]["template"]["metadata"]["annotations"] == {QUEUE: part}
        assert all(p["schedulerName"] == "volcano" for p in pod_specs(rt["spec"]["template"]))
    assert all("podGroupPolicy" not in rt["spec"] for rt in operators.torch_runtimes(NO_VOLCANO))


UPSTREAM_MPI_OPERATOR = {  # mpi-operator v0.8.0 deploy/v2beta1/mpi-operator.yaml, the Deployment
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "mpi-operator", "namespace": "mpi-operator"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {
                        "args": ["-alsologtostderr", "--lock-namespace=mpi-operator"],
                        "image": "mpioperator/mpi-operator:0.8.0",
                        "name": "mpi-operator",
                    }
                ],
                "serviceAccountName": "mpi-operator",
            }
        }
    },
}


def test_the_mpi_operator_is_patched_to_gang_schedule_with_volcano() -> None:
    flags = operators.gang_args(PROD)
    transform = manifest_transform(flags)
    args = pulumi.ResourceTransformArgs(
        custom=True,
        type_="kubernetes:apps/v1:Deployment",
        name="operators-mpi-operator:mpi-operator/mpi-operator",
        props=UPSTREAM_MPI_OPERATOR,
        opts=pulumi.ResourceOptions(),
    )
    result = transform(args)
    assert result is not None
    (container,) = result.props["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["-alsologtostderr", "--lock-namespace=mpi-operator", "--gang-scheduling=volcano"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert UPSTREAM_MPI_OPERATOR["spec"]["template"]["spec"]["containers"][0]["args"] == [  # type: ignore[index]
        "-alsologtostderr",
        "--lock-namespace=mpi-operator",
    ]
    service_account = {**args.props, "kind": "ServiceAccount"}
    other = pulumi.ResourceTransformArgs(True, "kubernetes:core/v1:ServiceAccount", "sa", service_account, args.opts)
    assert transform(other) is None
    assert operators.gang_args(NO_VOLCANO) == {}
    unpatched = operators.patch_operator(UPSTREAM_MPI_OPERATOR, {})
    assert unpatched is not None
    assert unpatched["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "-alsologtostderr",
        "--lock-namespace=mpi-operator",
    ]


def test_the_render_records_the_operators_gang_flags(prod_recording: Any) -> None:
    component = prod_recording.one("ekstrain:operators:Operators", "operators")
    assert component.inputs["gangScheduling"]["mpi-operator"] == ["--gang-scheduling=volcano"]


@pytest.mark.parametrize(
    ("scheduler", "partition"),
    [("mpijob", "gpu-h100"), ("nccl-test", "gpu-a100"), ("trainjob", "gpu-h100"), ("trainium", "trainium")],
)
def test_simulate_expands_each_template_to_a_gang_in_its_queue(scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    runtimes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "TrainingRuntime"}
    w = expand(_main_object(objects), runtimes, frozenset({"MPIJob"}))
    assert w is not None and (w.volcano_queue, w.gang) == (partition, True)
    if scheduler in ("mpijob", "nccl-test"):  # the workers' requests, not the launcher's
        assert w.min_resources == _main_object(objects)["spec"]["runPolicy"]["schedulingPolicy"]["minResources"]
        # an MPI operator without --gang-scheduling=volcano ignores schedulingPolicy: pods outside Volcano
        outside = expand(_main_object(objects), runtimes, frozenset())
        assert outside is not None and outside.volcano_queue is None


def test_only_installed_operators_get_the_gang_flag() -> None:
    assert operators.gang_args(PROD) == {"mpi-operator": ["--gang-scheduling=volcano"]}  # prod: Trainer flavor
    # (the legacy training operator, which took --gang-scheduler-name, is refused: its install is unpinned)
