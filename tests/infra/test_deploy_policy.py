"""`ekstrain deploy-policy`: the deploy role's policy covers every action of every recorded type, and the docs say so.

The stacks' resources are the program's under the offline engine, as `ekstrain diff` records a side
(ekstrain/infra/diff.py, the recording as rows): prod and dev from the session's one run of each (tests/conftest.py),
the reserved example run once here. The CLI's own recording process runs in
test_cli_prints_the_documents_and_writes_only_out.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest
from conftest import needs_upstream

from ekstrain.cli import deploy_policy as dp
from ekstrain.cli.main import main
from ekstrain.contracts import iam as contracts
from ekstrain.diff.model import Resource
from ekstrain.diff.sides import REPO
from ekstrain.infra import offline
from ekstrain.infra.diff import record_stack_file, snapshot_dicts
from ekstrain.infra.verify import iam as iam_db

pytestmark = needs_upstream

STACKS = {
    "prod": REPO / "Pulumi.prod.yaml",
    "dev": REPO / "Pulumi.dev.yaml",
    "reserved": REPO / "examples" / "stacks" / "Pulumi.reserved.yaml",
}


def rows(recording: offline.Recording) -> list[Resource]:
    """A recording as the rows `ekstrain diff` reads from its recording process (ekstrain/infra/diff.py)."""
    return [Resource.from_dict(d) for d in snapshot_dicts(recording)]


@pytest.fixture(scope="module")
def recorded(prod_recording: offline.Recording, dev_recording: offline.Recording) -> dict[str, list[Resource]]:
    """Each stack's rows. The recording process (cli/record.py) runs the same program on the same stack file; here
    prod and dev are the session's runs and only the reserved example runs (three processes took ~10 CPU-s)."""
    reserved = [Resource.from_dict(d) for d in record_stack_file(STACKS["reserved"], "reserved")]
    return {"prod": rows(prod_recording), "dev": rows(dev_recording), "reserved": reserved}


def _policy(stack: str, rows: list[Resource], read_only: bool = False) -> tuple[list[dict], str, str]:
    region, account, names = dp.stack_place(STACKS[stack])
    types = [r.type for r in rows]
    return dp.split(dp.policy(dp.action_sets(types, read_only), region, account, names)), region, account


def _names(stack: str) -> dict[str, str]:
    return dp.stack_place(STACKS[stack])[2]


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_recorded_type_has_an_entry_and_every_action_exists(stack: str, recorded) -> None:
    types = [r.type for r in recorded[stack]]
    assert contracts.uncovered(types) == []
    assert dp.problems_of(types, dp.action_sets(types)) == []
    assert dp.problems_of(types, dp.action_sets(types, read_only=True)) == []


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_replay_every_recorded_resource_against_the_policy(stack: str, recorded) -> None:
    """Each recorded resource's create, update and delete calls, on every ARN their action takes, are allowed."""
    docs, region, account = _policy(stack, recorded[stack])
    assert account == "111122223333" if stack == "prod" else True
    names = _names(stack)
    denied = set()
    replayed = 0
    for r in recorded[stack]:
        entry = contracts.contract(r.type)
        assert entry is not None, r.type
        for action in entry.create + entry.update + entry.delete:
            for arn in dp.sample_arns(action, region, account, names):
                replayed += 1
                if not any(dp.allows(d, action, arn) for d in docs):
                    denied.add((r.type, action, arn))
    assert not denied, sorted(denied)[:10]
    assert replayed > 1000


def test_a_policy_missing_an_action_is_caught_by_the_replay(recorded) -> None:
    """The replay is not vacuous: drop one action and it is denied."""
    docs, region, account = _policy("prod", recorded["prod"])
    for d in docs:
        for s in d["Statement"]:
            s["Action"] = [a for a in s["Action"] if a != "logs:CreateLogGroup"]
    arn = dp.sample_arns("logs:CreateLogGroup", region, account)[0]
    assert not any(dp.allows(d, "logs:CreateLogGroup", arn) for d in docs)
    # and an ARN in another account is not allowed by the scoped statement
    other = arn.replace(account, "999999999999")
    assert not any(dp.allows(d, "logs:DeleteLogGroup", other) for d in _policy("prod", recorded["prod"])[0])


def test_the_policy_is_scoped_lint_clean_and_fits_managed_policies(recorded) -> None:
    docs, region, account = _policy("prod", recorded["prod"])
    for d in docs:
        assert iam_db.lint_document(d, "deploy-policy") == []
        assert dp.chars(d) <= dp.MANAGED_POLICY_CHARS
    star = [a for d in docs for s in d["Statement"] if s["Resource"] == "*" for a in s["Action"]]
    # Only actions that take no resource ARN get "*" (their formats list is empty in the reference).
    assert star and all(not dp._formats(a) for a in star)
    scoped = [r for d in docs for s in d["Statement"] if s["Resource"] != "*" for r in iam_db.as_list(s["Resource"])]
    assert all(r.startswith("arn:aws:") and (f":{region}:{account}:" in r or "::" in r) for r in scoped), scoped
    # Every EKS resource is scoped to the stack's one cluster.
    eks = [r for r in scoped if r.startswith("arn:aws:eks:")]
    assert f"arn:aws:eks:{region}:{account}:cluster/ekstrain-prod" in eks
    assert all(re.search(r":[a-z-]+/ekstrain-prod(/|$)", r) for r in eks), eks
    other = dp.sample_arns("eks:DeleteCluster", region, account, {"ClusterName": "someone-elses"})[0]
    assert not any(dp.allows(d, "eks:DeleteCluster", other) for d in docs)


