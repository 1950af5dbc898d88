"""The health gate's guard: a native sidecar of each accelerator node's pre-flight pod (standard library only).

The platform ships this file in a ConfigMap (``ekstrain.payloads.health_gate.guard_configmap``) and runs
``python3 health_guard.py`` as the first init container, ``restartPolicy: Always``, of the gate's DaemonSet
(``ekstrain.payloads.health_gate.gate_daemonset``): it starts before the checks and runs beside them. Each check (DCGM
diagnostics or the Neuron checks, the device, NVLink/NeuronLink and EFA counts, the single-node collective and its
bus-bandwidth floor), every step under a ``timeout``, writes one file in ``RESULTS_DIR``: ``ok`` or the reason it
failed. The guard then:

1. **Pre-flight verdict, by a deadline.** Every check passed: it removes the Karpenter startup taint from its node,
   and the node takes work. One failed, or ``DEADLINE_SECONDS`` after the node registered some check has still
   written nothing (hung, crash-looping, its image never pulled): it adds the NoExecute taint ``UNHEALTHY_TAINT_KEY``
   (the startup taint stays, so no job ever lands), records the reason and time in ``GATE_ANNOTATION``, counts the
   failure on its NodePool (the breaker, 2), waits ``HOLD_SECONDS`` (logs can be collected) and deletes its node:
   Karpenter's termination finalizer drains it and terminates the instance, and its pending pods get a new node.
2. **A breaker per NodePool.** ``BREAKER_FAILURES`` gate failures within ``BREAKER_WINDOW_SECONDS`` (their times
   in the NodePool's ``FAILURES_ANNOTATION``) trip it: the guard sets the NodePool's ``spec.limits.nodes`` to
   ``HELD_LIMIT`` (Karpenter launches nothing past a limit), says why in ``BREAKER_ANNOTATION`` and leaves the merge
   patch that resumes the pool in ``RESUME_ANNOTATION``. While the pool is held no guard deletes its failed node:
   it keeps it (``karpenter.sh/do-not-disrupt``) for the operator, and deletes it once the pool is resumed.
3. **Continuous health, with hysteresis.** Every ``POLL_SECONDS`` it reads its node: a condition in
   ``LEAVE_CONDITIONS`` that the EKS node monitoring agent set False and that stayed False for its ``LEAVE_AFTER``
   seconds (its ``lastTransitionTime``), or fewer EFA devices than the layout for ``EFA_LEAVE_SECONDS``, adds the
   NoExecute taint: training pods leave before NodeRepair replaces the node, and their restart lands elsewhere; a
   shorter flap restarts nothing. A node it took out for a condition whose leave conditions have all been True
   for ``RECOVER_SECONDS`` gets the taint and the cordon removed. An EFA loss has no agent condition NodeRepair
   acts on, so the guard deletes that node after ``HOLD_SECONDS`` as in 1; it keeps the node condition
   ``EFA_CONDITION`` (True/False) for alerts.

It may change only its own node, and on NodePools only the breaker's fields: the ValidatingAdmissionPolicies of
``ekstrain.payloads.health_gate`` (``node_policy``, ``breaker_policy``).
"""

from __future__ import annotations

import calendar
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

SA_DIR = os.environ.get("SA_DIR", "/var/run/secrets/kubernetes.io/serviceaccount")


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


STARTUP_TAINT_KEY = env("STARTUP_TAINT_KEY", "ekstrain.io/health-gate")
UNHEALTHY_TAINT_KEY = env("UNHEALTHY_TAINT_KEY", "ekstrain.io/unhealthy")
GATE_ANNOTATION = env("GATE_ANNOTATION", "ekstrain.io/health-gate")
SLURM_DRAIN_ANNOTATION = env("SLURM_DRAIN_ANNOTATION", "nodeset.slinky.slurm.net/node-cordon-reason")
EFA_CONDITION = env("EFA_CONDITION", "EFADevicesReady")
BREAKER_ANNOTATION = env("BREAKER_ANNOTATION", "ekstrain.io/breaker")
FAILURES_ANNOTATION = env("FAILURES_ANNOTATION", "ekstrain.io/gate-failures")
RESUME_ANNOTATION = env("RESUME_ANNOTATION", "ekstrain.io/breaker-resume")
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
BREAKER_VALUE = env("BREAKER_VALUE", "breaker")
FAILED = "pre-flight failed"
LEFT = "left service"


# ---- pure decisions (tests/components/test_health_gate.py) ----------------------------------------------------------


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


def parse_time(text: str | None) -> float | None:
    """An RFC 3339 time of the API (``2026-12-06T02:19:58Z``) in epoch seconds, None when absent or unreadable."""
    if not text:
        return None
    try:
        return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))
    except ValueError:
        return None


