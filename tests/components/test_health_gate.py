"""The health gate. Every accelerator NodePool starts tainted, a pre-flight per NodePool checks the node
against the catalog and removes the taint only from its own node (the admission policy's CEL runs here on
cel-python), a node that failed never takes a job, and the node monitoring agent runs on every tainted node.
GIVEN/WHEN/THEN per case.
"""

from __future__ import annotations

import copy
import functools
import json
import pathlib
import subprocess
import tempfile
from typing import Any

import celpy
import pytest
import yaml
from conftest import stack_config

from ekstrain.agents import health_guard
from ekstrain.assembly.schedulers import operators
from ekstrain.components.node_health import ADDON_NAME
from ekstrain.facts import catalog, names, versions
from ekstrain.infra import offline
from ekstrain.layout.efa import efa_count, efa_layout
from ekstrain.layout.partitions import shape
from ekstrain.payloads import health_gate, karpenter_specs
from ekstrain.payloads.karpenter_specs import PartitionSpec, layout_specs
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.mix import stack_checkpoint_seconds
from ekstrain.tooling import validation

PROD = stack_config("prod")
CLAIM = health_gate.NODE_NAME_CLAIM


def _specs(cfg: Any = PROD) -> list[PartitionSpec]:
    return [
        layout
        for p in cfg.partitions
        for layout in layout_specs(
            PartitionSpec(
                name=p.name,
                shape=shape(p.name, p.accelerator, p.instance_types, p.efa),
                cluster_name="c",
                availability_zone="us-west-2b",
                max_nodes=p.max_nodes,
            )
        )
    ]


# ---- the admission policy, evaluated -------------------------------------------------------------------


@functools.cache
def _program(expression: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression))


def _admit(op: str, old: dict[str, Any], new: dict[str, Any] | None, user: str, node_claim: str | None) -> str | None:
    """What the policy answers (None: admitted or not matched), as the API server evaluates it."""
    policy = next(o for o in health_gate.node_policy() if o["kind"] == "ValidatingAdmissionPolicy")["spec"]
    extra = {CLAIM: [node_claim]} if node_claim is not None else {}
    request = {"operation": op, "userInfo": {"username": user, "extra": extra}}
    activation: dict[str, Any] = {
        "request": celpy.json_to_cel(request),
        "oldObject": celpy.json_to_cel(old),
        "object": celpy.json_to_cel(new) if new is not None else None,
    }
    for cond in policy["matchConditions"]:
        if not bool(_program(cond["expression"]).evaluate(activation)):
            return None
    variables = {v["name"]: _program(v["expression"]).evaluate(activation) for v in policy["variables"]}
    activation["variables"] = celpy.json_to_cel(json.loads(json.dumps({k: str(v) for k, v in variables.items()})))
    for rule in policy["validations"]:
        if not bool(_program(rule["expression"]).evaluate(activation)):
            return str(rule["message"])
    return None


def _node(name: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {names.PARTITION_LABEL: "gpu-h100"},
            "annotations": {"karpenter.sh/nodepool-hash": "1"},
        },
        "spec": {
            "taints": taints
            if taints is not None
            else [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}, names.STARTUP_TAINT]
        },
    }


GATE = health_gate.USERNAME


def test_the_gate_removes_the_startup_taint_of_its_own_node() -> None:
    """GIVEN a node with the startup taint WHEN the gate on that node removes it THEN admitted; WHEN the same
    patch comes from a gate on another node THEN refused."""
    old = _node("ip-10-0-0-1")
    new = copy.deepcopy(old)
    new["spec"]["taints"] = health_guard.taints_passed(old["spec"]["taints"])
    assert new["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert _admit("UPDATE", old, new, GATE, "ip-10-0-0-1") is None
    assert _admit("UPDATE", old, new, GATE, "ip-10-0-0-2") == "the health gate may change only the node its pod runs on"


def test_a_token_without_a_node_claim_is_refused() -> None:
    """GIVEN the gate's service account used from outside a pod (no node claim) WHEN it patches a node THEN
    refused with the feature it needs."""
    old = _node("n1")
    new = copy.deepcopy(old)
    new["spec"]["taints"] = []
    assert "names no node" in str(_admit("UPDATE", old, new, GATE, None))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda n: n["spec"]["taints"].clear(), "only its own taints"),  # drops the accelerator taint too
        (lambda n: n["metadata"]["labels"].update({names.PARTITION_LABEL: "x"}), "no label"),
        (lambda n: n["metadata"]["annotations"].pop("karpenter.sh/nodepool-hash"), "no other annotation"),
        (lambda n: n["spec"].update(unschedulable=True), "cordons only a node it taints"),
    ],
)
def test_the_gate_changes_nothing_else_on_its_node(change: Any, says: str) -> None:
    """GIVEN the gate on its own node WHEN it changes another taint, a label, another annotation or cordons
    THEN refused."""
    old = _node("n1")
    new = copy.deepcopy(old)
    change(new)
    assert says in str(_admit("UPDATE", old, new, GATE, "n1"))


