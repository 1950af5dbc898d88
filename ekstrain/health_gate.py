"""The health gate: no accelerator node takes work before it passed a pre-flight, and a sick one leaves service at once.

One source for the render (``components/health_gate.py``, the NodePools of ``ekstrain.karpenter_specs``, the node
monitoring agent's configuration in ``components/node_health.py``) and the simulator (``ekstrain/simulate``): the
taint keys, the checks and how long they take, the conditions training must leave at once and NodeRepair's window.

- **Startup taint.** Every accelerator NodePool launches its nodes with ``STARTUP_TAINT``
  (``spec.template.spec.startupTaints``): Karpenter expects another component to remove it and, until then, the
  node takes no pod that does not tolerate it (Karpenter docs, NodePools, "startupTaints":
  https://karpenter.sh/docs/concepts/nodepools/).
- **Pre-flight.** A DaemonSet per accelerator NodePool (``gate_daemonset``) tolerates it and runs, as init
  containers: NVIDIA DCGM diagnostics at ``DCGM_DIAG_LEVEL`` (or the Neuron checks), the accelerator and EFA device
  counts against the instance type (ekstrain/catalog.py, ekstrain/efa.py), and a single-node collective over every
  accelerator of the node (nccl-tests ``all_reduce_perf -g N``; Neuron ``nccom-test -N 1``). Its guard
  (ekstrain/health_guard.py) then removes the startup taint, or taints the node ``UNHEALTHY_TAINT`` (NoExecute)
  and deletes it after ``HOLD_SECONDS``.
- **Least privilege.** The gate's service account may get, patch and delete nodes (RBAC cannot name "its own"
  node); ``node_policy`` (a ValidatingAdmissionPolicy) refuses any change to another node than the one named in
  the request's service account token (``authentication.kubernetes.io/node-name``, the pod's node, which the
  API server puts in pod-bound tokens: Kubernetes docs, "Managing Service Accounts", bound service account tokens,
  https://kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/; feature
  ServiceAccountTokenPodNodeInfo, beta in 1.30, GA in 1.32; the same check as kubernetes
  test/e2e/dra/test-driver/deploy/example/plugin-permissions.yaml), any change but the gate's own taints and
  annotation, and deleting a node the guard has not tainted unhealthy.
- **Continuous health.** The EKS node monitoring agent sets ``AcceleratedHardwareReady`` False on XID errors,
  double-bit ECC errors, NVLink, DCGM and Neuron faults (aws/eks-node-monitoring-agent v1.7.0
  docs/node-health-issues.adoc); the guard taints such a node NoExecute at once (``LEAVE_CONDITIONS``), so the
  workers leave now and not when NodeRepair replaces the node ``REPAIR_MINUTES`` later.
"""

from __future__ import annotations

import math
import pathlib
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ekstrain import catalog, health_guard, names, versions

if TYPE_CHECKING:
    from ekstrain.karpenter_specs import PartitionSpec

NAMESPACE = "kube-system"
STARTUP_TAINT_KEY = "ekstrain.io/health-gate"
STARTUP_TAINT: dict[str, str] = {"key": STARTUP_TAINT_KEY, "value": "pending", "effect": "NoSchedule"}
"""Karpenter startup taint of every accelerator NodePool; the gate's guard removes it once the pre-flight passed."""
UNHEALTHY_TAINT_KEY = "ekstrain.io/unhealthy"
UNHEALTHY_TAINT: dict[str, str] = {"key": UNHEALTHY_TAINT_KEY, "value": "true", "effect": "NoExecute"}
"""Set by the guard on a node that failed its pre-flight or that training must leave now: pods that do not
tolerate it are evicted at once and none is scheduled there (Kubernetes taint-based eviction)."""
GATE_ANNOTATION = "ekstrain.io/health-gate"
"""The guard's verdict on its node (passed, or why not)."""
EFA_CONDITION = "EFADevicesReady"
"""Node condition the guard keeps: False when the node shows fewer EFA devices than its instance type's layout (the
node monitoring agent reports EFA errors only as Events); kube-state-metrics exports it for alerts."""
SLURM_DRAIN_ANNOTATION = "nodeset.slinky.slurm.net/node-cordon-reason"
"""Slinky's drain reason: the guard cordons a sick node with it, and the slurm-operator drains the Slurm node of the
NodeSet pod there with that reason (slurm-operator v1.2.1 api/v1beta1/well_known.go AnnotationNodeCordonReason,
internal/controller/nodeset/nodeset_sync.go syncCordon: a cordoned Kubernetes node drains its Slurm node)."""
SERVICE_ACCOUNT = "ekstrain-health-gate"
NODE_NAME_CLAIM = "authentication.kubernetes.io/node-name"
POLICY = "ekstrain-health-gate-own-node-only"
CONFIGMAP = "ekstrain-health-guard"

