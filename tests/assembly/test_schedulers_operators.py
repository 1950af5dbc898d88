"""MPI operator, Kubeflow Trainer (or the legacy training operator) and KubeRay."""

from __future__ import annotations

import hashlib
import pathlib

import pulumi
import pytest
import yaml
from conftest import REPO, cfg_with, needs_upstream, releases, run_program, stack_config
from support.programs import shared_run

from ekstrain.assembly.schedulers import mpi_operator, operators
from ekstrain.components.operators import Operators, OperatorsArgs
from ekstrain.facts import versions
from ekstrain.files import paths
from ekstrain.infra.offline import Recording
from ekstrain.stacks.errors import ConfigError
from ekstrain.tooling import validation

RELEASE = "kubernetes:helm.sh/v3:Release"
RUNTIME = "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime"


def _crd() -> dict:
    return mpi_operator.mpijob_crd(validation.upstream_dir())


@needs_upstream
def test_mpi_operator_installs_upstreams_v2beta1_objects_one_by_one(prod_recording: Recording) -> None:
    # GIVEN prod (MPI operator and Volcano on) WHEN recorded
    # THEN nothing is fetched at deploy time: no ConfigFile, the install's objects are registered one by one
    assert prod_recording.of_type("kubernetes:yaml/v2:ConfigFile") == []
    objects = operators.mpi_operator_objects(operators.gang_args(stack_config("prod")), _crd())
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Namespace", "mpi-operator"),
        ("CustomResourceDefinition", "mpijobs.kubeflow.org"),
        ("ServiceAccount", "mpi-operator"),
        ("ClusterRole", "kubeflow-mpijobs-admin"),
        ("ClusterRole", "kubeflow-mpijobs-edit"),
        ("ClusterRole", "kubeflow-mpijobs-view"),
        ("ClusterRole", "mpi-operator"),
        ("ClusterRoleBinding", "mpi-operator"),
        ("Deployment", "mpi-operator"),
    ]
    # every object carries the install file's kustomize labels
    assert all(o["metadata"]["labels"]["kustomize.component"] == "mpi-operator" for o in objects)
    (crd,) = prod_recording.of_type("kubernetes:yaml/v2:ConfigGroup")
    assert crd.name == "operators-mpi-operator-customresourcedefinition-mpijobs.kubeflow.org"
    assert set(crd.inputs) == {"objs"} and crd.inputs["objs"] == [objects[1]]
    (deployment,) = [
        r for r in prod_recording.of_type("kubernetes:apps/v1:Deployment") if r.name.endswith("mpi-operator")
    ]
    # the Volcano gang flag is in what the render recorded, not patched at apply time
    (container,) = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["-alsologtostderr", "--lock-namespace=mpi-operator", "--gang-scheduling=volcano"]
    assert container["image"] == "mpioperator/mpi-operator:0.8.0" == versions.MPI_OPERATOR_IMAGE
    assert container["resources"] == operators.OPERATOR_RESOURCES
    assert container["securityContext"] == operators.MPI_OPERATOR_CONTAINER_SECURITY
    assert deployment.name == "operators-mpi-operator-deployment-mpi-operator"
    assert deployment.inputs == objects[-1]
    (role,) = [
        r
        for r in prod_recording.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.inputs["metadata"]["name"] == "kubeflow-mpijobs-admin"
    ]
    assert role.inputs["aggregationRule"] == {
        "clusterRoleSelectors": [
            {"matchLabels": {"rbac.authorization.kubeflow.org/aggregate-to-kubeflow-mpijobs-admin": "true"}}
        ]
    }
    assert versions.MPI_OPERATOR_VERSION == "v0.8.0"