def test_a_failed_node_is_tainted_then_deleted_by_its_own_gate_only() -> None:
    """GIVEN a pre-flight that failed WHEN the guard taints its node NoExecute with the reason THEN admitted, and
    deleting it afterwards too; deleting a healthy node or another node is refused."""
    old = _node("n1")
    new = copy.deepcopy(old)
    new["spec"]["taints"] = health_guard.taints_unhealthy(old["spec"]["taints"], "true")
    new["metadata"]["annotations"][health_gate.GATE_ANNOTATION] = "pre-flight failed: devices: expected 8 GPUs"
    # Cordoned with Slinky's drain reason: the slurm-operator drains the node's Slurm node (syncCordon).
    new["metadata"]["annotations"][health_gate.SLURM_DRAIN_ANNOTATION] = "ekstrain health gate: pre-flight failed"
    new["spec"]["unschedulable"] = True
    assert names.STARTUP_TAINT in new["spec"]["taints"]  # it never takes a job
    assert health_gate.UNHEALTHY_TAINT in new["spec"]["taints"]
    assert _admit("UPDATE", old, new, GATE, "n1") is None
    assert _admit("DELETE", new, None, GATE, "n1") is None
    back = copy.deepcopy(new)
    back["spec"]["unschedulable"] = False
    assert "never uncordons" in str(_admit("UPDATE", new, back, GATE, "n1"))
    assert "deletes only a node it tainted" in str(_admit("DELETE", old, None, GATE, "n1"))
    assert "only the node its pod runs on" in str(_admit("DELETE", new, None, GATE, "n2"))


def test_other_users_are_not_matched() -> None:
    """GIVEN Karpenter (another service account) WHEN it changes any node THEN the policy does not apply."""
    old = _node("n1")
    assert _admit("DELETE", old, None, "system:serviceaccount:karpenter:karpenter", None) is None


def test_rbac_grants_nodes_and_the_breakers_nodepools_only() -> None:
    role = health_gate.cluster_role()
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
        {"apiGroups": ["karpenter.sh"], "resources": ["nodepools"], "verbs": ["get", "patch"]},
    ]
    binding = health_gate.cluster_role_binding()
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": health_gate.SERVICE_ACCOUNT, "namespace": health_gate.NAMESPACE}
    ]


# ---- the guard's decisions ------------------------------------------------------------------------------


def test_the_guard_verdict_and_leave_reasons() -> None:
    """GIVEN check results and node conditions WHEN the guard decides THEN it fails on any result but ok, and
    asks training to leave on AcceleratedHardwareReady=False or a lost EFA device, not on others."""
    assert health_guard.verdict({"dcgm": "ok\n", "devices": "ok"}) == []
    assert health_guard.verdict({"dcgm": "ok", "devices": "expected 8 GPUs, found 7\n"}) == [
        "devices: expected 8 GPUs, found 7"
    ]
    node = {
        "status": {
            "conditions": [{"type": "AcceleratedHardwareReady", "status": "False", "reason": "NvidiaXID79Error"}]
        }
    }
    conds = list(health_gate.LEAVE_CONDITIONS)
    assert health_guard.leave_reason(node, conds, None, 0).startswith(
        "AcceleratedHardwareReady=False (NvidiaXID79Error"
    )
    kernel = {"status": {"conditions": [{"type": "KernelReady", "status": "False"}]}}
    assert health_guard.leave_reason(kernel, conds, 32, 32) == ""
    assert health_guard.leave_reason(kernel, conds, 31, 32) == "31 EFA devices, the instance type's layout has 32"


def test_the_guard_shipped_is_this_module() -> None:
    cm = health_gate.guard_configmap()
    assert cm["data"]["health_guard.py"].startswith('"""The health gate\'s guard')
    assert "import ekstrain" not in cm["data"]["health_guard.py"]  # standard library only, runs in a bare image


