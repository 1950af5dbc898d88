"""``ekstrain simulate``: the empty-cluster scheduling simulation proves workloads start (or says why not).

GIVEN prod rendered offline (manifests + the device-plugin, Slurm and Volcano charts through helm template)
WHEN training workloads are simulated against it
THEN every template on every prod partition starts, and the seeded bad jobs are blocked with the reason.
"""

from __future__ import annotations

import copy
import dataclasses
import pathlib
import re
from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import render, render_sbatch
from ekstrain.cli.main import main
from ekstrain.simulate import engine, volcano
from ekstrain.simulate.nodes import capacity, kube_reserved_cpu
from ekstrain.tooling import validation

PROD = stack_config("prod")
pytestmark = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


def _lines(cluster: engine.Cluster, objects: list[dict[str, Any]]) -> list[str]:
    return [b.line() for b in engine.simulate(cluster, objects).blocked]


def _worker(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["tasks"][0]["template"]["spec"]


PER_PARTITION = [
    (s, p.name)
    for p in PROD.partitions
    for s in (
        ("trainjob", "volcano", "trainium")
        if p.accelerator == "trainium"
        else ("trainjob", "volcano", "mpijob", "rayjob", "nccl-test")
    )
]


@pytest.mark.parametrize(("scheduler", "partition"), PER_PARTITION)
def test_every_template_starts_on_every_prod_partition(cluster: engine.Cluster, scheduler: str, partition: str) -> None:
    objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
    result = engine.simulate(cluster, objects)
    assert result.blocked == [] and len(result.started) == 1, [b.line() for b in result.blocked]
    # the partition's NodePool: `<partition>`, or `<partition>-<types>` for one EFA layout of a mixed partition
    assert re.search(rf"-> {re.escape(partition)}(-[a-z0-9-]+)?/", result.started[0]), result.started[0]


def test_a_pytorchjob_without_its_operator_is_blocked(cluster: engine.Cluster) -> None:
    """GIVEN prod (Kubeflow Trainer v2 + MPI operator, no training-operator) WHEN a PyTorchJob is simulated
    THEN it is blocked: no CRD serves it (it used to say STARTS, a false green)."""
    assert "pytorchjobs.kubeflow.org" not in (cluster.crds or set())
    assert {"mpijobs.kubeflow.org", "trainjobs.trainer.kubeflow.org", "jobs.batch.volcano.sh"} <= (
        cluster.crds or set()
    )
    objects = render(spec_for("gpu-h100"), PROD, "pytorchjob", FakePlanner())
    lines = _lines(cluster, objects)
    assert any("installs no pytorchjobs.kubeflow.org CRD" in line for line in lines), lines


def test_todays_volcano_config_blocks_every_gang(cluster: engine.Cluster) -> None:
    job = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())
    # The chart default config: enqueue + overcommit.
    old = dataclasses.replace(cluster, scheduler_config=volcano.parse_config(None))
    (line,) = _lines(old, job)
    assert line.startswith("BLOCKED Job/run *: Volcano enqueue") and "nvidia.com/gpu is 0" in line
    assert _lines(cluster, job) == []  # the rendered config (no enqueue) admits it


def test_33_efa_on_p5_is_blocked(cluster: engine.Cluster) -> None:
    objects = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())
    for side in ("requests", "limits"):
        _worker(objects[-1])["containers"][0]["resources"][side]["vpc.amazonaws.com/efa"] = 33
    (line,) = _lines(cluster, objects)
    assert "worker x2: vpc.amazonaws.com/efa 33 > 32 allocatable on p5.48xlarge (gpu-h100)" in line


def test_gpu_job_without_the_toleration_is_blocked(cluster: engine.Cluster) -> None:
    objects = render(spec_for("gpu-a100"), PROD, "volcano", FakePlanner())
    _worker(objects[-1])["tolerations"] = []
    (line,) = _lines(cluster, objects)
    assert "untolerated taint nvidia.com/gpu=true:NoSchedule" in line


def test_gpus_exist_only_where_the_device_plugin_runs(cluster: engine.Cluster) -> None:
    no_plugin = dataclasses.replace(
        cluster, daemonsets=[(n, s) for n, s in cluster.daemonsets if "nvidia-device-plugin" not in n]
    )
    (line,) = _lines(no_plugin, render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner()))
    assert "nvidia.com/gpu 8 requested but no device-plugin DaemonSet for it runs on gpu-h100 nodes" in line