@needs_upstream
def test_the_mpijob_crd_is_the_pinned_upstream_file_and_nothing_upstream_is_in_the_package() -> None:
    # GIVEN the upstream directory the render validates with WHEN the CRD is read
    upstream = validation.upstream_dir()
    assert upstream is not None
    data = (upstream / versions.MPIJOB_CRD).read_bytes()
    crd = _crd()
    # THEN it is that file with the install file's labels added, nothing else changed
    original = yaml.safe_load(data)
    assert crd["spec"] == original["spec"]
    assert crd["metadata"] == {**original["metadata"], "labels": mpi_operator.LABELS}
    # AND its pin is the row of scripts/upstream-pins.tsv (one pin, two readers)
    rows = [line.split("\t") for line in (REPO / "scripts/upstream-pins.tsv").read_text().splitlines()]
    (row,) = [r for r in rows if r[0] == versions.MPIJOB_CRD]
    assert row[2] == versions.MPI_OPERATOR_COMMIT and row[4].strip() == versions.MPIJOB_CRD_SHA256
    assert hashlib.sha256(data).hexdigest() == versions.MPIJOB_CRD_SHA256
    # AND the package ships no upstream install file
    assert not (paths.PACKAGE / "manifests").exists()
    assert "manifests/*.yaml" not in (REPO / "pyproject.toml").read_text()


def test_a_changed_mpijob_crd_is_refused_naming_the_key_and_the_fix() -> None:
    with pytest.raises(
        ConfigError, match=r"ekstrain:schedulers.mpiOperator.enabled: .*is not the pinned 78b0131f"
    ) as e:
        mpi_operator.crd_from_text(b"kind: CustomResourceDefinition\n", "x/mpijob.yaml")
    assert "fix: restore the pinned upstream file" in str(e.value) and "ekstrain upstream fetch" in str(e.value)


def test_without_the_upstream_directory_the_program_applies_the_vendored_crd(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN no upstream directory, or one without the MPIJob CRD
    (tmp_path / "crds").mkdir()
    vendored = mpi_operator.crd_from_text(mpi_operator.VENDORED.read_bytes(), "vendored")
    for found in (None, tmp_path):
        monkeypatch.setattr(validation, "upstream_dir", lambda found=found: found)
        # WHEN the CRD is read THEN it is the one shipped in the package (same pin)
        assert mpi_operator.mpijob_crd(validation.upstream_dir()) == vendored
    # AND a package without it (a damaged install) stops before registering anything, naming the key and the fix
    monkeypatch.setattr(mpi_operator, "VENDORED", tmp_path / "absent.yaml")
    with pytest.raises(ConfigError, match=r"ekstrain:schedulers.mpiOperator.enabled: the MPI operator's CRD") as e:
        mpi_operator.mpijob_crd(None)
    assert "reinstall ekstrain" in str(e.value) and "set ekstrain:schedulers.mpiOperator.enabled: false" in str(e.value)


def test_no_manifest_is_fetched_from_a_url_at_deploy_time(prod_recording: Recording, dev_recording: Recording) -> None:
    # GIVEN prod and dev WHEN recorded THEN no yaml/v2 ConfigFile (a file or URL the provider reads at deploy
    # time) and every ConfigGroup holds its objects inline
    for rec in (prod_recording, dev_recording):
        assert rec.of_type("kubernetes:yaml/v2:ConfigFile") == []
        assert rec.of_type("kubernetes:yaml/v1:ConfigFile") == []
        for group in rec.of_type("kubernetes:yaml/v2:ConfigGroup"):
            assert set(group.inputs) == {"objs"}, group.name
    # AND no source file of the program registers a ConfigFile or a ConfigGroup reading files/URLs
    for path in [*(REPO / "components").glob("*.py"), *(REPO / "infra").rglob("*.py")]:
        text = path.read_text()
        assert "ConfigFile(" not in text and "files=" not in text, path


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
    rec = shared_run(cfg)  # test_schedulers_toggles runs the same config (tests/support/programs.py)
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
    # p5.48xlarge: 192 vCPUs less 12 and 85 % of 2048 GiB, as `job render` asks (Guaranteed QoS)
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


# GIVEN a stack that asks for the legacy training operator WHEN its config is read THEN it is refused before any
# resource registers: its kustomization would be fetched from GitHub at deploy time, unchecked.
def test_legacy_training_operator_flavor_is_refused() -> None:
    for mpi in (False, True):
        with pytest.raises(ConfigError) as got:
            cfg_with(
                lambda s, mpi=mpi: s["schedulers"].update(
                    mpiOperator={"enabled": mpi}, kubeflow={"flavor": "training-operator"}
                )
            )
        assert "ekstrain:schedulers.kubeflow.flavor" in str(got.value)
        assert "fetched from GitHub at deploy time" in str(got.value) and "set flavor: trainer" in str(got.value)


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


STUB_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "mpijobs.kubeflow.org"},
}
"""Stands for the MPIJob CRD where only the wiring is tested."""