# ---- the NodePools and DaemonSets -----------------------------------------------------------------------


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.resource_name)
def test_every_accelerator_nodepool_starts_tainted_and_has_its_gate(spec: PartitionSpec) -> None:
    """GIVEN prod's partitions WHEN their NodePools and gates are built THEN each NodePool carries the startup
    taint, and its DaemonSet selects exactly that pool, tolerates its taints and checks the catalog's counts."""
    pool = karpenter_specs.node_pool(spec)
    assert pool["spec"]["template"]["spec"]["startupTaints"] == [names.STARTUP_TAINT]
    assert health_gate.gated(pool)
    ds = health_gate.gate_daemonset(spec)
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {names.NODEPOOL_LABEL: spec.resource_name}
    keys = {(t["key"], t["effect"]) for t in pod["tolerations"]}
    assert keys == {
        (spec.shape.accelerator_resource, "NoSchedule"),
        (names.STARTUP_TAINT_KEY, "NoSchedule"),
        (health_gate.UNHEALTHY_TAINT_KEY, "NoExecute"),
    }
    it = spec.shape.instance_types[0]
    devices = next(c for c in pod["initContainers"] if c["name"] == "devices")["command"][2]
    efa = spec.shape.efa_interfaces
    assert efa == min(efa_count(efa_layout(t)) for t in spec.shape.instance_types)
    assert f'[ "$efa" -eq {efa} ]' in devices
    if spec.shape.family == catalog.GPU:
        assert f'[ "$gpus" -eq {it.accelerator_count} ]' in devices
        assert f"all_reduce_perf -b 8 -e 1G -f 2 -g {it.accelerator_count}" in devices
        dcgm = next(c for c in pod["initContainers"] if c["name"] == "dcgm-diag")
        assert dcgm["image"] == versions.DCGM_IMAGE and "dcgmi diag -r 2 " in dcgm["command"][2]
    else:
        assert f'[ "$devs" -eq {it.accelerator_count} ]' in devices
        assert f"nccom-test -r {it.workers_per_node} -N 1" in devices
    # No container asks for accelerators: the pod that stays on the node holds none of the jobs' devices.
    for c in [*pod["initContainers"], *pod["containers"]]:
        assert not set(c["resources"].get("limits", {})) & {
            names.GPU_RESOURCE,
            names.NEURON_RESOURCE,
            names.EFA_RESOURCE,
        }
        assert {"cpu", "memory"} <= set(c["resources"]["requests"])
    if validation.upstream_dir() is not None:
        assert validation.validate_object(ds, PROD.cluster.kubernetes_version) == []
        assert validation.validate_object(pool, PROD.cluster.kubernetes_version) == []


def test_the_gate_takes_a_few_documented_minutes() -> None:
    """DCGM diag level 2 (~2 min, NVIDIA's docs) + the single-node collective + the counts."""
    assert health_gate.gate_minutes(catalog.GPU) == 4
    assert health_gate.gate_minutes(catalog.TRAINIUM) == 2


def test_a_check_that_fails_writes_its_reason_and_the_container_exits_0() -> None:
    """GIVEN a check script WHEN a line fails THEN its message is the result (the guard decides), and the
    container exits 0 either way (an init container that failed would retry for ever)."""
    script = health_gate._result("x", ['[ 1 -eq 2 ] || fail "expected 2"']).replace("/results", "{d}")
    with tempfile.TemporaryDirectory() as d:
        rc = subprocess.run(["bash", "-c", script.replace("{d}", d)], check=False).returncode
        assert rc == 0 and pathlib.Path(f"{d}/x").read_text() == "expected 2\n"
        ok = health_gate._result("y", ["true"]).replace("/results", d)
        assert subprocess.run(["bash", "-c", ok], check=False).returncode == 0
        assert pathlib.Path(f"{d}/y").read_text() == "ok\n"


# ---- the agent and the runtimes -------------------------------------------------------------------------