def _without_queue_bounds(cluster: engine.Cluster) -> engine.Cluster:
    """Queues without capability and no admission: what the NodePool limits alone decide."""
    config = {**cluster.scheduler_config, "actions": "allocate, backfill"}
    return dataclasses.replace(cluster, queues={q: {} for q in cluster.queues}, scheduler_config=config)


def test_the_default_queue_gets_nothing_the_partitions_guarantee(cluster: engine.Cluster) -> None:
    # GIVEN every partition's resources guaranteed to its queue (capacity plugin) WHEN a gang names the
    # chart's default queue THEN admission keeps it Pending (no pod, no node launched), saying why.
    objects = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())
    objects[-1]["spec"]["queue"] = "default"
    (line,) = _lines(cluster, objects)
    assert "Volcano enqueue (capacity)" in line and "queue default realCapability nvidia.com/gpu 0" in line


def test_nodepool_limits_block_a_job_larger_than_the_partition(cluster: engine.Cluster) -> None:
    objects = render(spec_for("gpu-h100"), PROD, "volcano", FakePlanner())
    objects[-1]["spec"]["tasks"][0]["replicas"] = 9
    assert "queue gpu-h100 capability" in " ".join(_lines(cluster, objects))  # Volcano stops it first
    assert "NodePool gpu-h100 limit" in " ".join(_lines(_without_queue_bounds(cluster), objects))


def test_slurm_jobs_need_nodeset_replicas(cluster: engine.Cluster) -> None:
    # GIVEN prod, whose gpu-a100 NodeSet keeps no standing slurmd pod (schedulers.slurm.nodesetReplicas: 0)
    assert PROD.schedulers.slurm.nodeset_replicas == {"gpu-a100": 0}
    assert cluster.nodesets["gpu-a100"]["spec"]["replicas"] == 0  # the chart-rendered NodeSet carries it
    text = render_sbatch(spec_for("gpu-a100"), PROD, FakePlanner())
    sbatch = {"kind": "ConfigMap", "metadata": {"name": "run"}, "data": {"run.sbatch": text}}
    # WHEN a 2-node sbatch job is simulated on 4 standing pods THEN it starts on them
    standing = copy.deepcopy(cluster.nodesets)
    standing["gpu-a100"]["spec"]["replicas"] = 4
    assert _lines(dataclasses.replace(cluster, nodesets=standing), [sbatch]) == []
    # and at 0 replicas KEDA's ScaledObject (rendered for every NodeSet) scales it: it starts too
    assert cluster.autoscaled == frozenset(cluster.nodesets)
    assert _lines(cluster, [sbatch]) == []
    # WHEN nothing scales the NodeSet (schedulers.slurm.autoscale: false) THEN Slurm holds it, naming the fix
    manual = dataclasses.replace(cluster, autoscaled=frozenset())
    (line,) = _lines(manual, [sbatch])
    assert "NodeSet slurm-worker-gpu-a100 has 0 replicas < 2 nodes asked and nothing scales it" in line
    assert "schedulers.slurm.autoscale: true" in line
    # unless the documented `kubectl scale nodeset` comes first (--scale-nodesets)
    assert _lines(dataclasses.replace(manual, scale_nodesets=True), [sbatch]) == []


def test_standing_slurmd_pods_count_against_the_nodepool_limits(cluster: engine.Cluster) -> None:
    # GIVEN 4 of gpu-a100's 16 nodes held by slurmd pods (nodesetReplicas {gpu-a100: 4})
    objects = render(spec_for("gpu-a100"), PROD, "volcano", FakePlanner())
    standing = copy.deepcopy(cluster.nodesets)
    standing["gpu-a100"]["spec"]["replicas"] = 4
    unbounded = _without_queue_bounds(dataclasses.replace(cluster, nodesets=standing))
    # WHEN a gang asks the other 12 THEN it starts; 13 exceed the NodePool's limits
    objects[-1]["spec"]["tasks"][0]["replicas"] = 12
    assert _lines(unbounded, objects) == []
    objects[-1]["spec"]["tasks"][0]["replicas"] = 13
    assert _lines(unbounded, objects) == [
        "BLOCKED Job/run *: NodePool gpu-a100 limit nodes=16 < 17 needed",
        "BLOCKED Job/run *: NodePool gpu-a100 limit nvidia.com/gpu=128 < 136 needed",
    ]


