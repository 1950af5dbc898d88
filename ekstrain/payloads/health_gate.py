"""The health gate: no accelerator node takes work before it passed a pre-flight, and a sick one leaves service at once.

One source for the render (``components/health_gate.py``, the NodePools of ``ekstrain.payloads.karpenter_specs``, the
node
monitoring agent's configuration in ``components/node_health.py``) and the simulator (``ekstrain/simulate``): the
taint keys, the checks and how long they take, the conditions training must leave at once and NodeRepair's window.

- **Startup taint.** Every accelerator NodePool launches its nodes with ``STARTUP_TAINT``
  (``spec.template.spec.startupTaints``): Karpenter expects another component to remove it and, until then, the
  node takes no pod that does not tolerate it (Karpenter docs, NodePools, "startupTaints":
  https://karpenter.sh/docs/concepts/nodepools/).
- **Pre-flight.** A DaemonSet per accelerator NodePool (``gate_daemonset``) tolerates it and runs, as init
  containers: NVIDIA DCGM diagnostics at ``DCGM_DIAG_LEVEL`` (or the Neuron checks), the accelerator and EFA device
  counts against the instance type (ekstrain/facts/catalog.py, ekstrain/layout/efa.py), and a single-node collective
  over every
  accelerator of the node (nccl-tests ``all_reduce_perf -g N``; Neuron ``nccom-test -N 1``). Its guard
  (ekstrain/agents/health_guard.py) then removes the startup taint, or taints the node ``UNHEALTHY_TAINT`` (NoExecute)
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.agents import health_guard
from ekstrain.facts import catalog, names, versions
from ekstrain.facts.names import STARTUP_TAINT_KEY
from ekstrain.payloads import pod_security

if TYPE_CHECKING:
    from ekstrain.payloads.karpenter_specs import PartitionSpec

NAMESPACE = "kube-system"
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

# ---- every check bounded in time -------------------------------------------------------------------------

DCGM_DIAG_TIMEOUT_SECONDS = 900
"""``dcgmi diag -r 2 --timeout`` and the ``timeout`` around it: awsome-distributed-training's GPU health checks
measure level 2 at 2.5 to 10.5 minutes on 8-GPU instances and bound it at 15 minutes (awslabs/awsome-distributed-ai
4.validation_and_observability/2.gpu-cluster-healthcheck/README.md, "Check 1", ``DCGM_TIMEOUT`` default 15 min);
NVIDIA's "approximately two minutes" (``DCGM_DIAG_SECONDS``) is the typical run the simulator plays."""
COLLECTIVE_TIMEOUT_SECONDS = 300
"""The single-node all-reduce (``all_reduce_perf -g N``, ``nccom-test -N 1``): five times ``COLLECTIVE_SECONDS``.
One node's sweep to 1 GiB moves about 28 sizes x 25 iterations over NVLink/NeuronLink, under a second of transfer
at the floors below; the rest is runtime start-up. awsome-distributed-training bounds its NVLink-only sub-test at
600 s (``NCCL_ISOLATION_TIMEOUT``, same README, "Check 5") and its multi-node NCCL test at 1800 s: both run
multi-node jobs; one node's sweep needs neither."""
COUNT_TIMEOUT_SECONDS = 30
"""Each count (``nvidia-smi``, ``neuron-ls``, ``fi_info``): seconds when healthy; a driver that hangs them is a
failure."""
KILL_AFTER_SECONDS = 10
"""``timeout -k``: a check that ignores SIGTERM is killed this long after its timeout."""
TIMED_OUT = (124, 137)
"""GNU ``timeout``'s exit codes: 124 after SIGTERM, 137 (128 + 9) after ``-k``'s SIGKILL."""
IMAGE_PULL_SECONDS = 600
"""The gate's images on a new node (the DCGM and nccl-tests images are several GB each, pulled from nvcr.io / ECR
Public): the part of the deadline before any check runs. An estimate, stated: no upstream figure."""
GUARD_SLACK_SECONDS = 60
"""The guard's API calls and the poll between results."""