def test_the_agent_configuration_uses_chart_keys_and_tolerates_every_taint() -> None:
    """GIVEN the eks-node-monitoring-agent chart 1.7.0 values WHEN the add-on's configurationValues are built
    THEN every key exists in the chart, the agent tolerates everything and DCGM every gate and GPU taint."""
    conf = health_gate.agent_configuration([names.GPU_RESOURCE, names.NEURON_RESOURCE])
    root = validation.upstream_dir()
    if root is not None:
        values = yaml.safe_load((root / "charts" / "eks-node-monitoring-agent" / "values.yaml").read_text())
        for section, keys in conf.items():
            assert set(keys) <= set(values[section]), section
    assert conf["nodeAgent"]["tolerations"] == [{"operator": "Exists"}]
    dcgm = {(t["key"], t["effect"]) for t in conf["dcgmAgent"]["tolerations"]}
    assert {
        (names.GPU_RESOURCE, "NoSchedule"),
        (names.STARTUP_TAINT_KEY, "NoSchedule"),
        (health_gate.UNHEALTHY_TAINT_KEY, "NoExecute"),
    } <= dcgm
    assert conf["dcgmAgent"]["resources"]["requests"]


def test_every_cluster_training_runtime_restarts_its_gang() -> None:
    """GIVEN prod's ClusterTrainingRuntimes WHEN built THEN each has a JobSet failurePolicy (the job render's
    default restarts), Jobs that fail on their first pod failure and pods that are not restarted in place."""
    runtimes = operators.torch_runtimes(PROD)
    assert runtimes
    for rt in runtimes:
        spec = rt["spec"]["template"]["spec"]
        assert spec["failurePolicy"] == {"maxRestarts": 3}
        job = spec["replicatedJobs"][0]["template"]["spec"]
        assert job["backoffLimit"] == 0 and job["template"]["spec"]["restartPolicy"] == "Never"


