"""One ledger: every pod that holds a partition's nodes goes through that partition's Volcano queue.

The admission policies' CEL runs here on cel-python, against every accelerator pod the platform makes (each job
template as its controller creates the pods, the slurmd NodeSet pods from the real chart render, notebook pods
from the profiles) and against the pods a user writes by hand. GIVEN/WHEN/THEN per case.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import celpy
import pytest
import yaml
from conftest import cfg_with, releases, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import CASES, spec_for

from ekstrain.assembly import jupyterhub
from ekstrain.assembly.jobs import render
from ekstrain.assembly.schedulers import ledger, slurm, volcano
from ekstrain.assembly.schedulers.common import partition_facts
from ekstrain.facts import names
from ekstrain.infra import offline
from ekstrain.infra.verify import charts

PROD = stack_config("prod")
OBJECTS = ledger.policies(ledger.ledger_namespaces(PROD))
POLICIES = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "ValidatingAdmissionPolicy"}
# Controllers that make a PodGroup for the pods they create name it on each pod (scheduling.k8s.io/group-name; the
# queue is then the PodGroup's) and, where the template does not, set the scheduler:
# - Volcano Job: volcano v1.15 pkg/controllers/job/job_controller_util.go createJobPod (schedulerName from the Job);
# - MPIJob: mpi-operator v0.8 pkg/controller/podgroup.go VolcanoCtrl.decoratePodTemplateSpec;
# - PyTorchJob: training-operator v1.9 pkg/controller.v1/common/pod.go (gang scheduler name);
# - RayJob/RayCluster: kuberay v1.7 ray-operator/controllers/ray/batchscheduler/volcano AddMetadataToPod;
# - TrainJob with podGroupPolicy.volcano: kubeflow/trainer v2.3 pkg/runtime/framework/plugins/volcano.
SETS_SCHEDULER = {"Job", "MPIJob", "PyTorchJob", "RayJob", "RayCluster"}


def _makes_podgroup(obj: dict[str, Any]) -> bool:
    if obj["kind"].endswith("TrainingRuntime"):
        return "volcano" in (obj["spec"].get("podGroupPolicy") or {})
    return obj["kind"] in SETS_SCHEDULER


@functools.cache
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def refusal(policy: str, obj: dict[str, Any]) -> str | None:
    """What the policy answers on CREATE of ``obj``: None when admitted (or not matched), else the message."""
    spec = POLICIES[policy]["spec"]
    activation = {"object": celpy.json_to_cel(obj)}
    for cond in spec.get("matchConditions", []):
        if not bool(_program(cond["expression"]).evaluate(activation)):
            return None
    for rule in spec["validations"]:
        if not bool(_program(rule["expression"]).evaluate(activation)):
            return str(rule["message"])
    return None


def gpu_pod(**spec: Any) -> dict[str, Any]:
    """A pod a user writes by hand: one container asking for 8 GPUs on gpu-h100."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "mine", "namespace": names.TRAINING_NAMESPACE},
        "spec": {
            "nodeSelector": {names.PARTITION_LABEL: "gpu-h100"},
            "containers": [{"name": "t", "image": "x", "resources": {"limits": {names.GPU_RESOURCE: "8"}}}],
        },
    }
    pod["spec"].update(spec)
    return pod


def _pod_templates(node: Any) -> list[dict[str, Any]]:
    """Every pod template (``{metadata?, spec: {containers}}``) in ``node``."""
    found = []
    if isinstance(node, dict):
        if isinstance(node.get("spec"), dict) and isinstance(node["spec"].get("containers"), list):
            found.append(node)
        for v in node.values():
            found += _pod_templates(v)
    elif isinstance(node, list):
        for v in node:
            found += _pod_templates(v)
    return found