def check_timeouts(family: str) -> dict[str, int]:
    """Each bounded step of the pre-flight -> its timeout in seconds (the scripts below use exactly these)."""
    if family == catalog.GPU:
        return {
            "dcgmi diag": DCGM_DIAG_TIMEOUT_SECONDS,
            "nvidia-smi -L": COUNT_TIMEOUT_SECONDS,
            "nvidia-smi nvlink": COUNT_TIMEOUT_SECONDS,
            "fi_info": COUNT_TIMEOUT_SECONDS,
            "all_reduce_perf": COLLECTIVE_TIMEOUT_SECONDS,
        }
    if family == catalog.TRAINIUM:
        return {
            "neuron-ls": COUNT_TIMEOUT_SECONDS,
            "fi_info": COUNT_TIMEOUT_SECONDS,
            "nccom-test": COLLECTIVE_TIMEOUT_SECONDS,
        }
    return {}


def deadline_seconds(family: str) -> int:
    """How long after its node registered (``metadata.creationTimestamp``) the gate may hold the startup taint: the
    image pulls, every check at its timeout (each ``-k`` included) and the guard's slack. Past it the guard fails
    the node whatever the checks did (hung, crashed, never pulled): Karpenter has launch and registration timeouts
    but none for initialisation (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/liveness.go
    registrationTTL 15 min; initialization.go waits for startup taints without a deadline), and a node with a
    startup taint is never disrupted while it counts as capacity for the pending pods."""
    steps = check_timeouts(family)
    if not steps:
        return 0
    return IMAGE_PULL_SECONDS + sum(t + KILL_AFTER_SECONDS for t in steps.values()) + GUARD_SLACK_SECONDS


def deadline_minutes(family: str) -> int:
    return math.ceil(deadline_seconds(family) / 60)


# ---- performance floors, one table ----------------------------------------------------------------------


@dataclass(frozen=True)
class Floor:
    busbw_gbps: float | None
    """Least out-of-place bus bandwidth (GB/s) of the single-node all-reduce at its largest size (1 GiB), or None
    where no published figure exists (then only correctness and the counts gate the node)."""
    nvlink: bool
    """Every GPU's NVLinks active (``nvidia-smi nvlink --status`` shows none ``inactive``)."""
    source: str


_AWSOME = "awsome-distributed-ai 2.gpu-cluster-healthcheck README, Check 5 NVLink-only threshold"
FLOOR_FRACTION = 0.8
"""The floor is 80% of the published threshold: their sub-test sweeps to 128 MB where 1 GiB reaches more, and a
floor that fails healthy nodes would trip the pool's breaker; a node with one NVLink down loses an eighth or more."""
FLOORS: dict[str, Floor] = {
    "p4d.24xlarge": Floor(200 * FLOOR_FRACTION, True, f"{_AWSOME}: p4d 200 GB/s"),
    "p4de.24xlarge": Floor(200 * FLOOR_FRACTION, True, f"{_AWSOME}: p4d 200 GB/s"),
    "p5.48xlarge": Floor(500 * FLOOR_FRACTION, True, f"{_AWSOME}: p5/p5e/p5en 500 GB/s"),
    "p5e.48xlarge": Floor(500 * FLOOR_FRACTION, True, f"{_AWSOME}: p5/p5e/p5en 500 GB/s"),
    "p5en.48xlarge": Floor(500 * FLOOR_FRACTION, True, f"{_AWSOME}: p5/p5e/p5en 500 GB/s"),
    "p6-b200.48xlarge": Floor(600 * FLOOR_FRACTION, True, f"{_AWSOME}: p6-b200 600 GB/s"),
    "p6-b300.48xlarge": Floor(None, True, "no published figure; NVLink expected (instance-profiles.conf)"),
    "g5.8xlarge": Floor(None, False, "one GPU, no NVLink"),
    "g5.48xlarge": Floor(None, False, "PCIe only, no NVLink (instance-profiles.conf lists g6 false)"),
    "g6e.48xlarge": Floor(None, False, "PCIe only, no NVLink"),
}
"""Instance type -> the floor its single-node pre-flight enforces (GPU types; a type not listed gets no bandwidth
floor and no NVLink check, stated in docs/health.md)."""


def floor(instance_type: str) -> Floor:
    return FLOORS.get(instance_type, Floor(None, False, "not in the floor table"))


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


