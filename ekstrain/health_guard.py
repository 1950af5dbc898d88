"""The health gate's guard: the last container of each accelerator node's pre-flight pod (standard library only).

The platform ships this file in a ConfigMap (``ekstrain.health_gate.guard_configmap``) and runs
``python3 health_guard.py`` in the gate's DaemonSet (``ekstrain.health_gate.gate_daemonset``). The init containers
before it ran the checks (DCGM diagnostics or the Neuron checks, the device and EFA counts, the single-node
collective) and each wrote one file in ``RESULTS_DIR``: ``ok`` or the reason it failed. The guard then:

1. **Pre-flight verdict.** Every check passed: it removes the Karpenter startup taint from its node, and the node
   takes work. One failed: it adds the NoExecute taint ``UNHEALTHY_TAINT_KEY`` (the startup taint stays, so no job
   ever lands), records the reason in the annotation ``GATE_ANNOTATION``, waits ``HOLD_SECONDS`` (logs can be
   collected) and deletes its node: Karpenter's termination finalizer drains it and terminates the instance, and
   its pending pods get a new node.
2. **Continuous health.** Every ``POLL_SECONDS`` it reads its node: a condition in ``LEAVE_CONDITIONS`` that the
   EKS node monitoring agent set False (XID, ECC, NVLink, Neuron, DCGM faults set ``AcceleratedHardwareReady``),
   or fewer EFA devices than the instance type's layout (``EXPECTED_EFA``), adds the NoExecute taint at once:
   training pods (which do not tolerate it) leave now instead of when Karpenter's NodeRepair replaces the node
   (10 minutes later for AcceleratedHardwareReady), and their restart lands elsewhere. An EFA loss has no agent
   condition NodeRepair acts on, so the guard deletes its node after ``HOLD_SECONDS`` as in 1; it keeps the node
   condition ``EFA_CONDITION`` (True/False) for alerts.

It may change only its own node: the ValidatingAdmissionPolicy ``ekstrain.health_gate.node_policy`` compares the
node's name with the service account token's node claim and allows only the gate's taints and annotation.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


STARTUP_TAINT_KEY = env("STARTUP_TAINT_KEY", "ekstrain.io/health-gate")
UNHEALTHY_TAINT_KEY = env("UNHEALTHY_TAINT_KEY", "ekstrain.io/unhealthy")
GATE_ANNOTATION = env("GATE_ANNOTATION", "ekstrain.io/health-gate")
SLURM_DRAIN_ANNOTATION = env("SLURM_DRAIN_ANNOTATION", "nodeset.slinky.slurm.net/node-cordon-reason")
EFA_CONDITION = env("EFA_CONDITION", "EFADevicesReady")


# ---- pure decisions (tests/test_health_gate.py) ----------------------------------------------------------


def verdict(results: dict[str, str]) -> list[str]:
    """The failed checks' reasons (empty when every check wrote ``ok``)."""
    return [f"{name}: {text.strip() or 'no result'}" for name, text in sorted(results.items()) if text.strip() != "ok"]