def test_the_mpi_operator_component_needs_its_crd() -> None:
    def program() -> None:
        Operators("operators", OperatorsArgs(mpi_operator=True))

    with pytest.raises(Exception, match="mpi_operator needs mpijob_crd"):
        run_program(program)


def test_an_unknown_kubeflow_flavor_is_refused_before_anything_registers() -> None:
    # GIVEN a library program with a misspelt flavor WHEN it runs THEN it fails naming the arg and the choices (it
    # used to install no Kubeflow operator, silently)
    def program() -> None:
        Operators("operators", OperatorsArgs(kubeflow_flavor="traner"))

    with pytest.raises(Exception, match=r"kubeflow_flavor 'traner': use one of trainer, training-operator, none"):
        run_program(program)


def test_operators_take_dependencies_through_opts() -> None:
    # GIVEN Operators built with every install and opts=ResourceOptions(depends_on=[dep])
    def program() -> None:
        dep = pulumi.CustomResource("test:index:Scheduler", "volcano", {})
        Operators(
            "operators",
            OperatorsArgs(
                mpi_operator=True,
                mpijob_crd=STUB_CRD,
                kubeflow_flavor="trainer",
                trainer_chart=versions.DEFAULT_CHARTS["kubeflow-trainer"],
                kuberay_chart=versions.DEFAULT_CHARTS["kuberay-operator"],
            ),
            opts=pulumi.ResourceOptions(depends_on=[dep]),
        )

    # WHEN recorded
    rec = run_program(program)
    dep = rec.one("test:index:Scheduler", "volcano").urn
    # THEN the manifest's first objects and both charts wait for it (the runtimes wait for the trainer chart)
    for typ, name in (
        ("kubernetes:yaml/v2:ConfigGroup", "operators-mpi-operator-customresourcedefinition-mpijobs.kubeflow.org"),
        ("kubernetes:core/v1:Namespace", "operators-mpi-operator-namespace-mpi-operator"),
        (RELEASE, "operators-kubeflow-trainer"),
        (RELEASE, "operators-kuberay"),
    ):
        assert rec.one(typ, name).dependencies == [dep], (typ, name)


def test_the_pinned_crd_is_parsed_once_and_each_caller_gets_its_own_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an empty parse memo and the vendored CRD's bytes
    monkeypatch.setattr(mpi_operator, "_parsed", {})
    data = mpi_operator.VENDORED.read_bytes()
    loads: list[int] = []
    real = mpi_operator.yaml.load
    monkeypatch.setattr(mpi_operator.yaml, "load", lambda *a, **k: loads.append(1) or real(*a, **k))
    # WHEN two callers read it
    first = mpi_operator.crd_from_text(data, "vendored")
    first["spec"]["names"]["kind"] = "changed by the first caller"
    second = mpi_operator.crd_from_text(data, "vendored")
    # THEN YAML was parsed once, the second copy is untouched by the first caller, and it is a fresh parse's result
    assert loads == [1]
    assert second["spec"]["names"]["kind"] == "MPIJob"
    monkeypatch.setattr(mpi_operator, "_parsed", {})
    assert mpi_operator.crd_from_text(data, "vendored") == second
    # AND a changed file is still refused (the memo is keyed by the pinned digest it checked)
    with pytest.raises(ConfigError, match="is not the pinned"):
        mpi_operator.crd_from_text(data + b"\n# edited\n", "edited")