LEAVE_AFTER_SECONDS: dict[str, int] = {"AcceleratedHardwareReady": 60, "NetworkingReady": 300}
"""How long a condition of ``LEAVE_CONDITIONS`` stays False (its ``lastTransitionTime``) before the guard taints the
node NoExecute: the guard's hysteresis, each shorter than NodeRepair's window (``REPAIR_MINUTES``) so the gang leaves
before the node is drained. AcceleratedHardwareReady: 1 minute (the agent sets it on fatal XIDs, double-bit ECC,
NVLink and Neuron faults, which break every collective at once; one minute rides out an agent restart, 10 minutes
would keep the gang on a dead GPU). NetworkingReady: 5 minutes, half of the jobs' NCCL watchdog
(``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC`` 600, assembly/jobs/env.py): a real loss of pod networking has stalled the
gang's collectives for 5 minutes, while the interface blips the node monitoring agent documents as false positives
(``excludedInterfaceNameRegexps``) and an IPAMD restart clear sooner and restart nothing."""
EFA_LEAVE_SECONDS = 60
"""Fewer EFA devices than the layout for this long (the guard's own count, four polls): the node leaves."""
RECOVER_SECONDS = 600
"""A node the guard tainted for a condition (not for its pre-flight) whose leave conditions have all been True this
long (``lastTransitionTime``) is un-tainted and uncordoned: twice the longest leave threshold, so a condition that
flaps back within 10 minutes keeps the node out. NodeRepair replaces a node whose condition stays False its full
window; one that recovers before is no longer a repair candidate."""
POLL_SECONDS = 15
RESULT_POLL_SECONDS = 5

BREAKER_FAILURES = 3
"""Gate failures of one NodePool (pre-flight failed or deadline passed) within ``BREAKER_WINDOW_SECONDS`` that trip
its breaker. One failed node is the ordinary case (replace it), two can coincide; three within the time a failed
node takes to recycle twice (10 min hold + 10 min launch + the gate, about 24 minutes each) say the cause is the
pool's (a DCGM image that does not match the AMI's driver, a changed Neuron sysfs layout), not one machine's."""
BREAKER_WINDOW_SECONDS = 3600
BREAKER_ANNOTATION = "ekstrain.io/breaker"
"""On the NodePool: why and since when its breaker holds it (absent: closed)."""
FAILURES_ANNOTATION = "ekstrain.io/gate-failures"
"""On the NodePool: the epoch seconds of its recent gate failures, comma-separated (the breaker's memory: a failed
node is deleted, so the count cannot live on nodes)."""
RESUME_ANNOTATION = "ekstrain.io/breaker-resume"
"""On the NodePool: the JSON merge patch that resumes it (the limit it had, the breaker annotations removed), for
the one documented command ``kubectl patch nodepool <pool> --type merge -p "$(kubectl get nodepool <pool> -o
jsonpath='{.metadata.annotations.ekstrain\\.io/breaker-resume}')"``."""
BREAKER_TAINT_VALUE = "breaker"
"""The unhealthy taint's value on a failed node its held pool keeps (the breaker alert's signal)."""
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
"""Karpenter does not voluntarily disrupt (consolidate, drift) a node with this annotation (Karpenter docs,
Disruption, "Node-level controls"): a failed node kept while its pool is held stays for the operator."""
HELD_LIMIT = "0"
"""The hold: the NodePool's ``spec.limits.nodes`` set to 0. Karpenter launches no node that would exceed a NodePool's
limits (Karpenter docs, NodePools, "spec.limits"; kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling), and a limit is no drift (it is not in the NodeClaim template hash), so the
nodes in service stay. Volcano keeps the gang Pending (its queue admits; no node comes)."""

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
    """``script`` in a subshell: its first failing line's message, or ``ok``, goes to RESULTS/<check>. The
    container itself always exits 0, so the guard runs and decides (a failing init container would retry for
    ever with the node left tainted and never replaced). ``bounded SECONDS CMD...`` runs one step under GNU
    ``timeout`` (``-k``: SIGKILL if it ignores SIGTERM): a step that hangs is a failure naming its timeout."""
    out = f"{RESULTS}/{check}"
    body = "\n".join(
        [
            "set -uo pipefail",
            f"rm -f {out}",
            f'fail() {{ [ -s {out} ] || echo "$1" > {out}; exit 1; }}',
            # CHECK_TIMEOUT, CHECK_KILL_AFTER (unset in the DaemonSet): the tests cut every step short.
            "bounded() { local s=${CHECK_TIMEOUT:-$1}; shift; "
            f'timeout -k "${{CHECK_KILL_AFTER:-{KILL_AFTER_SECONDS}}}" "$s" "$@"; local rc=$?; '
            f'if [ "$rc" -eq {TIMED_OUT[0]} ] || [ "$rc" -eq {TIMED_OUT[1]} ]; then '
            'fail "$1 timed out after $s s (hung)"; fi; return "$rc"; }',
            *script,
        ]
    )
    # A step that failed inside $(...) wrote its message but only left that subshell: never overwrite it with ok.
    return f"( {body}\n) && [ ! -s {out} ] && echo ok > {out}\nexit 0\n"


