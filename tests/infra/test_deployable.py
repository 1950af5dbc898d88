"""Renders that can deploy, not only validate (deliverable 4): each rule with its source (in the code),
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
        # offered in prod's training AZ, so that the notebook's fit is the only finding
        s["network"]["trainingZoneInstanceTypes"].append("trn1.2xlarge")

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


# ---- region offerings and the AMI release against a type's launch (ekstrain/facts/offerings.py)
# -----------------------


def _in_region(region: str) -> Any:
    """The stack moved to ``region``: its zones become that region's first zones (every other key unchanged)."""
    from ekstrain.facts.regions import AVAILABILITY_ZONES

    def change(s: dict[str, Any]) -> None:
        letters = AVAILABILITY_ZONES.get(region, "abc")
        s["region"] = region
        s["network"]["availabilityZones"] = [region + x for x in letters[: len(s["network"]["availabilityZones"])]]
        s["network"]["trainingAvailabilityZone"] = region + letters[0]
        # an AZ ID and what EC2 offers in it belong to one region of one account: moved, the stack names neither
        s["network"].pop("trainingAvailabilityZoneId", None)
        s["network"].pop("trainingZoneInstanceTypes", None)
        tls = s.get("jupyterhub", {}).get("tls") or {}
        if tls.get("certificateArn"):  # the hub's ACM certificate is regional too
            tls["certificateArn"] = tls["certificateArn"].replace(":us-west-2:", f":{region}:")

    return change


def _parsed(change: Any, stack: str = "prod") -> tuple[list[str], list[str]]:
    """(errors, warnings) of a repo stack with ``change`` applied."""
    sections = stack_sections(stack)
    change(sections)
    try:
        _, warnings = parse(sections, "test", today=TODAY)
    except ConfigError as exc:
        return [str(i) for i in exc.issues], []
    return [], warnings


def test_a_partition_type_its_region_does_not_offer_is_refused() -> None:
    """GIVEN prod moved to eu-west-3 (Paris), where no p4d, p4de, p5, trn1 or trn1n has an on-demand offering as of
    the table's date WHEN loaded THEN each partition type is refused with the key, the regions that offer it and
    the fix; in us-east-1 (which offers them all) the same stack is clean."""
    errors, _ = _parsed(_in_region("eu-west-3"))
    assert len(errors) == 5, errors
    [p5] = [e for e in errors if "p5.48xlarge" in e]
    assert p5.startswith("ekstrain:partitions[1] (gpu-h100).instanceTypes: p5.48xlarge is not offered in eu-west-3 (")
    assert "us-west-2" in p5 and "last updated 2026-01-21" in p5
    assert "fix: use a region that offers it or a type eu-west-3 offers" in p5
    assert "ekstrain:instanceTypes.p5.48xlarge.regions" in p5
    assert _parsed(_in_region("us-east-1")) == ([], [])


def test_one_type_not_offered_is_named_alone() -> None:
    """GIVEN prod in us-east-2 (Ohio): p4de has no offering there, p4d, p5 and the Trainium types have WHEN loaded
    THEN only p4de is refused."""
    errors, _ = _parsed(_in_region("us-east-2"))
    assert [e.split(" (offered")[0] for e in errors] == [
        "ekstrain:partitions[0] (gpu-a100).instanceTypes: p4de.24xlarge is not offered in us-east-2"
    ]


def _override(name: str, regions: list[str]) -> Any:
    from ekstrain.facts import catalog

    it = catalog.CATALOG[name]

    def change(s: dict[str, Any]) -> None:
        s["instanceTypes"] = {
            name: {
                "override": True,
                "accelerator": {"kind": it.family, "model": it.accelerator.model, "count": it.accelerator_count},
                "vcpus": it.vcpus,
                "memoryGiB": it.memory_gib,
                "networkGbps": it.network_gbps,
                "efa": {
                    "maxInterfaces": it.efa_max_interfaces,
                    "networkCards": it.network_cards,
                    "gpudirectRdma": it.gpudirect_rdma,
                },
                "instanceStoreGiB": it.instance_store_gib,
                "regions": regions,
            }
        }

    return change


def test_instance_types_regions_extend_the_table() -> None:
    """GIVEN dev (g5.8xlarge) in us-west-1, which the table does not list for g5 WHEN the stack lists us-west-1 under
    ekstrain:instanceTypes.g5.8xlarge.regions THEN it loads; without that entry it is refused."""

    def both(s: dict[str, Any]) -> None:
        _in_region("us-west-1")(s)
        _override("g5.8xlarge", ["us-west-1"])(s)

    assert any("g5.8xlarge is not offered in us-west-1" in e for e in _parsed(_in_region("us-west-1"), "dev")[0])
    assert _parsed(both, "dev") == ([], [])


