"""Every stack renders offline, and everything it renders validates against upstream schemas."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib
import re

import pytest
import yaml
from conftest import REPO, STACK_NAMES, stack_config
from support.renders import Renders, programs_run_once

from ekstrain.cli import render as render_cli
from ekstrain.facts import versions
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.infra import render, report
from ekstrain.infra.offline import Recording
from ekstrain.stacks import capacity_rules
from ekstrain.stacks.loader import read_stack_file
from ekstrain.tooling import validation


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_stack_renders_and_validates(stack: str, renders: Renders) -> None:
    # --lock check: every no-op answer is computed here, and the committed ekstrain.lock.json must hold them. The
    # session's render (tests/support/renders.py): a `renders(stack)` of the same inputs replays it (infra/replay.py:
    # --lock use takes a passed check's stored render), and tests/test_lock_edit.py finds its answers in the cache.
    rendered, code = renders.run(stack, "--lock", "check")
    out = Printed(*renders.printed(stack, "--lock", "check"))
    assert code == 0, out.out
    summary = (rendered / "SUMMARY.md").read_text()
    assert "not a cloud preview" in summary
    assert "OFFLINE RENDER" in out.err
    # stdout's counts are checks.json's (infra/report.py), the same rows SUMMARY.md's Checks table shows
    result = report.load(rendered)
    assert result.failed == [] and result.not_run == [] and len(result.passed) == len(result.checks) > 20
    assert f"checks: {len(result.checks)} passed, 0 failed, 0 did not run; 0 problem(s)" in out.out
    assert all(f"| {c.name} |" in summary for c in result.checks if "|" not in c.name)
    manifests = list((rendered / "manifests").rglob("*.yaml"))
    assert manifests, "some Kubernetes objects are rendered"
    # The shipped seeds are warning-clean, so that a new warning stands out (and fails here).
    assert unexpected_warnings(stack, render_warnings(summary, out.err)) == []
    if validation.upstream_dir() is None:
        pytest.skip("upstream schemas absent: run `make fetch-upstream` to validate")
    kubernetes_version = yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"]["ekstrain:cluster"][
        "kubernetesVersion"
    ]
    for path in manifests:
        assert validation.validate_object(yaml.load(path.read_text(), Loader=SAFE_LOADER), kubernetes_version) == [], (
            path
        )
    assert "valid against the pinned upstream schemas" in summary
    # every container image is listed with its registry, and the images check found nothing (infra/verify/images.py)
    assert re.search(r"^## Images: \d+ images from \d+ registries", summary, re.MULTILINE)
    assert "docker.io/library/" not in summary
    # no secret value in what the render wrote; Applications reference Secrets (infra/verify/emitted.py)
    assert re.search(r"^\| emitted files: no secret values .* \| 0 \| 0 \|", summary, re.MULTILINE)
    hub_app = rendered / "argocd" / "Application-argocd-jupyterhub.yaml"
    if hub_app.exists():
        text = hub_app.read_text()
        assert "existingSecret: jupyterhub-keys" in text
        assert "cookieSecret" not in text and "secretToken" not in text and "CryptKeeper" not in text


@dataclasses.dataclass(frozen=True)
class Printed:
    out: str
    err: str


REVIEWED = "(accepted: security/iam-lint-accepted.yaml)"
"""IAM lint findings reviewed and kept (security/iam-lint-accepted.yaml, which tests/infra/test_verify_iam.py keeps
short)."""


def render_warnings(summary: str, stderr: str) -> list[str]:
    """Every warning a render reports: the config's (SUMMARY "## Warnings", also printed on stderr) and the
    checks' ("- warning: ..." lines, e.g. a Helm values key that changes nothing)."""
    lines = summary.splitlines()
    start = lines.index("## Warnings") + 1
    start += lines[start] == ""  # a blank line after the heading (Markdown)
    config = []
    for line in lines[start:]:
        if not line.startswith("- "):
            break
        if line != "- none":
            config.append(line[2:])
    printed = [line for line in stderr.splitlines() if line.startswith(("ekstrain:", "aws:"))]
    return sorted(set(config) | set(printed)) + [
        line[len("- warning: ") :] for line in lines if line.startswith("- warning: ")
    ]


