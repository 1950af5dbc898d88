"""The GitHub Actions workflows parse and keep the delivery contract: tests before preview/up,
pulumi/actions v7 with the policy pack, OIDC credentials, a PR comment, one `up` per stack at a time,
dev before prod, prod behind an environment."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
SETUP_ACTION = REPO / ".github" / "actions" / "pulumi-setup" / "action.yml"


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(data, dict)
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    return data


def steps_using(job: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).startswith(prefix)]


def assert_pulumi_step(step: dict[str, Any], command: str, stack_expr: str) -> None:
    assert step["uses"] == "pulumi/actions@v7"
    w = step["with"]
    assert w["command"] == command
    assert w["stack-name"] == stack_expr
    assert w["policyPacks"] == "policy"
    assert w["policyPackConfigs"] == f"policy/config/{stack_expr}.json"
    assert w["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert w["secrets-provider"] == "${{ vars.PULUMI_SECRETS_PROVIDER }}"
    assert w["upsert"] is False


def test_pull_request_runs_tests_then_previews_every_stack() -> None:
    wf = load("pull-request.yml")
    assert "pull_request" in wf["on"]
    jobs = wf["jobs"]
    assert any(s.get("run") == "make test" for s in jobs["tests"]["steps"])
    preview = jobs["preview"]
    assert preview["needs"] == "tests"
    assert preview["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    stacks = [m["stack"] for m in preview["strategy"]["matrix"]["include"]]
    assert stacks == sorted(p.name.split(".")[1] for p in REPO.glob("Pulumi.*.yaml"))
    (step,) = steps_using(preview, "pulumi/actions")
    assert_pulumi_step(step, "preview", "${{ matrix.stack }}")
    assert step["with"]["comment-on-pr"] is True
    (setup,) = steps_using(preview, "./.github/actions/pulumi-setup")
    assert setup["with"]["role-to-assume"] == "${{ vars.AWS_PREVIEW_ROLE_ARN }}"


def test_deploy_goes_dev_then_prod_one_update_per_stack() -> None:
    wf = load("deploy.yml")
    assert wf["on"] == {"push": {"branches": ["main"]}}
    jobs = wf["jobs"]
    assert jobs["dev"]["needs"] == "tests" and jobs["prod"]["needs"] == "dev"
    for stack in ("dev", "prod"):
        assert jobs[stack]["uses"] == "./.github/workflows/pulumi-up.yml"
        assert jobs[stack]["with"]["stack"] == stack
        assert jobs[stack]["permissions"]["id-token"] == "write"
    up = load("pulumi-up.yml")
    assert "workflow_call" in up["on"]
    job = up["jobs"]["up"]
    assert job["concurrency"] == {"group": "pulumi-${{ inputs.stack }}", "cancel-in-progress": False}
    assert job["environment"] == "${{ inputs.stack }}"  # prod's environment carries the required approval
    (step,) = steps_using(job, "pulumi/actions")
    assert_pulumi_step(step, "up", "${{ inputs.stack }}")
    (setup,) = steps_using(job, "./.github/actions/pulumi-setup")
    assert setup["with"]["role-to-assume"] == "${{ vars.AWS_DEPLOY_ROLE_ARN }}"


def test_setup_action_uses_oidc_and_installs_both_virtualenvs() -> None:
    action = yaml.safe_load(SETUP_ACTION.read_text())
    steps = action["runs"]["steps"]
    (creds,) = [s for s in steps if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")]
    assert creds["uses"].endswith("@v4")
    assert set(creds["with"]) == {"role-to-assume", "role-session-name", "aws-region"}  # no static keys
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "python -m venv .venv" in runs and "pip install --quiet -e ." in runs
    assert "policy/venv/bin/pip install --quiet -r policy/requirements.txt" in runs
    assert "aws --version" in runs


@pytest.mark.parametrize("path", sorted(p.relative_to(REPO).as_posix() for p in (REPO / ".github").rglob("*.yml")))
def test_no_long_lived_aws_keys_in_workflows(path: str) -> None:
    text = (REPO / path).read_text()
    assert "AWS_ACCESS_KEY_ID" not in text and "AWS_SECRET_ACCESS_KEY" not in text
    assert "PULUMI_CONFIG_PASSPHRASE" not in text  # KMS secrets provider, no shared passphrase


def test_virtualenv_names_match_what_pulumi_expects() -> None:
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    pack = yaml.safe_load((REPO / "policy" / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == ".venv"
    assert pack["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
