"""checkov over every rendered manifest and chart-rendered object of every stack: no failed check unless it is
skipped, with a reason, in security/checkov-skips.yaml.

checkov lives in its own virtualenv (.venv-checkov, made by `make test`): it pins packaging<24,
which pulumi 3.272 (packaging>=26) cannot share. It runs with no network access at all.
"""

from __future__ import annotations

import fnmatch
import json
import os
import pathlib
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import REPO, STACK_NAMES
from support.renders import Renders

from ekstrain.infra import offline
from ekstrain.infra.verify import tfplan

SKIPS_FILE = REPO / "security" / "checkov-skips.yaml"
CHECK_ID = re.compile(r"^CKV2?_(K8S|AWS)_\d+$")
# No guideline download, no platform mapping, no PyPI version check, no upload.
OFFLINE_ENV = {"BC_SKIP_MAPPING": "TRUE", "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true"}

CANARY = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "canary", "namespace": "canary"},
    "spec": {
        "selector": {"matchLabels": {"app": "canary"}},
        "template": {
            "metadata": {"labels": {"app": "canary"}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]},
        },
    },
}


def checkov_binary() -> pathlib.Path | None:
    path = pathlib.Path(os.environ.get("EKSTRAIN_CHECKOV", REPO / ".venv-checkov" / "bin" / "checkov"))
    return path.resolve() if path.exists() else None


CRD = "CustomResourceDefinition"


def checkov_checks_kind(binary: pathlib.Path, kind: str) -> bool:
    """Whether any of checkov's Kubernetes checks (its installed sources, resource and graph checks) names ``kind``;
    True when they cannot be found (then nothing is left out of the scan)."""
    sources = [
        f
        for f in binary.parent.parent.glob("lib/python3*/site-packages/checkov/kubernetes/checks/**/*")
        if f.suffix in (".py", ".json", ".yaml")
    ]
    return not sources or any(kind in f.read_text(errors="replace") for f in sources)


def load_skips(path: pathlib.Path = SKIPS_FILE) -> list[dict[str, str]]:
    data = yaml.safe_load(path.read_text()) or {}
    return list(data.get("skips") or [])


def skip_problems(skips: list[dict[str, Any]]) -> list[str]:
    problems = []
    seen = set()
    for i, s in enumerate(skips):
        if set(s) - {"source"} != {"check", "resource", "reason"} or s.get("source", "charts") != "charts":
            problems.append(
                f"skips[{i}] must have exactly check, resource, reason (+ source: charts) (has {sorted(s)})"
            )
            continue
        if not CHECK_ID.match(str(s["check"])):
            problems.append(f"skips[{i}].check {s['check']!r} is not a checkov Kubernetes or AWS check id")
        if str(s["resource"]).strip() in ("", "*") and s.get("source") != "charts":
            problems.append(f"skips[{i}].resource must name resources, not everything")
        if len(str(s["reason"]).strip()) < 15:
            problems.append(f"skips[{i}].reason must say why ({s['reason']!r})")
        if (s["check"], s["resource"]) in seen:
            problems.append(f"skips[{i}] duplicates an earlier entry")
        seen.add((s["check"], s["resource"]))
    return problems


def unskipped(failed: list[dict[str, Any]], skips: list[dict[str, str]]) -> tuple[list[str], list[dict[str, str]]]:
    """Failed checks no skip covers, and skips that covered nothing."""
    used: set[int] = set()
    left = []
    for f in failed:
        from_charts = f["file_path"].startswith("/charts/")
        hits = [
            i
            for i, s in enumerate(skips)
            if s["check"] == f["check_id"]
            and fnmatch.fnmatchcase(f["resource"], s["resource"])
            and (s.get("source") == "charts") == from_charts
        ]
        used.update(hits)
        if not hits:
            left.append(f"{f['check_id']} {f['resource']} ({f['file_path']}): {f.get('check_name', '')}")
    return left, [s for i, s in enumerate(skips) if i not in used]


def failed_checks(report: Any, framework: str | None = None) -> list[dict[str, Any]]:
    """checkov prints one report object (or a list of them, one per framework: ``framework`` picks one by its
    check_type); an empty scan has no results."""
    reports = report if isinstance(report, list) else [report]
    return [
        c
        for r in reports
        if framework is None or r.get("check_type") == framework
        for c in (r.get("results") or {}).get("failed_checks", [])
    ]


def run_checkov(directory: pathlib.Path, *frameworks: str) -> Any:
    """One checkov process over ``directory`` with ``frameworks`` (default kubernetes): each process spends ~3 CPU-s
    starting before it reads a file, so the scan runs both of its frameworks in one."""
    binary = checkov_binary()
    assert binary is not None
    proc = subprocess.run(
        [
            str(binary),
            "-d",
            str(directory),
            "--framework",
            *(frameworks or ("kubernetes",)),
            "--compact",
            "--quiet",
            "-o",
            "json",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **OFFLINE_ENV},
        cwd=directory,
    )
    # Exit 1 means "some check failed"; anything else is checkov itself failing.
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_skip_list_is_well_formed() -> None:
    skips = load_skips()
    assert skip_problems(skips) == []
    assert skip_problems([{"check": "CKV_K8S_16", "resource": "*", "reason": "x"}, {"check": "nope"}]) == [
        "skips[0].resource must name resources, not everything",
        "skips[0].reason must say why ('x')",
        "skips[1] must have exactly check, resource, reason (+ source: charts) (has ['check'])",
    ]


