"""Slurm gangs under Volcano: each partition's slurmd pods are admitted all-or-nothing per scale-up (standard library).

The platform ships this file in a ConfigMap and runs ``python3 slurm_gang.py`` in a small Deployment of the ``slurm``
namespace (assembly/schedulers/slurm.py ``gang_objects``). Why: a plain ``schedulerName: volcano`` pod gets a PodGroup
from Volcano's PodGroup controller with ``minMember: 1`` (volcano pkg/controllers/podgroup/pg_controller_handler.go
``buildPodGroupFromPod``: 1 unless the owner is a ReplicaSet/StatefulSet/Job/DaemonSet annotated
``scheduling.volcano.sh/group-min-member``, which a Slinky NodeSet is not), so when KEDA scales a NodeSet by N for a
pending N-node sbatch job, Volcano admits and binds as many slurmd pods as fit and the admitted nodes idle until the
rest fit. The documented way to group pods of another owner is an explicit PodGroup that each pod names with
``scheduling.k8s.io/group-name`` (the controller then creates none: pkg/controllers/podgroup/pg_controller.go
``processNextReq`` skips a pod that has the annotation, "pod ... has created podgroup"); the gang plugin binds a
group's pods only once ``minMember`` of them can run (running ones count), and the capacity plugin enqueues it only
when ``minResources`` fits beside what the queue has allocated (volcano pkg/scheduler/plugins/capacity/capacity.go
``jobEnqueueable``: minReq + allocated + inqueue - elastic <= capability).

A scale-up is seen within ``POLL_SECONDS`` (2 s); in that window Volcano (a session every second) may still bind a few
of the new pods one by one under the old ``minMember``: the gang closes the window to about two scheduler cycles,
it does not remove it.

So every ``POLL_SECONDS`` this loop sets each partition's PodGroup to its NodeSet:

- ``minMember`` = the NodeSet's ``spec.replicas`` (what KEDA asked: the busy nodes + the largest pending job's), so
  the pods added for a job are bound together or not at all;
- ``minResources`` = one slurmd pod's requests x the pods not running yet (the running ones are in the queue's
  allocated already; counting them again would refuse a job the queue has room for).
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
from typing import Any

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
NODESET_PATH = "/apis/slinky.slurm.net/v1beta1/namespaces/{ns}/nodesets/{name}"
PODGROUP_PATH = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups/{name}"
PODS_PATH = "/api/v1/namespaces/{ns}/pods"


# ---- pure decisions (tests/simulate/test_slurm_gangs.py) ------------------------------------------------------------


def _quantity(value: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * units[suffix]
    return float(value)


def _format(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def desired(replicas: int, running: int, per_pod: dict[str, str]) -> dict[str, Any]:
    """The PodGroup spec for a NodeSet of ``replicas`` with ``running`` slurmd pods running."""
    pending = max(0, replicas - running)
    return {
        "minMember": max(1, replicas),
        "minResources": {k: _format(_quantity(v) * pending) for k, v in sorted(per_pod.items())},
    }


def running_pods(pods: list[dict[str, Any]], group: str) -> int:
    """Pods of the group that are Running (their resources are in the queue's allocated)."""
    return sum(
        1
        for p in pods
        if ((p.get("metadata") or {}).get("annotations") or {}).get(GROUP_ANNOTATION) == group
        and (p.get("status") or {}).get("phase") == "Running"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
    )


def patch_for(current: dict[str, Any], want: dict[str, Any]) -> dict[str, Any] | None:
    """The merge patch that makes the PodGroup's spec ``want``, or None when it already is."""
    spec = current.get("spec") or {}
    if spec.get("minMember") == want["minMember"] and (spec.get("minResources") or {}) == want["minResources"]:
        return None
    return {"spec": want}


# ---- the API (the service account's token) -------------------------------------------------------------------


def _request(method: str, path: str, body: Any = None) -> Any:
    base = os.environ.get("API_SERVER") or (
        f"https://{os.environ.get('KUBERNETES_SERVICE_HOST', 'kubernetes.default.svc')}:"
        f"{os.environ.get('KUBERNETES_SERVICE_PORT', '443')}"
    )
    req = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Accept", "application/json")
    if body is not None:
        req.add_header("Content-Type", "application/merge-patch+json")
    ctx = None
    if base.startswith("https://"):
        with open(f"{SA_DIR}/token") as f:
            req.add_header("Authorization", f"Bearer {f.read().strip()}")
        ctx = ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def sync(namespace: str, groups: dict[str, dict[str, Any]]) -> list[str]:
    """One pass: each PodGroup (name -> {"nodeset": ..., "perPod": {...}}) set to its NodeSet. Returns what changed."""
    pods = (_request("GET", PODS_PATH.format(ns=namespace)) or {}).get("items") or []
    changed = []
    for group, spec in sorted(groups.items()):
        nodeset = _request("GET", NODESET_PATH.format(ns=namespace, name=spec["nodeset"]))
        replicas = int((nodeset.get("spec") or {}).get("replicas") or 0)
        want = desired(replicas, running_pods(pods, group), spec["perPod"])
        current = _request("GET", PODGROUP_PATH.format(ns=namespace, name=group))
        patch = patch_for(current, want)
        if patch is not None:
            _request("PATCH", PODGROUP_PATH.format(ns=namespace, name=group), patch)
            changed.append(f"{group}: minMember {want['minMember']}, minResources {want['minResources']}")
    return changed


def main() -> int:
    namespace = os.environ.get("NAMESPACE", "slurm")
    groups = json.loads(os.environ.get("GROUPS", "{}"))
    poll = float(os.environ.get("POLL_SECONDS", "2"))
    once = os.environ.get("ONCE") == "1"
    while True:
        try:
            for line in sync(namespace, groups):
                print(line, flush=True)
        except Exception as exc:  # a failed pass is retried at the next poll; the PodGroups keep their last size
            print(f"sync failed: {exc}", file=sys.stderr, flush=True)
            if once:
                return 1
        if once:
            return 0
        time.sleep(poll)


if __name__ == "__main__":
    sys.exit(main())
