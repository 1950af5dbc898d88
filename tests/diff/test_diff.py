"""ekstrain diff: the pure comparison, the cited rule table, and the CLI's exit codes."""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
import subprocess
import tarfile
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from conftest import REPO, needs_upstream, releases
from hypothesis import given
from hypothesis import strategies as st
from support import shared

from ekstrain.cli.main import main
from ekstrain.diff import compare, report, rules, sides
from ekstrain.diff.model import Resource, alias_key
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.infra.offline import Recording
from ekstrain.tooling import validation

P = "urn:pulumi:prod::ekstrain::"


def res(type_: str, name: str, parent_chain: str = "", **kw: Any) -> Resource:
    chain = f"{parent_chain}${type_}" if parent_chain else type_
    return Resource(urn=f"{P}{chain}::{name}", type=type_, name=name, **kw)


SUBNET = "aws:ec2/subnet:Subnet"
MT = "aws:efs/mountTarget:MountTarget"
SG = "aws:ec2/securityGroup:SecurityGroup"


def test_leaf_changes_walk_into_added_containers() -> None:
    assert list(compare.leaf_changes({"a": 1}, {"a": 1, "spec": {"clusterIP": "x"}})) == ["spec.clusterIP"]
    assert list(compare.leaf_changes({"l": [1, 2]}, {"l": [1]})) == ["l[1]"]


def test_replace_cascades_through_physical_ids() -> None:
    old_subnet = res(SUBNET, "s", inputs={"cidrBlock": "10.0.0.0/24"}, outputs={"id": "subnet-0123456789"})
    new_subnet = res(SUBNET, "s", inputs={"cidrBlock": "10.0.1.0/24"}, outputs={"id": "subnet-0123456789"})
    mt = res(MT, "mt", inputs={"fileSystemId": "fs-1", "subnetId": "subnet-0123456789"})
    d = compare.compare([old_subnet, mt], [new_subnet, mt])
    assert [(c.name, c.action, c.replace_because) for c in d.changes] == [
        ("s", "replace", ("cidrBlock",)),
        ("mt", "replace", ("subnetId",)),
    ]


def test_fixed_name_replace_without_delete_before_replace_is_a_conflict() -> None:
    old = res(SG, "sg", inputs={"name": "c-efs", "vpcId": "vpc-1", "description": "a"})
    new = res(SG, "sg", inputs={"name": "c-efs", "vpcId": "vpc-1", "description": "b"})
    d = compare.compare([old], [new])
    assert [f.category for _, f in d.flags()] == ["conflict"]
    ignored = res(SG, "sg", inputs=new.inputs, ignore_changes=("description",))
    assert compare.compare([old], [ignored]).changes == []


def test_alias_moves_state_instead_of_delete_and_create() -> None:
    old = res(MT, "efs-mt-0", "ekstrain:storage:Efs", inputs={"subnetId": "subnet-a"})
    parent = f"{P}ekstrain:storage:Efs::efs"
    key = alias_key({"spec": {"name": "efs-mt-0"}}, MT, parent)
    new = res(MT, "efs-mt-us-west-2a", "ekstrain:storage:Efs", parent=parent, inputs={"subnetId": "subnet-a"})
    new = Resource(**{**new.__dict__, "aliases": (key,)})
    d = compare.compare([old], [new])
    assert [(c.action, c.renamed_from, c.changed) for c in d.changes] == [("update", old.key, ())]


def test_alias_under_a_parent_urn_that_names_the_stack() -> None:
    parent = f"{P}pulumi:pulumi:Stack$ekstrain:storage:Efs::efs"
    assert (
        alias_key({"spec": {"name": "efs-mt-0", "parentUrn": ""}}, MT, parent) == f"ekstrain:storage:Efs${MT}::efs-mt-0"
    )


def test_helm_release_rename_needs_delete_before_replace() -> None:
    t = "kubernetes:helm.sh/v3:Release"
    old = res(t, "r", inputs={"name": "a", "namespace": "n", "chart": "volcano"})
    new = res(t, "r", inputs={"name": "b", "namespace": "n", "chart": "volcano"})
    assert [f.category for _, f in compare.compare([old], [new]).flags()] == ["conflict"]
    dbr = Resource(**{**new.__dict__, "delete_before_replace": True})
    assert compare.compare([old], [dbr]).flags() == []


