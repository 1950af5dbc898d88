"""``pulumi destroy`` in order: the teardown runbook (docs/delivery.md) as a sequence over the recorded graph."""

from __future__ import annotations

import pytest
from conftest import cfg_with, run_stack

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
