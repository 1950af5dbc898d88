"""The health gate's loops run for real: the check scripts the DaemonSet ships, executed by bash against stand-in
``dcgmi``, ``nvidia-smi``, ``fi_info``, ``all_reduce_perf``, ``nccom-test`` and ``neuron-ls`` (small shell scripts on
PATH) that succeed, fail, hang or ignore SIGTERM; and the guard (the file its ConfigMap ships) as a process against
a stand-in API server, with short timeouts from the environment. Each hang must be cut at its timeout and counted a
failure; a pool whose nodes keep failing must be held, not recycled; a flapping condition must not take the node out.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ekstrain.agents import health_guard
from ekstrain.facts import catalog, names
from ekstrain.payloads import health_gate

P5 = catalog.get("p5.48xlarge")
TRN1 = catalog.get("trn1.32xlarge")
BIN = "/usr/bin:/bin"

# ---- stand-in tools --------------------------------------------------------------------------------------

HANG = "exec sleep 1000\n"
IGNORES_TERM = "trap '' TERM\nsleep 1000 &\nwait\nwait\n"


def _nvidia_smi(gpus: int = 8, links: int = 8, inactive: int = 0) -> str:
    lines = "".join(f"echo 'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})'\n" for i in range(gpus))
    link = "".join(f"echo '\t Link {i}: 26.562 GB/s'\n" for i in range(links))
    dead = "".join(f"echo '\t Link {i}: <inactive>'\n" for i in range(inactive))
    return (
        'case "$*" in\n'
        "  *query-compute-apps*) exit 0 ;;\n"
        f"  -L) {lines.replace(chr(10), '; ')} ;;\n"
        f"  *nvlink*) {(link + dead).replace(chr(10), '; ')} ;;\n"
        "esac\n"
    )


def _all_reduce(busbw: float = 480.0, wrong: int = 0) -> str:
    return (
        f"echo '  1073741824     268435456     float     sum      -1   4402.1  243.92  {busbw:.2f}      {wrong}'\n"
        f"echo '# Out of bounds values : {wrong} {'OK' if not wrong else 'FAILED'}'\n"
    )


def _neuron_ls(devices: int = 16, linked: int = 16) -> str:
    devs = [{"neuron_device": i, "connected_to": [(i + 1) % devices] if i < linked else []} for i in range(devices)]
    return f"echo '{json.dumps(devs)}'\n"


def _tools(tmp: pathlib.Path, **scripts: str) -> pathlib.Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        f = bin_dir / name.replace("_", "-") if name in ("nvidia_smi", "neuron_ls", "nccom_test") else bin_dir / name
        f.write_text("#!/bin/bash\n" + body)
        f.chmod(0o755)
    return bin_dir


def _efa(tmp: pathlib.Path, count: int) -> pathlib.Path:
    root = tmp / "infiniband"
    root.mkdir(exist_ok=True)
    for i in range(count):
        (root / f"rdmap{i}s0").mkdir()
    return root


def _run_check(
    script: str, tmp: pathlib.Path, bin_dir: pathlib.Path, timeout: int = 2, kill_after: int = 1, **paths: str
) -> tuple[str, float]:
    """The check script as the container runs it (paths moved into tmp); its result and how long it took."""
    results = tmp / "results"
    results.mkdir(exist_ok=True)
    for old, new in {"/results": str(results), "sleep 5": "true", **paths}.items():
        script = script.replace(old, new)
    env = {"PATH": f"{bin_dir}:{BIN}", "CHECK_TIMEOUT": str(timeout), "CHECK_KILL_AFTER": str(kill_after)}
    start = time.monotonic()
    rc = subprocess.run(["bash", "-c", script], env=env, check=False, timeout=60).returncode
    took = time.monotonic() - start
    assert rc == 0  # the container always exits 0: the guard decides
    check = "dcgm" if "/dcgm" in script else "devices"
    return (results / check).read_text().strip(), took


def _gpu(tmp: pathlib.Path, **tools: str) -> tuple[str, float]:
    defaults = {"nvidia_smi": _nvidia_smi(), "fi_info": "exit 0\n", "all_reduce_perf": _all_reduce()}
    bin_dir = _tools(tmp, **{**defaults, **tools})
    efa = _efa(tmp, 32)
    script = health_gate.gpu_devices_script(P5, 32)
    return _run_check(
        script,
        tmp,
        bin_dir,
        **{"/host/sys/class/infiniband": str(efa), "/opt/nccl-tests/build/all_reduce_perf": "all_reduce_perf"},
    )


def _neuron(tmp: pathlib.Path, ecc: str | None = "0", **tools: str) -> tuple[str, float]:
    defaults = {"neuron_ls": _neuron_ls(), "fi_info": "exit 0\n", "nccom_test": "echo ok\n"}
    bin_dir = _tools(tmp, **{**defaults, **tools})
    efa = _efa(tmp, 8)
    sysfs = tmp / "neuron_device"
    if ecc is not None:
        hw = sysfs / "neuron0" / "stats" / "hardware"
        hw.mkdir(parents=True)
        (hw / "mem_ecc_uncorrected").write_text(ecc + "\n")
    return _run_check(
        health_gate.neuron_devices_script(TRN1, 8),
        tmp,
        bin_dir,
        **{"/host/sys/class/infiniband": str(efa), "/sys/devices/virtual/neuron_device": str(sysfs)},
    )


# ---- the GPU checks --------------------------------------------------------------------------------------


def test_a_healthy_p5_passes_every_gpu_check(tmp_path: pathlib.Path) -> None:
    assert _gpu(tmp_path)[0] == "ok"


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        ({"nvidia_smi": _nvidia_smi(gpus=7)}, "expected 8 GPUs (p5.48xlarge), found 7"),
        ({"nvidia_smi": _nvidia_smi(links=6, inactive=2)}, "NVLink: 2 inactive links, 6 active on 8 GPUs"),
        ({"fi_info": "exit 1\n"}, "libfabric has no EFA provider (fi_info -p efa)"),
        ({"all_reduce_perf": "exit 3\n"}, "all_reduce_perf failed"),
        ({"all_reduce_perf": _all_reduce(wrong=4)}, "all-reduce: wrong results"),
        (
            {"all_reduce_perf": _all_reduce(busbw=301.5)},
            "all-reduce bus bandwidth 301.50 GB/s at 1 GiB, below the floor 400 GB/s (p5.48xlarge)",
        ),
        ({"all_reduce_perf": "kill -SEGV $$\n"}, "all_reduce_perf failed"),  # the collective crashes
    ],
)
def test_each_gpu_fault_fails_the_check_with_its_reason(
    tools: dict[str, str], says: str, tmp_path: pathlib.Path
) -> None:
    assert _gpu(tmp_path, **tools)[0] == says


@pytest.mark.parametrize(
    ("tool", "says"),
    [
        ("all_reduce_perf", "all_reduce_perf timed out after 2 s (hung)"),
        ("fi_info", "fi_info timed out after 2 s (hung)"),
    ],
)
def test_a_hung_gpu_step_is_cut_at_its_timeout_and_fails(tool: str, says: str, tmp_path: pathlib.Path) -> None:
    """GIVEN a step that never returns WHEN the check runs with 2 s timeouts THEN it stops after about 2 s (not the
    1000 s the stand-in sleeps) and the result names the step and its timeout."""
    result, took = _gpu(tmp_path, **{tool: HANG})
    assert result == says
    assert 1.5 < took < 8


def test_a_step_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: pathlib.Path) -> None:
    result, took = _gpu(tmp_path, all_reduce_perf=IGNORES_TERM)
    assert result == "all_reduce_perf timed out after 2 s (hung)"
    assert 2.5 < took < 10  # 2 s timeout + 1 s kill-after


def test_a_hung_nvidia_smi_count_is_a_failure_not_a_pass(tmp_path: pathlib.Path) -> None:
    """The count runs inside $(...): its timeout must still end as the result (never overwritten by ok)."""
    result, took = _gpu(tmp_path, nvidia_smi='case "$*" in *query-compute-apps*) exit 0 ;; esac\n' + HANG)
    assert result == "nvidia-smi timed out after 2 s (hung)"
    assert took < 10


@pytest.mark.parametrize(
    ("dcgmi", "result"),
    [
        ("echo 'Memory test: Pass'\nexit 0\n", "ok"),
        ("echo 'Memory test: Fail'\nexit 1\n", "dcgmi diag -r 2 failed: Memory test: Fail"),
        (HANG, "dcgmi timed out after 2 s (hung)"),
    ],
)
def test_dcgm_diagnostics_pass_fail_or_hang(dcgmi: str, result: str, tmp_path: pathlib.Path) -> None:
    bin_dir = _tools(tmp_path, nvidia_smi=_nvidia_smi(), dcgmi=dcgmi, **{"nv-hostengine": "exit 0\n"})
    got, took = _run_check(health_gate.dcgm_script(), tmp_path, bin_dir)
    assert got == result and took < 10
    assert "--timeout 900" in health_gate.dcgm_script()  # dcgmi's own bound too


# ---- the Neuron checks -----------------------------------------------------------------------------------


def test_a_healthy_trn1_passes_every_neuron_check(tmp_path: pathlib.Path) -> None:
    assert _neuron(tmp_path)[0] == "ok"


@pytest.mark.parametrize(
    ("ecc", "tools", "says"),
    [
        (None, {}, "no Neuron uncorrected-ECC counters under"),  # absent counters used to pass as 0 errors
        ("3", {}, "3 uncorrected Neuron memory errors"),
        ("0", {"neuron_ls": _neuron_ls(devices=15, linked=15)}, "expected 16 Neuron devices (trn1.32xlarge), found 15"),
        ("0", {"neuron_ls": _neuron_ls(linked=14)}, "NeuronLink: 14 of 16 devices connected to their peers"),
        ("0", {"fi_info": "exit 1\n"}, "libfabric has no EFA provider (fi_info -p efa)"),
        ("0", {"nccom_test": "exit 1\n"}, "nccom-test allr over every NeuronCore failed"),
        ("0", {"nccom_test": HANG}, "nccom-test timed out after 2 s (hung)"),
        ("0", {"neuron_ls": HANG}, "neuron-ls timed out after 2 s (hung)"),
    ],
)
def test_each_neuron_fault_fails_the_check(
    ecc: str | None, tools: dict[str, str], says: str, tmp_path: pathlib.Path
) -> None:
    result, took = _neuron(tmp_path, ecc, **tools)
    assert result.startswith(says) and took < 10


def test_every_step_is_bounded_and_the_deadline_covers_them() -> None:
    """Every external command of the shipped scripts runs under timeout; the deadline is the pulls plus every
    timeout (and its kill grace) plus the guard's slack: 33 min for a GPU node, 18 for a Trainium node."""
    for script in (
        health_gate.dcgm_script(),
        health_gate.gpu_devices_script(P5, 32),
        health_gate.neuron_devices_script(TRN1, 8),
    ):
        for tool in ("dcgmi diag", "all_reduce_perf -b", "nccom-test -r", "fi_info -p", "neuron-ls --json", "-L |"):
            for line in script.splitlines():
                if tool in line:
                    assert "bounded " in line or "timeout " in line, line
    assert health_gate.deadline_seconds(catalog.GPU) == 600 + 900 + 3 * 30 + 300 + 5 * 10 + 60
    assert health_gate.deadline_minutes(catalog.GPU) == 34
    assert health_gate.deadline_minutes(catalog.TRAINIUM) == 18


