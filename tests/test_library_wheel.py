"""ekstrain as a library, from the built wheel: someone else's Pulumi program (tests/library_program: its own VPC,
its own top-level ``components`` package) imports the INSTALLED distribution, never this checkout, and builds a
Cluster and one GPU Partition on the mock engine. The wheel holds only ``ekstrain/`` (the symlinked layers as
real files), ``py.typed``, the policy pack and the reviewed findings; the library path loads no render-only
dependency; the render's paths resolve in the package (data) or the user's project (output, cache, key file).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from typing import Any

import pytest
from support import shared
from support.wheel import built_wheel, installed_wheel

REPO = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "library_program"
RENDER_ONLY = ("kubernetes_validate", "policy_sentry", "jsonschema")


@pytest.fixture(scope="module")
def wheel() -> pathlib.Path:
    """The checkout's wheel, built once for the session's wheel tests (tests/support/wheel.py)."""
    return built_wheel()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The wheel installed --no-deps into a target directory (its dependencies come from this venv), once for the
    session (tests/support/wheel.py)."""
    return installed_wheel(tmp_path_factory)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The user's project, one copy for the session: ``recording`` (one run of its program for every worker) names
    the files it imported by their path."""

    def copy() -> pathlib.Path:
        root = shared.session_dir(tmp_path_factory) / "library-user" / "acme-training"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(PROGRAM, root, ignore=shutil.ignore_patterns("__pycache__"))
        return root

    return shared.once(tmp_path_factory, "library-project", copy)


def run_installed(site: pathlib.Path, cwd: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python *args`` in ``cwd`` with only the installed wheel added to the path (never this checkout)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EKSTRAIN_", "PULUMI_"))}
    env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def recording(
    installed: pathlib.Path, project: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The user's program run once for the session (~3 CPU-s a run; pytest-xdist may split this module's tests)."""

    def run() -> dict[str, Any]:
        done = run_installed(installed, project, "mock_run.py")
        assert done.returncode == 0, done.stderr[-4000:]
        assert "Calling __str__ on an Output" not in done.stderr
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    return shared.once(tmp_path_factory, "library-recording", run)


def children(rec: dict[str, Any], parent: str) -> list[tuple[str, str]]:
    """(type, name) of the resources whose parent is the ekstrain component ``parent``."""
    urn = next(r["urn"] for r in rec["resources"] if r["name"] == parent and r["type"].startswith("ekstrain:"))
    return sorted((r["type"], r["name"]) for r in rec["resources"] if r["parent"] == urn)


def one(rec: dict[str, Any], name: str, type_: str | None = None) -> dict[str, Any]:
    found = [r for r in rec["resources"] if r["name"] == name and (type_ is None or r["type"] == type_)]
    assert len(found) == 1, (name, type_, [r["type"] for r in found])
    return found[0]


# ---- the distribution -------------------------------------------------------------------------------------------