def _efa_lines(expected: int) -> list[str]:
    if not expected:
        return []
    return [
        "efa=$(ls /host/sys/class/infiniband 2>/dev/null | wc -l)",
        f'[ "$efa" -eq {expected} ] || fail "expected {expected} EFA devices (its EFA layout), found $efa"',
        f"bounded {COUNT_TIMEOUT_SECONDS} fi_info -p efa -t FI_EP_RDM > /dev/null || "
        'fail "libfabric has no EFA provider (fi_info -p efa)"',
    ]


def dcgm_script() -> str:
    return _result(
        "dcgm",
        [
            # The image's host engine in this container (the pod network: no clash with the agent's dcgm-server).
            f"if {IN_SERVICE}; then exit 0; fi",
            "nv-hostengine -n -b 127.0.0.1 & sleep 5",
            f"bounded {DCGM_DIAG_TIMEOUT_SECONDS} dcgmi diag -r {DCGM_DIAG_LEVEL} --timeout {DCGM_DIAG_TIMEOUT_SECONDS}"
            f" > /results/dcgm.log 2>&1 || "
            f'fail "dcgmi diag -r {DCGM_DIAG_LEVEL} failed: $(grep -m1 -i fail /results/dcgm.log)"',
        ],
    )


IN_SERVICE = (
    f"timeout -k {KILL_AFTER_SECONDS} {COUNT_TIMEOUT_SECONDS} "
    "nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q ."
)
"""A process on the GPUs: the node is in service (its pod was recreated, the node rebooted): skip the checks."""

LARGEST_BYTES = 1 << 30
"""The collective's largest size (``-e 1G``), where its bus bandwidth is read against the floor."""


def _nvlink_lines(it: catalog.InstanceType) -> list[str]:
    lines = []
    if floor(it.name).nvlink:
        # nvidia-smi nvlink --status: one "Link N: <speed> GB/s" line per active link, "<inactive>" otherwise.
        lines += [
            f"bounded {COUNT_TIMEOUT_SECONDS} nvidia-smi nvlink --status > /results/nvlink.log 2>&1 || "
            'fail "nvidia-smi nvlink --status failed"',
            "links=$(grep -c 'GB/s' /results/nvlink.log)",
            "down=$(grep -ci inactive /results/nvlink.log)",
            f'[ "${{down:-0}}" -eq 0 ] && [ "${{links:-0}}" -ge {it.accelerator_count} ] || '
            f'fail "NVLink: ${{down:-0}} inactive links, ${{links:-0}} active on {it.accelerator_count} GPUs"',
        ]
    return lines


def _bandwidth_lines(it: catalog.InstanceType) -> list[str]:
    f, lines = floor(it.name), []
    if f.busbw_gbps is not None:
        # nccl-tests rows: size count type redop root time algbw busbw #wrong ...: $8 is out-of-place busbw.
        lines += [
            f"bw=$(awk '$1 == {LARGEST_BYTES} {{print $8}}' /results/allreduce.log | tail -1)",
            f"awk -v b=\"${{bw:-0}}\" 'BEGIN {{exit !(b + 0 >= {f.busbw_gbps:g})}}' || "
            f'fail "all-reduce bus bandwidth ${{bw:-none}} GB/s at 1 GiB, below the floor {f.busbw_gbps:g} GB/s '
            f'({it.name})"',
        ]
    return lines