def test_the_guard_marks_a_sick_node_cordoned_with_slinkys_drain_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN a node the guard must take out of service WHEN it marks it THEN one JSON patch, guarded by the
    resourceVersion it read, adds the NoExecute taint, the reason, Slinky's drain reason and the cordon (the
    slurm-operator then drains its Slurm node); and the policy admits exactly that change."""
    sent: list[tuple[str, str, Any]] = []
    node = _node("n1")
    node["metadata"]["resourceVersion"] = "42"
    monkeypatch.setattr(health_guard, "_request", lambda m, path, body=None, ct="": sent.append((m, path, body)))
    health_guard.set_taints(node, health_guard.taints_unhealthy(node["spec"]["taints"], "true"), "XID 79", cordon=True)
    ((method, path, patch),) = sent
    assert (method, path) == ("PATCH", "/api/v1/nodes/n1")
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    ops = {p["path"]: p["value"] for p in patch[1:]}
    assert ops["/spec/unschedulable"] is True and health_gate.UNHEALTHY_TAINT in ops["/spec/taints"]
    assert ops["/metadata/annotations/nodeset.slinky.slurm.net~1node-cordon-reason"] == "ekstrain health gate: XID 79"
    new = copy.deepcopy(node)
    new["spec"]["taints"], new["spec"]["unschedulable"] = ops["/spec/taints"], True
    new["metadata"]["annotations"].update(
        {health_gate.GATE_ANNOTATION: "XID 79", health_gate.SLURM_DRAIN_ANNOTATION: "ekstrain health gate: XID 79"}
    )
    assert _admit("UPDATE", node, new, GATE, "n1") is None


def test_the_timeline_takes_the_checkpoint_save_from_the_stack_or_says_which_key() -> None:
    """GIVEN prod's FSx and checkpoint size THEN 281 s (ekstrain.layout.storage_sizing, as `ekstrain storage` prints);
    GIVEN a stack without a checkpoint size THEN the refusal names both keys that would give it."""
    assert stack_checkpoint_seconds(PROD.storage.fsx, PROD.storage.checkpoint, "mix.yaml") == 281
    no_size = PROD.storage.checkpoint.model_copy(update={"size_gib": None})
    with pytest.raises(InputError) as info:
        stack_checkpoint_seconds(PROD.storage.fsx, no_size, "mix.yaml")
    assert (
        "checkpointSaveSeconds" in info.value.report() and "ekstrain:storage.checkpoint.sizeGiB" in info.value.report()
    )


def test_the_prod_program_registers_the_gate_the_agent_configuration_and_the_runtimes(
    prod_recording: offline.Recording,
) -> None:
    """GIVEN the prod program run offline THEN every NodePool carries the startup taint and has its gate DaemonSet
    after the shared objects, the node monitoring add-on's configurationValues let its DCGM host engine onto the GPU
    nodes, and every ClusterTrainingRuntime restarts its gang."""
    pools = [r.inputs for r in prod_recording.of_type("kubernetes:karpenter.sh/v1:NodePool")]
    gates = {r.inputs["metadata"]["name"] for r in prod_recording.of_type("kubernetes:apps/v1:DaemonSet")}
    accel = [p for p in pools if p["metadata"]["name"] != karpenter_specs.HELPER_POOL]
    assert accel and all(health_gate.gated(p) for p in accel)
    assert {health_gate.gate_name(p["metadata"]["name"]) for p in accel} <= gates
    assert not health_gate.gated(next(p for p in pools if p["metadata"]["name"] == karpenter_specs.HELPER_POOL))
    policy = prod_recording.one(
        "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
        f"health-gate-validatingadmissionpolicy-{health_gate.POLICY}",
    )
    assert policy.inputs["spec"]["validations"][1]["expression"] == "oldObject.metadata.name == variables.claimNode"
    addon = next(r for r in prod_recording.of_type("aws:eks/addon:Addon") if r.inputs["addonName"] == ADDON_NAME)
    conf = json.loads(addon.inputs["configurationValues"])
    assert conf == health_gate.agent_configuration([names.GPU_RESOURCE, names.NEURON_RESOURCE])
    runtimes = prod_recording.of_type("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime")
    assert len(runtimes) == len(PROD.partitions)
    assert all(r.inputs["spec"]["template"]["spec"]["failurePolicy"] == {"maxRestarts": 3} for r in runtimes)


@pytest.mark.parametrize(
    ("apps", "diag_rc", "result"),
    [
        ("", 0, "ok\n"),  # a new node, the diagnostics pass
        ("", 1, "dcgmi diag -r 2 failed: Memory test: Fail\n"),  # a new node, a GPU fails
        ("4242\n", 1, "ok\n"),  # a process on the GPUs: a node in service, no diagnostics under a running job
    ],
)
def test_the_dcgm_check_runs_on_a_new_node_only(apps: str, diag_rc: int, result: str, tmp_path: pathlib.Path) -> None:
    """GIVEN fake nvidia-smi/nv-hostengine/dcgmi WHEN the DCGM check runs THEN it writes ok or dcgmi's failing line,
    and skips the diagnostics when a job's process is on the GPUs (the pod recreated on a node in service)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\nprintf '{apps}'\n")
    (bin_dir / "nv-hostengine").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "dcgmi").write_text(f"#!/bin/sh\necho 'Memory test: Fail'\ntouch {tmp_path}/ran\nexit {diag_rc}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    script = health_gate.dcgm_script().replace("/results", str(tmp_path)).replace("sleep 5", "true")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert subprocess.run(["bash", "-c", script], env=env, check=False).returncode == 0
    assert (tmp_path / "dcgm").read_text() == result
    assert (tmp_path / "ran").exists() == (apps == "")


def test_the_guard_keeps_an_efa_condition_and_writes_no_other() -> None:
    """GIVEN a p5 node (32 EFA devices) WHEN the guard finds 31 THEN it writes EFADevicesReady=False once (not
    again while unchanged) with a strategic merge on that condition alone, which the policy admits; a change to
    the agent's AcceleratedHardwareReady is refused."""
    node = _node("n1")
    node["status"] = {"conditions": [{"type": "AcceleratedHardwareReady", "status": "True"}]}
    cond = health_guard.efa_condition(node, 31, 32)
    assert cond is not None and (cond["type"], cond["status"], cond["reason"]) == (
        health_gate.EFA_CONDITION,
        "False",
        "EFADevicesMissing",
    )
    assert health_guard.efa_condition(node, 32, 0) is None  # no EFA on this node type
    new = copy.deepcopy(node)
    new["status"]["conditions"].append(cond)
    assert health_guard.efa_condition(new, 31, 32) is None  # already says so
    assert _admit("UPDATE", node, new, GATE, "n1") is None
    agent = copy.deepcopy(node)
    agent["status"]["conditions"][0]["status"] = "False"
    assert "no node condition but EFADevicesReady" in str(_admit("UPDATE", node, agent, GATE, "n1"))


def test_the_guard_patches_only_its_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str, Any, str]] = []
    monkeypatch.setattr(health_guard, "_request", lambda m, path, body=None, ct="": sent.append((m, path, body, ct)))
    health_guard.set_condition("n1", {"type": health_gate.EFA_CONDITION, "status": "True"})
    assert sent == [
        (
            "PATCH",
            "/api/v1/nodes/n1/status",
            {"status": {"conditions": [{"type": health_gate.EFA_CONDITION, "status": "True"}]}},
            "application/strategic-merge-patch+json",
        )
    ]