# ---- the guard, a process against a stand-in API server --------------------------------------------------


class Api:
    """Nodes and NodePools behind the three verbs the guard uses (JSON patch with ``test``, strategic merge on
    status conditions, merge patch with a resourceVersion precondition)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pools: dict[str, dict[str, Any]] = {}
        self.deleted: list[str] = []
        self.lock = threading.Lock()
        self.version = 1

    def bump(self, obj: dict[str, Any]) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        with self.lock:
            parts = path.strip("/").split("/")
            if parts[:3] == ["api", "v1", "nodes"]:
                node = self.nodes.get(parts[3])
                if node is None:
                    return 404, {"kind": "Status", "code": 404}
                if method == "GET":
                    return 200, node
                if method == "DELETE":
                    del self.nodes[parts[3]]
                    self.deleted.append(parts[3])
                    return 200, {}
                if len(parts) == 5:  # status: strategic merge on conditions (merge key type)
                    conds = {c["type"]: c for c in node["status"].get("conditions", [])}
                    for c in body["status"]["conditions"]:
                        conds[c["type"]] = c
                    node["status"]["conditions"] = list(conds.values())
                    return 200, node
                new = copy.deepcopy(node)
                for op in body:
                    keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].strip("/").split("/")]
                    if op["op"] == "test":
                        if _get(new, keys) != op["value"]:
                            return 409, {"code": 409}
                        continue
                    parent = _get(new, keys[:-1])
                    if op["op"] == "add":
                        parent[keys[-1]] = op["value"]
                    elif op["op"] == "remove":
                        del parent[keys[-1]]
                self.nodes[parts[3]] = new
                self.bump(new)
                return 200, new
            if parts[:4] == ["apis", "karpenter.sh", "v1", "nodepools"]:
                pool = self.pools.get(parts[4])
                if pool is None:
                    return 404, {"code": 404}
                if method == "GET":
                    return 200, pool
                rv = (body.get("metadata") or {}).get("resourceVersion")
                if rv is not None and rv != pool["metadata"]["resourceVersion"]:
                    return 409, {"code": 409}
                _merge(pool, body)
                self.bump(pool)
                return 200, pool
        return 404, {}


def _get(obj: Any, keys: list[str]) -> Any:
    for k in keys:
        obj = obj[k]
    return obj


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """RFC 7386 JSON merge patch."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = copy.deepcopy(v)