DCGM_DIAG_LEVEL = 2
"""``dcgmi diag -r 2``, "Medium validation, normally lasting approximately two minutes" (NVIDIA DCGM docs, dcgmi
diag: https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html). Level 1
lasts seconds and exercises no hardware; level 3 lasts about 15 minutes, longer than a node's launch."""
DCGM_DIAG_SECONDS = 120
COLLECTIVE_SECONDS = 60
"""The single-node collective: all_reduce_perf 8 B to 1 GiB, 20 iterations per size, over NVLink/NeuronLink inside
one node (an estimate: seconds of transfer plus CUDA/Neuron runtime start-up)."""
COUNT_SECONDS = 30
"""Device counts, libfabric's EFA provider, the Neuron sysfs error counters, and the guard's API calls."""
HOLD_SECONDS = 600
"""How long a node that failed stays (tainted, no job) before the guard deletes it: NodeRepair's toleration for
AcceleratedHardwareReady, so a failed pre-flight and an agent-detected fault are replaced alike."""
LEAVE_CONDITIONS: tuple[str, ...] = ("AcceleratedHardwareReady", "NetworkingReady")
"""Node conditions (the node monitoring agent's) on which training must leave at once: a GPU/Neuron fault breaks
every collective of the gang, and so does a node without pod networking (IPAMD, interfaces down)."""
REPAIR_MINUTES: dict[str, int] = {
    "AcceleratedHardwareReady": 10,
    "NetworkingReady": 30,
    "StorageReady": 30,
    "KernelReady": 30,
    "ContainerRuntimeReady": 30,
}
"""Karpenter NodeRepair (feature gate ``nodeRepair``) replaces a node whose condition stayed False this long
(karpenter-provider-aws v1.14.1 pkg/cloudprovider/cloudprovider.go RepairPolicies), and not at all while more than
20% of the NodePool's nodes are unhealthy (kubernetes-sigs/karpenter pkg/controllers/node/health/controller.go;
EKS docs, "Enable node auto repair": https://docs.aws.amazon.com/eks/latest/userguide/node-health.html)."""


REPAIR_UNHEALTHY_PERCENT = 20
"""NodeRepair acts on a NodePool's node only while at most this share of the pool's nodes (rounded up: one of a
3-node pool, two of an 8-node pool) is unhealthy, and likewise for the whole cluster (kubernetes-sigs/karpenter
v1.14.1 pkg/controllers/node/health/controller.go ``allowedUnhealthyPercent``, ``areNodesHealthy``)."""


def gate_seconds(family: str) -> int:
    """How long the pre-flight adds to a node's launch (GPU: DCGM diag + the collective + the counts)."""
    if family == catalog.GPU:
        return DCGM_DIAG_SECONDS + COLLECTIVE_SECONDS + COUNT_SECONDS
    if family == catalog.TRAINIUM:
        return COLLECTIVE_SECONDS + COUNT_SECONDS
    return 0


def gate_minutes(family: str) -> int:
    return math.ceil(gate_seconds(family) / 60)


def gated(pool: dict[str, Any]) -> bool:
    """Whether a rendered NodePool carries the startup taint (the simulator asks the build)."""
    template = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    return any(t.get("key") == STARTUP_TAINT_KEY for t in template.get("startupTaints") or [])


# ---- the checks, as shell, one result file each ----------------------------------------------------------

RESULTS = "/results"


