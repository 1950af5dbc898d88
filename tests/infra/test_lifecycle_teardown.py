"""``pulumi destroy`` in order: the teardown runbook (docs/delivery.md) as a sequence over the recorded graph."""

from __future__ import annotations

import re

import pytest
from conftest import REPO, cfg_with, run_stack

from ekstrain.contracts import teardown
from ekstrain.diff.model import Resource
from ekstrain.diff.order import before, destroy_order
from ekstrain.infra.diff import snapshot_dicts
from ekstrain.infra.offline import Recording


@pytest.fixture(scope="module")
def prod(prod_recording: Recording) -> list[Resource]:
    return [Resource.from_dict(d) for d in snapshot_dicts(prod_recording)]


def one(resources: list[Resource], type_suffix: str, name: str) -> Resource:
    (found,) = [r for r in resources if r.type.endswith(type_suffix) and r.name == name]
    return found


def test_destroy_order_is_children_and_dependents_first() -> None:
    p = "urn:pulumi:s::p::"
    a = Resource(urn=f"{p}t::a", type="t", name="a")
    b = Resource(urn=f"{p}t::b", type="t", name="b", dependencies=(a.urn,))
    c = Resource(urn=f"{p}t$t::c", type="t", name="c", parent=b.urn)
    assert [r.name for r in destroy_order([a, b, c])] == ["c", "b", "a"]
    with pytest.raises(ValueError, match="cycle"):
        destroy_order([Resource(urn=a.urn, type="t", name="a", dependencies=(b.urn,)), b])


def test_karpenter_drains_before_its_release_and_crds_go(prod: list[Resource]) -> None:
    """EC2NodeClass deletion waits on Karpenter's termination finalizer until its NodeClaims are gone:
    the controller and its CRDs must still be there."""
    order = destroy_order(prod)
    controller = one(prod, ":Release", "karpenter")
    crds = one(prod, ":Release", "karpenter-crd")
    for r in prod:
        if r.type.endswith((":NodePool", ":EC2NodeClass")):
            assert before(order, r, controller) and before(order, r, crds), r.name


def test_scratch_class_and_volumes_go_before_the_csi_drivers(prod: list[Resource]) -> None:
    order = destroy_order(prod)
    fsx_driver = one(prod, ":Release", "storage-csi-fsx")
    efs_driver = one(prod, ":Release", "storage-csi-efs")
    assert before(order, one(prod, ":StorageClass", "storage-volumes-fsx-scratch"), fsx_driver)
    assert before(order, one(prod, ":PersistentVolume", "storage-volumes-fsx-pv"), fsx_driver)
    assert before(order, one(prod, ":StorageClass", "storage-volumes-efs-ap"), efs_driver)


def test_custom_resources_go_before_the_releases_with_their_crds(prod: list[Resource]) -> None:
    order = destroy_order(prod)
    volcano = one(prod, ":Release", "volcano")
    trainer = one(prod, ":Release", "operators-kubeflow-trainer")
    assert all(before(order, q, volcano) for q in prod if q.type.endswith("volcano.sh/v1beta1:Queue"))
    assert all(before(order, t, trainer) for t in prod if t.type.endswith(":ClusterTrainingRuntime"))


def test_retained_fsx_keeps_its_network_path(prod: list[Resource]) -> None:
    """The retained file system's interfaces stay in the EFA subnet with the Lustre SG: those and the VPC
    are retained with it (a delete would fail with DependencyViolation and stop the destroy)."""
    kept = {(r.type.rsplit(":", 1)[-1], r.name) for r in prod if r.retain_on_delete}
    assert {("SecurityGroup", "fsx-sg"), ("Subnet", "network-efa-us-west-2b"), ("Vpc", "network")} <= kept
    assert ("Subnet", "network-private-us-west-2a") not in kept


def test_nothing_network_is_retained_without_protected_storage() -> None:
    rec = run_stack(cfg_with(lambda s: s["storage"].update(protect=False)))
    assert not [r.name for r in rec.records if r.retain_on_delete]


def kept(recording: Recording) -> list[teardown.Kept]:
    """Every recorded resource with what protects or retains it (the EKS cluster's deletionProtection included)."""
    return [
        teardown.Kept(
            r.type,
            r.name,
            r.protect,
            r.retain_on_delete,
            r.type == "aws:eks/cluster:Cluster" and bool(r.inputs.get("deletionProtection")),
        )
        for r in recording.records
        if r.custom or r.remote
    ]


def test_the_runbook_lists_what_destroy_stops_at_and_leaves_behind(prod_recording: Recording) -> None:
    """docs/delivery.md "Teardown": the prod table equals the recording's protect / retainOnDelete /
    deletionProtection; the cluster (protected, deletion protection on) stops a plain `pulumi destroy`."""
    runbook = (REPO / "docs" / "delivery.md").read_text()
    match = re.search(r"<!-- teardown:prod -->\n(.*?)\n<!-- /teardown -->", runbook, re.S)
    assert match, "docs/delivery.md has no teardown:prod table"
    want = teardown.table(kept(prod_recording))
    assert match.group(1).strip() == want, f"docs/delivery.md teardown:prod should read:\n{want}"
    eks = next(k for k in kept(prod_recording) if k.type == "aws:eks/cluster:Cluster")
    assert eks.protect and eks.deletion_protection
    section = runbook[runbook.index("## Teardown runbook") :]
    for needed in (
        "pulumi destroy --exclude-protected",
        "ekstrain:cluster.deletionProtection",
        "pulumi state unprotect",
        "aws fsx delete-file-system",
        "aws kms schedule-key-deletion",
    ):
        assert needed in section, needed


def test_dev_leaves_nothing_billed_behind(dev_recording: Recording) -> None:
    rows = teardown.rows(kept(dev_recording))
    assert all(r["then `pulumi destroy`"] != "left in AWS, forgotten by the state" for r in rows)
    assert all(r["billed while kept"] == "nothing" for r in rows)