def unexpected_warnings(stack: str, warnings: list[str], today: dt.date | None = None) -> list[str]:
    """The warnings a seed stack must not have: all of them, except the AMI pin's age
    while the pin is the newest AL2023 release the program knows for the stack's Kubernetes version
    (ekstrain/facts/versions.py AMI_ALIAS_VERSIONS): that one follows the calendar, and only a lookup in AWS
    (docs/runbook-ami.md) finds a newer release to move to."""
    cfg = stack_config(stack)
    pin, k8s = cfg.versions.ami_alias_version, cfg.cluster.kubernetes_version
    age = versions.ami_alias_warning(pin, cfg.versions.ami_alias_max_age_days, today or dt.date.today())
    calendar = (
        {f"ekstrain:versions.amiAliasVersion: {age}"} if age and versions.AMI_ALIAS_VERSIONS.get(k8s) == pin else set()
    )
    # The example Capacity Block's window passes with the calendar too: the warning says to put the next block's.
    _, block_warnings = capacity_rules.check(cfg, today or dt.date.today())
    calendar |= {w for w in block_warnings if "block ended" in w}
    return [w for w in warnings if w not in calendar]


def test_a_new_warning_fails_the_seed_check() -> None:
    """GIVEN a seed render's SUMMARY and stderr WHEN any warning appears (a config rule's, a no-op values key)
    THEN unexpected_warnings lists it; the AMI age and reviewed IAM findings (not warnings) alone pass."""
    cfg = stack_config("prod")
    # the day prod's pin turns too old (the age warning is only then part of a seed render)
    released = versions.ami_release_date(cfg.versions.ami_alias_version)
    assert released is not None
    today = released + dt.timedelta(days=cfg.versions.ami_alias_max_age_days + 1)
    ami = versions.ami_alias_warning(cfg.versions.ami_alias_version, cfg.versions.ami_alias_max_age_days, today)
    assert ami is not None
    clean = "\n".join(["# x", "", "## Warnings", "- none", "", "## Checks", f"- reviewed: iam finding {REVIEWED}"])
    assert unexpected_warnings("prod", render_warnings(clean, ""), today) == []
    aged = clean.replace("- none", f"- ekstrain:versions.amiAliasVersion: {ami}")
    assert (
        unexpected_warnings("prod", render_warnings(aged, f"ekstrain:versions.amiAliasVersion: {ami}\n"), today) == []
    )
    new_config = clean.replace("- none", "- ekstrain:storage.checkpoint: too slow")
    assert unexpected_warnings("prod", render_warnings(new_config, ""), today) == [
        "ekstrain:storage.checkpoint: too slow"
    ]
    noop = clean + "\n- warning: helm release slurm--slurm: values key 'x' changes nothing"
    assert unexpected_warnings("prod", render_warnings(noop, ""), today) == [
        "helm release slurm--slurm: values key 'x' changes nothing"
    ]
    assert unexpected_warnings("prod", render_warnings(clean, "ekstrain:cluster.x: only on stderr\n"), today) == [
        "ekstrain:cluster.x: only on stderr"
    ]
    # the day after prod's example Capacity Block ends, its "put the next block's window" warning is the calendar's
    [block] = [p.capacity_reservation for p in cfg.partitions if p.capacity_block and p.capacity_reservation]
    after = block.end.date() + dt.timedelta(days=1)
    _, ended = capacity_rules.check(cfg, after)
    assert len(ended) == 1 and "block ended" in ended[0]
    printed = "".join(f"{w}\n" for w in ended)
    assert unexpected_warnings("prod", render_warnings(clean.replace("- none", f"- {ended[0]}"), printed), after) == []