def test_wheel_holds_only_the_ekstrain_namespace_with_real_files(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        infos = z.infolist()
        names = {i.filename for i in infos}
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"ekstrain", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert not [i.filename for i in infos if stat.S_ISLNK(i.external_attr >> 16)], "symlinks in the wheel"
    for layer in ("components", "infra", "stacks", "assembly"):  # symlinks in the checkout, files in the wheel
        expected = {f"ekstrain/{layer}/{p.relative_to(REPO / layer).as_posix()}" for p in (REPO / layer).rglob("*.py")}
        assert expected and expected <= names, sorted(expected - names)[:5]
    assert "ekstrain/py.typed" in names
    # the pins `ekstrain upstream fetch` verifies by, and the CRD the program applies (with its provenance)
    assert {f"ekstrain/pins/{n}" for n in ("upstream-pins.tsv", "chart-pins.tsv", "chart-files.tsv")} <= names
    assert {"ekstrain/vendor/SOURCES.md", "ekstrain/vendor/kubeflow.org/mpijob.yaml"} <= names
    pack = {n for n in names if n.startswith("ekstrain/policy_pack/")}
    assert pack == {
        "ekstrain/policy_pack/PulumiPolicy.yaml",
        "ekstrain/policy_pack/__main__.py",
        "ekstrain/policy_pack/requirements.txt",
        "ekstrain/policy_pack/config/dev.json",
        "ekstrain/policy_pack/config/prod.json",
        "ekstrain/policy_pack/ekstrain_policy/__init__.py",
        "ekstrain/policy_pack/ekstrain_policy/pack.py",
        "ekstrain/policy_pack/ekstrain_policy/rules.py",
    }
    assert {n for n in names if n.startswith("ekstrain/security/")} == {
        "ekstrain/security/iam-lint-accepted.yaml",
        "ekstrain/security/reviewed-runtime-objects.yaml",
        "ekstrain/security/reviewed-rbac-grants.yaml",
    }, "reviewed findings only: never the project's own key file or checkov skips"


def test_render_only_dependencies_are_an_extra(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [ln.split(":", 1)[1].strip() for ln in meta.splitlines() if ln.startswith("Requires-Dist:")]
    for dist in ("kubernetes-validate", "jsonschema", "policy-sentry"):
        (line,) = [r for r in requires if r.startswith(dist)]
        assert 'extra == "render"' in line, line
    assert any(r.startswith("pulumi-eks") and "extra" not in r for r in requires)


# ---- someone else's program on the installed wheel -------------------------------------------------------------


def test_the_program_imports_the_installed_wheel_and_its_own_components(
    recording: dict[str, Any], installed: pathlib.Path, project: pathlib.Path
) -> None:
    modules = recording["modules"]
    ours = {name: path for name, path in modules.items() if name.split(".")[0] == "ekstrain"}
    assert "ekstrain.components.cluster" in ours and "ekstrain.components.partitions" in ours
    outside = {n: p for n, p in ours.items() if not pathlib.Path(p).is_relative_to(installed)}
    assert not outside, f"imported from outside the installed wheel: {outside}"
    assert pathlib.Path(modules["components"]) == project / "components" / "__init__.py", "the user's package"
    assert str(REPO) not in recording["sys_path"] and str(REPO / "ekstrain") not in recording["sys_path"]
    assert not [m for m in modules if m.split(".")[0] in RENDER_ONLY], "the library path loads render-only deps"


def test_network_on_the_users_vpc_creates_only_the_efa_group_and_placement_group(recording: dict[str, Any]) -> None:
    assert children(recording, "net") == [
        ("aws:ec2/placementGroup:PlacementGroup", "net-pg-h100"),
        ("aws:ec2/securityGroup:SecurityGroup", "net-efa"),
        ("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "net-efa-self-egress"),
        ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "net-efa-self-ingress"),
    ]
    assert [r["name"] for r in recording["resources"] if r["type"] == "aws:ec2/vpc:Vpc"] == ["acme"]
    sg = one(recording, "net-efa")["inputs"]
    assert sg["vpcId"] == "vpc-0a1b2c3d4e5f60718" and sg["name"] == "acme-train-efa"
    assert sg["tags"] == {
        "Owner": "acme-ml",
        "Name": "acme-train-efa",
        "karpenter.sh/discovery": "acme-train",
        "ekstrain.io/sg-role": "efa",
    }
    pg = one(recording, "net-pg-h100")["inputs"]
    assert pg["name"] == "acme-train-h100" and pg["strategy"] == "cluster"


def test_cluster_runs_in_the_users_subnets(recording: dict[str, Any]) -> None:
    private = [one(recording, f"acme-private-us-east-2{z}")["id"] for z in "ab"]
    eks = one(recording, "eks", "eks:index:Cluster")
    assert eks["inputs"]["vpcId"] == "vpc-0a1b2c3d4e5f60718"
    assert eks["inputs"]["privateSubnetIds"] == private
    assert eks["inputs"]["name"] == "acme-train" and eks["inputs"]["version"] == "1.33"
    assert one(recording, "eks-system", "eks:index:ManagedNodeGroup")["inputs"]["subnetIds"] == private
    assert children(recording, "eks") == sorted(
        [
            ("aws:ec2/launchTemplate:LaunchTemplate", "eks-system"),
            ("aws:eks/addon:Addon", "eks-coredns"),
            ("aws:eks/addon:Addon", "eks-ebs-csi"),
            ("aws:eks/addon:Addon", "eks-pod-identity-agent"),
            ("aws:iam/role:Role", "eks-ebs-csi"),
            ("aws:iam/role:Role", "eks-system-node"),
            ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "eks-ebs-csi"),
            *[
                ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", f"eks-system-node-{p}")
                for p in (
                    "AmazonEC2ContainerRegistryPullOnly",
                    "AmazonEKSWorkerNodePolicy",
                    "AmazonEKS_CNI_Policy",
                    "AmazonSSMManagedInstanceCore",
                )
            ],
            ("aws:kms/alias:Alias", "eks-secrets"),
            ("aws:kms/key:Key", "eks-secrets"),
            ("eks:index:Cluster", "eks"),
            ("eks:index:ManagedNodeGroup", "eks-system"),
            ("kubernetes:storage.k8s.io/v1:StorageClass", "eks-gp3"),
            ("pulumi:providers:kubernetes", "eks-k8s"),
        ]
    )


def test_gpu_partition_selects_the_users_efa_subnet_and_groups_by_id(recording: dict[str, Any]) -> None:
    assert children(recording, "h100") == [
        ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "h100-nodeclass"),
        ("kubernetes:karpenter.sh/v1:NodePool", "h100-nodepool"),
    ]
    node_class = one(recording, "h100-nodeclass")
    spec = node_class["inputs"]["spec"]
    assert spec["subnetSelectorTerms"] == [{"id": one(recording, "acme-efa")["id"]}]
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-0c1a2b3c4d5e6f708"}, {"id": "sg-0e1f2a3b4c5d6e7f8"}]
    assert spec["placementGroupSelector"] == {"name": "acme-train-h100"}
    assert spec["role"] == "AcmeKarpenterNode"
    kinds = [i["interfaceType"] for i in spec["networkInterfaces"]]
    assert kinds == ["interface"] + ["efa-only"] * 32, "p5.48xlarge: the primary ENI + 32 EFA interfaces (catalog)"
    assert spec["tags"] == {"Owner": "acme-ml", "ekstrain.io/partition": "h100"}
    pool = one(recording, "h100-nodepool")["inputs"]["spec"]
    assert pool["limits"] == {"nvidia.com/gpu": "32", "nodes": "4"}
    zone = [r for r in pool["template"]["spec"]["requirements"] if r["key"] == "topology.kubernetes.io/zone"]
    assert zone == [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-2b"]}]
    k8s_provider = one(recording, "eks-k8s")
    assert (
        node_class["parent"] == one(recording, "h100")["urn"] and k8s_provider["type"] == "pulumi:providers:kubernetes"
    )


# ---- the render's paths outside the checkout ---------------------------------------------------------------------


def test_render_paths_resolve_in_the_package_or_the_users_project(
    installed: pathlib.Path, project: pathlib.Path
) -> None:
    probe = """
import json, pathlib, sys
from ekstrain.files import paths
from ekstrain.tooling import validation
from ekstrain.infra.verify import iam, pods, policy
from ekstrain.stacks import slurm_login
print(json.dumps({
    "rules": policy.rules.__file__,
    "pack": str(paths.POLICY_PACK / "PulumiPolicy.yaml"),
    "iam_accepted": str(iam.ACCEPTED_FILE),
    "reviewed": str(pods.REVIEWED_FILE),
    "project": str(paths.project_dir()),
    "cache": str(validation.cache_root()),
    "checkout": str(paths.CHECKOUT),
    "keys_root": str(slurm_login.project_root()),
    "render_main": str(__import__("ekstrain.infra.render", fromlist=["HERE"]).HERE / "__main__.py"),
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("kubernetes_validate", "policy_sentry")),
}))
"""
    done = run_installed(installed, project / "components", "-c", probe)  # a subdirectory of the project
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    for key in ("rules", "pack", "iam_accepted", "reviewed", "render_main"):
        path = pathlib.Path(got[key])
        assert path.is_file() and path.is_relative_to(installed / "ekstrain"), (key, path)
    assert got["checkout"] == "None", "installed: no checkout"
    assert pathlib.Path(got["project"]) == project, "the nearest Pulumi.yaml from the working directory up"
    assert pathlib.Path(got["cache"]) == project / "build" / ".cache"
    assert pathlib.Path(got["keys_root"]) == project
    assert got["loaded"] == [], "importing the render's modules loads its heavy dependencies lazily"


def test_the_render_without_its_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ekstrain.cli import render as render_cli
    from ekstrain.infra import render

    real = render.importlib.util.find_spec
    monkeypatch.setattr(render.importlib.util, "find_spec", lambda n, *a: None if n == "policy_sentry" else real(n, *a))
    assert render_cli.main(["--stack", "dev"]) == 2
    assert "the render's checks need policy-sentry: pip install 'ekstrain[render]'" in capsys.readouterr().err


def test_render_from_the_wheel_writes_into_the_users_project_only(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """`python -m ekstrain.cli.render` from the installed wheel in a project holding only Pulumi.yaml and a
    stack file: output and cache land beside the stack file, the policy pack and the reviewed findings come
    from the package, and nothing is written into the installed package."""
    from ekstrain.tooling import validation

    upstream = validation.upstream_dir()
    if upstream is None:
        pytest.skip("upstream schemas absent: run `make fetch-upstream`")
    project = tmp_path / "acme"
    project.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml"):
        shutil.copy(REPO / name, project / name)
    before = sorted(p.relative_to(installed) for p in installed.rglob("*") if "__pycache__" not in p.parts)
    done = subprocess.run(
        [sys.executable, "-m", "ekstrain.cli.render", "--stack", "dev"],
        cwd=project,
        env={
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("PYTHON", "EKSTRAIN_CACHE", "EKSTRAIN_PROJECT"))
            },
            "PYTHONPATH": str(installed),
            "EKSTRAIN_UPSTREAM_DIR": str(upstream),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]  # 1: e.g. no helm on this machine (its own check)
    summary = (project / "build" / "dev" / "SUMMARY.md").read_text()
    assert (project / "build" / ".cache").is_dir()
    policy_row = next(ln for ln in summary.splitlines() if ln.startswith("| policy pack: CrossGuard rules"))
    assert re.search(r"\) \| [1-9][0-9]* resources \| 0 \|", policy_row), policy_row  # the pack ran, found nothing
    after = sorted(p.relative_to(installed) for p in installed.rglob("*") if "__pycache__" not in p.parts)
    assert after == before, "the render wrote into the installed package"


# ---- the command line from a plain install (no extras) ----------------------------------------------------------

# A plain `pip install ekstrain` (this venv holds the extras for the other tests): a sitecustomize makes the render
# extra's modules absent in every process (the render runs in one of its own), then the console script
# runs as pip writes it.
NO_EXTRAS = """
import sys
# None in sys.modules: `import` raises ModuleNotFoundError and importlib.util.find_spec answers None, as when absent.
sys.modules.update(dict.fromkeys({blocked!r}))
"""
CONSOLE_SCRIPT = """
import sys
from importlib.metadata import entry_points
(script,) = [e for e in entry_points(group="console_scripts") if e.name == "ekstrain"]
sys.argv = ["ekstrain", *{argv!r}]
sys.exit(script.load()())
"""


def ekstrain_without_extras(site: pathlib.Path, cwd: pathlib.Path, *argv: str) -> subprocess.CompletedProcess[str]:
    hooks = cwd / "no-extras"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(NO_EXTRAS.format(blocked=RENDER_ONLY))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EKSTRAIN_", "PULUMI_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(hooks)])
    code = CONSOLE_SCRIPT.format(argv=list(argv))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_the_cli_dependencies_are_in_the_base_install(wheel: pathlib.Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        entry = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))).decode()
    requires = [ln.split(":", 1)[1].strip() for ln in meta.splitlines() if ln.startswith("Requires-Dist:")]
    for dist in ("click", "rich", "matplotlib"):
        (line,) = [r for r in requires if r.startswith(dist)]
        assert "extra" not in line, line
    assert "ekstrain = ekstrain.cli.main:main" in entry


