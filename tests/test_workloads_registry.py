"""The workload registry gives what the readers once kept in their own tables (ekstrain/workloads).

GIVEN the registry of the shipped kinds
THEN the CRD each kind needs, the operator flags that gang a kind, the job-kind label per scheduler, the log
agent's rank labels and the diff's Deployment rule are the values the simulator, job logs, the log agent and
the diff used before the kinds were described once; and every kind's pod-template paths find the templates the
verifiers' generic walk finds in the examples' objects.
"""

from __future__ import annotations

from typing import Any

import pytest

from ekstrain.assembly import logs
from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.diff import rules
from ekstrain.workloads import registry


def _obj(api_version: str, kind: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec or {}}


@pytest.mark.parametrize(
    ("api_version", "kind", "crd"),
    [
        ("kubeflow.org/v2beta1", "MPIJob", "mpijobs.kubeflow.org"),
        ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs.kubeflow.org"),
        ("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs.trainer.kubeflow.org"),
        ("ray.io/v1", "RayJob", "rayjobs.ray.io"),
        ("ray.io/v1", "RayCluster", "rayclusters.ray.io"),
        ("batch.volcano.sh/v1alpha1", "Job", "jobs.batch.volcano.sh"),
        ("batch/v1", "Job", None),
        ("v1", "Pod", None),
        ("apps/v1", "Deployment", None),
        ("example.com/v1", "MPIJob", None),  # another group's MPIJob needs no kubeflow CRD
    ],
)
def test_each_kind_names_the_crd_it_needs(api_version: str, kind: str, crd: str | None) -> None:
    assert registry.crd_of(_obj(api_version, kind)) == crd


def test_the_readers_tables_come_from_the_kinds() -> None:
    assert registry.gang_flags() == {
        "--gang-scheduling=volcano": "MPIJob",
        "--gang-scheduler-name=volcano": "PyTorchJob",
    }
    assert dict(joblogs.JOB_KINDS) == {
        "mpijob": "MPIJob",
        "pytorchjob": "PyTorchJob",
        "trainjob": "TrainJob",
        "volcano": "VolcanoJob",
        "rayjob": "RayJob",
        "raycluster": "RayCluster",
        "trainium": "IndexedJob",
        "slurm": "sbatch",
        "nccl-test": "MPIJob",
        "bionemo": "VolcanoJob",
    }
    assert logs.FIELDS["rank"][:3] == (
        "label:training.kubeflow.org/replica-index",
        "label:batch.kubernetes.io/job-completion-index",
        "label:volcano.sh/task-index",
    )
    assert rules.REPLACE_ON_CHANGE["kubernetes:apps/v1:Deployment"] == ("spec.selector",)


def test_a_job_is_batchs_or_volcanos_by_its_group_and_checked_by_its_shape() -> None:
    batch = registry.lookup(_obj("batch/v1", "Job"))
    volcano = registry.lookup(_obj("batch.volcano.sh/v1alpha1", "Job"))
    assert batch is not None and volcano is not None and batch is not volcano
    assert registry.lookup(_obj("v1", "Job")) is None  # neither group: no controller creates its pods
    # before the apiVersion is trusted, the simulator's input checks pick by shape
    assert registry.shape_of({"kind": "Job", "spec": {"tasks": []}}) is volcano
    assert registry.shape_of({"kind": "Job", "spec": {"template": {}}}) is batch


def test_a_notebook_is_a_pod_with_kubespawners_label() -> None:
    pod = _obj("v1", "Pod")
    notebook = {**pod, "metadata": {"name": "x", "labels": {"component": "singleuser-server"}}}
    assert registry.lookup(pod) is not registry.lookup(notebook)
    described = registry.lookup(notebook)
    assert described is not None and described.resumes(notebook) == (False, "a notebook")


def test_a_kubeflow_kinds_templates_are_found_at_its_replica_specs() -> None:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    obj = _obj(
        "kubeflow.org/v2beta1",
        "MPIJob",
        {"mpiReplicaSpecs": {"Launcher": {"template": template}, "Worker": {"replicas": 2, "template": template}}},
    )
    kind = registry.lookup(obj)
    assert kind is not None
    assert [t.path for t in kind.templates(obj)] == [
        "spec.mpiReplicaSpecs.Launcher.template.spec",
        "spec.mpiReplicaSpecs.Worker.template.spec",
    ]