def leave_reason(
    node: dict[str, Any],
    conditions: list[str],
    efa_found: int | None,
    efa_expected: int,
    now: float | None = None,
    after: dict[str, int] | None = None,
) -> str:
    """Why training must leave this node now ("" when it need not). With ``after`` (condition -> seconds) a
    condition counts once it has been False that long (its ``lastTransitionTime``; a missing time counts from
    now, so it waits): the hysteresis against a flapping condition."""
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") in conditions and c.get("status") == "False":
            if after is not None and now is not None:
                since = parse_time(c.get("lastTransitionTime"))
                wait = after.get(str(c["type"]), 0)
                if since is None or now - since < wait:
                    continue
            return f"{c['type']}=False ({c.get('reason', '')}: {c.get('message', '')})"[:500]
    if efa_expected and efa_found is not None and efa_found < efa_expected:
        return f"{efa_found} EFA devices, the instance type's layout has {efa_expected}"
    return ""


def recovered(node: dict[str, Any], conditions: list[str], now: float, stable: int) -> bool:
    """Every leave condition the node reports is True, and has been for ``stable`` seconds."""
    seen = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") in conditions]
    for c in seen:
        since = parse_time(c.get("lastTransitionTime"))
        if c.get("status") != "True" or since is None or now - since < stable:
            return False
    return True


def read_results(results_dir: str, checks: list[str]) -> dict[str, str | None]:
    """Each check's result file (None: not written yet)."""
    out: dict[str, str | None] = {}
    for check in checks:
        try:
            with open(os.path.join(results_dir, check)) as f:
                out[check] = f.read()
        except OSError:
            out[check] = None
    return out


def preflight(node: dict[str, Any], results: dict[str, str | None], now: float, deadline: int) -> tuple[str, str]:
    """(``pass`` | ``fail`` | ``wait``, why): every result in -> the verdict; some missing past the deadline (from
    the node's registration) -> a failure naming them; else wait."""
    missing = sorted(k for k, v in results.items() if v is None)
    if not missing:
        failed = verdict({k: v or "" for k, v in results.items()})
        return ("fail", "; ".join(failed)) if failed else ("pass", "")
    created = parse_time((node.get("metadata") or {}).get("creationTimestamp"))
    if deadline and created is not None and now - created >= deadline:
        return (
            "fail",
            f"no result from {', '.join(missing)} {deadline} s after the node registered (a check hung, "
            "crash-looped or its image was never pulled)",
        )
    return "wait", ""


# ---- the breaker, on the NodePool -------------------------------------------------------------------------


def failure_times(pool: dict[str, Any]) -> list[float]:
    text = ((pool.get("metadata") or {}).get("annotations") or {}).get(FAILURES_ANNOTATION, "")
    return [float(t) for t in text.split(",") if re.fullmatch(r"\d+(\.\d+)?", t)]


def held(pool: dict[str, Any]) -> bool:
    return BREAKER_ANNOTATION in ((pool.get("metadata") or {}).get("annotations") or {})


def breaker_patch(
    pool: dict[str, Any], now: float, why: str, failures: int, window: int, held_limit: str
) -> tuple[dict[str, Any], bool]:
    """The merge patch that counts one more gate failure on the pool (guarded by its resourceVersion), and whether
    it trips the breaker: then it also holds the pool (``spec.limits.nodes``) and leaves the resume patch."""
    meta = pool.get("metadata") or {}
    recent = [t for t in failure_times(pool) if now - t < window] + [now]
    annotations: dict[str, Any] = {FAILURES_ANNOTATION: ",".join(str(int(t)) for t in recent)}
    patch: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": annotations}}
    tripped = len(recent) >= failures
    if tripped:
        limit = ((pool.get("spec") or {}).get("limits") or {}).get("nodes")
        resume = {
            "spec": {"limits": {"nodes": limit}},
            "metadata": {"annotations": {BREAKER_ANNOTATION: None, FAILURES_ANNOTATION: None, RESUME_ANNOTATION: None}},
        }
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))
        annotations[BREAKER_ANNOTATION] = (
            f"held since {stamp}: {len(recent)} gate failures in {window // 60} min; last: {why}"
        )[:1000]
        annotations[RESUME_ANNOTATION] = json.dumps(resume, sort_keys=True)
        patch["spec"] = {"limits": {"nodes": held_limit}}
    return patch, tripped


def failed_at(node: dict[str, Any]) -> float | None:
    """When the guard failed this node (``pre-flight failed at <epoch>:`` in its annotation)."""
    note = ((node.get("metadata") or {}).get("annotations") or {}).get(GATE_ANNOTATION, "")
    m = re.match(FAILED + r" at (\d+)", note)
    return float(m.group(1)) if m else None


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
    base = env("KUBE_API_URL") or f"https://{host}:{port}"  # KUBE_API_URL: the tests' stand-in API server
    with open(f"{SA_DIR}/token") as f:
        token = f.read().strip()
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{base}{path}", data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", content_type)
    ctx = ssl.create_default_context(cafile=f"{SA_DIR}/ca.crt") if base.startswith("https:") else None
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