def gpu_devices_script(it: catalog.InstanceType, efa: int) -> str:
    n = it.accelerator_count
    collective = ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", str(n), "-c", "1"]
    return _result(
        "devices",
        [
            f"if {IN_SERVICE}; then exit 0; fi",
            f"gpus=$(bounded {COUNT_TIMEOUT_SECONDS} nvidia-smi -L | grep -c '^GPU ')",
            f'[ "$gpus" -eq {n} ] || fail "expected {n} GPUs ({it.name}), found $gpus"',
            *_nvlink_lines(it),
            *_efa_lines(efa),
            f"bounded {COLLECTIVE_TIMEOUT_SECONDS} "
            + shlex.join([*collective, "-n", "20"])
            + ' > /results/allreduce.log 2>&1 || fail "all_reduce_perf failed"',
            'grep -q "Out of bounds values : 0 OK" /results/allreduce.log || fail "all-reduce: wrong results"',
            *_bandwidth_lines(it),
        ],
    )


NEURON_ECC = "/sys/devices/virtual/neuron_device/neuron*/stats/hardware/*_uncorrected"
"""Neuron sysfs: uncorrected HBM/SRAM ECC counters per device (Neuron docs, "Neuron Sysfs User Guide")."""


def neuron_devices_script(it: catalog.InstanceType, efa: int) -> str:
    n, cores = it.accelerator_count, it.workers_per_node
    count = "python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' /results/neuron-ls.json"
    # neuron-ls --json-output: each device's "connected_to" lists its NeuronLink peers (Neuron docs, neuron-ls).
    linked = (
        "python3 -c 'import json,sys; print(sum(1 for d in json.load(open(sys.argv[1])) if d.get(\"connected_to\")))'"
        " /results/neuron-ls.json"
    )
    collective = ["nccom-test", "-r", str(cores), "-N", "1", "-b", "8", "-e", "256M", "-f", "2", "-n", "20", "allr"]
    return _result(
        "devices",
        [
            f"bounded {COUNT_TIMEOUT_SECONDS} neuron-ls --json-output > /results/neuron-ls.json || "
            'fail "neuron-ls failed"',
            f"devs=$({count})",
            f'[ "$devs" -eq {n} ] || fail "expected {n} Neuron devices ({it.name}), found $devs"',
            *(
                [
                    f"links=$({linked})",
                    f'[ "$links" -eq {n} ] || fail "NeuronLink: $links of {n} devices connected to their peers"',
                ]
                if n > 1
                else []
            ),
            # Counters absent is a failure: a sysfs layout the check cannot read must not pass as "0 errors".
            f"counters=$(ls {NEURON_ECC} 2>/dev/null | wc -l)",
            f'[ "$counters" -gt 0 ] || fail "no Neuron uncorrected-ECC counters under {NEURON_ECC}"',
            f"ecc=$(cat {NEURON_ECC} 2>/dev/null | awk '{{s+=$1}} END {{print s+0}}')",
            '[ "$ecc" -eq 0 ] || fail "$ecc uncorrected Neuron memory errors"',
            *_efa_lines(efa),
            f"bounded {COLLECTIVE_TIMEOUT_SECONDS} "
            + shlex.join(collective)
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
HOLD_RESOURCES = {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"cpu": "10m", "memory": "32Mi"}}
_RESTRICTED = pod_security.restricted_container()
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
        "LEAVE_AFTER": ",".join(f"{c}={LEAVE_AFTER_SECONDS[c]}" for c in LEAVE_CONDITIONS),
        "EFA_LEAVE_SECONDS": str(EFA_LEAVE_SECONDS),
        "RECOVER_SECONDS": str(RECOVER_SECONDS),
        "EXPECTED_EFA": str(efa),
        "EFA_SYSFS": "/host/sys/class/infiniband",
        "HOLD_SECONDS": str(HOLD_SECONDS),
        "DEADLINE_SECONDS": str(deadline_seconds(spec.shape.family)),
        "POLL_SECONDS": str(POLL_SECONDS),
        "RESULT_POLL_SECONDS": str(RESULT_POLL_SECONDS),
        "NODEPOOL_LABEL": names.NODEPOOL_LABEL,
        "BREAKER_FAILURES": str(BREAKER_FAILURES),
        "BREAKER_WINDOW_SECONDS": str(BREAKER_WINDOW_SECONDS),
        "BREAKER_ANNOTATION": BREAKER_ANNOTATION,
        "FAILURES_ANNOTATION": FAILURES_ANNOTATION,
        "RESUME_ANNOTATION": RESUME_ANNOTATION,
        "HELD_LIMIT": HELD_LIMIT,
        "BREAKER_VALUE": BREAKER_TAINT_VALUE,
        "ALIVE_FILE": ALIVE,
    }
    guard = {
        "name": "guard",
        "image": versions.EFA_EXPORTER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        # A native sidecar (an init container that keeps running, Kubernetes 1.33 GA): it starts before the checks
        # and watches the deadline while they run, so a check that hangs, crash-loops or never pulls its image
        # cannot hold the node's startup taint past deadline_seconds.
        "restartPolicy": "Always",
        "command": ["python3", "/opt/guard/health_guard.py"],
        "livenessProbe": _alive_probe(),
        "readinessProbe": _alive_probe(),
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            *({"name": k, "value": v} for k, v in guard_env.items()),
        ],
        "resources": GUARD_RESOURCES,
        "securityContext": _RESTRICTED,
        "volumeMounts": [
            {"name": "results", "mountPath": RESULTS, "readOnly": True},
            {"name": "sys", "mountPath": "/host/sys", "readOnly": True},
            {"name": "guard", "mountPath": "/opt/guard", "readOnly": True},
            {"name": "state", "mountPath": "/run/guard"},
        ],
    }
    hold = {
        "name": "hold",
        "image": versions.EFA_EXPORTER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        # The pod's one regular container: nothing to do (the guard is the sidecar); exits at once on SIGTERM.
        "command": [
            "python3",
            "-c",
            "import signal, sys; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); signal.pause()",
        ],
        # Its probes read the guard's heartbeat: the pod is Ready (and alive) only while its guard is.
        "livenessProbe": _alive_probe(),
        "readinessProbe": _alive_probe(),
        "resources": HOLD_RESOURCES,
        "securityContext": _RESTRICTED,
        "volumeMounts": [{"name": "state", "mountPath": "/run/guard", "readOnly": True}],
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
                    "initContainers": [guard, *checks],
                    "containers": [hold],
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
            # The breaker: its count and its hold live on the NodePool (breaker_policy narrows the fields).
            {"apiGroups": ["karpenter.sh"], "resources": ["nodepools"], "verbs": ["get", "patch"]},
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
_GATE_ANNOTATIONS = f"['{GATE_ANNOTATION}', '{SLURM_DRAIN_ANNOTATION}', '{DO_NOT_DISRUPT}']"

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
        f"{_TAINTS.format(o='object')}.exists(t, t.key == '{UNHEALTHY_TAINT_KEY}')) || "
        f"(!{_UNSCHED.format(o='object')} && !{_TAINTS.format(o='object')}.exists(t, t.key == '{UNHEALTHY_TAINT_KEY}')"
        f" && {_TAINTS.format(o='oldObject')}.exists(t, t.key == '{UNHEALTHY_TAINT_KEY}'))",
        "message": f"the health gate cordons only a node it taints {UNHEALTHY_TAINT_KEY}, and never uncordons one "
        "still tainted (only a recovered node, as it removes that taint)",
    },
)