def test_render_reports_bad_config_without_traceback(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    text = (REPO / "Pulumi.dev.yaml").read_text().replace("maxNodes: 2", "maxNodes: -1")
    bad.write_text(text)
    code = render_cli.main(["--stack", "bad", "--stack-file", str(bad), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert "ekstrain:partitions[0] (gpu-small).maxNodes" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists(), "nothing is rendered from a bad config"


def test_prod_summary_lists_partitions_with_efa_and_cost(renders: Renders) -> None:
    summary = (renders("prod") / "SUMMARY.md").read_text()
    lines = summary.splitlines()
    cells = lambda line: [c.strip() for c in line.strip().strip("|").split("|")]  # noqa: E731  (a GFM table row)
    header = next(cells(line) for line in lines if line.startswith("| partition |"))
    rows = {
        cells(line)[0]: dict(zip(header, cells(line), strict=True))
        for line in lines
        if line.startswith(("| gpu-", "| trainium"))
    }
    assert {name: row["efa"] for name, row in rows.items()} == {
        "gpu-a100": "p4d:4,p4de:4",
        "gpu-h100": "p5:32",
        "trainium": "trn1:8,trn1n:16",
    }
    assert {name: row["maxAccelerators"] for name, row in rows.items()} == {
        "gpu-a100": "128",
        "gpu-h100": "64",
        "trainium": "512",
    }
    assert rows["gpu-a100"]["usdPerHourAtMax"] == "351-439"
    # No standing slurmd pods (schedulers.slurm.nodesetReplicas {gpu-a100: 0}): Slurm capacity is on demand.
    assert {name: row["slurmAlwaysOn"] for name, row in rows.items()} == {
        "gpu-a100": "-",
        "gpu-h100": "-",
        "trainium": "-",
    }


def test_program_runs_in_preview_mode(prod_recording: Recording) -> None:
    flat, secrets = read_stack_file(REPO / "Pulumi.prod.yaml")
    rec = render.run_program(flat, secrets, "prod", preview=True)
    assert len(rec.records) == len(prod_recording.records)


def test_program_entry_point_exports_outputs(renders: Renders) -> None:
    rec = renders.program("prod")  # infra/__main__.py, as the render runs it
    assert rec.outputs["clusterName"] == "ekstrain-prod"
    # gpu-h100 runs on a Capacity Block, whose instances EC2 co-locates without a placement group (docs/capacity.md)
    assert set(rec.outputs["placementGroups"]) == {"gpu-a100", "trainium-trn1", "trainium-trn1n"}


def test_render_reads_the_stack_file_of_the_current_directory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a project directory whose Pulumi.prod.yaml differs from this checkout's
    WHEN the render runs there without --stack-file THEN it reads that file, not the installed one."""
    text = (REPO / "Pulumi.prod.yaml").read_text().replace("maxNodes: 8", "maxNodes: 0")
    (tmp_path / "Pulumi.prod.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert render_cli.main(["--stack", "prod", "--out", str(tmp_path / "out")]) == 2
    assert "(gpu-h100).maxNodes" in capsys.readouterr().err


def test_render_without_a_stack_file_here_exits_2(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert render_cli.main(["--stack", "prod", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.prod.yaml: does not exist" in err and "--stack-file" in err and "Traceback" not in err


def test_a_finding_of_any_check_fails_the_render(
    prod_recording: Recording, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write and check of the prod recording with a planted defect per check (the checks read other records, so
    each finds its own and nothing else; one render instead of one per check). The strict Slurm values check's
    typos are among them (with the upstream files: its chart check needs them)."""
    # GIVEN the prod recording with an IAM role whose autoname AWS would reject and a misspelt input
    import copy

    from ekstrain.infra.verify import charts

    records = copy.deepcopy(prod_recording.records)
    role = next(r for r in records if r.type == "aws:iam/role:Role" and "name" not in r.inputs)
    role.name = "r" * 60
    subnet = next(r for r in records if r.type == "aws:ec2/subnet:Subnet")
    subnet.inputs["availabilityZon"] = subnet.inputs.pop("availabilityZone")
    # AND the FSx file system no longer protected (mandatory in prod: the policy pack)
    fsx = next(r for r in records if r.type == "aws:fsx/lustreFileSystem:LustreFileSystem")
    fsx.protect = False
    # AND Grafana's admin Secret reaching the engine as plain inputs (the credentials check)
    admin = next(
        r for r in records if r.type == "kubernetes:core/v1:Secret" and r.name == "observability-grafana-admin"
    )
    assert admin.secret_inputs == {"stringData"}
    admin.secret_inputs = set()
    # AND the slurm release with a typo inside a NodeSet (below the chart's empty `nodesets` map, where a key check
    # against values.yaml sees nothing) and in its pod spec
    slurm = None
    if validation.upstream_dir() is not None:
        slurm = next(r for r in records if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs["name"] == "slurm")
        nodeset = slurm.inputs["values"]["nodesets"]["gpu-h100"]
        nodeset["replica"] = 1
        nodeset["podSpec"]["tolerations"][0]["efect"] = "NoSchedule"
    # The no-op values check (one helm run per slurm values key: these planted values are in no lock) asserts
    # nothing here; tests/infra/test_render_lock.py and the seed renders above run it.
    monkeypatch.setattr(charts, "noop_leaves", lambda *_: [])
    rec = Recording(records, prod_recording.outputs, prod_recording.invokes)
    # WHEN written and checked as the render does
    summary, problems = render.write(tmp_path, "prod", stack_config("prod"), [], rec, 0.0)
    # THEN each is a problem (the render exits 1 on any), listed under its check in SUMMARY.md
    assert any("IAM CreateRole RoleName allows 1-64" in p for p in problems)
    assert any("availabilityZon: unknown property of Subnet" in p for p in problems)
    assert "- AWS create-time rules: names, tags, buckets, CIDRs, EFS, FSx: aws:iam/role:Role rrrr" in summary
    # AND the pack's finding, with policy/config/prod.json applied, is its only one
    pack = [p for p in problems if p.startswith("stateful-protected-in-prod")]
    assert pack == [
        f"stateful-protected-in-prod ({fsx.name}): LustreFileSystem in environment 'prod' must be "
        "protect=True (and retain_on_delete)"
    ]
    row = report.load(tmp_path).check("policy pack: CrossGuard rules")
    assert (row.ran, row.checked, row.what) == (True, len(records), "resources")
    assert "- policy pack: CrossGuard rules (policy/ekstrain_policy): stateful-protected-in-prod" in summary
    # AND each credential is a problem under the credentials check
    credentials = [p for p in problems if p.startswith("observability-grafana-admin.")]
    assert sorted(p.split(":")[0] for p in credentials) == [
        "observability-grafana-admin.stringData.admin-password",
        "observability-grafana-admin.stringData.admin-user",
    ]
    assert (
        "- credentials: Pulumi secrets in the state: observability-grafana-admin.stringData.admin-password" in summary
    )
    # AND the strict Slurm values check found both typos (exit 1), counted in the Checks table: each NodeSet and the
    # login set
    if slurm is not None:
        assert "helm release slurm: unknown key nodesets.gpu-h100.replica" in problems
        assert any(p.startswith("helm release slurm: nodesets.gpu-h100: ") and "efect" in p for p in problems)
        row = report.load(tmp_path).check("helm values: templated entries")
        entries = len(slurm.inputs["values"]["nodesets"]) + len(slurm.inputs["values"]["loginsets"])
        assert (entries, row.checked, row.what, len(row.problems)) == (4, 4, "entries", 2)
    # AND no check found anything but the planted defects
    others = [
        p
        for p in problems
        if p not in pack + credentials
        and "r" * 60 not in p
        and "availabilityZon" not in p
        and not (slurm is not None and from_slurm_typos(p))
    ]
    assert others == []


def from_slurm_typos(problem: str) -> bool:
    """A problem the planted Slurm typos cause: the values check's two, and the NodeSet's pod spec as the operator
    decodes it (the misspelt toleration)."""
    return problem.startswith(
        ("helm release slurm: unknown key nodesets.gpu-h100.replica", "helm release slurm: nodesets.gpu-h100: ")
    ) or (problem.startswith("slurm--slurm: NodeSet slurm/slurm-worker-gpu-h100: ") and "'efect'" in problem)


def test_warm_render_reuses_validation_answers(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an empty cache and a check that counts its runs
    monkeypatch.setenv("EKSTRAIN_CACHE_DIR", str(tmp_path))
    runs: list[int] = []

    def check() -> list[str]:
        runs.append(1)
        return ["problem"]

    objs = [{"kind": "A", "metadata": {"name": "a"}}, {"kind": "B", "metadata": {"name": "b"}}]
    # WHEN the same inputs come again (here: the manifests in another registration order)
    assert render.cached_problems("t", ["1.35", render.canonical(objs)], check) == ["problem"]
    assert render.cached_problems("t", ["1.35", render.canonical(objs[::-1])], check) == ["problem"]
    # THEN the answer is reused; a changed input or an uncacheable run computes again
    assert len(runs) == 1
    render.cached_problems("t", ["1.34", render.canonical(objs)], check)
    render.cached_problems("t", ["1.35", render.canonical(objs)], check, cacheable=False)
    assert len(runs) == 3


def test_without_the_schemas_the_render_claims_nothing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN no upstream schemas (a fresh clone before `make fetch-upstream`)
    monkeypatch.setattr(validation, "upstream_dir", lambda: None)
    # WHEN dev (which enables the MPI operator: its CRD is vendored in the package) is rendered
    out = tmp_path / "out"
    argv = ["--stack", "dev", "--stack-file", str(REPO / "Pulumi.dev.yaml"), "--out", str(out)]
    with programs_run_once():  # both renders run the same program (the vendored MPIJob CRD's): once
        # THEN it exits 1 and says which checks did not run and how to get the files, and never that things are valid
        assert render_cli.main(argv) == 1
        err = capsys.readouterr().err
        assert "error: ekstrain render: 9 checks did not run" in err and "--allow-unchecked" in err
        assert "fix: upstream schemas not found (run `ekstrain upstream fetch`" in err
        summary = (out / "SUMMARY.md").read_text()
        head = summary.split("## Warnings")[0]
        assert "## NOT VALIDATED: 9 of" in head and "creation order" in head
        assert "valid against the pinned upstream schemas" not in summary
        # AND --allow-unchecked accepts the unvalidated render explicitly
        assert render_cli.main([*argv, "--allow-unchecked"]) == 0
