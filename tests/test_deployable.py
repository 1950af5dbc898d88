"""Renders that can deploy, not only validate (issue 32, deliverable 4): each rule with its source (in the code),
a bad-config case and the fix line naming the ekstrain: key.

GIVEN a stack (or a pod the render writes) that validates against every schema but that AWS, Pulumi or the API
server refuses WHEN it is loaded (or checked) THEN one issue names the key, the problem and the fix; the repo's
stacks stay clean.
"""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pytest
import yaml
from conftest import REPO, stack_sections

from ekstrain.infra.verify import admission
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import load_flat, parse, read_stack_file

TODAY = dt.date(2026, 12, 3)


def _issues(change: Any, stack: str = "prod") -> list[str]:
    sections = stack_sections(stack)
    change(sections)
    try:
        parse(sections, "test", today=TODAY)
    except ConfigError as exc:
        return [str(i) for i in exc.issues]
    return []


def _file_issues(tmp_path: pathlib.Path, extra: str) -> list[str]:
    text = (REPO / "Pulumi.dev.yaml").read_text().replace("config:\n", "config:\n" + extra, 1)
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    try:
        flat, secrets = read_stack_file(path)
        load_flat(flat, path.name, today=TODAY, secret_keys=secrets)
    except ConfigError as exc:
        return [str(i) for i in exc.issues]
    return []


@pytest.mark.parametrize("value", ["[aws]", '["*"]', "[kubernetes, aws]", "aws"])
def test_disabled_default_aws_provider_is_refused(tmp_path: pathlib.Path, value: str) -> None:
    """The program creates no explicit aws provider: Pulumi refuses every AWS resource when the default is off."""
    [issue] = _file_issues(tmp_path, f"  pulumi:disable-default-providers: {value}\n")
    assert issue.startswith("pulumi:disable-default-providers: disables the default provider of")
    assert "fix: remove 'aws'" in issue


def test_disabling_only_other_default_providers_is_fine(tmp_path: pathlib.Path) -> None:
    assert _file_issues(tmp_path, "  pulumi:disable-default-providers: [kubernetes, random]\n") == []


@pytest.mark.parametrize("ciphertext", ['""', "'   '"])
def test_a_secure_value_with_no_ciphertext_is_refused(tmp_path: pathlib.Path, ciphertext: str) -> None:
    [issue] = _file_issues(tmp_path, f"  ekstrain:jupyterhubClientSecret:\n    secure: {ciphertext}\n")
    assert "config.ekstrain:jupyterhubClientSecret: is secure: with no ciphertext" in issue
    assert "fix: set it with `pulumi config set --secret ekstrain:jupyterhubClientSecret" in issue


VPC = "vpc-0123456789abcdef0"
A, B, C = "subnet-0123456789abcdef0", "subnet-0123456789abcdef1", "subnet-0123456789abcdef2"


def _existing(private_a: str = "10.20.0.0/19", public: list[dict[str, str]] | None = None) -> Any:
    def change(s: dict[str, Any]) -> None:
        s["network"] = {
            "trainingAvailabilityZone": "us-west-2a",
            "existingVpc": {
                "vpcId": VPC,
                "privateSubnets": {
                    "us-west-2a": {"id": A, "cidr": private_a},
                    "us-west-2b": {"id": B, "cidr": "10.21.32.0/19"},
                },
                "efaSubnets": {"us-west-2a": {"id": A, "cidr": private_a}},
                "publicSubnets": public or [],
            },
        }

    return change


@pytest.mark.parametrize("cidr,ok", [("10.0.0.0/15", False), ("10.20.0.0/16", True), ("10.20.0.0/28", True)])
def test_existing_subnets_are_sixteen_to_twenty_eight(cidr: str, ok: bool) -> None:
    found = [i for i in _issues(_existing(private_a=cidr), "dev") if "EC2 subnets are /16 to /28" in i]
    assert bool(found) != ok, found
    if found:
        assert found[0].startswith("ekstrain:network.existingVpc.privateSubnets.us-west-2a.cidr: ")


def test_a_too_small_existing_subnet_is_refused() -> None:
    issues = _issues(_existing(private_a="10.20.0.0/29"), "dev")
    assert any("privateSubnets.us-west-2a.cidr: 10.20.0.0/29: EC2 subnets are /16 to /28" in i for i in issues)