def annotate(node: dict[str, Any], key: str, value: str) -> None:
    """One annotation on the node (JSON patch guarded by its resourceVersion)."""
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
    ]
    if not node["metadata"].get("annotations"):
        patch.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    patch.append({"op": "add", "path": f"/metadata/annotations/{_pointer(key)}", "value": value})
    _request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", patch, "application/json-patch+json")


def keep(node: dict[str, Any]) -> None:
    """A failed node its held pool keeps: not disrupted by Karpenter (``karpenter.sh/do-not-disrupt``), and its
    unhealthy taint's value ``BREAKER_VALUE``, which kube-state-metrics exports (``kube_node_spec_taint``) for the
    breaker's critical alert."""
    taints = [
        {**t, "value": BREAKER_VALUE} if t.get("key") == UNHEALTHY_TAINT_KEY else t
        for t in node["spec"].get("taints") or []
    ]
    set_taints(node, taints)
    annotate(get_node(node["metadata"]["name"]), DO_NOT_DISRUPT, "true")


def return_to_service(node: dict[str, Any], note: str) -> None:
    """The unhealthy taint and the cordon off, Slinky's drain reason removed (the slurm-operator undrains)."""
    taints = [t for t in node["spec"].get("taints") or [] if t.get("key") != UNHEALTHY_TAINT_KEY]
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": node["metadata"]["resourceVersion"]},
        {"op": "add", "path": "/spec/taints", "value": taints},
        {"op": "add", "path": "/spec/unschedulable", "value": False},
        {"op": "add", "path": f"/metadata/annotations/{_pointer(GATE_ANNOTATION)}", "value": note[:1000]},
    ]
    if SLURM_DRAIN_ANNOTATION in (node["metadata"].get("annotations") or {}):
        patch.append({"op": "remove", "path": f"/metadata/annotations/{_pointer(SLURM_DRAIN_ANNOTATION)}"})
    _request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", patch, "application/json-patch+json")


def delete_node(name: str) -> None:
    _request("DELETE", f"/api/v1/nodes/{name}")