def _as_created(obj: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": copy.deepcopy(template.get("metadata") or {})}
    pod["spec"] = copy.deepcopy(template["spec"])
    if _makes_podgroup(obj):
        pod["metadata"].setdefault("annotations", {})[ledger.GROUP_ANNOTATION] = f"{obj['metadata']['name']}-pg"
    if obj["kind"] in SETS_SCHEDULER and not pod["spec"].get("schedulerName"):
        pod["spec"]["schedulerName"] = obj["spec"].get("schedulerName", "volcano")
    return pod


def _trainjob_pods(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Kubeflow Trainer builds the pods from the runtime's template, the trainer container ("node") taking the
    TrainJob's resourcesPerNode (trainer v2.3 pkg/runtime/framework/plugins/jobset)."""
    job = next(o for o in objects if o["kind"] == "TrainJob")
    runtime = next(o for o in objects if o["kind"].endswith("TrainingRuntime"))
    pods = []
    for t in _pod_templates(runtime):
        pod = _as_created(runtime, t)
        for c in pod["spec"]["containers"]:
            if c["name"] == "node":
                c["resources"] = job["spec"]["trainer"]["resourcesPerNode"]
        pods.append(pod)
    return pods


def _requests_accelerators(pod: dict[str, Any]) -> bool:
    for c in pod["spec"]["containers"]:
        res = c.get("resources") or {}
        if set(res.get("limits") or {}) & set(ledger.ACCELERATOR_RESOURCES):
            return True
    return False


# GIVEN every job template of every prod partition WHEN its controller creates the pods THEN each is admitted.
@pytest.mark.parametrize(("scheduler", "partition"), [c for c in CASES if c[0] != "slurm"])
def test_every_job_templates_pods_are_admitted(scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    pods = (
        _trainjob_pods(objects)
        if scheduler == "trainjob"
        else [_as_created(o, t) for o in objects for t in _pod_templates(o.get("spec", {}))]
    )
    accelerator_pods = [p for p in pods if _requests_accelerators(p)]
    assert accelerator_pods, "the template has pods that take the partition's accelerators"
    for pod in accelerator_pods:
        assert refusal(ledger.POD_POLICY, pod) is None, (scheduler, pod["metadata"])
    for job in (o for o in objects if o["kind"] == "Job" and o["apiVersion"].startswith("batch.volcano.sh")):
        assert refusal(ledger.JOB_POLICY, job) is None


# GIVEN the slurm release of prod rendered by the real chart WHEN its NodeSets' pods are created THEN admitted.
def test_slurmd_pods_of_the_real_chart_render_are_admitted(prod_recording: offline.Recording) -> None:
    rel = charts.Release.from_inputs("slurm", releases(prod_recording)["slurm"].inputs)
    nodesets = [d for d in yaml.safe_load_all(charts.template(rel, "1.35")) if d and d.get("kind") == "NodeSet"]
    assert len(nodesets) == len(PROD.partitions)
    for ns in nodesets:
        pod = {"apiVersion": "v1", "kind": "Pod", **copy.deepcopy(ns["spec"]["template"])}
        pod["spec"]["containers"] = [{"name": "slurmd", **ns["spec"]["slurmd"]}]
        assert _requests_accelerators(pod), ns["metadata"]["name"]
        assert refusal(ledger.POD_POLICY, pod) is None, ns["metadata"]["name"]


# GIVEN prod's notebook profiles WHEN KubeSpawner creates a server pod from one THEN it is admitted.
def test_notebook_pods_are_admitted() -> None:
    for i, p in enumerate(jupyterhub.offered(PROD)):
        o = jupyterhub.profile(p, i == 0, volcano=True)["kubespawner_override"]
        choice = next(iter(jupyterhub.profile(p, i == 0, True)["profile_options"]["devices"]["choices"].values()))
        limits = choice["kubespawner_override"]["extra_resource_limits"]
        pod = {
            "metadata": {"annotations": o["extra_annotations"]},
            "spec": {
                "schedulerName": o["scheduler_name"],
                "nodeSelector": o["node_selector"],
                "containers": [{"name": "notebook", "resources": {"limits": limits}}],
            },
        }
        assert refusal(ledger.POD_POLICY, pod) is None, p.name


@pytest.mark.parametrize(
    ("case", "pod", "says"),
    [
        ("default scheduler", gpu_pod(), "scheduled by Volcano"),
        ("no partition", gpu_pod(schedulerName="volcano", nodeSelector={}), "selects its partition"),
        ("no queue", gpu_pod(schedulerName="volcano"), "names its partition's queue"),
        (
            "another partition's queue",
            {**gpu_pod(schedulerName="volcano"), "metadata": {"annotations": {slurm.QUEUE_ANNOTATION: "gpu-a100"}}},
            "not the queue of the partition",
        ),
    ],
)
def test_hand_written_accelerator_pods_are_refused_with_the_fix(case: str, pod: dict[str, Any], says: str) -> None:
    message = refusal(ledger.POD_POLICY, pod)
    assert message is not None and says in message, case
    assert "ekstrain job render" in message or "same name" in message


def test_efa_alone_and_init_containers_count_and_cpu_pods_pass() -> None:
    efa = gpu_pod()
    efa["spec"]["containers"][0]["resources"] = {"requests": {names.EFA_RESOURCE: "32"}}
    assert refusal(ledger.POD_POLICY, efa) is not None
    init = gpu_pod()
    init["spec"]["initContainers"] = init["spec"].pop("containers")
    init["spec"]["containers"] = [{"name": "c", "image": "x"}]
    assert refusal(ledger.POD_POLICY, init) is not None
    cpu = gpu_pod()
    cpu["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "4", "memory": "8Gi"}}
    assert refusal(ledger.POD_POLICY, cpu) is None  # not matched: the CPU helpers are no partition


@pytest.mark.parametrize("queue", [None, "", "default"])
def test_queue_less_volcano_jobs_and_podgroups_are_refused(queue: str | None) -> None:
    job = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())[-1]
    bad = copy.deepcopy(job)
    if queue is None:
        bad["spec"].pop("queue")
    else:
        bad["spec"]["queue"] = queue
    assert "set spec.queue" in (refusal(ledger.JOB_POLICY, bad) or "")
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"}}
    group["spec"] = {"minMember": 2} if queue is None else {"minMember": 2, "queue": queue}
    assert "names its partition's queue" in (refusal(ledger.PODGROUP_POLICY, group) or "")
    assert refusal(ledger.PODGROUP_POLICY, {**group, "spec": {"minMember": 2, "queue": "gpu-h100"}}) is None


def test_a_volcano_job_whose_tasks_select_another_partition_is_refused() -> None:
    job = copy.deepcopy(render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())[-1])
    job["spec"]["queue"] = "gpu-a100"
    assert "another partition's" in (refusal(ledger.JOB_POLICY, job) or "")


def test_policies_bind_where_people_train_and_follow_the_queues() -> None:
    """GIVEN prod THEN three Deny bindings in training, slurm and jupyterhub; the queues hold whole partitions."""
    bindings = [o for o in OBJECTS if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    assert sorted(b["spec"]["policyName"] for b in bindings) == sorted(POLICIES)
    assert len(bindings) == 3
    for b in bindings:
        assert b["spec"]["validationActions"] == ["Deny"]
        (expr,) = b["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        assert expr["values"] == ["jupyterhub", "slurm", "training"]
    for q in volcano.queues(PROD):
        p = PROD.partition(q["metadata"]["name"])
        per_node = int(volcano.queue_capability(next(f for f in partition_facts(PROD) if f.name == p.name), 1)["cpu"])
        assert int(q["spec"]["capability"]["cpu"]) == per_node * p.max_nodes  # standing slurmd pods included


# GIVEN prod (Volcano + Slinky), THEN every NodeSet's slurmd pod names Volcano and its partition's queue.
def test_slurmd_pods_join_their_partitions_queue() -> None:
    cfg = stack_config("prod")
    for p in partition_facts(cfg):
        ns = slurm.nodeset(cfg, p)
        assert ns["podSpec"]["schedulerName"] == "volcano"
        # ... and the partition's gang PodGroup (tests/simulate/test_slurm_gangs.py)
        assert ns["metadata"] == {
            "annotations": {
                "scheduling.volcano.sh/queue-name": p.name,
                "scheduling.k8s.io/group-name": f"slurm-{p.name}",
            }
        }


# GIVEN Volcano off, THEN the NodeSet keeps the default scheduler and names no queue.
def test_slurmd_pods_without_volcano_use_the_default_scheduler() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))
    for p in partition_facts(cfg):
        ns = slurm.nodeset(cfg, p)
        assert "schedulerName" not in ns["podSpec"]
        assert "metadata" not in ns


# GIVEN `ekstrain job health-check` on every partition WHEN the MPIJob's pods are created THEN admitted.
def test_health_check_pods_are_admitted() -> None:
    from ekstrain.assembly.jobs.render import health_check

    for p in PROD.partitions:
        pods = [_as_created(o, t) for o in health_check(PROD, p.name) for t in _pod_templates(o["spec"])]
        assert any(_requests_accelerators(pod) for pod in pods), p.name
        assert all(refusal(ledger.POD_POLICY, pod) is None for pod in pods), p.name