def test_a_region_name_in_instance_types_regions_is_checked() -> None:
    errors, _ = _parsed(_override("g5.8xlarge", ["US West 1"]), "dev")
    [issue] = errors
    assert "'US West 1' is not a region name" in issue and "fix: list region names such as us-west-2" in issue


def test_a_region_newer_than_the_table_is_a_warning_not_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """GIVEN a region the regions table gained after the offerings table was written WHEN dev is loaded there THEN
    no refusal (the table cannot know), a warning naming the table's date and how to check."""
    from ekstrain.facts import regions

    monkeypatch.setitem(regions.AVAILABILITY_ZONES, "ap-southeast-9", "abc")
    errors, warnings = _parsed(_in_region("ap-southeast-9"), "dev")
    assert errors == []
    [warning] = [w for w in warnings if "offerings table" in w]
    assert warning.startswith(
        "ekstrain:partitions[0] (gpu-small).instanceTypes: the offerings table (as of 2026-01-21)"
    )
    assert "aws ec2 describe-instance-type-offerings --region ap-southeast-9" in warning


def _offered_in_the_zone(s: dict[str, Any], name: str) -> None:
    """The type is also offered in prod's training AZ ID (network.trainingZoneInstanceTypes), so only the region
    table and the AMI rules under test speak."""
    s["network"]["trainingZoneInstanceTypes"].append(name)


def test_a_capacity_blocks_only_type_is_a_warning() -> None:
    """GIVEN a partition of p5e.48xlarge (no on-demand price anywhere: the table cannot know its regions) WHEN loaded
    THEN a warning, not a refusal."""

    def p5e(s: dict[str, Any]) -> None:
        s["partitions"][1]["instanceTypes"] = ["p5e.48xlarge"]
        _offered_in_the_zone(s, "p5e.48xlarge")

    errors, warnings = _parsed(p5e)
    assert errors == []
    assert any(
        w.startswith("ekstrain:partitions[1] (gpu-h100).instanceTypes: p5e.48xlarge has no on-demand") for w in warnings
    )


def _b300_on(kubernetes: str, ami: str) -> Any:
    def change(s: dict[str, Any]) -> None:
        s["cluster"]["kubernetesVersion"] = kubernetes
        s["versions"]["amiAliasVersion"] = ami
        s["partitions"][1]["instanceTypes"] = ["p6-b300.48xlarge"]
        _offered_in_the_zone(s, "p6-b300.48xlarge")

    return change


def test_an_ami_release_older_than_a_partition_type_is_refused() -> None:
    """GIVEN Kubernetes 1.34 pinned to AMI release v20251010 (after 1.34 reached EKS, before p6-b300's launch on
    2025-11-18) and a p6-b300 partition WHEN loaded THEN refused, naming amiAliasVersion, the type's launch and its
    announcement, and the fix; a release after the launch loads."""
    errors, _ = _parsed(_b300_on("1.34", "v20251010"))
    [issue] = errors
    assert issue.startswith(
        "ekstrain:versions.amiAliasVersion: AMI release v20251010 (2025-10-10) predates an instance type of "
        "ekstrain:partitions[1] (gpu-h100).instanceTypes: p6-b300.48xlarge launched 2025-11-18 "
        "(AWS What's New 2025-11-18, "
    )
    assert "fix: pin a release dated on or after 2025-11-18, e.g. amiAliasVersion: v20261119" in issue
    assert _parsed(_b300_on("1.34", "v20251120"))[0] == []
    assert _parsed(_b300_on("1.34", "latest"))[0] == []


def test_a_stale_offerings_table_only_warns() -> None:
    """GIVEN prod in eu-west-3 validated more than a year after the table's date (2026-01-21) WHEN loaded THEN the
    types it does not list there are warnings (EC2 may offer them by now), not refusals."""
    sections = stack_sections("prod")
    _in_region("eu-west-3")(sections)
    _, warnings = parse(sections, "test", today=dt.date(2027, 2, 1))
    offered = [w for w in warnings if "is not offered in eu-west-3" in w]
    assert len(offered) == 5, warnings
    assert offered[0].startswith("ekstrain:partitions[0] (gpu-a100).instanceTypes: p4d.24xlarge is not offered in")


def test_offerings_seen_after_the_table_are_merged_with_their_source() -> None:
    """GIVEN p6-b300 launched in Seoul on 2026-08-20 (after the table date) WHEN checked there THEN no problem."""
    from ekstrain.facts import offerings

    assert "ap-northeast-2" in offerings.ADDED_SINCE["p6-b300.48xlarge"]
    assert offerings.offering_problem("p6-b300.48xlarge", "ap-northeast-2", today=TODAY) is None
    assert offerings.offering_problem("p6-b300.48xlarge", "eu-west-1", today=TODAY)[0] == "error"  # type: ignore[index]
