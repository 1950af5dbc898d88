"""Every template renders for every prod partition it applies to, and validates against upstream schemas.

GIVEN the prod stack and one run description per partition family
WHEN each scheduler's template is rendered (planner: the test double of tests/support/jobs.py)
THEN every object validates (upstream CRDs, kubernetes-validate strict) and carries the
platform's worker contract: accelerators + exact EFA count in requests and limits, memory,
/dev/shm as memory emptyDir, the FSx PVC, node selector + toleration, do-not-disrupt, and a
Pod Security baseline security context.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner

from ekstrain.assembly.jobs import SCHEDULERS, RunSpec, render, render_sbatch
from ekstrain.assembly.jobs.resolve import DO_NOT_DISRUPT, INSTANCE_TYPE_LABEL
from ekstrain.facts import catalog, names
from ekstrain.infra.verify.admission import BASELINE_CAPABILITIES
from ekstrain.tooling import validation

PROD = stack_config("prod")
GPU_PARTITIONS = [p.name for p in PROD.partitions if p.accelerator == "gpu"]
TRN_PARTITIONS = [p.name for p in PROD.partitions if p.accelerator == "trainium"]
GPU_TEMPLATES = [s for s, t in SCHEDULERS.items() if t.family in (None, "gpu")]
TRN_TEMPLATES = [s for s, t in SCHEDULERS.items() if t.family in (None, "trainium")]
CASES = [(s, p) for p in GPU_PARTITIONS for s in GPU_TEMPLATES] + [
    (s, p) for p in TRN_PARTITIONS for s in TRN_TEMPLATES
]
BASELINE_CAPS = BASELINE_CAPABILITIES  # the upstream Pod Security list (infra/verify/admission.py)
"""Pod Security Standards 'baseline' allowed capabilities."""


def spec_for(partition: str, **kw: Any) -> RunSpec:
    trn = partition in TRN_PARTITIONS
    base: dict[str, Any] = dict(
        name="run",
        partition=partition,
        nodes=2,
        image="registry.example/train:1",
        model="llama3-8b",
        global_batch=256,
        seq_len=4096,
        framework="neuronx-distributed" if trn else "torchrun-fsdp",
    )
    return RunSpec(**{**base, **kw})


def pod_specs(node: Any) -> list[dict[str, Any]]:
    """Every pod spec (a dict with 'containers') anywhere in ``node``."""
    found = []
    if isinstance(node, dict):
        if "containers" in node and isinstance(node["containers"], list):
            found.append(node)
        for v in node.values():
            found += pod_specs(v)
    elif isinstance(node, list):
        for v in node:
            found += pod_specs(v)
    return found


def accelerator_containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Containers requesting accelerators (a TrainJob's trainer counts as one: resourcesPerNode)."""
    if obj["kind"] == "TrainJob":
        trainer = obj["spec"]["trainer"]
        return [{"resources": trainer["resourcesPerNode"], "env": trainer["env"]}]
    out = []
    for spec in pod_specs(obj.get("spec", {})):
        for c in spec["containers"]:
            limits = c.get("resources", {}).get("limits", {})
            if any(k in limits for k in ("nvidia.com/gpu", "aws.amazon.com/neuron")):
                out.append(c)
    return out


@pytest.fixture(autouse=True)
def _schemas() -> None:
    if validation.upstream_dir() is None:
        pytest.skip("upstream schemas absent: set EKSTRAIN_UPSTREAM_DIR or run `make fetch-upstream`")