def test_skip_matching() -> None:
    failed = [
        {"check_id": "CKV_K8S_16", "resource": "DaemonSet.kube-system.neuron-monitor", "file_path": "/a"},
        {"check_id": "CKV_K8S_16", "resource": "Deployment.apps.web", "file_path": "/b"},
    ]
    skips = [
        {"check": "CKV_K8S_16", "resource": "DaemonSet.kube-system.neuron-*", "reason": "r" * 20},
        {"check": "CKV_K8S_20", "resource": "Deployment.apps.web", "reason": "r" * 20},
    ]
    left, unused = unskipped(failed, skips)
    assert left == ["CKV_K8S_16 Deployment.apps.web (/b): "]
    assert unused == [skips[1]]
    # a skip for chart-rendered objects does not cover our own manifests, and the other way round
    chart_skip = [{"check": "CKV_K8S_16", "resource": "*", "source": "charts", "reason": "r" * 20}]
    assert skip_problems(chart_skip) == []
    left, _ = unskipped([{**failed[1], "file_path": "/charts/prod/x/a.yaml"}, failed[1]], chart_skip)
    assert left == ["CKV_K8S_16 Deployment.apps.web (/b): "]


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory, renders: Renders) -> dict[str, list[dict[str, Any]]]:
    if checkov_binary() is None:
        if os.environ.get("EKSTRAIN_REQUIRE_CHECKOV"):
            pytest.fail("checkov not found: `make test` installs it into .venv-checkov")
        pytest.skip("checkov not installed (run `make test`, which creates .venv-checkov)")
    root = tmp_path_factory.mktemp("checkov")
    scanned = root / "scan"
    (scanned / "stacks").mkdir(parents=True)
    (scanned / "charts").mkdir(parents=True)
    plans = scanned / "plans"  # terraform_plan reads the plans, kubernetes the manifests: one process scans both
    plans.mkdir()
    for stack in STACK_NAMES:
        out = renders(stack)  # the session's render, copied: the scan leaves files out
        shutil.copytree(out / "manifests", scanned / "stacks" / stack)
        shutil.copytree(out / "charts", scanned / "charts" / stack)
        shutil.copy(out / "aws-plan.json", plans / f"{stack}.tfplan.json")
    # No checkov Kubernetes check applies to a CRD (none names the kind; DefaultNamespace and the others list theirs):
    # its 16 MB of schemas per stack are 90% of checkov's time here (38 s -> 3.4 s CPU for prod, the same findings).
    binary = checkov_binary()
    assert binary is not None
    if not checkov_checks_kind(binary, CRD):
        for crd in scanned.rglob(f"{CRD}-*.yaml"):
            crd.unlink()
    (scanned / "canary").mkdir()
    (scanned / "canary" / "canary.yaml").write_text(yaml.safe_dump(CANARY))
    (plans / "canary.tfplan.json").write_text(json.dumps(tfplan.plan(_canary_recording())))
    report = run_checkov(scanned, "kubernetes", "terraform_plan")
    failed, aws = failed_checks(report, "kubernetes"), failed_checks(report, "terraform_plan")
    assert {f["file_path"].split("/")[1] for f in aws} <= {"plans"}, "terraform_plan read a file outside plans/"
    return {
        "stacks": [f for f in failed if f["file_path"].startswith(("/stacks/", "/charts/"))]
        + [f for f in aws if not f["file_path"].startswith("/plans/canary")],
        "canary": [f for f in failed if f["file_path"].startswith("/canary/")],
        "aws-canary": [f for f in aws if f["file_path"].startswith("/plans/canary")],
    }


def _canary_recording() -> offline.Recording:
    """A security group open to the world on SSH and an unencrypted-by-KMS log group, as recorded."""
    import pulumi_aws as aws

    def program() -> Any:
        aws.ec2.SecurityGroup(
            "canary",
            description="canary",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=22, to_port=22, cidr_blocks=["0.0.0.0/0"], description="ssh"
                )
            ],
        )
        return {}

    return offline.run(program, {"aws:region": "us-west-2"})


def test_checkov_runs_offline_and_catches_a_privileged_pod(scan: dict[str, list[dict[str, Any]]]) -> None:
    ids = {f["check_id"] for f in scan["canary"]}
    assert "CKV_K8S_16" in ids, ids  # "Container should not be privileged"


def test_checkov_terraform_plan_catches_ssh_open_to_the_world(scan: dict[str, list[dict[str, Any]]]) -> None:
    # the recorded canary went through the same conversion (tfplan.plan) as every stack
    ids = {f["check_id"] for f in scan["aws-canary"]}
    assert "CKV_AWS_24" in ids, ids  # "Ensure no security groups allow ingress from 0.0.0.0:0 to port 22"


def test_rendered_manifests_pass_checkov(
    scan: dict[str, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    left, unused = unskipped(scan["stacks"], load_skips())
    with capsys.disabled():
        for s in unused:
            print(f"\nnote: checkov skip matched nothing, remove it: {s['check']} {s['resource']}")
    assert left == [], "checkov findings not in security/checkov-skips.yaml:\n" + "\n".join(left)


def test_crds_leave_the_scan_only_while_no_checkov_check_names_their_kind(tmp_path: pathlib.Path) -> None:
    # GIVEN a checkov install whose Kubernetes checks name DaemonSet only
    checks = tmp_path / "lib" / "python3.11" / "site-packages" / "checkov" / "kubernetes" / "checks" / "resource"
    checks.mkdir(parents=True)
    (checks / "Check.py").write_text('supported_kind = ("DaemonSet",)\n')
    binary = tmp_path / "bin" / "checkov"
    # THEN CRDs may leave the scan, DaemonSets may not; and with no check sources found, nothing leaves it
    assert not checkov_checks_kind(binary, CRD) and checkov_checks_kind(binary, "DaemonSet")
    assert checkov_checks_kind(tmp_path / "elsewhere" / "bin" / "checkov", CRD)