def get_pool(name: str) -> dict[str, Any]:
    """The NodePool (an empty one when it is gone: no breaker to count on)."""
    try:
        pool: dict[str, Any] = _request("GET", f"/apis/karpenter.sh/v1/nodepools/{name}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return {}
        raise
    return pool


def patch_pool(name: str, patch: dict[str, Any]) -> None:
    _request("PATCH", f"/apis/karpenter.sh/v1/nodepools/{name}", patch, "application/merge-patch+json")


def alive() -> None:
    """Touch the file the container's liveness and readiness probes read (``ALIVE_FILE``)."""
    path = env("ALIVE_FILE")
    if path:
        try:
            with open(path, "w") as f:
                f.write(str(time.time()))
        except OSError:
            pass


def hold(seconds: float) -> None:
    """Sleep while staying alive for the probes."""
    end = time.time() + seconds
    while True:
        alive()
        left = end - time.time()
        if left <= 0:
            return
        time.sleep(min(15.0, left))


def _retry(step: Any) -> Any:
    for attempt in range(10):
        try:
            return step()
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


def pool_of(node: dict[str, Any]) -> str:
    return ((node.get("metadata") or {}).get("labels") or {}).get(env("NODEPOOL_LABEL", "karpenter.sh/nodepool"), "")


def count_failure(pool: str, why: str, now: float) -> bool:
    """One gate failure on the pool's breaker; True when the pool is (now) held."""
    if not pool:
        return False
    failures, window = int(env("BREAKER_FAILURES", "3")), int(env("BREAKER_WINDOW_SECONDS", "3600"))

    def step() -> bool:
        for _ in range(10):
            current = get_pool(pool)
            if not current:
                return False
            if held(current):
                return True
            patch, tripped = breaker_patch(current, now, why, failures, window, env("HELD_LIMIT", "0"))
            try:
                patch_pool(pool, patch)
            except urllib.error.HTTPError as exc:
                if exc.code == 409:  # another guard counted at the same time: read again
                    continue
                raise
            if tripped:
                print(f"health-guard: NodePool {pool} held: {failures} gate failures in {window} s", flush=True)
            return tripped
        return False

    return bool(_retry(step))


def fail_node(name: str, why: str) -> int:
    """A failed pre-flight: taint, count it on the pool's breaker, hold, and delete the node unless its pool is held
    (then keep it, not disrupted, until the pool is resumed). Resumes where it was after a restart."""
    node = _retry(lambda: get_node(name))
    when = failed_at(node)
    if when is None or not any(t.get("key") == UNHEALTHY_TAINT_KEY for t in node["spec"].get("taints") or []):
        when = time.time()
        _mark_unhealthy(name, f"{FAILED} at {int(when)}: {why}")
        count_failure(pool_of(node), why, when)
    hold_seconds, poll = int(env("HOLD_SECONDS", "600")), float(env("POLL_SECONDS", "15"))
    hold(max(0.0, when + hold_seconds - time.time()))
    kept = False
    while True:
        node = _retry(lambda: get_node(name))
        pool = pool_of(node)
        if not pool or not held(_retry(lambda p=pool: get_pool(p))):
            _retry(lambda: delete_node(name))
            print(f"health-guard: {name} deleted ({why})", flush=True)
            return 0
        if not kept:  # the breaker holds the pool: no recycle; the node stays for the operator
            _retry(lambda: keep(get_node(name)))
            print(f"health-guard: {name} kept: NodePool {pool} is held by its breaker", flush=True)
            kept = True
        hold(poll)


def main() -> int:
    name = env("NODE_NAME")
    results_dir = env("RESULTS_DIR", "/results")
    checks = [c for c in env("CHECKS").split(",") if c]
    conditions = [c for c in env("LEAVE_CONDITIONS", "AcceleratedHardwareReady").split(",") if c]
    after = {k: int(v) for k, _, v in (x.partition("=") for x in env("LEAVE_AFTER").split(",") if x)}
    efa_expected = int(env("EXPECTED_EFA", "0") or 0)
    efa_root = env("EFA_SYSFS", "/host/sys/class/infiniband")
    hold_seconds, poll = int(env("HOLD_SECONDS", "600")), float(env("POLL_SECONDS", "15"))
    deadline, result_poll = int(env("DEADLINE_SECONDS", "0")), float(env("RESULT_POLL_SECONDS", "5"))
    efa_after, stable = int(env("EFA_LEAVE_SECONDS", "60")), int(env("RECOVER_SECONDS", "600"))
    alive()
    node = _retry(lambda: get_node(name))
    taints = node["spec"].get("taints") or []
    if any(t.get("key") == STARTUP_TAINT_KEY for t in taints):
        if any(t.get("key") == UNHEALTHY_TAINT_KEY for t in taints):
            return fail_node(name, "failed before this guard restarted")  # resume the hold
        while True:
            state, why = preflight(node, read_results(results_dir, checks), time.time(), deadline)
            if state == "fail":
                return fail_node(name, why)
            if state == "pass":
                break
            hold(result_poll)
            node = _retry(lambda: get_node(name))

        def passed() -> None:
            node = get_node(name)
            set_taints(node, taints_passed(node["spec"].get("taints") or []), "pre-flight passed: " + ", ".join(checks))

        _retry(passed)
        print(f"health-guard: {name} passed its pre-flight ({', '.join(checks)}): startup taint removed", flush=True)
    efa_low_since: float | None = None
    while True:
        hold(poll)
        try:
            node = get_node(name)
        except (urllib.error.URLError, OSError) as exc:
            print(f"health-guard: {exc}", flush=True)
            continue
        now = time.time()
        note = (node["metadata"].get("annotations") or {}).get(GATE_ANNOTATION, "")
        if any(t.get("key") == UNHEALTHY_TAINT_KEY for t in node["spec"].get("taints") or []):
            # Only a node out for an agent condition comes back (a failed pre-flight or a lost EFA device is deleted).
            by_condition = any(note.startswith(f"{LEFT}: {c}=False") for c in conditions)
            if by_condition and recovered(node, conditions, now, stable):
                try:
                    return_to_service(node, f"returned to service: {', '.join(conditions)} True for {stable} s")
                    print(f"health-guard: {name} returned to service", flush=True)
                except (urllib.error.URLError, OSError) as exc:
                    print(f"health-guard: {exc}", flush=True)
            continue
        found = efa_devices(efa_root) if efa_expected else None
        cond = efa_condition(node, found, efa_expected)
        if cond is not None:
            try:
                set_condition(name, cond)
            except (urllib.error.URLError, OSError) as exc:
                print(f"health-guard: {exc}", flush=True)
        low = bool(efa_expected and found is not None and found < efa_expected)
        efa_low_since = (efa_low_since or now) if low else None
        efa_found = found if low and efa_low_since is not None and now - efa_low_since >= efa_after else None
        why = leave_reason(node, conditions, efa_found, efa_expected, now, after)
        if why:
            _mark_unhealthy(name, f"{LEFT}: {why}")
            if why.split("=")[0] not in conditions:  # no agent condition for NodeRepair: replace it ourselves
                hold(hold_seconds)
                _retry(lambda: delete_node(name))
                return 0


if __name__ == "__main__":
    sys.exit(main())