def _result(check: str, script: list[str]) -> str:
    """``script`` in a subshell: its last failing line's message, or ``ok``, goes to RESULTS/<check>. The
    container itself always exits 0, so the guard runs and decides (a failing init container would retry for
    ever with the node left tainted and never replaced)."""
    body = "\n".join(["set -uo pipefail", 'fail() { echo "$1" > ' + f"{RESULTS}/{check}" + "; exit 1; }", *script])
    return f"( {body}\n) && echo ok > {RESULTS}/{check}\nexit 0\n"


def _efa_lines(expected: int) -> list[str]:
    if not expected:
        return []
    return [
        "efa=$(ls /host/sys/class/infiniband 2>/dev/null | wc -l)",
        f'[ "$efa" -eq {expected} ] || fail "expected {expected} EFA devices (its EFA layout), found $efa"',
    ]


def dcgm_script() -> str:
    return _result(
        "dcgm",
        [
            # The image's host engine in this container (the pod network: no clash with the agent's dcgm-server).
            f"if {IN_SERVICE}; then exit 0; fi",
            "nv-hostengine -n -b 127.0.0.1 & sleep 5",
            f"dcgmi diag -r {DCGM_DIAG_LEVEL} > /results/dcgm.log 2>&1 || "
            f'fail "dcgmi diag -r {DCGM_DIAG_LEVEL} failed: $(grep -m1 -i fail /results/dcgm.log)"',
        ],
    )


IN_SERVICE = "nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q ."
"""A process on the GPUs: the node is in service (its pod was recreated, the node rebooted): skip the checks."""


def gpu_devices_script(it: catalog.InstanceType, efa: int) -> str:
    n = it.accelerator_count
    collective = ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", str(n), "-c", "1"]
    return _result(
        "devices",
        [
            f"if {IN_SERVICE}; then exit 0; fi",
            "gpus=$(nvidia-smi -L | grep -c '^GPU ')",
            f'[ "$gpus" -eq {n} ] || fail "expected {n} GPUs ({it.name}), found $gpus"',
            *_efa_lines(efa),
            *(['fi_info -p efa -t FI_EP_RDM > /dev/null || fail "libfabric has no EFA provider"'] if efa else []),
            shlex.join([*collective, "-n", "20"]) + ' > /results/allreduce.log 2>&1 || fail "all_reduce_perf failed"',
            'grep -q "Out of bounds values : 0 OK" /results/allreduce.log || fail "all-reduce: wrong results"',
        ],
    )


def neuron_devices_script(it: catalog.InstanceType, efa: int) -> str:
    n, cores = it.accelerator_count, it.workers_per_node
    count = "neuron-ls --json-output | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'"
    # Neuron sysfs: uncorrected HBM/SRAM ECC counters per device (Neuron docs, "Neuron Sysfs User Guide").
    ecc = (
        "cat /sys/devices/virtual/neuron_device/neuron*/stats/hardware/*_uncorrected 2>/dev/null"
        " | awk '{s+=$1} END {print s+0}'"
    )
    collective = ["nccom-test", "-r", str(cores), "-N", "1", "-b", "8", "-e", "256M", "-f", "2", "-n", "20", "allr"]
    return _result(
        "devices",
        [
            f"devs=$({count})",
            f'[ "$devs" -eq {n} ] || fail "expected {n} Neuron devices ({it.name}), found $devs"',
            f"ecc=$({ecc})",
            '[ "$ecc" -eq 0 ] || fail "$ecc uncorrected Neuron memory errors"',
            *_efa_lines(efa),
            shlex.join(collective)
            + ' > /results/nccom.log 2>&1 || fail "nccom-test allr over every NeuronCore failed"',
        ],
    )


# ---- the objects ----------------------------------------------------------------------------------------


def _labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "ekstrain"}


def gate_name(pool: str) -> str:
    return f"health-gate-{pool}"[:63].rstrip("-")


def tolerations(accelerator_resource: str) -> list[dict[str, str]]:
    """The accelerator taint, the startup taint and the unhealthy taint (the gate runs on a node that failed)."""
    return [
        {"key": accelerator_resource, "operator": "Exists", "effect": "NoSchedule"},
        {"key": STARTUP_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": UNHEALTHY_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"},
    ]