def test_chart_images_are_pinned(prod_build: pathlib.Path) -> None:
    CRD = "CustomResourceDefinition"  # noqa: N806
    from ekstrain.simulate.load import read_objects

    images = [
        c["image"]
        # every chart object but the CRDs (16 MB of schemas, no image in them)
        for o in read_objects(sorted(p for p in (prod_build / "charts").rglob("*.yaml") if p.name.split("-")[0] != CRD))
        for spec in [o.get("spec") or {}]
        for key in ("slurmd", "logfile", "initconf")
        if key in spec
        for c in [spec[key]]
        if isinstance(c.get("image"), str)
    ]
    images += [
        c["image"]
        for o in read_objects(sorted((prod_build / "charts").rglob("DaemonSet-*.yaml")))
        for c in o["spec"]["template"]["spec"]["containers"]
    ]
    assert images and [i for i in images if i.endswith(":latest") or ":" not in i.rsplit("/", 1)[-1]] == []


def test_karpenter_allocatable_formulas() -> None:
    from ekstrain.facts import catalog

    # types.go KubeReservedResources: 60m + 10m + 2 x 5m + 188 x 2.5m = 550m for 192 vCPUs.
    assert kube_reserved_cpu(192) == pytest.approx(0.55)
    cap = capacity(catalog.get("p5.48xlarge"), efa_attached=None)
    assert cap["memory"] == (2048 * 1024 - 157287) * 2**20  # 7.5 % VM overhead, rounded up in MiB
    assert cap["vpc.amazonaws.com/efa"] == 32 and cap["pods"] == 100
    assert capacity(catalog.get("trn1n.32xlarge"), efa_attached=8)["vpc.amazonaws.com/efa"] == 8


def test_cli_reports_blocked_and_exit_codes(
    prod_build: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.yaml"
    bad = tmp_path / "bad.yaml"
    import yaml

    good.write_text(yaml.safe_dump_all(render(spec_for("trainium"), PROD, "trainjob", FakePlanner())))
    objects = render(spec_for("gpu-a100"), PROD, "volcano", FakePlanner())
    _worker(objects[-1])["tolerations"] = []
    bad.write_text(yaml.safe_dump_all(objects))
    assert main(["simulate", "--stack", "prod", "--build", str(prod_build), str(good)]) == 0
    assert "STARTS TrainJob/run: node x2 -> trainium-trn1/trn1.32xlarge" in capsys.readouterr().out
    assert main(["simulate", "--stack", "prod", "--build", str(prod_build), str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.count("BLOCKED") == 1 and "BLOCKED Job/run worker x2" in out
    assert main(["simulate", "--stack", "prod", "--build", str(tmp_path / "none")]) == 2


def test_make_examples_output_starts(
    prod_build: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_jobs_examples import REAL_PLANNER, _commands

    from ekstrain.assembly.jobs import planning

    if not REAL_PLANNER:
        pytest.skip("the examples need the real planner")
    out = tmp_path / "examples"
    for argv in _commands(out):
        assert main([a for a in argv if a != "--validate"]) == 0, argv
    assert planning.RealPlanner is not None
    capsys.readouterr()
    # Prod keeps no standing slurmd pod, and KEDA scales each NodeSet from Slurm's queue (schedulers.slurm.autoscale):
    # the 4-node sbatch example starts with no manual `kubectl scale` (no --scale-nodesets).
    assert main(["simulate", "--stack", "prod", "--build", str(prod_build), str(out)]) == 0
    started = capsys.readouterr().out
    # 10 examples; each NodeSet at 0 replicas is capacity that could start if scaled, not a workload
    assert "10 workloads start, 0 blocked; 3 Slurm NodeSets at 0 replicas could start if scaled" in started
    assert "STARTS sbatch/llama3-70b-lora.sbatch: slurmd x4 -> gpu-a100/p4d.24xlarge" in started
    assert "STARTS Job/molmim-pretrain: worker x2 -> gpu-h100/p5.48xlarge" in started
    assert "CAPACITY Pod/slurm-worker-gpu-h100-0: pod x1 -> gpu-h100/p5.48xlarge (NodeSet at 0" in started
    assert "STARTS Job/llama3-70b-megatron: worker x8 -> gpu-h100/p5.48xlarge" in started