@pytest.fixture
def api() -> Iterator[tuple[Api, str]]:
    state = Api()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            code, out = state.handle(self.command, self.path, body)
            data = json.dumps(out).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PATCH = do_DELETE = _serve

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _stamp(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def _node(name: str, startup: bool = True, registered_ago: float = 0, pool: str = "gpu-h100") -> dict[str, Any]:
    taints = [dict(names.STARTUP_TAINT)] if startup else []
    return {
        "metadata": {
            "name": name,
            "resourceVersion": "1",
            "creationTimestamp": _stamp(registered_ago),
            "labels": {"karpenter.sh/nodepool": pool},
            "annotations": {},
        },
        "spec": {"taints": taints},
        "status": {"conditions": []},
    }


def _pool(name: str = "gpu-h100", failures: list[float] | None = None) -> dict[str, Any]:
    ann = {health_gate.FAILURES_ANNOTATION: ",".join(str(int(t)) for t in failures)} if failures else {}
    return {
        "metadata": {"name": name, "resourceVersion": "1", "annotations": ann},
        "spec": {"limits": {"nvidia.com/gpu": "64", "nodes": "8"}, "template": {"spec": {}}},
    }


def _guard(tmp: pathlib.Path, url: str, name: str, **env: str) -> subprocess.Popen[bytes]:
    """The guard exactly as its ConfigMap ships it, run by python3 with the DaemonSet's env (short times)."""
    script = tmp / "health_guard.py"
    script.write_text(health_gate.guard_configmap()["data"]["health_guard.py"])
    sa = tmp / "sa"
    sa.mkdir(exist_ok=True)
    (sa / "token").write_text("token")
    results = tmp / "results"
    results.mkdir(exist_ok=True)
    base = {
        "NODE_NAME": name,
        "KUBE_API_URL": url,
        "SA_DIR": str(sa),
        "RESULTS_DIR": str(results),
        "CHECKS": "dcgm,devices",
        "LEAVE_CONDITIONS": ",".join(health_gate.LEAVE_CONDITIONS),
        "LEAVE_AFTER": "AcceleratedHardwareReady=60,NetworkingReady=300",
        "DEADLINE_SECONDS": "3600",
        "HOLD_SECONDS": "1",
        "POLL_SECONDS": "0.2",
        "RESULT_POLL_SECONDS": "0.1",
        "RECOVER_SECONDS": "600",
        "BREAKER_FAILURES": str(health_gate.BREAKER_FAILURES),
        "BREAKER_WINDOW_SECONDS": str(health_gate.BREAKER_WINDOW_SECONDS),
        "PATH": BIN,
    }
    return subprocess.Popen([sys.executable, str(script)], env={**base, **env}, stderr=subprocess.STDOUT)


def _until(what: Callable[[], Any], seconds: float = 30) -> Any:
    end = time.time() + seconds
    while time.time() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _keys(node: dict[str, Any]) -> set[str]:
    return {t["key"] for t in node["spec"].get("taints") or []}


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(10)


def test_the_guard_passes_a_node_whose_checks_wrote_ok(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    state, url = api
    state.nodes["n1"] = _node("n1")
    state.pools["gpu-h100"] = _pool()
    proc = _guard(tmp_path, url, "n1")
    try:
        time.sleep(0.5)
        assert names.STARTUP_TAINT_KEY in _keys(state.nodes["n1"])  # waits while the checks run
        for check in ("dcgm", "devices"):
            (tmp_path / "results" / check).write_text("ok\n")
        _until(lambda: names.STARTUP_TAINT_KEY not in _keys(state.nodes["n1"]))
        assert state.nodes["n1"]["metadata"]["annotations"][health_gate.GATE_ANNOTATION].startswith("pre-flight passed")
    finally:
        _stop(proc)


def test_a_check_that_never_writes_fails_the_node_at_the_deadline(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    """GIVEN a node registered 40 s ago whose devices check never wrote a result (hung, crash-looping) WHEN the
    guard's deadline is 30 s THEN it taints the node, counts a failure on its pool and deletes the node: the startup
    taint is not held for ever (before: the guard started only after every init container exited)."""
    state, url = api
    state.nodes["n1"] = _node("n1", registered_ago=40)
    state.pools["gpu-h100"] = _pool()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "dcgm").write_text("ok\n")
    proc = _guard(tmp_path, url, "n1", DEADLINE_SECONDS="30")
    try:
        _until(lambda: "n1" in state.deleted)
        assert proc.wait(10) == 0
        assert len(health_guard.failure_times(state.pools["gpu-h100"])) == 1
        assert not health_guard.held(state.pools["gpu-h100"])
    finally:
        _stop(proc)


def test_before_the_deadline_the_guard_waits(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    state, url = api
    state.nodes["n1"] = _node("n1", registered_ago=5)
    state.pools["gpu-h100"] = _pool()
    proc = _guard(tmp_path, url, "n1", DEADLINE_SECONDS="30")
    try:
        time.sleep(1.0)
        assert _keys(state.nodes["n1"]) == {names.STARTUP_TAINT_KEY} and not state.deleted
    finally:
        _stop(proc)


def test_the_third_failure_in_the_window_holds_the_pool_and_keeps_the_node(
    api: tuple[Api, str], tmp_path: pathlib.Path
) -> None:
    """GIVEN a pool with two gate failures in the last hour WHEN a third node fails THEN the pool's limits.nodes is
    0 (Karpenter launches nothing), the breaker says why, the node is kept (do-not-disrupt) instead of deleted and
    relaunched; the one documented command (the resume patch) restores the limit, and the guard then deletes it."""
    state, url = api
    now = time.time()
    state.nodes["n3"] = _node("n3")
    state.pools["gpu-h100"] = _pool(failures=[now - 3000, now - 1500])
    results = tmp_path / "results"
    results.mkdir()
    (results / "dcgm").write_text("dcgmi diag -r 2 failed: Diagnostic: Fail\n")
    (results / "devices").write_text("ok\n")
    proc = _guard(tmp_path, url, "n3")
    try:
        _until(lambda: health_guard.held(state.pools["gpu-h100"]))
        pool = state.pools["gpu-h100"]
        assert pool["spec"]["limits"] == {"nvidia.com/gpu": "64", "nodes": "0"}
        assert "3 gate failures in 60 min" in pool["metadata"]["annotations"][health_gate.BREAKER_ANNOTATION]
        _until(lambda: state.nodes["n3"]["metadata"]["annotations"].get(health_gate.DO_NOT_DISRUPT) == "true")
        time.sleep(1.5)  # past HOLD_SECONDS: still not deleted
        assert "n3" in state.nodes and not state.deleted
        # kubectl patch nodepool gpu-h100 --type merge -p "$(... jsonpath of the resume annotation ...)"
        resume = json.loads(pool["metadata"]["annotations"][health_gate.RESUME_ANNOTATION])
        state.handle("PATCH", "/apis/karpenter.sh/v1/nodepools/gpu-h100", resume)
        assert state.pools["gpu-h100"]["spec"]["limits"] == {"nvidia.com/gpu": "64", "nodes": "8"}
        assert not state.pools["gpu-h100"]["metadata"]["annotations"]
        _until(lambda: "n3" in state.deleted)
    finally:
        _stop(proc)


def test_old_failures_outside_the_window_do_not_trip(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    state, url = api
    state.nodes["n1"] = _node("n1")
    state.pools["gpu-h100"] = _pool(failures=[time.time() - 7200, time.time() - 5000])
    results = tmp_path / "results"
    results.mkdir()
    (results / "dcgm").write_text("ok\n")
    (results / "devices").write_text("expected 8 GPUs (p5.48xlarge), found 7\n")
    proc = _guard(tmp_path, url, "n1")
    try:
        _until(lambda: "n1" in state.deleted)
        assert not health_guard.held(state.pools["gpu-h100"])
        assert len(health_guard.failure_times(state.pools["gpu-h100"])) == 1
    finally:
        _stop(proc)


def _in_service(state: Api, condition: str, status: str, since: float) -> None:
    node = _node("n1", startup=False)
    node["status"]["conditions"] = [
        {"type": "AcceleratedHardwareReady", "status": "True", "lastTransitionTime": _stamp(7200)},
        {"type": condition, "status": status, "reason": "InterfaceNotUp", "lastTransitionTime": _stamp(since)},
    ]
    state.nodes["n1"] = node
    state.pools["gpu-h100"] = _pool()


def test_a_networking_flap_shorter_than_its_threshold_leaves_the_node_in_service(
    api: tuple[Api, str], tmp_path: pathlib.Path
) -> None:
    """GIVEN NetworkingReady=False for 60 s WHEN the guard polls THEN no taint (before: NoExecute after one 15 s
    poll, restarting the gang)."""
    state, url = api
    _in_service(state, "NetworkingReady", "False", 60)
    proc = _guard(tmp_path, url, "n1")
    try:
        time.sleep(1.5)
        assert _keys(state.nodes["n1"]) == set()
    finally:
        _stop(proc)


def test_a_condition_false_past_its_threshold_takes_the_node_out(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    state, url = api
    _in_service(state, "NetworkingReady", "False", 400)
    proc = _guard(tmp_path, url, "n1")
    try:
        _until(lambda: health_gate.UNHEALTHY_TAINT_KEY in _keys(state.nodes["n1"]))
        assert state.nodes["n1"]["spec"]["unschedulable"] is True
        assert not state.deleted  # NodeRepair's to replace (30 min), not the guard's
    finally:
        _stop(proc)


def test_a_recovered_node_returns_to_service_after_the_stable_period(
    api: tuple[Api, str], tmp_path: pathlib.Path
) -> None:
    """GIVEN a node the guard took out for NetworkingReady WHEN every condition has been True for the stable period
    THEN the taint, the cordon and Slinky's drain reason go; True for less keeps it out."""
    state, url = api
    _in_service(state, "NetworkingReady", "True", 60)
    node = state.nodes["n1"]
    node["spec"]["taints"] = [dict(health_gate.UNHEALTHY_TAINT)]
    node["spec"]["unschedulable"] = True
    node["metadata"]["annotations"] = {
        health_gate.GATE_ANNOTATION: "left service: NetworkingReady=False (InterfaceNotUp: eth3)",
        health_gate.SLURM_DRAIN_ANNOTATION: "ekstrain health gate: left service",
    }
    proc = _guard(tmp_path, url, "n1", RECOVER_SECONDS="120")
    try:
        time.sleep(1.0)
        assert health_gate.UNHEALTHY_TAINT_KEY in _keys(state.nodes["n1"])  # True for 60 s < 120 s
        for c in state.nodes["n1"]["status"]["conditions"]:
            c["lastTransitionTime"] = _stamp(200)
        _until(lambda: not _keys(state.nodes["n1"]))
        back = state.nodes["n1"]
        assert back["spec"]["unschedulable"] is False
        assert health_gate.SLURM_DRAIN_ANNOTATION not in back["metadata"]["annotations"]
        assert back["metadata"]["annotations"][health_gate.GATE_ANNOTATION].startswith("returned to service")
    finally:
        _stop(proc)


def test_a_real_check_that_hangs_ends_in_a_failed_node(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    """The whole loop: the shipped DCGM script with a dcgmi that hangs, cut at its (2 s) timeout, and the guard
    that reads its result and fails the node."""
    state, url = api
    state.nodes["n1"] = _node("n1")
    state.pools["gpu-h100"] = _pool()
    bin_dir = _tools(tmp_path, nvidia_smi=_nvidia_smi(), dcgmi=HANG, **{"nv-hostengine": "exit 0\n"})
    proc = _guard(tmp_path, url, "n1", CHECKS="dcgm")
    try:
        result, took = _run_check(health_gate.dcgm_script(), tmp_path, bin_dir)
        assert result == "dcgmi timed out after 2 s (hung)" and took < 10
        _until(lambda: "n1" in state.deleted)
    finally:
        _stop(proc)


def test_the_daemonset_runs_the_guard_as_a_sidecar_before_the_checks() -> None:
    from test_health_gate import _specs

    spec = next(s for s in _specs() if s.shape.family == catalog.GPU)
    pod = health_gate.gate_daemonset(spec)["spec"]["template"]["spec"]
    guard = pod["initContainers"][0]
    assert guard["name"] == "guard" and guard["restartPolicy"] == "Always"
    assert [c["name"] for c in pod["initContainers"][1:]] == ["dcgm-diag", "devices"]
    env = {e["name"]: e.get("value") for e in guard["env"]}
    assert env["DEADLINE_SECONDS"] == str(health_gate.deadline_seconds(catalog.GPU))
    assert env["LEAVE_AFTER"] == "AcceleratedHardwareReady=60,NetworkingReady=300"
    assert os.path.basename(guard["command"][-1]) == "health_guard.py"
    (hold,) = pod["containers"]  # the one regular container: Ready only while the guard's heartbeat is fresh
    assert hold["livenessProbe"] == guard["livenessProbe"] and hold["readinessProbe"] == guard["readinessProbe"]


def test_a_failed_node_whose_pool_is_gone_is_still_deleted(api: tuple[Api, str], tmp_path: pathlib.Path) -> None:
    state, url = api
    state.nodes["n1"] = _node("n1", pool="removed-pool")
    results = tmp_path / "results"
    results.mkdir()
    (results / "dcgm").write_text("ok\n")
    (results / "devices").write_text("all_reduce_perf failed\n")
    proc = _guard(tmp_path, url, "n1")
    try:
        _until(lambda: "n1" in state.deleted)
    finally:
        _stop(proc)


# ---- quarantined nodes keep their exporters --------------------------------------------------------------


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    """Kubernetes' ToleratesTaint: key (or none with Exists), value (Equal) and effect (or none) match."""
    for t in tolerations:
        key_ok = t.get("key") in (None, "", taint["key"])
        value_ok = t.get("operator") == "Exists" or t.get("value") == taint["value"]
        effect_ok = t.get("effect") in (None, "", taint["effect"])
        if key_ok and value_ok and effect_ok:
            return True
    return False


def test_every_exporter_and_the_log_agent_tolerate_the_quarantine_taint() -> None:
    """GIVEN the guard's NoExecute taint on a node WHEN the kubelet evicts what does not tolerate it THEN
    node-exporter, dcgm-exporter, the EFA exporter, neuron-monitor and fluent-bit stay (before: the first three
    were evicted, and the metrics that explain a sick node went with them)."""
    from conftest import stack_config

    from ekstrain.assembly import logs
    from ekstrain.assembly import observability as obs
    from ekstrain.components import device_plugins

    taint = health_gate.UNHEALTHY_TAINT
    values = obs.chart_values(stack_config("prod"))
    assert _tolerates(values["prometheus-node-exporter"]["tolerations"], taint)
    assert _tolerates(values["prometheus-node-exporter"]["tolerations"], {**names.STARTUP_TAINT})
    assert _tolerates(obs.efa_exporter_daemonset()["spec"]["template"]["spec"]["tolerations"], taint)
    assert _tolerates(device_plugins.dcgm_values()["tolerations"], taint)
    neuron = device_plugins.neuron_monitor_daemonset()["spec"]["template"]["spec"]["tolerations"]
    assert _tolerates(neuron, taint)
    assert _tolerates(logs.tolerations(), taint)
    assert not _tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], taint)


def test_the_node_monitoring_agent_skips_the_documented_false_positive_interfaces() -> None:
    conf = health_gate.agent_configuration(["nvidia.com/gpu"])
    networking = conf["nodeAgent"]["monitors"]["networking"]
    assert networking["excludedInterfaceNameRegexps"] == [r"^ibp[0-9]+s[0-9]+f[0-9]+$", r"^ib[0-9]+$"]


# ---- the breaker's admission policy, evaluated -----------------------------------------------------------


def _admit_pool(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """What ekstrain-health-gate-breaker-only answers the gate's service account (None: admitted)."""
    import celpy

    policy = next(o for o in health_gate.breaker_policy() if o["kind"] == "ValidatingAdmissionPolicy")["spec"]
    activation = {
        "request": celpy.json_to_cel({"operation": "UPDATE", "userInfo": {"username": health_gate.USERNAME}}),
        "oldObject": celpy.json_to_cel(old),
        "object": celpy.json_to_cel(new),
    }
    env = celpy.Environment()
    for rule in policy["validations"]:
        if not bool(env.program(env.compile(rule["expression"])).evaluate(activation)):
            return str(rule["message"])
    return None


def _nodepool() -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-h100", "labels": {"a": "b"}, "annotations": {"karpenter.sh/nodepool-hash": "1"}},
        "spec": {
            "limits": {"nvidia.com/gpu": "64", "nodes": "8"},
            "template": {"spec": {"startupTaints": [names.STARTUP_TAINT]}},
            "disruption": {"consolidateAfter": "10m"},
        },
    }


def test_the_guard_may_change_only_the_breakers_fields_of_a_nodepool() -> None:
    """GIVEN the breaker's own patch (count, hold, resume) THEN admitted; any other change of the NodePool by the
    gate's service account (its template, disruption, another limit, a label, another annotation) is refused."""
    old = _nodepool()
    patch, tripped = health_guard.breaker_patch(
        {**old, "metadata": {**old["metadata"], "resourceVersion": "7"}}, 1000.0, "dcgm: Fail", 1, 3600, "0"
    )
    assert tripped
    new = copy.deepcopy(old)
    new["spec"]["limits"]["nodes"] = patch["spec"]["limits"]["nodes"]
    new["metadata"]["annotations"].update(patch["metadata"]["annotations"])
    assert _admit_pool(old, new) is None
    for change, says in [
        (lambda p: p["spec"]["template"]["spec"].update(startupTaints=[]), "template"),
        (lambda p: p["spec"]["disruption"].update(consolidateAfter="Never"), "template, disruption"),
        (lambda p: p["spec"]["limits"].update({"nvidia.com/gpu": "0"}), "no NodePool limit but nodes"),
        (lambda p: p["metadata"]["labels"].update(a="c"), "no NodePool label"),
        (lambda p: p["metadata"]["annotations"].update(other="x"), "no annotation but"),
    ]:
        bad = copy.deepcopy(new)
        change(bad)
        assert says in str(_admit_pool(old, bad))


def test_a_guard_restarted_during_the_hold_resumes_it_without_counting_again(
    api: tuple[Api, str], tmp_path: pathlib.Path
) -> None:
    """GIVEN a node its guard failed a moment ago (tainted, the failure counted once) WHEN the guard restarts (its
    sidecar restarted) THEN it finishes the hold from the recorded time and deletes the node, and the pool still
    counts one failure."""
    state, url = api
    now = time.time()
    node = _node("n1")
    node["spec"]["taints"].append(dict(health_gate.UNHEALTHY_TAINT))
    node["metadata"]["annotations"][health_gate.GATE_ANNOTATION] = f"pre-flight failed at {int(now)}: dcgm: Fail"
    state.nodes["n1"] = node
    state.pools["gpu-h100"] = _pool(failures=[now])
    proc = _guard(tmp_path, url, "n1", HOLD_SECONDS="2")
    try:
        _until(lambda: "n1" in state.deleted)
        assert time.time() >= int(now) + 2 - 0.05  # the rest of the hold from the recorded second, not none
        assert len(health_guard.failure_times(state.pools["gpu-h100"])) == 1
    finally:
        _stop(proc)