def test_stateful_delete_and_protected_replace_are_flagged() -> None:
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    old = res(fsx, "fsx", inputs={"deploymentType": "SCRATCH_2"}, protect=True, retain_on_delete=True)
    new = res(fsx, "fsx", inputs={"deploymentType": "PERSISTENT_2"})
    assert {f.category for _, f in compare.compare([old], [new]).flags()} == {"stateful", "refused"}
    assert {f.category for _, f in compare.compare([old], []).flags()} == {"stateful", "refused"}


def test_fsx_capacity_grows_in_place_and_shrinking_replaces() -> None:
    fsx = "aws:fsx/lustreFileSystem:LustreFileSystem"
    old = res(fsx, "fsx", inputs={"storageCapacity": 4800})
    grow = compare.compare([old], [res(fsx, "fsx", inputs={"storageCapacity": 7200})])
    shrink = compare.compare([old], [res(fsx, "fsx", inputs={"storageCapacity": 2400})])
    assert [c.action for c in grow.changes] == ["update"] and grow.flags() == []
    assert [(c.action, c.replace_because) for c in shrink.changes] == [("replace", ("storageCapacity",))]
    assert {f.category for _, f in shrink.flags()} == {"stateful"}


def test_immutable_crd_field_is_refused() -> None:
    t = "kubernetes:karpenter.sh/v1:NodePool"
    ref = {"metadata": {"name": "p"}, "spec": {"template": {"spec": {"nodeClassRef": {"group": "a", "kind": "K"}}}}}
    new = json.loads(json.dumps(ref))
    new["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "Other"
    cats = {f.category for _, f in compare.compare([res(t, "p", inputs=ref)], [res(t, "p", inputs=new)]).flags()}
    assert cats == {"refused", "training-nodes"}


def test_report_exit_code_and_allow() -> None:
    d = compare.compare([res("kubernetes:karpenter.sh/v1:NodePool", "p", inputs={})], [])
    assert report.exit_code(d, []) == 1
    assert report.exit_code(d, ["training-nodes"]) == 0
    md = report.markdown(d, "old", "new", [])
    assert "**training-nodes**" in md and "| delete |" in md
    assert report.to_json(d, "old", "new", [])["blocking"] == ["training-nodes"]


def test_every_registered_type_is_in_the_table(prod_recording: Recording, dev_recording: Recording) -> None:
    types = {r.type for rec in (prod_recording, dev_recording) for r in rec.records if r.custom}
    assert types - set(rules.REPLACE_ON_CHANGE) == set()


def test_every_release_chart_has_a_crd_row_or_none(prod_recording: Recording) -> None:
    charts = {rules.chart_name(r.inputs["chart"]) for r in releases(prod_recording).values()}
    assert {"kube-prometheus-stack", "kuberay-operator", "volcano", "karpenter-crd"} <= charts
    assert set(rules.CHART_CRDS) - charts <= {"nvidia-device-plugin"}  # nfd subchart off in our values


def _old_self_paths(node: dict[str, Any], path: str = "") -> list[str]:
    out = [path for v in node.get("x-kubernetes-validations") or [] if "oldSelf" in v.get("rule", "")]
    for k, sub in (node.get("properties") or {}).items():
        out += _old_self_paths(sub, f"{path}.{k}" if path else k)
    if isinstance(node.get("items"), dict):
        out += _old_self_paths(node["items"], f"{path}[*]")
    return out


@needs_upstream
@pytest.mark.parametrize(
    ("type_", "crd"),
    [
        ("kubernetes:karpenter.sh/v1:NodePool", "karpenter.sh/nodepool.yaml"),
        (
            "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime",
            "trainer.kubeflow.org/clustertrainingruntime.yaml",
        ),
        ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "karpenter.k8s.aws/ec2nodeclass.yaml"),
        ("kubernetes:scheduling.volcano.sh/v1beta1:Queue", "scheduling.volcano.sh/queue.yaml"),
    ],
)
def test_refused_table_matches_the_pinned_crds(type_: str, crd: str) -> None:
    crd_file = validation.upstream_dir() / "crds" / crd  # type: ignore[operator]
    doc = yaml.load(crd_file.read_text(), Loader=SAFE_LOADER)
    version = next(v for v in doc["spec"]["versions"] if v.get("storage"))
    # `has(self.replicas) == has(oldSelf.replicas)` on NodePool.spec is about a field the program never sets.
    found = {p for p in _old_self_paths(version["schema"]["openAPIV3Schema"]) if p != "spec"}
    listed = {p for p in rules.REFUSED_ON_CHANGE.get(type_, ()) if not p.endswith((".group", ".kind"))}
    expect = {
        p.rsplit(".", 1)[0] if p.endswith((".group", ".kind")) else p for p in rules.REFUSED_ON_CHANGE.get(type_, ())
    }
    assert found == expect | listed