@pytest.mark.parametrize(("scheduler", "partition"), CASES)
def test_template_renders_and_validates(scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    assert objects
    for obj in objects:
        assert obj["metadata"]["name"] and obj["metadata"]["namespace"] == names.TRAINING_NAMESPACE
        assert validation.validate_object(obj, PROD.cluster.kubernetes_version) == [], obj["kind"]


def test_every_prod_partition_gets_every_applicable_template() -> None:
    assert {p for _, p in CASES} == {p.name for p in PROD.partitions}
    assert len(CASES) == len(GPU_PARTITIONS) * 9 + len(TRN_PARTITIONS) * 5


@pytest.mark.parametrize(("scheduler", "partition"), [c for c in CASES if c[0] != "slurm"])
def test_workers_carry_the_platform_contract(scheduler: str, partition: str) -> None:
    part = PROD.partition(partition)
    it = catalog.get(part.instance_types[0])
    expected_efa = it.efa_max_interfaces  # every layout of a partition gets its type's full EFA count
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    workload = next(o for o in objects if o["kind"] not in ("ConfigMap", "Service"))
    workers = accelerator_containers(workload)
    assert workers, "the workload has accelerator workers"
    for c in workers:
        res = c["resources"]
        for side in ("requests", "limits"):
            assert res[side][it.accelerator_resource] == it.accelerator_count
            assert res[side][names.EFA_RESOURCE] == expected_efa
            assert res[side]["memory"].endswith("Gi")
        assert "hugepages-2Mi" not in res["limits"], "off by default on Karpenter nodes"
        assert res["requests"]["memory"] == res["limits"]["memory"]
    specs = [s for s in pod_specs(workload["spec"]) if "nodeSelector" in s]
    assert specs
    for s in specs:
        if "nodeSelector" in s:
            assert s["nodeSelector"] == {names.PARTITION_LABEL: partition, INSTANCE_TYPE_LABEL: it.name}
            assert {"key": it.accelerator_resource, "operator": "Equal", "value": "true", "effect": "NoSchedule"} in s[
                "tolerations"
            ]
            vols = {v["name"]: v for v in s["volumes"]}
            assert vols["fsx"]["persistentVolumeClaim"]["claimName"] == names.FSX_PVC
            assert vols["shm"]["emptyDir"]["medium"] == "Memory"


def _templates(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        if "spec" in node and isinstance(node["spec"], dict) and "nodeSelector" in node["spec"]:
            found.append(node)
        for v in node.values():
            found += _templates(v)
    elif isinstance(node, list):
        for v in node:
            found += _templates(v)
    return found


@pytest.mark.parametrize(("scheduler", "partition"), [c for c in CASES if c[0] != "slurm"])
def test_accelerator_pods_are_not_disrupted_and_pass_pod_security_baseline(scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    workload = next(o for o in objects if o["kind"] not in ("ConfigMap", "Service"))
    templates = _templates(workload["spec"])
    assert templates
    for t in templates:
        assert t["metadata"]["annotations"][DO_NOT_DISRUPT] == "true"
    for spec in pod_specs(workload["spec"]):
        assert not spec.get("hostNetwork") and not spec.get("hostIPC") and not spec.get("hostPID")
        assert not any("hostPath" in v for v in spec.get("volumes", []))
        for c in spec["containers"]:
            sc = c.get("securityContext")
            assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert set(sc["capabilities"].get("add", [])) <= BASELINE_CAPS
            assert sc["seccompProfile"] == {"type": "RuntimeDefault"}


def test_slurm_script_for_every_partition() -> None:
    for part in PROD.partitions:
        text = render_sbatch(spec_for(part.name), PROD, FakePlanner())
        assert f"#SBATCH --partition={part.name}\n" in text and "#SBATCH --exclusive\n" in text
        assert '--rdzv_backend=c10d --rdzv_endpoint="${head_node_ip}":29500' in text
        assert ("#SBATCH --gpus-per-node=8" in text) == (part.accelerator == "gpu")
        # slurmd pods mount FSx at schedulers.slurm.sharedMountPath, so the script's paths live there.
        assert f"--checkpoint_dir={PROD.schedulers.slurm.shared_mount_path}/checkpoints/" in text
        assert "/fsx/" not in text


def test_hugepages_are_requested_only_when_asked() -> None:
    objects = render(spec_for("gpu-h100", hugepages_2mi="5120Mi"), PROD, "volcano", FakePlanner())
    (worker,) = accelerator_containers(objects[-1])
    assert (
        worker["resources"]["requests"]["hugepages-2Mi"] == worker["resources"]["limits"]["hugepages-2Mi"] == "5120Mi"
    )
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert "FI_EFA_USE_HUGE_PAGE" not in env
    assert validation.validate_object(objects[-1], PROD.cluster.kubernetes_version) == []


def test_mpi_workers_get_only_the_capabilities_sshd_needs() -> None:
    (job,) = [o for o in render(spec_for("gpu-a100"), PROD, "mpijob", FakePlanner()) if o["kind"] == "MPIJob"]
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["/usr/sbin/sshd", "-De"]
    assert set(worker["securityContext"]["capabilities"]["add"]) == {
        "AUDIT_WRITE",
        "NET_BIND_SERVICE",
        "SETGID",
        "SETUID",
        "SYS_CHROOT",
    }
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert "nodeSelector" not in launcher, "the launcher needs no accelerator node"
    assert "add" not in launcher["containers"][0]["securityContext"]["capabilities"]


def test_trainium_job_precompiles_into_the_fsx_cache_then_trains() -> None:
    objects = render(spec_for("trainium", lora_rank=16), PROD, "trainium", FakePlanner())
    service, job = objects
    assert service["spec"]["clusterIP"] == "None" and job["spec"]["template"]["spec"]["subdomain"] == "run"
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    body = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    lines = body.splitlines()
    pre = next(i for i, line in enumerate(lines) if "neuron_parallel_compile torchrun" in line)
    train = next(i for i, line in enumerate(lines) if line.startswith("exec torchrun"))
    assert pre < train
    assert "--nproc_per_node=32" in lines[train] and '--node_rank="${JOB_COMPLETION_INDEX}"' in lines[train]
    assert "--master_addr=run-0.run" in lines[train] and "--lora_rank=16" in lines[train]
    assert "--max_steps=10" in lines[pre]
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["NEURON_RT_NUM_CORES"] == "32"
    assert "--cache_dir=/fsx/neuron-cache" in env["NEURON_CC_FLAGS"]
    assert env["NEURON_COMPILE_CACHE_URL"] == "/fsx/neuron-cache"


def test_volcano_gang_restarts_the_whole_job_in_the_partition_queue() -> None:
    job = render(spec_for("gpu-h100", nodes=8), PROD, "volcano", FakePlanner())[-1]
    spec = job["spec"]
    assert spec["schedulerName"] == "volcano" and spec["queue"] == "gpu-h100"
    assert spec["minAvailable"] == spec["tasks"][0]["replicas"] == spec["tasks"][0]["minAvailable"] == 8
    assert {(p["event"], p["action"]) for p in spec["policies"]} == {
        ("PodEvicted", "RestartJob"),
        ("PodFailed", "RestartJob"),
    }
    assert {"ssh", "svc"} <= set(spec["plugins"])


def test_trainjob_runtime_places_like_the_partition_runtime_the_schedulers_component_installs() -> None:
    from ekstrain.assembly.schedulers import operators

    installed = {r["metadata"]["name"]: r for r in operators.torch_runtimes(PROD)}
    for partition in ("gpu-a100", "gpu-h100"):
        runtime, job = render(spec_for(partition), PROD, "trainjob", FakePlanner())[-2:]
        assert job["spec"]["runtimeRef"] == {
            "apiGroup": "trainer.kubeflow.org",
            "kind": "TrainingRuntime",
            "name": "run-runtime",
        }
        assert runtime["kind"] == "TrainingRuntime" and runtime["metadata"]["name"] == "run-runtime"
        ((rj,), (crj,)) = (
            r["spec"]["template"]["spec"]["replicatedJobs"]
            for r in (runtime, installed[f"torch-distributed-{partition}"])
        )
        pod, cluster_pod = rj["template"]["spec"]["template"], crj["template"]["spec"]["template"]
        assert rj["name"] == crj["name"] == "node" and pod["spec"]["containers"][0]["name"] == "node"
        assert rj["template"]["metadata"] == crj["template"]["metadata"], "the trainer step label"
        assert cluster_pod["spec"]["nodeSelector"].items() <= pod["spec"]["nodeSelector"].items()
        assert pod["spec"]["tolerations"] == cluster_pod["spec"]["tolerations"]
        assert pod["metadata"]["annotations"] == {DO_NOT_DISRUPT: "true"}
        assert job["spec"]["trainer"]["numNodes"] == 2 and job["spec"]["trainer"]["numProcPerNode"] == 8


def test_ray_head_is_cpu_only_and_workers_are_whole_gpu_nodes() -> None:
    objects = render(spec_for("gpu-a100", nodes=4), PROD, "rayjob", FakePlanner())
    cm, job = objects
    assert "ray_train.py" in cm["data"] and "TorchTrainer" in cm["data"]["ray_train.py"]
    assert '"num_workers": 32' in cm["data"]["ray_train.py"]
    cluster = job["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]
    assert head["rayStartParams"]["num-cpus"] == "0" and "nodeSelector" not in head["template"]["spec"]
    (group,) = cluster["workerGroupSpecs"]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 4
    assert job["spec"]["entrypoint"] == "python /etc/ekstrain/ray_train.py"
    compile(cm["data"]["ray_train.py"], "ray_train.py", "exec")