def taints_passed(taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The node's taints without the startup taint."""
    return [t for t in taints if t.get("key") != STARTUP_TAINT_KEY]


def taints_unhealthy(taints: list[dict[str, Any]], value: str) -> list[dict[str, Any]]:
    """The node's taints plus the NoExecute taint (the startup taint, when still there, stays)."""
    if any(t.get("key") == UNHEALTHY_TAINT_KEY for t in taints):
        return list(taints)
    return [*taints, {"key": UNHEALTHY_TAINT_KEY, "value": value, "effect": "NoExecute"}]


def leave_reason(node: dict[str, Any], conditions: list[str], efa_found: int | None, efa_expected: int) -> str:
    """Why training must leave this node now ("" when it need not)."""
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") in conditions and c.get("status") == "False":
            return f"{c['type']}=False ({c.get('reason', '')}: {c.get('message', '')})"[:500]
    if efa_expected and efa_found is not None and efa_found < efa_expected:
        return f"{efa_found} EFA devices, the instance type's layout has {efa_expected}"
    return ""


def efa_condition(node: dict[str, Any], found: int | None, expected: int) -> dict[str, str] | None:
    """The node condition ``EFA_CONDITION`` to write, or None when the node already says so (no churn): the EFA
    signal as a node condition (the agent reports EFA errors only as Events), which kube-state-metrics exports
    (``kube_node_status_condition``) for alerts."""
    if not expected or found is None:
        return None
    ok = found >= expected
    status = "True" if ok else "False"
    conditions: list[dict[str, Any]] = (node.get("status") or {}).get("conditions") or []
    current: dict[str, Any] = next((c for c in conditions if c.get("type") == EFA_CONDITION), {})
    if current.get("status") == status:
        return None
    return {
        "type": EFA_CONDITION,
        "status": status,
        "reason": "EFADevicesPresent" if ok else "EFADevicesMissing",
        "message": f"{found} of the instance type's {expected} EFA devices",
        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def set_condition(name: str, condition: dict[str, str]) -> None:
    """Strategic merge on ``status.conditions`` (merge key ``type``): only this condition is written."""
    body = {"status": {"conditions": [condition]}}
    _request("PATCH", f"/api/v1/nodes/{name}/status", body, "application/strategic-merge-patch+json")


def efa_devices(root: str) -> int | None:
    """EFA devices the node shows (``/sys/class/infiniband`` entries), None where it cannot be read."""
    try:
        return len([d for d in os.listdir(root) if not d.startswith(".")])
    except OSError:
        return None


# ---- the API server, as the pod's service account --------------------------------------------------------


def _request(method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
    host = env("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc")
    port = env("KUBERNETES_SERVICE_PORT", "443")
    with open(f"{SA_DIR}/token") as f:
        token = f.read().strip()
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"https://{host}:{port}{path}", data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", content_type)
    ctx = ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt")
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        text = resp.read()
    return json.loads(text) if text else None


def get_node(name: str) -> dict[str, Any]:
    node: dict[str, Any] = _request("GET", f"/api/v1/nodes/{name}")
    return node


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def set_taints(
    node: dict[str, Any], taints: list[dict[str, Any]], note: str | None = None, cordon: bool = False
) -> None:
    """JSON patch guarded by the resourceVersion read (a conflict re-reads the node next round). ``cordon``: also
    ``spec.unschedulable`` with the reason in Slinky's drain-reason annotation, so the slurm-operator drains the
    node's Slurm node (slurm-operator v1.2.1 internal/controller/nodeset/nodeset_sync.go ``syncCordon``)."""
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
        {"op": "add", "path": "/spec/taints", "value": taints},
    ]
    if note is not None:
        if not (node["metadata"].get("annotations")):
            patch.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        patch.append({"op": "add", "path": f"/metadata/annotations/{_pointer(GATE_ANNOTATION)}", "value": note[:1000]})
        if cordon:
            reason = "ekstrain health gate: " + note[:200]
            patch.append(
                {"op": "add", "path": f"/metadata/annotations/{_pointer(SLURM_DRAIN_ANNOTATION)}", "value": reason}
            )
    if cordon:
        patch.append({"op": "add", "path": "/spec/unschedulable", "value": True})
    _request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", patch, "application/json-patch+json")


def delete_node(name: str) -> None:
    _request("DELETE", f"/api/v1/nodes/{name}")


def alive() -> None:
    """Touch the file the container's liveness and readiness probes read (``ALIVE_FILE``)."""
    path = env("ALIVE_FILE")
    if path:
        try:
            with open(path, "w") as f:
                f.write(str(time.time()))
        except OSError:
            pass


def hold(seconds: int) -> None:
    """Sleep while staying alive for the probes."""
    end = time.time() + seconds
    while time.time() < end:
        alive()
        time.sleep(min(15, max(0.0, end - time.time())))


def _retry(step: Any) -> None:
    for attempt in range(10):
        try:
            step()
            return
        except (urllib.error.URLError, OSError) as exc:
            print(f"health-guard: {exc}; retrying", flush=True)
            time.sleep(min(30, 2**attempt))
    raise SystemExit("health-guard: the API server kept refusing; the pod restarts")


def _mark_unhealthy(name: str, why: str) -> None:
    def step() -> None:
        node = get_node(name)
        set_taints(node, taints_unhealthy(node["spec"].get("taints") or [], "true"), why, cordon=True)

    _retry(step)
    print(f"health-guard: {name} unhealthy: {why}", flush=True)


def main() -> int:
    name = env("NODE_NAME")
    results_dir = env("RESULTS_DIR", "/results")
    checks = [c for c in env("CHECKS").split(",") if c]
    conditions = [c for c in env("LEAVE_CONDITIONS", "AcceleratedHardwareReady").split(",") if c]
    efa_expected = int(env("EXPECTED_EFA", "0") or 0)
    efa_root = env("EFA_SYSFS", "/host/sys/class/infiniband")
    hold_seconds, poll = int(env("HOLD_SECONDS", "600")), int(env("POLL_SECONDS", "15"))
    alive()
    node = get_node(name)
    if any(t.get("key") == STARTUP_TAINT_KEY for t in node["spec"].get("taints") or []):
        results = {}
        for check in checks:
            try:
                with open(os.path.join(results_dir, check)) as f:
                    results[check] = f.read()
            except OSError:
                results[check] = "wrote no result"
        failed = verdict(results)
        if failed:
            _mark_unhealthy(name, "pre-flight failed: " + "; ".join(failed))
            hold(hold_seconds)
            _retry(lambda: delete_node(name))
            return 0

        def passed() -> None:
            node = get_node(name)
            set_taints(node, taints_passed(node["spec"].get("taints") or []), "pre-flight passed: " + ", ".join(checks))

        _retry(passed)
        print(f"health-guard: {name} passed its pre-flight ({', '.join(checks)}): startup taint removed", flush=True)
    while True:
        hold(poll)
        try:
            node = get_node(name)
        except (urllib.error.URLError, OSError) as exc:
            print(f"health-guard: {exc}", flush=True)
            continue
        if any(t.get("key") == UNHEALTHY_TAINT_KEY for t in node["spec"].get("taints") or []):
            continue
        found = efa_devices(efa_root) if efa_expected else None
        cond = efa_condition(node, found, efa_expected)
        if cond is not None:
            try:
                set_condition(name, cond)
            except (urllib.error.URLError, OSError) as exc:
                print(f"health-guard: {exc}", flush=True)
        why = leave_reason(node, conditions, found, efa_expected)
        if why:
            _mark_unhealthy(name, why)
            if why.split("=")[0] not in conditions:  # no agent condition for NodeRepair: replace it ourselves
                hold(hold_seconds)
                _retry(lambda: delete_node(name))
                return 0


if __name__ == "__main__":
    sys.exit(main())