@needs_upstream
def test_crds_dir_charts_match_the_pinned_archives() -> None:
    src = validation.upstream_dir() / "chart-src"  # type: ignore[operator]
    for chart, (where, _) in rules.CHART_CRDS.items():
        archive = next(src.glob(f"{chart}-[v0-9]*.tgz"))
        with tarfile.open(archive) as tar:
            names = tar.getnames()
        top_level = any(re.match(rf"{chart}/crds/", n) for n in names)
        in_subchart = any(re.match(rf"{chart}/charts/[^/]+/crds/", n) for n in names)
        if where == rules.CRDS_DIR:
            assert top_level or in_subchart, chart
        else:
            assert not top_level, chart


@pytest.fixture(scope="module")
def sides_recorded_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The CLI tests below diff the same two dev stack files (maxNodes 1 and 2), each its own way in (two files, a
    revision of the project's repository): each side's program is recorded once for the session (its pytest-xdist
    workers share it: tests/support/shared.py), by the program tree, the stack and the stack file's content (the
    recording is a function of them: ekstrain/diff/sides.py), in its own process as the CLI does; a later side of
    the same content is handed those rows."""
    from ekstrain.cli import diff as diff_cli

    real = sides.record
    done: dict[tuple[str, str, str], list[Resource]] = {}

    def record(tree: pathlib.Path, stack: str, stack_file: pathlib.Path, *args: Any, **kwargs: Any) -> list[Resource]:
        key = (str(tree), stack, hashlib.sha256(stack_file.read_bytes()).hexdigest() if stack_file.is_file() else "")
        if not key[2]:
            return real(tree, stack, stack_file, *args, **kwargs)
        if key not in done:
            name = "diff-side-" + hashlib.sha256("\0".join(key).encode()).hexdigest()[:16]
            done[key] = shared.once(tmp_path_factory, name, lambda: real(tree, stack, stack_file, *args, **kwargs))
        return done[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sides, "record", record)
        patch.setattr(diff_cli, "record", record)
        yield


@pytest.mark.usefixtures("sides_recorded_once")
def test_cli_two_stack_files(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "Pulumi.dev.yaml"
    old.write_text((REPO / "Pulumi.dev.yaml").read_text().replace("maxNodes: 2", "maxNodes: 1"))
    code = main(
        [
            "diff",
            "--stack",
            "dev",
            "--stack-file",
            str(REPO / "Pulumi.dev.yaml"),
            "--old-stack-file",
            str(old),
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {c["name"] for c in out["changes"]} >= {"gpu-small-nodepool"}
    assert out["blocking"] == []


@pytest.mark.usefixtures("sides_recorded_once")
def test_installed_base_reads_the_projects_own_repository(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a user's project (its own git repository, outside this checkout) whose committed stack has maxNodes 1
    # and whose working copy has 2, and ekstrain used as installed (not from a checkout holding the stack file)
    project = tmp_path / "project"
    project.mkdir()
    stack = project / "Pulumi.dev.yaml"
    stack.write_text((REPO / "Pulumi.dev.yaml").read_text().replace("maxNodes: 2", "maxNodes: 1"))
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one node"], check=True)
    stack.write_text((REPO / "Pulumi.dev.yaml").read_text())
    assert not sides.in_checkout(stack)
    # WHEN diffed against HEAD THEN the old side is the committed stack file: the NodePool limit changes
    code = main(["diff", "--stack", "dev", "--stack-file", str(stack), "--base", "HEAD", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and {c["name"] for c in out["changes"]} >= {"gpu-small-nodepool"}
    # AND a revision without the file is one line naming --base and the fix
    assert main(["diff", "--stack", "dev", "--stack-file", str(stack), "--base", "HEAD~5"]) == 2
    assert "--base 'HEAD~5': no such commit" in capsys.readouterr().err


def test_cli_bad_stack_file_exits_2(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "diff",
            "--stack",
            "dev",
            "--stack-file",
            str(REPO / "Pulumi.dev.yaml"),
            "--old-stack-file",
            str(tmp_path / "nope.yaml"),
        ]
    )
    assert code == 2
    assert "--old-stack-file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,flag",
    [
        (["--stack-file", str(REPO / "Pulumi.dev.yaml"), "--old-stack-file", "nope.yaml"], "--old-stack-file"),
        (["--stack-file", "nope.yaml", "--old-stack-file", str(REPO / "Pulumi.dev.yaml")], "--stack-file"),
        (["--stack-file", str(REPO / "Pulumi.dev.yaml"), "--base=no-such-revision-xyz"], "--base"),
        (["--stack-file", str(REPO / "Pulumi.dev.yaml"), "--base=--output=x"], "--base"),
    ],
)
def test_bad_input_is_refused_before_either_side_records(
    argv: list[str], flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a recorder that fails the test if it starts (the good side used to record for seconds, then the bad
    # side's refusal was printed)
    monkeypatch.setattr(sides.subprocess, "run", _no_recording(sides.subprocess.run))
    # WHEN the diff gets one bad side THEN exit 2 naming the flag, and nothing recorded
    assert main(["diff", "--stack", "dev", *argv]) == 2
    assert capsys.readouterr().err.startswith(f"error: {flag}")


def _no_recording(run: Any) -> Any:
    def guarded(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if any(str(a).endswith("record.py") for a in argv):
            pytest.fail(f"a side recorded: {argv}")
        return run(argv, *args, **kwargs)

    return guarded


_values = st.recursive(
    st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "10.0.0.0/24"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["x", "y", "cidrBlock"]), inner, max_size=3)
    ),
    max_leaves=8,
)
_snapshots = st.dictionaries(
    st.sampled_from(["s1", "s2", "s3", "s4"]),
    st.dictionaries(st.sampled_from(["cidrBlock", "tags", "vpcId"]), _values, max_size=3),
    max_size=4,
)


@given(old=_snapshots, new=_snapshots)
def test_compare_classes_every_key_once(old: dict[str, Any], new: dict[str, Any]) -> None:
    def side(d: dict[str, Any]) -> list[Resource]:
        return [res(SUBNET, k, inputs=v, outputs={"id": f"subnet-{k}-00000000"}) for k, v in d.items()]

    d = compare.compare(side(old), side(new))
    assert compare.compare(side(new), side(new)).changes == []
    by_action = {a: {c.name for c in d.of(a)} for a in compare.ACTIONS}
    assert by_action["create"] == set(new) - set(old) and by_action["delete"] == set(old) - set(new)
    assert len(d.changes) + d.unchanged == len(set(old) | set(new))
    for c in d.changes:  # a Subnet replaces exactly when cidrBlock or vpcId (ForceNew) changed
        forced = [p for p in c.changed if p.split(".")[0].split("[")[0] in ("cidrBlock", "vpcId")]
        assert (c.action == "replace") == bool(forced), c
        assert set(c.replace_because) == set(forced)


def test_pull_request_workflow_posts_the_offline_diff_per_stack() -> None:
    wf = yaml.safe_load((REPO / ".github" / "workflows" / "pull-request.yml").read_text())
    job = wf["jobs"]["offline-diff"]
    assert job["strategy"]["matrix"]["stack"] == ["dev", "prod"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert job["steps"][0]["with"]["fetch-depth"] == 0  # --base needs the base branch's history
    script = job["steps"][-1]["run"]
    assert '.venv/bin/ekstrain diff --stack "$STACK" --base "$BASE"' in script
    assert "gh pr comment" in script and "exit $rc" in script
    assert set(wf["jobs"]) >= {"tests", "preview", "offline-diff"}