def _deny_binding(api: str, policy: str) -> dict[str, Any]:
    """The binding that makes ``policy`` deny what it refuses (ValidatingAdmissionPolicyBinding, validationActions)."""
    return {
        "apiVersion": api,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": {"policyName": policy, "validationActions": ["Deny"]},
    }


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
    return [policy, _deny_binding(api, POLICY)]


BREAKER_POLICY = "ekstrain-health-gate-breaker-only"
_NP_ANN = f"['{BREAKER_ANNOTATION}', '{FAILURES_ANNOTATION}', '{RESUME_ANNOTATION}']"
_LIMITS = "(has({o}.spec.limits) ? {o}.spec.limits : {{}})"
BREAKER_VALIDATIONS: tuple[dict[str, str], ...] = (
    {
        "expression": "object.spec.template == oldObject.spec.template && "
        "has(object.spec.disruption) == has(oldObject.spec.disruption) && "
        "(!has(object.spec.disruption) || object.spec.disruption == oldObject.spec.disruption) && "
        "has(object.spec.weight) == has(oldObject.spec.weight) && "
        "(!has(object.spec.weight) || object.spec.weight == oldObject.spec.weight)",
        "message": "the health gate changes no NodePool template, disruption or weight",
    },
    {
        "expression": f"{_LIMITS.format(o='object')}.all(k, k == 'nodes' || (k in {_LIMITS.format(o='oldObject')} && "
        f"{_LIMITS.format(o='oldObject')}[k] == {_LIMITS.format(o='object')}[k])) && "
        f"{_LIMITS.format(o='oldObject')}.all(k, k == 'nodes' || k in {_LIMITS.format(o='object')})",
        "message": "the health gate changes no NodePool limit but nodes (its breaker's hold)",
    },
    {
        "expression": f"{_ANN.format(o='object')}.all(k, k in {_NP_ANN} || (k in {_ANN.format(o='oldObject')} && "
        f"{_ANN.format(o='oldObject')}[k] == {_ANN.format(o='object')}[k])) && "
        f"{_ANN.format(o='oldObject')}.all(k, k in {_NP_ANN} || k in {_ANN.format(o='object')}) && "
        f"{_LABELS.format(o='object')} == {_LABELS.format(o='oldObject')}",
        "message": f"the health gate changes no NodePool label and no annotation but {BREAKER_ANNOTATION}, "
        f"{FAILURES_ANNOTATION} and {RESUME_ANNOTATION}",
    },
)