CHECK_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
GUARD_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}
ALIVE = "/run/guard/alive"
"""The guard touches it every round (also while it holds a failed node): its liveness and readiness probes."""


def _alive_probe() -> dict[str, Any]:
    test = f"[ $(( $(date +%s) - $(stat -c %Y {ALIVE}) )) -lt 120 ]"
    return {"exec": {"command": ["/bin/sh", "-c", test]}, "initialDelaySeconds": 30, "periodSeconds": 30}


def gate_daemonset(spec: PartitionSpec) -> dict[str, Any]:
    """The pre-flight of one accelerator NodePool (a layout of a partition: its instance types share the
    accelerator and EFA counts). The checks see every accelerator without requesting them (the NVIDIA runtime's
    ``NVIDIA_VISIBLE_DEVICES=all``; Neuron devices through a privileged container), so the pod that stays on the
    node holds none: the device plugins' counts stay whole for the jobs."""
    it = spec.shape.instance_types[0]
    efa = spec.shape.efa_interfaces
    gpu = spec.shape.family == catalog.GPU
    name = gate_name(spec.resource_name)
    mounts = [{"name": "results", "mountPath": RESULTS}, {"name": "sys", "mountPath": "/host/sys", "readOnly": True}]
    privileged = {"privileged": True}
    nvidia_env = [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    checks: list[dict[str, Any]] = []
    if gpu:
        checks.append(
            {
                "name": "dcgm-diag",
                "image": versions.DCGM_IMAGE,
                "imagePullPolicy": "IfNotPresent",
                "command": ["/bin/bash", "-c", dcgm_script()],
                "env": nvidia_env,
                "securityContext": privileged,
                "resources": CHECK_RESOURCES,
                "volumeMounts": mounts,
            }
        )
    checks.append(
        {
            "name": "devices",
            "image": versions.NCCL_TESTS_IMAGE if gpu else versions.NEURON_TRAINING_IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/bash", "-c", gpu_devices_script(it, efa) if gpu else neuron_devices_script(it, efa)],
            "env": nvidia_env if gpu else [],
            "securityContext": privileged,
            "resources": CHECK_RESOURCES,
            "volumeMounts": mounts,
        }
    )
    guard_env = {
        "CHECKS": ",".join(["dcgm", "devices"] if gpu else ["devices"]),
        "RESULTS_DIR": RESULTS,
        "STARTUP_TAINT_KEY": STARTUP_TAINT_KEY,
        "UNHEALTHY_TAINT_KEY": UNHEALTHY_TAINT_KEY,
        "GATE_ANNOTATION": GATE_ANNOTATION,
        "EFA_CONDITION": EFA_CONDITION,
        "SLURM_DRAIN_ANNOTATION": SLURM_DRAIN_ANNOTATION,
        "LEAVE_CONDITIONS": ",".join(LEAVE_CONDITIONS),
        "EXPECTED_EFA": str(efa),
        "EFA_SYSFS": "/host/sys/class/infiniband",
        "HOLD_SECONDS": str(HOLD_SECONDS),
        "POLL_SECONDS": "15",
        "ALIVE_FILE": ALIVE,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {**_labels(name), names.PARTITION_LABEL: spec.name},
        },
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            # A new version reaches a node in service only when its pod is deleted (between jobs): a rollout must
            # not rerun DCGM diagnostics and an all-reduce on GPUs a job is using. New nodes get it at once.
            "updateStrategy": {"type": "OnDelete"},
            "template": {
                "metadata": {
                    "labels": {**_labels(name), names.PARTITION_LABEL: spec.name, "ekstrain.io/health-gate": "true"}
                },
                "spec": {
                    "nodeSelector": {names.NODEPOOL_LABEL: spec.resource_name},
                    "tolerations": tolerations(spec.shape.accelerator_resource),
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": SERVICE_ACCOUNT,
                    # The privileged checks run unconfined anyway; the guard under the runtime's profile.
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "initContainers": checks,
                    "containers": [
                        {
                            "name": "guard",
                            "image": versions.EFA_EXPORTER_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["python3", "/opt/guard/health_guard.py"],
                            "livenessProbe": _alive_probe(),
                            "readinessProbe": _alive_probe(),
                            "env": [
                                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                                *({"name": k, "value": v} for k, v in guard_env.items()),
                            ],
                            "resources": GUARD_RESOURCES,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "runAsNonRoot": True,
                                "runAsUser": 65534,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "results", "mountPath": RESULTS, "readOnly": True},
                                {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
                                {"name": "guard", "mountPath": "/opt/guard", "readOnly": True},
                                {"name": "state", "mountPath": "/run/guard"},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "results", "emptyDir": {}},
                        {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
                        {"name": "guard", "configMap": {"name": CONFIGMAP}},
                        {"name": "state", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
                    ],
                },
            },
        },
    }


def network_policy() -> dict[str, Any]:
    """Nothing reaches the gate's pods; they reach only the API server and DNS (what the guard needs)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "health-gate", "namespace": NAMESPACE, "labels": _labels("health-gate")},
        "spec": {
            "podSelector": {
                "matchLabels": {"app.kubernetes.io/part-of": "ekstrain", "ekstrain.io/health-gate": "true"}
            },
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": [
                {"ports": [{"protocol": "TCP", "port": 443}]},
                {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
            ],
        },
    }


def guard_configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE, "labels": _labels(CONFIGMAP)},
        "data": {"health_guard.py": pathlib.Path(health_guard.__file__).read_text()},
    }


def service_account() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": _labels(SERVICE_ACCOUNT)},
    }


def cluster_role() -> dict[str, Any]:
    """Nodes only: read, patch (taints, the annotation, the cordon; the EFA condition in the status) and delete; the
    policy narrows each to the pod's own node and to those fields."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": SERVICE_ACCOUNT, "labels": _labels(SERVICE_ACCOUNT)},
        "rules": [
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
        ],
    }