def test_one_subnet_public_and_private_is_refused() -> None:
    issues = _issues(_existing(public=[{"id": B, "cidr": "10.21.32.0/19"}]), "dev")
    [issue] = [i for i in issues if "route table" in i]
    assert issue.startswith(f"ekstrain:network.existingVpc.publicSubnets[0].id: {B} is also privateSubnets.us-west-2b")
    fine = _issues(_existing(public=[{"id": C, "cidr": "10.21.64.0/20"}]), "dev")
    assert not [i for i in fine if "route table" in i or "/16 to /28" in i]


def test_a_notebook_profile_must_fit_its_partition() -> None:
    """GIVEN a partition of trn1.2xlarge (32 GiB; 28.6 GiB allocatable by Karpenter's model) offered as a notebook
    profile WHEN loaded THEN refused: the 32 GiB notebook never schedules; left out of profiles it is fine."""

    def small(s: dict[str, Any]) -> None:
        s["partitions"].append(
            {"name": "small", "accelerator": "trainium", "instanceTypes": ["trn1.2xlarge"], "maxNodes": 2, "efa": False}
        )

    [issue] = _issues(small)
    assert issue.startswith("ekstrain:partitions[3] (small).instanceTypes: a notebook of this partition asks 4 CPUs")
    assert "28.6 GiB (trn1.2xlarge)" in issue and "leave it out of ekstrain:jupyterhub.profiles" in issue

    def not_offered(s: dict[str, Any]) -> None:
        small(s)
        s["jupyterhub"]["profiles"] = ["gpu-h100"]

    assert _issues(not_offered) == []


def _pod(containers: list[dict[str, Any]], volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"containers": containers, "volumes": volumes or []}


@pytest.mark.parametrize(
    "spec,expected",
    [
        (
            _pod([{"name": "c", "volumeMounts": [{"name": "a", "mountPath": "/x"}, {"name": "b", "mountPath": "/x"}]}]),
            "container c mounts 2 volumes at /x (ValidateVolumeMounts: mountPath must be unique)",
        ),
        (
            _pod([{"name": "c"}], [{"name": "a", "emptyDir": {}}, {"name": "a", "emptyDir": {}}]),
            "volume 'a' is listed 2 times",
        ),
        (_pod([{"name": "c"}, {"name": "c"}]), "container name 'c' is used 2 times"),
        (
            _pod(
                [{"name": "c", "resources": {"limits": {"hugepages-2Mi": "3Mi"}, "requests": {"hugepages-2Mi": "3Mi"}}}]
            ),
            "container c limits hugepages-2Mi: 3Mi is not a positive whole number of 2Mi pages",
        ),
        (
            _pod([{"name": "c", "resources": {"limits": {"hugepages-1Gi": "1536Mi"}}}]),
            "container c limits hugepages-1Gi: 1536Mi is not a positive whole number of 1Gi pages",
        ),
    ],
)
def test_the_api_server_refusals_are_found_in_a_pod(spec: dict[str, Any], expected: str) -> None:
    assert any(expected in p for p in admission.api_validation(spec)), list(admission.api_validation(spec))


def test_a_valid_pod_has_no_api_refusal() -> None:
    spec = _pod(
        [
            {
                "name": "a",
                "volumeMounts": [{"name": "x", "mountPath": "/x"}],
                "resources": {"limits": {"hugepages-2Mi": "4Mi"}},
            },
            {"name": "b", "volumeMounts": [{"name": "x", "mountPath": "/x"}]},  # another container: its own paths
        ],
        [{"name": "x", "emptyDir": {}}],
    )
    assert list(admission.api_validation(spec)) == []


def test_the_admission_check_reports_an_api_refusal_in_any_namespace() -> None:
    from ekstrain.infra.verify.pods import PodTemplate, inventory

    bad = _pod([{"name": "c", "volumeMounts": [{"name": "a", "mountPath": "/x"}, {"name": "b", "mountPath": "/x"}]}])
    template = PodTemplate("Deployment/ns/d", "Deployment", "ns", "d", "spec.template.spec", {}, bad, "g")
    result = admission.check([template], {}, inventory([]))  # a privileged namespace: no Pod Security rule
    [problem] = result.problems
    assert problem.startswith("Deployment/ns/d (g) spec.template.spec: the API server refuses this pod: container c")


def test_the_repo_stacks_pass_every_deployability_rule() -> None:
    for name in ("prod", "dev"):
        flat, secrets = read_stack_file(REPO / f"Pulumi.{name}.yaml")
        load_flat(flat, name, today=TODAY, secret_keys=secrets)
    assert yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())["config"]["ekstrain:jupyterhub"]["enabled"]