def breaker_policy() -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy (+ binding) that keeps the gate's service account, on NodePools, to its breaker:
    ``spec.limits.nodes`` and the breaker's three annotations."""
    api = "admissionregistration.k8s.io/v1"
    policy = {
        "apiVersion": api,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": BREAKER_POLICY, "labels": {"app.kubernetes.io/part-of": "ekstrain"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["karpenter.sh"],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": ["nodepools"],
                    }
                ]
            },
            "matchConditions": [
                {"name": "health-gate-service-account", "expression": f"request.userInfo.username == '{USERNAME}'"}
            ],
            "validations": [{**v, "reason": "Forbidden"} for v in BREAKER_VALIDATIONS],
        },
    }
    return [policy, _deny_binding(api, BREAKER_POLICY)]


def shared_objects() -> list[dict[str, Any]]:
    """What every gate DaemonSet shares: the guard's script, its service account, RBAC and the admission policy."""
    return [
        guard_configmap(),
        service_account(),
        cluster_role(),
        cluster_role_binding(),
        *node_policy(),
        *breaker_policy(),
        network_policy(),
    ]


def gate_objects(pools: Sequence[PartitionSpec]) -> list[dict[str, Any]]:
    """Every accelerator NodePool's DaemonSet, after the shared objects (none without an accelerator pool)."""
    accel = [p for p in pools if p.shape.family in (catalog.GPU, catalog.TRAINIUM)]
    return [*shared_objects(), *(gate_daemonset(p) for p in accel)] if accel else []


EXCLUDED_INTERFACES: tuple[str, ...] = (r"^ibp[0-9]+s[0-9]+f[0-9]+$", r"^ib[0-9]+$")
"""The node monitoring agent's documented false-positive knob: its networking monitor skips ``InterfaceNotUp`` /
``InterfaceNotRunning`` for these host-visible IPoIB interfaces of accelerated instances, "which may legitimately
remain down" (aws/eks-node-monitoring-agent README, "Configuring Monitors", ``excludedInterfaceNameRegexps``, its
example). Without them such an interface sets NetworkingReady=False on a healthy node."""


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
            "monitors": {
                "nvidia": {"enabled": True},
                "neuron": {"enabled": True},
                "networking": {"enabled": True, "excludedInterfaceNameRegexps": list(EXCLUDED_INTERFACES)},
            },
        },
        "dcgmAgent": {
            "tolerations": tol,
            "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        },
    }