def test_the_installed_cli_helps_and_plans_without_the_render_extra(
    installed: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    done = ekstrain_without_extras(installed, tmp_path, "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    for command in ("render", "plan", "simulate", "job", "diff", "catalog"):
        assert command in done.stdout, command
    page = tmp_path / "plan.html"
    argv = ["plan", "search", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--nodes", "1"]
    done = ekstrain_without_extras(
        installed, tmp_path, *argv, "--global-batch", "64", "--seq-len", "4096", "--top", "3", "--html", str(page)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "  1 " in done.stdout and "fits" in done.stdout
    assert "Chosen plan: tp=" in page.read_text()


def test_the_installed_render_names_its_extra_and_its_flags(installed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Without the extra: one line naming it. With a bad --upstream-dir or --helm: one line naming the flag."""
    (tmp_path / "Pulumi.dev.yaml").write_text((REPO / "Pulumi.dev.yaml").read_text())
    done = ekstrain_without_extras(installed, tmp_path, "render", "--stack", "dev")
    assert done.returncode == 2
    assert "pip install 'ekstrain[render]'" in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    done = run_installed(installed, tmp_path, "-m", "ekstrain", "render", "--stack", "dev", "--upstream-dir", "nowhere")
    assert done.returncode == 2 and "--upstream-dir 'nowhere': no crds/ directory" in done.stderr, done.stderr
    done = run_installed(installed, tmp_path, "-m", "ekstrain", "render", "--stack", "dev", "--helm", "no-helm")
    assert done.returncode == 2 and "--helm 'no-helm': not an executable file" in done.stderr, done.stderr


def test_the_installed_errors_name_flags_not_make_targets(installed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    code = "from ekstrain.files import paths; print(paths.upstream_fix()); print(paths.helm_fix())"
    done = run_installed(installed, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    upstream, helm = done.stdout.splitlines()
    assert "--upstream-dir DIR" in upstream and "--helm PATH" in helm
    assert "make" not in upstream and "make" not in helm


def test_ekstrain_testing_runs_a_users_program_offline(
    installed: pathlib.Path, project: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    code = (
        "import json; from ekstrain.testing import run_offline; "
        f"rec = run_offline({str(project)!r}, {{'aws:region': 'us-east-2'}}); "
        "print(json.dumps(sorted({r.type for r in rec.records})))"
    )
    done = run_installed(installed, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    types = json.loads(done.stdout)
    assert "eks:index:Cluster" in types and "aws:ec2/placementGroup:PlacementGroup" in types, types


def test_the_wheel_fetches_and_verifies_with_its_own_pins(installed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """GIVEN the installed wheel in an empty directory WHEN `ekstrain upstream fetch|helm` are asked THEN both are
    commands of the wheel, reading the pins it ships, and a refusal names a command the user has."""
    code = (
        "from ekstrain.tooling import upstream; from ekstrain.assembly.schedulers import mpi_operator as m; "
        "print(len(upstream.read_file_pins()), len(upstream.read_chart_pins()), m.mpijob_crd(None)['kind'])"
    )
    done = run_installed(installed, tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    files, charts, kind = done.stdout.split()
    assert int(files) > 30 and int(charts) > 10 and kind == "CustomResourceDefinition"
    for sub in ("fetch", "helm"):
        done = run_installed(installed, tmp_path, "-m", "ekstrain", "upstream", sub, "--help")
        assert done.returncode == 0 and "Usage: ekstrain upstream " + sub in done.stdout, done.stderr
    done = run_installed(installed, tmp_path, "-m", "ekstrain", "upstream", "fetch", "--mirror", "ftp:x")
    assert done.returncode == 2 and done.stderr.startswith("error: ekstrain upstream fetch: --mirror"), done.stderr
    assert "make " not in done.stderr
