"""TrainingJob registers each rendered object as one child resource with the rendered body."""

from __future__ import annotations

from conftest import run_program, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import health_check, render
from ekstrain.components.jobs import TrainingJob, TrainingJobArgs

PROD = stack_config("prod")


def test_volcano_run_becomes_configmap_then_custom_resource() -> None:
    args = TrainingJobArgs(objects=render(spec_for("gpu-a100", framework="deepspeed"), PROD, "volcano", FakePlanner()))
    rec = run_program(lambda: TrainingJob("llama", args))
    comp = rec.one("ekstrain:jobs:TrainingJob", "llama")
    children = list(rec.children_of(comp.urn))
    assert [(c.type, c.name) for c in children] == [
        ("kubernetes:core/v1:ConfigMap", "llama-configmap-run-launch"),
        ("kubernetes:batch.volcano.sh/v1alpha1:Job", "llama-job-run"),
    ]
    job = children[1].inputs
    assert job["metadata"]["name"] == "run" and job["metadata"]["namespace"] == "training"
    assert job["spec"]["queue"] == "gpu-a100" and job["spec"]["minAvailable"] == 2
    assert job["spec"] == args.objects[1]["spec"]


def test_trainium_run_registers_service_and_builtin_job() -> None:
    args = TrainingJobArgs(objects=render(spec_for("trainium"), PROD, "trainium", FakePlanner()))
    rec = run_program(lambda: TrainingJob("trn", args))
    types = [r.type for r in rec.children_of(rec.one("ekstrain:jobs:TrainingJob", "trn").urn)]
    assert types == ["kubernetes:core/v1:Service", "kubernetes:batch/v1:Job"]
    job = rec.one("kubernetes:batch/v1:Job", "trn-job-run").inputs
    assert job["spec"]["completionMode"] == "Indexed"


def test_health_checks_for_every_prod_partition() -> None:
    def program() -> None:
        for part in PROD.partitions:
            TrainingJob(f"nccl-{part.name}", TrainingJobArgs(objects=health_check(PROD, part.name)))

    rec = run_program(program)
    mpijobs = rec.of_type("kubernetes:kubeflow.org/v2beta1:MPIJob")
    assert sorted(r.inputs["metadata"]["name"] for r in mpijobs) == [
        "nccl-check-gpu-a100",
        "nccl-check-gpu-h100",
        "nccl-check-trainium",
    ]
