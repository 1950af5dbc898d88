"""One ledger per partition, enforced at admission: every pod that takes accelerators or EFA goes through Volcano
in the queue of the partition it selects.

A partition's Volcano Queue can only admit what Karpenter can launch if every pod that holds the partition's
nodes is counted in it. The platform's own pods already are (job templates, slurmd NodeSet pods, notebook
profiles name ``schedulerName: volcano`` and the queue); these policies refuse the rest: a hand-written Job or
Deployment that requests GPUs through the default scheduler, a pod whose queue is another partition's, a Volcano
Job or PodGroup without a queue (Volcano would park it in ``default``, which has no capacity here, for ever).

ValidatingAdmissionPolicy is native (admissionregistration.k8s.io/v1, GA in Kubernetes 1.30:
https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/), so no webhook or
controller has to run for it. Validating admission runs after the mutating webhooks, so the policies see what
Volcano's own mutating webhook wrote (it sets an empty ``spec.queue`` of a Volcano Job to ``default``: volcano
v1.15 pkg/webhooks/admission/jobs/mutate/mutate_job.go), which is why ``default`` is refused like an empty queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ekstrain.assembly.jobs.pod import QUEUE_ANNOTATION, VOLCANO_SCHEDULER
from ekstrain.facts import names

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig

API = "admissionregistration.k8s.io/v1"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
"""Set on a pod by the controller that made its PodGroup (Volcano's job controller, mpi-operator, KubeRay,
Kubeflow Trainer's Volcano plugin): the queue is then the PodGroup's, which the PodGroup policy checks."""
ACCELERATOR_RESOURCES = (
    names.GPU_RESOURCE,
    names.NEURON_RESOURCE,
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    names.EFA_RESOURCE,
)
"""Extended resources that only partition nodes have (the NVIDIA, Neuron and EFA device plugins advertise them)."""
POD_POLICY = "ekstrain-accelerator-pods-use-their-queue"
JOB_POLICY = "ekstrain-volcano-jobs-name-a-queue"
PODGROUP_POLICY = "ekstrain-podgroups-name-a-queue"

_RESOURCES = "[" + ", ".join(f"'{r}'" for r in ACCELERATOR_RESOURCES) + "]"
_CONTAINERS = "object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
REQUESTS_ACCELERATORS = (
    f"({_CONTAINERS}).exists(c, has(c.resources) && ("
    f"(has(c.resources.limits) && c.resources.limits.exists(k, k in {_RESOURCES})) || "
    f"(has(c.resources.requests) && c.resources.requests.exists(k, k in {_RESOURCES}))))"
)
_ANNOTATIONS = "(has(object.metadata.annotations) ? object.metadata.annotations : {})"
_SELECTOR = "(has(object.spec.nodeSelector) ? object.spec.nodeSelector : {})"
_FIX = (
    f"set spec.schedulerName: {VOLCANO_SCHEDULER}, nodeSelector {names.PARTITION_LABEL}: <partition> and the "
    f"annotation {QUEUE_ANNOTATION}: <partition> (`ekstrain job render` writes all three)"
)

POD_VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": f"has(object.spec.schedulerName) && object.spec.schedulerName == '{VOLCANO_SCHEDULER}'",
        "message": "a pod that requests accelerators or EFA is scheduled by Volcano in its partition's queue, "
        "so the queue counts the nodes it holds: " + _FIX,
    },
    {
        "expression": f"'{names.PARTITION_LABEL}' in {_SELECTOR}",
        "message": f"a pod that requests accelerators or EFA selects its partition: add nodeSelector "
        f"{names.PARTITION_LABEL}: <partition> (and the partition's queue): " + _FIX,
    },
    {
        "expression": f"'{QUEUE_ANNOTATION}' in {_ANNOTATIONS} || '{GROUP_ANNOTATION}' in {_ANNOTATIONS}",
        "message": "a pod that requests accelerators or EFA names its partition's queue (Volcano would put it in "
        "the 'default' queue, which holds no capacity): " + _FIX,
    },
    {
        "expression": f"!('{QUEUE_ANNOTATION}' in {_ANNOTATIONS}) || !('{names.PARTITION_LABEL}' in {_SELECTOR}) || "
        f"{_ANNOTATIONS}['{QUEUE_ANNOTATION}'] == {_SELECTOR}['{names.PARTITION_LABEL}']",
        "message": f"the pod's queue ({QUEUE_ANNOTATION}) is not the queue of the partition its nodeSelector "
        f"{names.PARTITION_LABEL} names: each partition's queue counts that partition's nodes; use the same name "
        "for both",
    },
)
_NAMED_QUEUE = "has(object.spec.queue) && object.spec.queue != '' && object.spec.queue != 'default'"
JOB_VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": _NAMED_QUEUE,
        "message": "a Volcano Job names its partition's queue: set spec.queue: <partition> (without one Volcano puts "
        "it in 'default', which holds no capacity, and it waits for ever)",
    },
    {
        "expression": "!has(object.spec.tasks) || object.spec.tasks.all(t, !has(t.template.spec) || "
        "!has(t.template.spec.nodeSelector) || "
        f"!('{names.PARTITION_LABEL}' in t.template.spec.nodeSelector) || "
        f"t.template.spec.nodeSelector['{names.PARTITION_LABEL}'] == object.spec.queue)",
        "message": f"a task selects partition {names.PARTITION_LABEL}=<p> but the job's spec.queue is another "
        "partition's: set spec.queue to the partition its tasks select",
    },
)
PODGROUP_VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": _NAMED_QUEUE,
        "message": "a PodGroup names its partition's queue: set the queue on the job that creates it (MPIJob "
        "runPolicy.schedulingPolicy.queue, the TrainJob/RayJob queue label or annotation `ekstrain job render` "
        "writes); 'default' holds no capacity",
    },
)


def _policy(name: str, group: str, version: str, plural: str, validations: Sequence[dict[str, str]]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [group], "apiVersions": [version], "operations": ["CREATE"], "resources": [plural]}
            ]
        },
        "validations": [{**v, "reason": "Forbidden"} for v in validations],
    }
    if plural == "pods":
        spec["matchConditions"] = [{"name": "requests-accelerators-or-efa", "expression": REQUESTS_ACCELERATORS}]
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": spec,
    }


def _binding(policy: str, namespaces: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            # The namespaces people train in; system namespaces (device plugins, node checks) are not bound.
            "matchResources": {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(namespaces)}
                    ]
                }
            },
        },
    }


def _cel_map(leaves: Mapping[str, Sequence[str]]) -> str:
    return (
        "{" + ", ".join(f"'{p}': [" + ", ".join(f"'{q}'" for q in qs) + "]" for p, qs in sorted(leaves.items())) + "}"
    )


def team_validations(
    leaves: Mapping[str, Sequence[str]],
) -> tuple[tuple[dict[str, str], ...], tuple[dict[str, str], ...]]:
    """POD_VALIDATIONS and JOB_VALIDATIONS for a stack whose partitions have team queues
    (assembly/schedulers/teams.py ``leaf_queues``): the queue a pod or job names is one of the leaves of the
    partition it selects (the partition's own queue is their parent and holds no job under Volcano's hierarchy)."""
    table = _cel_map(leaves)
    pod_partition = f"{_SELECTOR}['{names.PARTITION_LABEL}']"
    allowed = f"({pod_partition} in {table} ? {table}[{pod_partition}] : [{pod_partition}])"
    fix = (
        "name one of the partition's queues in the annotation " + QUEUE_ANNOTATION + ": <partition>-<team> "
        "(`ekstrain job render --team`) or <partition>-shared (work of no team); a partition without teams: "
        "<partition>"
    )
    pod = (
        *POD_VALIDATIONS[:3],
        {
            "expression": f"!('{QUEUE_ANNOTATION}' in {_ANNOTATIONS}) || !('{names.PARTITION_LABEL}' in {_SELECTOR}) "
            f"|| {_ANNOTATIONS}['{QUEUE_ANNOTATION}'] in {allowed}",
            "message": f"the pod's queue ({QUEUE_ANNOTATION}) is not a queue of the partition its nodeSelector "
            f"{names.PARTITION_LABEL} names: each partition's queues count that partition's nodes; " + fix,
        },
    )
    task_partition = f"t.template.spec.nodeSelector['{names.PARTITION_LABEL}']"
    job = (
        JOB_VALIDATIONS[0],
        {
            "expression": "!has(object.spec.tasks) || object.spec.tasks.all(t, !has(t.template.spec) || "
            "!has(t.template.spec.nodeSelector) || "
            f"!('{names.PARTITION_LABEL}' in t.template.spec.nodeSelector) || "
            f"object.spec.queue in ({task_partition} in {table} ? {table}[{task_partition}] : [{task_partition}]))",
            "message": f"a task selects partition {names.PARTITION_LABEL}=<p> but the job's spec.queue is not one of "
            "that partition's queues: " + fix,
        },
    )
    return pod, job


def policies(namespaces: Sequence[str], leaves: Mapping[str, Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """The three policies and their bindings for the namespaces users train in (``training``, and the Slurm and
    JupyterHub namespaces where those run). ``leaves``: partition -> the queues its pods may name, when the stack
    names teams (assembly/schedulers/teams.py ``leaf_queues``); @default none: each partition's own queue."""
    pod_rules, job_rules = POD_VALIDATIONS, JOB_VALIDATIONS
    if leaves and any(list(qs) != [p] for p, qs in leaves.items()):
        pod_rules, job_rules = team_validations(leaves)
    pairs = [
        _policy(POD_POLICY, "", "v1", "pods", pod_rules),
        _policy(JOB_POLICY, "batch.volcano.sh", "v1alpha1", "jobs", job_rules),
        _policy(PODGROUP_POLICY, "scheduling.volcano.sh", "v1beta1", "podgroups", PODGROUP_VALIDATIONS),
    ]
    return [obj for p in pairs for obj in (p, _binding(p["metadata"]["name"], namespaces))]


def ledger_namespaces(cfg: StackConfig) -> list[str]:
    """Where people run work on partitions: the training namespace, and Slurm's and JupyterHub's when enabled."""
    from ekstrain.assembly import jupyterhub
    from ekstrain.assembly.schedulers import slurm

    return sorted(
        {names.TRAINING_NAMESPACE}
        | ({slurm.NAMESPACE} if cfg.schedulers.slurm.enabled else set())
        | ({jupyterhub.NAMESPACE} if cfg.jupyterhub.enabled else set())
    )
