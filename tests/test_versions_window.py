"""The Kubernetes version window comes from EKS's dated calendar in ekstrain/facts/versions.py."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import stack_sections

from ekstrain.facts import versions
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

TODAY = dt.date(2026, 12, 3)


def test_window_on_2026_12_03() -> None:
    # GIVEN the calendar WHEN asked on 2026-12-03 (the day after 1.34's standard support ended)
    standard, extended = versions.window(TODAY)
    # THEN 1.35 and 1.36 are in standard support, 1.32-1.34 are in extended, 1.31 is gone
    assert standard == ("1.35", "1.36")
    assert extended == ("1.32", "1.33", "1.34")
    assert versions.DEFAULT_KUBERNETES_VERSION == "1.36"
    assert versions.unsupported_reason("1.31", TODAY) == (
        "Kubernetes 1.31 left EKS extended support on 2026-11-26; EKS upgrades such clusters automatically"
    )
    assert versions.unsupported_reason("1.35", dt.date(2026, 1, 26)) == (
        "Kubernetes 1.35 is not available on EKS before 2026-01-27"
    )


def test_calendar_rows_are_14_plus_12_months() -> None:
    for r in versions.KUBERNETES_RELEASES.values():
        assert 13 * 30 < (r.standard_support_end - r.released).days < 15 * 31, r.version
        assert 360 <= (r.extended_support_end - r.standard_support_end).days <= 367, r.version


def test_every_known_version_has_its_facts() -> None:
    for v in versions.KNOWN_KUBERNETES_VERSIONS:
        assert v in versions.NEURON_CUSTOM_SCHEDULER_TAGS and v in versions.AMI_ALIAS_VERSIONS
        released = versions.ami_release_date(versions.AMI_ALIAS_VERSIONS[v])
        assert released is not None and released >= versions.KUBERNETES_RELEASES[v].released, v
    assert versions.addon_version("coredns", "1.35") == "v1.14.2-eksbuild.4"
    # Unpinned, pulumi-eks asks getAddonVersion(mostRecent) on every run: each known version has a pin.
    for v in versions.KNOWN_KUBERNETES_VERSIONS:
        assert (versions.addon_version("kube-proxy", v) or "").startswith(f"v{v}."), v
    assert versions.addon_version("kube-proxy", "1.35") == "v1.35.3-eksbuild.2"
    assert versions.addon_version("vpc-cni", "1.35") == versions.DEFAULT_ADDON_VERSIONS["vpc-cni"]


def _issues(change: dict[str, str]) -> list[str]:
    sections = stack_sections("prod")
    if "kubernetesVersion" in change:
        sections["cluster"]["kubernetesVersion"] = change["kubernetesVersion"]
    if "amiAliasVersion" in change:
        sections["versions"]["amiAliasVersion"] = change["amiAliasVersion"]
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml", today=TODAY)
    return [f"{i.key}: {i.problem} / {i.fix}" for i in caught.value.issues]


def test_version_past_extended_support_is_refused_with_the_window() -> None:
    issues = _issues({"kubernetesVersion": "1.31", "amiAliasVersion": "v20251120"})
    assert issues == [
        "ekstrain:cluster.kubernetesVersion: Kubernetes 1.31 left EKS extended support on 2026-11-26; "
        "EKS upgrades such clusters automatically (as of 2026-12-03) / use 1.36; in standard support: "
        "1.35, 1.36; in extended support (extra cost): 1.32, 1.33, 1.34"
    ]


def test_ami_pin_older_than_the_version_is_refused() -> None:
    issues = _issues({"amiAliasVersion": "v20251120"})
    assert issues == [
        "ekstrain:versions.amiAliasVersion: AMI release v20251120 predates Kubernetes 1.36 on EKS "
        "(2026-06-02): al2023@v20251120 has no 1.36 image / use amiAliasVersion: v20261119 (or a later "
        "release)"
    ]


@pytest.mark.parametrize("release", ["v20260930", "v20261003"])
def test_an_ami_release_with_a_known_kernel_panic_is_refused(release: str) -> None:
    assert _issues({"amiAliasVersion": release}) == [
        f"ekstrain:versions.amiAliasVersion: AMI release {release}: kernel 6.12.110 may panic on Kubernetes "
        "1.31-1.35 (amazon-eks-ami #2845; fixed in v20261012) / use amiAliasVersion: v20261119"
    ]


def test_extended_support_version_is_accepted_with_a_dated_warning() -> None:
    sections = stack_sections("prod")
    sections["cluster"]["kubernetesVersion"] = "1.34"
    _, warnings = parse(sections, "Pulumi.prod.yaml", today=TODAY)
    assert (
        "ekstrain:cluster.kubernetesVersion: Kubernetes 1.34 is past EKS standard support (ended 2026-12-02); "
        "extended support costs extra and ends 2027-12-02. Move to 1.36."
    ) in warnings


def test_prod_runs_the_default_version() -> None:
    assert stack_sections("prod")["cluster"]["kubernetesVersion"] == versions.DEFAULT_KUBERNETES_VERSION


def test_every_installed_addon_names_its_compatibility_source_and_the_pins_fit() -> None:
    """GIVEN the EKS add-ons the program installs WHEN their default pins are checked per Kubernetes version
    THEN each add-on says where its bounds come from (or that no citable table exists), and every pin the
    program ships for a version is within that version's bounds."""
    assert set(versions.ADDON_SOURCES) == set(versions.DEFAULT_ADDON_VERSIONS)
    assert set(versions.ADDON_COMPATIBILITY) <= set(versions.ADDON_SOURCES)
    for name, per_version in versions.ADDON_COMPATIBILITY.items():
        assert set(per_version) <= set(versions.KUBERNETES_RELEASES), name
    for k8s in versions.KUBERNETES_RELEASES:
        for name in versions.DEFAULT_ADDON_VERSIONS:
            pin = versions.addon_version(name, k8s)
            assert pin is None or versions.addon_problem(name, pin, k8s) is None, (name, k8s, pin)
    problem, fix = versions.addon_problem("coredns", "v1.14.2-eksbuild.4", "1.34") or ("", "")
    assert "v1.13 or older" in problem and "EKS user guide, CoreDNS versions" in problem
    assert "v1.13.2-eksbuild.7" in fix and "describe-addon-versions" in fix
