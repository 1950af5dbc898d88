"""MPI operator, Kubeflow Trainer (or the legacy training operator) and KubeRay."""

from __future__ import annotations

import pulumi
from conftest import cfg_with, needs_upstream, releases, run_program, run_stack, stack_config

from ekstrain import validation, versions
from ekstrain.assembly.schedulers import operators
from ekstrain.components.operators import Operators, OperatorsArgs
from ekstrain.infra.offline import Recording

RELEASE = "kubernetes:helm.sh/v3:Release"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def test_mpi_operator_installs_the_pinned_v2beta1_manifest(prod_recording: Recording) -> None:
    (mpi,) = prod_recording.of_type("kubernetes:yaml/v2:ConfigFile")
    assert mpi.name == "operators-mpi-operator" and mpi.remote
    assert mpi.inputs["file"] == (
        "https://raw.githubusercontent.com/kubeflow/mpi-operator/v0.8.0/deploy/v2beta1/mpi-operator.yaml"
    )
    assert versions.MPI_OPERATOR_VERSION == "v0.8.0"


def test_kuberay_uses_volcano_when_enabled(prod_recording: Recording) -> None:
    rel = releases(prod_recording)
    ray = rel["kuberay-operator"]
    assert (ray.inputs["version"], ray.inputs["namespace"]) == ("1.7.0", "kuberay-system")
    assert ray.inputs["values"] == {
        "nodeSelector": {"ekstrain.io/node-role": "system"},
        "batchScheduler": {"name": "volcano"},
    }
    volcano_component = prod_recording.one("ekstrain:volcano:Volcano", "volcano")
    cluster = prod_recording.one("ekstrain:cluster:Cluster", "cluster")
    # depends_on a component waits for all of its children: the cluster's, Volcano's chart and every queue.
    volcano = {r.urn for r in prod_recording.children_of(volcano_component.urn)}
    assert len(volcano) == 10  # the chart, one queue per partition, three admission policies and their bindings
    assert set(ray.dependencies) == volcano | {r.urn for r in prod_recording.children_of(cluster.urn)}


def test_kuberay_without_volcano_has_no_batch_scheduler() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))
    assert "batchScheduler" not in operators.kuberay_values(cfg)
    rec = run_stack(cfg)
    ray = releases(rec)["kuberay-operator"]
    assert "batchScheduler" not in ray.inputs["values"]
    cluster = rec.one("ekstrain:cluster:Cluster", "cluster")
    assert set(ray.dependencies) == {r.urn for r in rec.children_of(cluster.urn)}  # the cluster only


def test_trainer_chart_and_per_partition_torch_runtimes(prod_recording: Recording) -> None:
    trainer = releases(prod_recording)["kubeflow-trainer"]
    assert (trainer.inputs["chart"], trainer.inputs["version"], trainer.inputs["namespace"]) == (
        "oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
        "2.3.0",
        "kubeflow-system",
    )
    assert trainer.inputs["values"]["jobset"] == {"install": True}
    runtimes = {r.inputs["metadata"]["name"]: r for r in prod_recording.of_type(RUNTIME)}
    assert sorted(runtimes) == [
        "torch-distributed-gpu-a100",
        "torch-distributed-gpu-h100",
        "torch-distributed-trainium",
    ]
    h100 = runtimes["torch-distributed-gpu-h100"]
    assert h100.dependencies == [trainer.urn]
    assert h100.inputs["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    (job,) = h100.inputs["spec"]["template"]["spec"]["replicatedJobs"]
    pod = job["template"]["spec"]["template"]["spec"]
    assert job["name"] == "node"
    assert pod["nodeSelector"] == {"ekstrain.io/partition": "gpu-h100"}  # every NodePool of the partition
    # p5.48xlarge: 192 vCPUs less 12 and 85 % of 2048 GiB, as `job render` asks (Guaranteed, issue 34)
    assert pod["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "8",
        "vpc.amazonaws.com/efa": "32",
        "cpu": "180",
        "memory": "1740Gi",
    }
    assert pod["containers"][0]["resources"]["requests"] == pod["containers"][0]["resources"]["limits"]
    trn_job = runtimes["torch-distributed-trainium"].inputs["spec"]["template"]["spec"]["replicatedJobs"][0]
    trn_pod = trn_job["template"]["spec"]["template"]["spec"]
    assert trn_pod["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]


def test_legacy_training_operator_flavor() -> None:
    cfg = cfg_with(
        lambda s: s["schedulers"].update(mpiOperator={"enabled": False}, kubeflow={"flavor": "training-operator"})
    )
    rec = run_stack(cfg)
    (kustomize,) = rec.of_type("kubernetes:kustomize/v2:Directory")
    assert kustomize.inputs["directory"] == (
        "https://github.com/kubeflow/trainer//manifests/overlays/standalone?ref=v1.9.4"
    )
    assert rec.of_type("kubernetes:yaml/v2:ConfigFile") == []
    assert "kubeflow-trainer" not in releases(rec) and rec.of_type(RUNTIME) == []


@needs_upstream
def test_values_and_runtimes_validate() -> None:
    cfg = stack_config("prod")
    assert (
        validation.unknown_value_keys(operators.kuberay_values(cfg), validation.chart_defaults("kuberay-operator"))
        == []
    )
    assert (
        validation.unknown_value_keys(operators.trainer_values(), validation.chart_defaults("kubeflow-trainer")) == []
    )
    for rt in operators.torch_runtimes(cfg):
        assert validation.validate_object(rt, "1.34") == []


def test_operators_take_dependencies_through_opts() -> None:
    # GIVEN Operators built with every install and opts=ResourceOptions(depends_on=[dep])
    def program() -> None:
        dep = pulumi.CustomResource("test:index:Scheduler", "volcano", {})
        Operators(
            "operators",
            OperatorsArgs(
                mpi_operator=True,
                kubeflow_flavor="trainer",
                trainer_chart=versions.DEFAULT_CHARTS["kubeflow-trainer"],
                kuberay_chart=versions.DEFAULT_CHARTS["kuberay-operator"],
            ),
            opts=pulumi.ResourceOptions(depends_on=[dep]),
        )

    # WHEN recorded
    rec = run_program(program)
    dep = rec.one("test:index:Scheduler", "volcano").urn
    # THEN the manifest and both charts wait for it (the runtimes wait for the trainer chart)
    for typ, name in (
        ("kubernetes:yaml/v2:ConfigFile", "operators-mpi-operator"),
        (RELEASE, "operators-kubeflow-trainer"),
        (RELEASE, "operators-kuberay"),
    ):
        assert rec.one(typ, name).dependencies == [dep], (typ, name)
