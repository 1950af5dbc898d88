"""Day-2 edits with ``ekstrain diff`` as the oracle: each edit changes exactly what it must.

Both sides are the real program under the offline engine (prod's stack file, then the edit); the
expected sets are exact, as (action, type, name). Scenarios marked LEAD depend on components/cluster.py
day-2 fixes (node group version, kube-proxy pin, access entries keyed by principal).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from conftest import cfg_with, needs_upstream, releases, run_stack
from support.programs import shared_run

from ekstrain.assembly.schedulers import ledger
from ekstrain.diff import compare
from ekstrain.diff.model import Resource
from ekstrain.infra.diff import snapshot_dicts
from ekstrain.infra.offline import Recording, plain
from ekstrain.infra.verify import charts

Change = tuple[str, str, str]


def snapshot(rec: Recording) -> list[Resource]:
    return [Resource.from_dict(d) for d in snapshot_dicts(rec)]


@pytest.fixture(scope="module")
def prod(prod_recording: Recording) -> list[Resource]:
    return snapshot(prod_recording)


def diff_after(prod: list[Resource], edit: Callable[[dict[str, Any]], None]) -> compare.Diff:
    """prod against prod's stack file with ``edit`` applied (a run another module makes of the same config is
    shared: tests/support/programs.py)."""
    return compare.compare(prod, snapshot(shared_run(cfg_with(edit))))


def changes(diff: compare.Diff) -> set[Change]:
    return {(c.action, c.type.rsplit(":", 1)[-1], c.name) for c in diff.changes}


def flagged(diff: compare.Diff) -> set[tuple[str, str]]:
    return {(c.name, f.category) for c, f in diff.flags()}


def _rename_partition_keys(s: dict[str, Any], old: str, new: str | None) -> None:
    weights = s["schedulers"]["volcano"]["queueWeights"]
    value = weights.pop(old)
    if new:
        weights[new] = value


PARTITION_OBJECTS = {
    ("PlacementGroup", "network-pg-{p}"),
    ("Queue", "volcano-queue-{p}"),
    ("ScaledObject", "slurm-scale-slurm-worker-{p}"),  # KEDA scales each partition's NodeSet
    ("ClusterTrainingRuntime", "operators-runtime-torch-distributed-{p}"),
    ("Partition", "{p}"),
    ("EC2NodeClass", "{p}-nodeclass"),
    ("NodePool", "{p}-nodepool"),
    ("DaemonSet", "health-gate-{p}"),  # the NodePool's pre-flight (ekstrain/payloads/health_gate.py)
    ("PodGroup", "slurm-gang-podgroup-slurm-{p}"),  # the partition's slurmd pods admitted all or none
}
# The Slurm gang sizer lists every partition's NodeSet and PodGroup: a partition added or removed updates it.
SIZER = ("update", "Deployment", "slurm-gang-deployment-slurm-gang-sizer")


def partition_objects(action: str, partition: str, placement_group: bool = True) -> set[Change]:
    """``placement_group=False``: a Capacity Block partition (prod's gpu-h100), which has none (docs/capacity.md)."""
    return {
        (action, t, n.format(p=partition)) for t, n in PARTITION_OBJECTS if placement_group or t != "PlacementGroup"
    }


def test_no_edit_is_no_change(prod: list[Resource], prod_recording: Recording) -> None:
    assert compare.compare(prod, snapshot(prod_recording)).changes == []


def test_resizing_a_partition_updates_its_limits_only(prod: list[Resource]) -> None:
    def edit(s: dict[str, Any]) -> None:
        # gpu-h100 is a Capacity Block of 8: growing it past 8 nodes takes a larger block (16 instances)
        s["partitions"][1].update(maxNodes=12)
        s["partitions"][1]["capacityReservation"]["instanceCount"] = 16

    d = diff_after(prod, edit)
    assert changes(d) == {
        ("update", "Queue", "volcano-queue-gpu-h100"),
        ("update", "Release", "slurm-cluster"),
        ("update", "ScaledObject", "slurm-scale-slurm-worker-gpu-h100"),  # maxReplicaCount = maxNodes
        ("update", "Release", "observability"),  # Prometheus memory follows the fleet's series (prometheus_sizing)
        ("update", "NodePool", "gpu-h100-nodepool"),
        ("update", "Budget", "cost-budget"),  # the default limit is every partition at maxNodes for a month
    }
    assert flagged(d) == set()  # spec.limits is not in the NodePool hash: no drift


def test_adding_a_partition_creates_its_objects(prod: list[Resource]) -> None:
    part = {"name": "gpu-h200", "accelerator": "gpu", "instanceTypes": ["p5en.48xlarge"], "maxNodes": 4}

    def edit(s: dict[str, Any]) -> None:
        s["partitions"].append(part)
        s["network"]["trainingZoneInstanceTypes"].append("p5en.48xlarge")  # offered in the training AZ ID

    d = diff_after(prod, edit)
    assert changes(d) == partition_objects("create", "gpu-h200") | {
        ("update", "Budget", "cost-budget"),  # the default limit is every partition at maxNodes for a month
        ("replace", "ConfigMap", "cost-node-prices"),  # OpenCost's prices cover the stack's instance types
        ("replace", "ConfigMap", "cost-dashboard-spend"),  # the Slurm idle panel sums each partition
        ("update", "Release", "device-plugins-aws-efa-k8s-device-plugin"),
        ("update", "Release", "slurm-cluster"),
        ("update", "Release", "jupyterhub"),
        ("update", "Release", "observability"),  # Prometheus memory follows the fleet's series (prometheus_sizing)
        SIZER,
    }
    assert flagged(d) == set()


def test_removing_a_partition_deletes_its_nodes_and_is_flagged(prod: list[Resource]) -> None:
    def edit(s: dict[str, Any]) -> None:
        del s["partitions"][1]
        _rename_partition_keys(s, "gpu-h100", None)

    d = diff_after(prod, edit)
    assert changes(d) == partition_objects("delete", "gpu-h100", placement_group=False) | {
        ("update", "Budget", "cost-budget"),  # the default limit is every partition at maxNodes for a month
        ("replace", "ConfigMap", "cost-node-prices"),  # OpenCost's prices cover the stack's instance types
        ("replace", "ConfigMap", "cost-dashboard-spend"),  # the Slurm idle panel sums each partition
        ("update", "Release", "device-plugins-aws-efa-k8s-device-plugin"),
        ("update", "Release", "slurm-cluster"),
        ("update", "Release", "observability"),  # fewer nodes to scrape: a smaller Prometheus volume
        ("update", "Release", "jupyterhub"),
        SIZER,
    }
    assert flagged(d) == {("gpu-h100-nodeclass", "training-nodes"), ("gpu-h100-nodepool", "training-nodes")}


def test_renaming_a_partition_is_a_new_partition(prod: list[Resource]) -> None:
    """Karpenter objects are named after the partition (metadata.name replaces): a rename drains its nodes."""

    def edit(s: dict[str, Any]) -> None:
        s["partitions"][1]["name"] = "gpu-hopper"
        _rename_partition_keys(s, "gpu-h100", "gpu-hopper")

    d = diff_after(prod, edit)
    assert changes(d) == (
        partition_objects("delete", "gpu-h100", placement_group=False)
        | partition_objects("create", "gpu-hopper", placement_group=False)
        | {("update", "Release", "slurm-cluster"), ("update", "Release", "jupyterhub")}
        | {("replace", "ConfigMap", "cost-dashboard-spend")}  # the Slurm idle panel names each partition
        | {SIZER}
    )
    assert {c for _, c in flagged(d)} == {"training-nodes"}


def test_reordering_azs_changes_nothing(prod: list[Resource]) -> None:
    d = diff_after(prod, lambda s: s["network"].update(availabilityZones=["us-west-2c", "us-west-2a", "us-west-2b"]))
    assert d.changes == []


def test_removing_an_az_removes_only_that_az(prod: list[Resource]) -> None:
    d = diff_after(prod, lambda s: s["network"].update(availabilityZones=["us-west-2b", "us-west-2c"]))
    az = "us-west-2a"
    assert changes(d) == {
        ("delete", "Subnet", f"network-public-{az}"),
        ("delete", "RouteTableAssociation", f"network-public-{az}"),
        ("delete", "Eip", f"network-nat-{az}"),
        ("delete", "NatGateway", f"network-nat-{az}"),
        ("delete", "Subnet", f"network-private-{az}"),
        ("delete", "RouteTable", f"network-private-{az}"),
        ("delete", "Route", f"network-private-{az}-default"),
        ("delete", "RouteTableAssociation", f"network-private-{az}"),
        ("delete", "MountTarget", f"efs-mt-{az}"),
        ("update", "VpcEndpoint", "network-s3"),
        ("update", "Cluster", "cluster"),
        ("update", "Cluster", "cluster-eksCluster"),  # vpc_config.subnet_ids updates in place
        # aws_eks_node_group subnet_ids is ForceNew: the system nodes move (a name prefix, so no conflict)
        ("replace", "ManagedNodeGroup", "cluster-system"),
        ("replace", "NodeGroup", "cluster-system"),
    }
    assert flagged(d) == set()


def test_ami_bump_drifts_every_nodeclass_held_by_budgets(prod: list[Resource]) -> None:
    d = diff_after(prod, lambda s: s.setdefault("versions", {}).update(amiAliasVersion="v20261101"))
    classes = {
        "gpu-a100-nodeclass",
        "gpu-h100-nodeclass",
        "trainium-trn1-nodeclass",
        "trainium-trn1n-nodeclass",
        "cpu-helpers-nodeclass",  # the launchers' and Ray heads' CPU pool runs the same AMI
    }
    assert changes(d) == {("update", "EC2NodeClass", n) for n in classes}
    assert flagged(d) == {(n, "training-nodes") for n in classes}
    # prod's ekstrain:maintenance window: the drifted nodes roll in it, free ones only (jobs' pods: do-not-disrupt)
    assert all("rolls in the window 08:00-16:00 UTC daily" in f.message for _, f in d.flags())


def test_turning_slurm_off_deletes_its_crds_and_objects(prod: list[Resource]) -> None:
    d = diff_after(prod, lambda s: s["schedulers"]["slurm"].update(enabled=False))
    assert changes(d) == {
        ("replace", "ConfigMap", "cost-dashboard-spend"),  # the Slurm idle panel is gone with Slurm
        # ... and so is its metric from the AMP remote-write keep-list (assembly/observability.py)
        ("update", "Release", "observability"),
        # no Queue changes: a queue holds its whole partition, slurmd pods or not (assembly/schedulers/ledger.py);
        # the admission bindings stop covering the slurm namespace
        *(
            ("update", "ValidatingAdmissionPolicyBinding", f"volcano-binding-{p}")
            for p in (ledger.POD_POLICY, ledger.JOB_POLICY, ledger.PODGROUP_POLICY)
        ),
        ("delete", "Slurm", "slurm"),
        ("delete", "Release", "slurm-keda"),
        *(("delete", "ScaledObject", f"slurm-scale-slurm-worker-{p}") for p in ("gpu-a100", "gpu-h100", "trainium")),
        ("delete", "Release", "slurm-cert-manager"),
        ("delete", "Release", "slurm-operator-crds"),
        ("delete", "Release", "slurm-operator"),
        ("delete", "Release", "slurm-cluster"),
        ("delete", "Namespace", "slurm-namespace"),
        ("delete", "RandomPassword", "slurm-db-password"),
        ("delete", "RandomPassword", "slurm-db-root-password"),
        ("delete", "PersistentVolume", "slurm-fsx-pv"),
        ("delete", "PersistentVolumeClaim", "slurm-fsx-pvc"),
        ("delete", "Service", "slurm-db"),
        ("delete", "NetworkPolicy", "slurm-db"),
        ("delete", "Secret", "slurm-db-secret"),
        ("delete", "StatefulSet", "slurm-db"),
        *(("delete", t, f"slurm-{k}") for k in ("slurmKey", "jwtKey") for t in ("Secret", "RandomPassword")),
        # the gang sizer and its PodGroups go with Slurm
        *(
            ("delete", kind, f"slurm-gang-{kind.lower()}-slurm-gang-sizer")
            for kind in ("ConfigMap", "Deployment", "Role", "RoleBinding", "ServiceAccount")
        ),
        *(("delete", "PodGroup", f"slurm-gang-podgroup-slurm-{p}") for p in ("gpu-a100", "gpu-h100", "trainium")),
    }
    # Slinky's templated CRDs would go with their release, and every NodeSet/LoginSet with them: the release
    # is protected (refused until unprotected). cert-manager keeps its CRDs (crds.keep).
    assert flagged(d) == {
        ("slurm-operator-crds", "crds"),
        ("slurm-operator-crds", "refused"),
        ("slurm-namespace", "stateful"),  # the accounting database's volume goes with the namespace
    }


def test_chart_bump_with_crds_dir_is_flagged(prod: list[Resource]) -> None:
    d = diff_after(
        prod, lambda s: s.setdefault("versions", {}).setdefault("charts", {}).update({"kuberay-operator": "1.8.0"})
    )
    assert changes(d) == {("update", "Release", "operators-kuberay")}
    assert flagged(d) == {("operators-kuberay", "crds")}


def test_kubernetes_minor_upgrade_moves_control_plane_nodes_and_addons(prod: list[Resource]) -> None:
    """1.34 -> 1.35 (1.36 is not in versions.KUBERNETES_RELEASES yet; the mechanics are the same).

    LEAD: the system node group's ``version`` and the pinned kube-proxy come from components/cluster.py fixes."""
    old = snapshot(run_stack(cfg_with(lambda s: s["cluster"].update(kubernetesVersion="1.34"))))
    d = compare.compare(old, prod)
    assert {("update", "Cluster", "cluster"), ("update", "Addon", "cluster-coredns")} <= changes(d)
    assert ("update", "Release", "device-plugins-neuron") in changes(d)  # the scheduler extension's tag
    assert ("update", "ManagedNodeGroup", "cluster-system") in changes(d)  # LEAD: node group follows the version
    assert ("update", "Addon", "cluster-kube-proxy") in changes(d)  # LEAD: kube-proxy pinned per version
    assert not {c for c in changes(d) if c[0] in ("replace", "delete", "create")}


def test_reordering_admins_touches_no_access_entry(prod: list[Resource]) -> None:
    """LEAD: access entries keyed by principal (not ``admin-<i>``)."""
    other = {"principalArn": "arn:aws:iam::111122223333:role/Other"}
    d = diff_after(prod, lambda s: s["cluster"].update(adminAccess=[other, *s["cluster"]["adminAccess"]]))
    cluster = next(c for c in d.changes if c.name == "cluster")
    assert not any(p.startswith("accessEntries.admin-") for p in cluster.changed)


def test_fixed_name_security_groups_ignore_description_edits(prod_recording: Recording) -> None:
    named = [r for r in prod_recording.of_type("aws:ec2/securityGroup:SecurityGroup") if r.inputs.get("name")]
    assert {r.name for r in named} == {"network-efa", "efs-sg", "fsx-sg"}
    assert all(r.ignore_changes == ["description"] for r in named)


def test_every_helm_release_deletes_before_replace(prod_recording: Recording) -> None:
    rels = prod_recording.of_type("kubernetes:helm.sh/v3:Release")
    assert rels and all(r.delete_before_replace for r in rels)


def test_releases_that_delete_their_crds_are_protected(prod_recording: Recording) -> None:
    protected = {r.name for r in prod_recording.of_type("kubernetes:helm.sh/v3:Release") if r.protect}
    assert protected == {"karpenter-crd", "volcano", "slurm-operator-crds", "operators-kubeflow-trainer"}


def test_efs_mount_targets_alias_their_position_names(prod_recording: Recording) -> None:
    mts = prod_recording.of_type("aws:efs/mountTarget:MountTarget")
    assert [(r.name, r.aliases[0]["spec"]["name"]) for r in mts] == [
        ("efs-mt-us-west-2a", "efs-mt-0"),
        ("efs-mt-us-west-2b", "efs-mt-1"),
        ("efs-mt-us-west-2c", "efs-mt-2"),
    ]


needs_helm = pytest.mark.skipif(charts.helm_binary() is None, reason="no helm: run `make .tools/helm`")


def _cold_render(rel: charts.Release, cache: pathlib.Path) -> str:
    """``helm template`` with an empty render cache (what Argo CD does on every refresh: no cluster lookup)."""
    os.environ["EKSTRAIN_CACHE_DIR"] = str(cache)
    try:
        return charts.template(rel, "1.35")
    finally:
        del os.environ["EKSTRAIN_CACHE_DIR"]


@needs_upstream
@needs_helm
@pytest.mark.parametrize("release_name", ["slurm", "jupyterhub"])
def test_two_cold_renders_are_byte_identical(
    release_name: str, prod_recording: Recording, tmp_path: pathlib.Path
) -> None:
    """Argo CD renders without cluster access: generated keys (randAscii/randHex behind `lookup`) would make
    every refresh OutOfSync and a sync rotate them. The program feeds the charts' own secret options."""
    inputs = plain(releases(prod_recording)[release_name].inputs)
    rel = charts.Release.from_inputs("x", inputs)
    first, second = _cold_render(rel, tmp_path / "a"), _cold_render(rel, tmp_path / "b")
    assert first == second


def test_slurm_and_hub_keys_come_from_pulumi_randoms(prod_recording: Recording) -> None:
    values = releases(prod_recording)["slurm"].inputs["values"]
    # The keys in the Secrets are the chart's default key names (slurm.key, jwt.key): only the names are set.
    assert values["slurmKey"] == {"create": False, "secretRef": {"name": "slurm-auth-key"}}
    assert values["jwtKey"] == {"create": False, "secretRef": {"name": "slurm-jwt-key"}}
    secrets = {r.inputs["metadata"]["name"]: r for r in prod_recording.of_type("kubernetes:core/v1:Secret")}
    assert set(secrets["slurm-auth-key"].inputs["stringData"]) == {"slurm.key"}
    assert "stringData" in secrets["slurm-auth-key"].secret_inputs
    hub = releases(prod_recording)["jupyterhub"]
    keys = [hub.inputs["values"]["proxy"]["secretToken"], hub.inputs["values"]["hub"]["cookieSecret"]]
    assert all(len(k) == 64 and int(k, 16) >= 0 for k in keys) and keys[0] != keys[1]
    assert {"values.proxy.secretToken", "values.hub.cookieSecret"} <= hub.secret_inputs