def cluster_role_binding() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": SERVICE_ACCOUNT, "labels": _labels(SERVICE_ACCOUNT)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SERVICE_ACCOUNT},
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
    }


USERNAME = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
_GATE_KEYS = f"['{STARTUP_TAINT_KEY}', '{UNHEALTHY_TAINT_KEY}']"
_TAINTS = "(has({o}.spec.taints) ? {o}.spec.taints : [])"
_ANN = "(has({o}.metadata.annotations) ? {o}.metadata.annotations : {{}})"
_LABELS = "(has({o}.metadata.labels) ? {o}.metadata.labels : {{}})"
_UNSCHED = "(has({o}.spec.unschedulable) ? {o}.spec.unschedulable : false)"
_CONDS = "(has({o}.status) && has({o}.status.conditions) ? {o}.status.conditions : [])"
_GATE_ANNOTATIONS = f"['{GATE_ANNOTATION}', '{SLURM_DRAIN_ANNOTATION}']"

POLICY_VARIABLES: tuple[dict[str, str], ...] = (
    {
        "name": "claimNode",
        "expression": f"'{NODE_NAME_CLAIM}' in request.userInfo.extra && "
        f"size(request.userInfo.extra['{NODE_NAME_CLAIM}']) > 0 ? "
        f"request.userInfo.extra['{NODE_NAME_CLAIM}'][0] : ''",
    },
)
POLICY_VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": "variables.claimNode != ''",
        "message": f"the health gate's token names no node ({NODE_NAME_CLAIM}): it runs only in a pod on a node "
        "(ServiceAccountTokenPodNodeInfo, GA in Kubernetes 1.32)",
    },
    {
        "expression": "oldObject.metadata.name == variables.claimNode",
        "message": "the health gate may change only the node its pod runs on",
    },
    {
        "expression": f"request.operation != 'DELETE' || {_TAINTS.format(o='oldObject')}"
        f".exists(t, t.key == '{UNHEALTHY_TAINT_KEY}')",
        "message": f"the health gate deletes only a node it tainted {UNHEALTHY_TAINT_KEY} (a failed pre-flight)",
    },
    {
        "expression": f"request.operation != 'UPDATE' || {_TAINTS.format(o='object')}"
        f".filter(t, !(t.key in {_GATE_KEYS})) == {_TAINTS.format(o='oldObject')}"
        f".filter(t, !(t.key in {_GATE_KEYS}))",
        "message": f"the health gate changes only its own taints ({STARTUP_TAINT_KEY}, {UNHEALTHY_TAINT_KEY})",
    },
    {
        "expression": f"request.operation != 'UPDATE' || ("
        f"{_ANN.format(o='object')}.all(k, k in {_GATE_ANNOTATIONS} || (k in {_ANN.format(o='oldObject')} && "
        f"{_ANN.format(o='oldObject')}[k] == {_ANN.format(o='object')}[k])) && "
        f"{_ANN.format(o='oldObject')}.all(k, k in {_GATE_ANNOTATIONS} || k in {_ANN.format(o='object')}) && "
        f"{_LABELS.format(o='object')} == {_LABELS.format(o='oldObject')})",
        "message": f"the health gate changes no label and no other annotation than {GATE_ANNOTATION} and "
        f"{SLURM_DRAIN_ANNOTATION}",
    },
    {
        "expression": f"request.operation != 'UPDATE' || {_CONDS.format(o='object')}"
        f".filter(c, c.type != '{EFA_CONDITION}') == {_CONDS.format(o='oldObject')}"
        f".filter(c, c.type != '{EFA_CONDITION}')",
        "message": f"the health gate writes no node condition but {EFA_CONDITION}",
    },
    {
        "expression": f"request.operation != 'UPDATE' || {_UNSCHED.format(o='object')} == "
        f"{_UNSCHED.format(o='oldObject')} || ({_UNSCHED.format(o='object')} && "
        f"{_TAINTS.format(o='object')}.exists(t, t.key == '{UNHEALTHY_TAINT_KEY}'))",
        "message": f"the health gate cordons only a node it taints {UNHEALTHY_TAINT_KEY}, and never uncordons",
    },
)


