"""Everything pinned at apply time, and Kubernetes 1.36 on the calendar (ekstrain/facts/versions.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from ekstrain.facts import versions
from ekstrain.infra import offline
from ekstrain.infra.verify import pins

TODAY = dt.date(2026, 12, 6)


@pytest.mark.parametrize("k8s", versions.KNOWN_KUBERNETES_VERSIONS)
def test_every_addon_and_the_system_ami_are_pinned(k8s: str) -> None:
    for name in versions.DEFAULT_ADDON_VERSIONS:
        assert versions.addon_version(name, k8s), (name, k8s)
    release = versions.system_node_release_version(k8s)
    assert release is not None and release.startswith(f"{k8s}.") and release.endswith("-20260714")


def test_1_36_is_on_the_calendar_with_its_facts() -> None:
    r = versions.KUBERNETES_RELEASES["1.36"]
    assert (r.released, r.standard_support_end, r.extended_support_end) == (
        dt.date(2026, 6, 2),
        dt.date(2027, 8, 2),
        dt.date(2028, 8, 2),
    )
    standard, extended = versions.window(TODAY)
    assert standard == ("1.35", "1.36") and extended == ("1.32", "1.33", "1.34")
    assert versions.NEURON_CUSTOM_SCHEDULER_TAGS["1.36"] == "v1.36.2-eks-1-36-6"
    assert versions.addon_version("kube-proxy", "1.36").startswith("v1.36.")
    assert versions.addon_problem("coredns", versions.addon_version("coredns", "1.36") or "", "1.36") is None
    assert versions.standard_support_days_left("1.35", TODAY) == 111


def test_support_warning_within_60_days_and_refusal_past_extended() -> None:
    end = versions.KUBERNETES_RELEASES["1.35"].standard_support_end
    assert versions.support_warning("1.35", end - dt.timedelta(days=61)) is None
    warning = versions.support_warning("1.35", end - dt.timedelta(days=60))
    assert warning and "2027-03-27 (60 days)" in warning and "1.36" in warning
    assert versions.unsupported_reason("1.31", TODAY) is not None


def test_kubernetes_validate_ships_1_36_schemas() -> None:
    import os

    import kubernetes_validate

    d = os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema")
    assert "v1.36.0-local-strict" in os.listdir(d)


def _rec(records: list[offline.Record]) -> offline.Recording:
    rec = offline.Recording.__new__(offline.Recording)
    rec.records = records
    return rec


def _record(type_: str, name: str, inputs: dict[str, object]) -> offline.Record:
    return offline.Record(f"urn:{name}", type_, name, True, False, "", dict(inputs))


def test_render_check_refuses_an_unversioned_addon_and_node_group() -> None:
    rec = _rec(
        [
            _record(pins.ADDON, "cluster-pod-identity-agent", {"addonName": "eks-pod-identity-agent"}),
            _record(pins.ADDON, "cluster-coredns", {"addonName": "coredns", "addonVersion": "v1.14.2-eksbuild.4"}),
            _record(pins.NODE_GROUP, "cluster-system", {"amiType": "AL2023_x86_64_STANDARD"}),
        ]
    )
    check = pins.check_recording(rec)
    assert check.checked == 3 and len(check.problems) == 2
    assert (
        "aws:eks/addon:Addon cluster-pod-identity-agent (eks-pod-identity-agent) has no addonVersion"
        in (check.problems[0])
    )
    assert "ekstrain:versions.addons.eks-pod-identity-agent" in check.problems[0]
    assert "aws:eks/nodeGroup:NodeGroup cluster-system has no releaseVersion" in check.problems[1]
    assert "SYSTEM_NODE_RELEASE_VERSIONS" in check.problems[1]


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_shipped_stacks_pin_every_addon_and_node_group(request: pytest.FixtureRequest, stack: str) -> None:
    from conftest import shipped_recording

    rec = shipped_recording(request, stack)
    check = pins.check_recording(rec)
    assert check.problems == [] and check.checked >= 7
    group = rec.of_type(pins.NODE_GROUP)[0]
    assert group.inputs["releaseVersion"] == versions.SYSTEM_NODE_RELEASE_VERSIONS["1.36"]
    addons = {r.inputs["addonName"]: r.inputs["addonVersion"] for r in rec.of_type(pins.ADDON)}
    assert addons["kube-proxy"] == "v1.36.0-eksbuild.9" and set(addons) == set(versions.DEFAULT_ADDON_VERSIONS)
    # Every NodePool (partitions and the helper pool) rolls drifted nodes only in the stack's window.
    pools = rec.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert pools
    for pool in pools:
        budgets = pool.inputs["spec"]["disruption"]["budgets"]
        assert {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 16 * * *", "duration": "16h"} in budgets


def test_the_stack_warns_60_days_before_the_end_of_standard_support() -> None:
    from conftest import stack_sections

    from ekstrain.stacks.loader import parse

    sections = stack_sections("prod")
    _, quiet = parse(sections, "Pulumi.prod.yaml", today=dt.date(2027, 6, 2))  # 61 days before 2027-08-02
    assert not [w for w in quiet if w.startswith("ekstrain:cluster.kubernetesVersion")]
    _, warnings = parse(sections, "Pulumi.prod.yaml", today=dt.date(2027, 6, 15))
    assert (
        "ekstrain:cluster.kubernetesVersion: Kubernetes 1.36 leaves EKS standard support on 2027-08-02 (48 days); "
        "extended support then costs extra until 2028-08-02. Plan the upgrade to the next minor: add its row to "
        "ekstrain/facts/versions.py KUBERNETES_RELEASES with its pins (docs/runbook-upgrade.md)."
    ) in warnings