DEFECT_TYPES = {
    "aws:cloudwatch/logGroup:LogGroup": "logs:CreateLogGroup",
    "aws:ec2/flowLog:FlowLog": "ec2:CreateFlowLogs",
    "aws:sns/topic:Topic": "sns:CreateTopic",
    "aws:sns/topicSubscription:TopicSubscription": "sns:Subscribe",
    "aws:budgets/budget:Budget": "budgets:ModifyBudget",
    "aws:costexplorer/costAllocationTag:CostAllocationTag": "ce:UpdateCostAllocationTagsStatus",
    "aws:amp/workspace:Workspace": "aps:CreateWorkspace",
}


def test_defect_the_old_role_list_lacked_logs_sns_budgets_ce_and_amp(recorded) -> None:
    """docs/delivery.md listed EC2/VPC, EKS, IAM, S3, FSx, EFS, KMS, SQS, EventBridge: a role built from it failed
    with AccessDenied on the log groups, the flow log, the SNS topic, the Budget, the cost tags, the AMP workspace."""
    docs, region, account = _policy("prod", recorded["prod"])
    prod_types = {r.type for r in recorded["prod"]}
    # The cost tags may leave the first `up` (their activation is a later step); the rest are created by it.
    assert set(DEFECT_TYPES) - {"aws:costexplorer/costAllocationTag:CostAllocationTag"} <= prod_types
    for type_token, action in DEFECT_TYPES.items():
        entry = contracts.contract(type_token)
        assert entry is not None and action in entry.create, type_token
        if type_token in prod_types:
            arn = dp.sample_arns(action, region, account)[0]
            assert any(dp.allows(d, action, arn) for d in docs), action
    section = dp.docs_section(dp.DOCS.read_text())
    assert section is not None
    for service in ("logs", "sns", "budgets", "aps"):
        assert f"| `{service}` |" in section


def test_docs_table_equals_the_generated_one(recorded) -> None:
    """Regenerate with `ekstrain deploy-policy --stack prod --write-docs`."""
    section = dp.docs_section(dp.DOCS.read_text())
    assert section == dp.docs_table([r.type for r in recorded["prod"]], "prod")


def test_read_only_is_reads_only(recorded) -> None:
    docs, _, _ = _policy("prod", recorded["prod"], read_only=True)
    actions = [a for d in docs for s in d["Statement"] for a in s["Action"]]
    assert "eks:DescribeCluster" in actions and "s3:GetBucketPolicy" in actions
    for a in actions:
        service, name = a.split(":")
        assert iam_db.service_actions(service)[name.lower()]["level"] in ("Read", "List"), a


def test_a_type_without_an_entry_or_an_unknown_action_is_refused(monkeypatch) -> None:
    problems = dp.problems_of(["aws:example/thing:Thing"], {})
    assert problems and "aws:example/thing:Thing: no entry in ekstrain/contracts/iam.py" in problems[0]
    problems = dp.problems_of([], {"eks:CreateClusterNow": set()})
    assert problems and problems[0].startswith("eks:CreateClusterNow: not an action")


def test_cli_prints_the_documents_and_writes_only_out(tmp_path: pathlib.Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    out = tmp_path / "p.json"
    # dev: what the command prints and writes is the same for any stack, and its recording process runs dev's program
    # (~1 CPU-s less than prod's); every stack's policy is checked above from the session's recordings
    assert main(["deploy-policy", "--stack", "dev", "--read-only", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["Version"] == "2012-10-17"
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--stack", "../etc"], "--stack"),
        (["--stack", "nosuch"], "--stack-file"),
        (["--stack", "prod", "--out", "/"], "--out"),
        (["--stack", "dev", "--write-docs"], "--write-docs"),
        (["--stack", "prod", "--build", "/nonexistent-build"], "--build"),
    ],
)
def test_bad_input_is_one_clean_line_naming_the_flag(argv, flag, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(REPO)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["deploy-policy", *argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith("error: deploy-policy: ") and flag in lines[0], err
    assert len(lines) <= 2 and all(re.match(r"(error|fix): ", ln) for ln in lines), err
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_every_aws_entry_cites_the_provider_and_the_service_authorization_reference() -> None:
    for type_token, entry in contracts.CONTRACTS.items():
        assert entry.source, type_token
        if type_token.startswith("aws:"):
            assert "terraform-provider-aws" in entry.source and "service-authorization" in entry.source, type_token
            assert entry.create and entry.delete is not None and entry.read, type_token