def node_policy() -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy (+ binding) that keeps the gate's service account on its own node."""
    api = "admissionregistration.k8s.io/v1"
    policy = {
        "apiVersion": api,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE", "DELETE"],
                        "resources": ["nodes", "nodes/status"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "health-gate-service-account", "expression": f"request.userInfo.username == '{USERNAME}'"}
            ],
            "variables": list(POLICY_VARIABLES),
            "validations": [{**v, "reason": "Forbidden"} for v in POLICY_VALIDATIONS],
        },
    }
    binding = {
        "apiVersion": api,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def shared_objects() -> list[dict[str, Any]]:
    """What every gate DaemonSet shares: the guard's script, its service account, RBAC and the admission policy."""
    return [
        guard_configmap(),
        service_account(),
        cluster_role(),
        cluster_role_binding(),
        *node_policy(),
        network_policy(),
    ]


def gate_objects(pools: Sequence[PartitionSpec]) -> list[dict[str, Any]]:
    """Every accelerator NodePool's DaemonSet, after the shared objects (none without an accelerator pool)."""
    accel = [p for p in pools if p.shape.family in (catalog.GPU, catalog.TRAINIUM)]
    return [*shared_objects(), *(gate_daemonset(p) for p in accel)] if accel else []


def agent_configuration(accelerator_resources: Sequence[str]) -> dict[str, Any]:
    """The eks-node-monitoring-agent add-on's configurationValues (chart 1.7.0 values keys): the agent on every
    node whatever its taints (the chart default, stated: ``operator: Exists``); its DCGM host engine, whose chart
    default tolerates nothing, on the GPU partitions' taint, the startup taint and the unhealthy taint, with
    requests; the NVIDIA, Neuron and networking monitors on."""
    tol = [{"key": r, "operator": "Exists", "effect": "NoSchedule"} for r in sorted(set(accelerator_resources))]
    tol += [
        {"key": STARTUP_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": UNHEALTHY_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"},
    ]
    return {
        "nodeAgent": {
            "tolerations": [{"operator": "Exists"}],
            "monitors": {"nvidia": {"enabled": True}, "neuron": {"enabled": True}, "networking": {"enabled": True}},
        },
        "dcgmAgent": {
            "tolerations": tol,
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        },
    }
