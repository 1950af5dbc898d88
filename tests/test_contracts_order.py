"""The deploy contracts (ekstrain/contracts/kinds.py) and the creation-order rules that read them
(infra/verify/order.py ``contracts_check``): each rule refuses a seeded bad graph, naming the type and the fix,
and passes the shipped stacks."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from ekstrain.contracts import kinds
from ekstrain.infra import offline
from ekstrain.infra.verify import order

P = "urn:pulumi:s::ekstrain::"
CLUSTER = "aws:eks/cluster:Cluster"
ASSOC = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ENTRY = "aws:eks/accessEntry:AccessEntry"
PROVIDER = "pulumi:providers:kubernetes"
NS = "kubernetes:core/v1:Namespace"
CM = "kubernetes:core/v1:ConfigMap"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
FS = "aws:fsx/lustreFileSystem:LustreFileSystem"
TAG = "aws:costexplorer/costAllocationTag:CostAllocationTag"


def rec(type_: str, name: str, deps: tuple[str, ...] = (), provider: str = "", **inputs: object) -> offline.Record:
    return offline.Record(
        urn=f"{P}{type_}::{name}",
        type=type_,
        name=name,
        custom=True,
        remote=False,
        parent="",
        inputs=dict(inputs),
        provider=f"{provider}::id" if provider else "",
        dependencies=list(deps),
    )


def base() -> list[offline.Record]:
    """A cluster, the deploy role's entry and association, and a Kubernetes provider that waits for it."""
    cluster = rec(CLUSTER, "cluster-eksCluster")
    entry = rec(ENTRY, "cluster-deployer", (cluster.urn,))
    assoc = rec(ASSOC, "cluster-deployer", (cluster.urn, entry.urn))
    provider = rec(PROVIDER, "cluster-k8s", (cluster.urn, assoc.urn))
    return [cluster, entry, assoc, provider]


def problems(records: list[offline.Record], flags: frozenset[str] = frozenset()) -> list[str]:
    recording = offline.Recording(records=records, outputs={}, invokes=[])
    return order.contracts_check(recording, order.Graph.of(recording), flags).problems


def namespace(name: str, provider: offline.Record) -> offline.Record:
    return rec(NS, f"{name}-ns", (), provider.urn, metadata={"name": name})


def test_a_good_graph_passes() -> None:
    cluster, entry, assoc, provider = base()
    ns = namespace("monitoring", provider)
    cm = rec(CM, "dash", (ns.urn,), provider.urn, metadata={"name": "d", "namespace": "monitoring"})
    assert problems([cluster, entry, assoc, provider, ns, cm]) == []


def test_a_kind_without_a_contract_is_refused_naming_the_type_and_the_file() -> None:
    (p,) = problems([*base(), rec("aws:ec2/transitGateway:TransitGateway", "tgw")])
    assert "type aws:ec2/transitGateway:TransitGateway has no deploy contract" in p
    assert "ekstrain/contracts/kinds.py" in p


def test_an_object_in_a_namespace_created_later_is_refused() -> None:
    """The spend dashboard's old shape: a ConfigMap in `monitoring` with no dependency on that Namespace."""
    cluster, entry, assoc, provider = base()
    ns = namespace("monitoring", provider)
    cm = rec(CM, "cost-dashboard-spend", (), provider.urn, metadata={"name": "d", "namespace": "monitoring"})
    (p,) = problems([cluster, entry, assoc, provider, ns, cm])
    assert "ConfigMap cost-dashboard-spend (kubernetes:core/v1:ConfigMap) in namespace 'monitoring'" in p
    assert "monitoring-ns creates it" in p and "depends_on" in p


def test_an_object_in_a_namespace_nobody_creates_is_refused_and_built_in_ones_pass() -> None:
    cluster, entry, assoc, provider = base()
    lost = rec(CM, "lost", (), provider.urn, metadata={"name": "x", "namespace": "nowhere"})
    system = rec(
        "kubernetes:core/v1:Service", "svc", (), provider.urn, metadata={"name": "x", "namespace": "kube-system"}
    )
    (p,) = problems([cluster, entry, assoc, provider, lost, system])
    assert "'nowhere', which no resource of the stack creates" in p


def test_a_release_creating_its_namespace_satisfies_it() -> None:
    cluster, entry, assoc, provider = base()
    nodes = rec("aws:eks/nodeGroup:NodeGroup", "system", (cluster.urn,))
    release = rec(
        "kubernetes:helm.sh/v3:Release",
        "opencost",
        (nodes.urn,),
        provider.urn,
        namespace="opencost",
        createNamespace=True,
    )
    cm = rec(CM, "prices", (release.urn,), provider.urn, metadata={"name": "p", "namespace": "opencost"})
    assert problems([cluster, entry, assoc, provider, nodes, release, cm]) == []
    early = rec(CM, "early", (), provider.urn, metadata={"name": "p", "namespace": "opencost"})
    (p,) = problems([cluster, entry, assoc, provider, nodes, release, early])
    assert "opencost creates it" in p


def test_an_object_that_bypasses_the_access_association_is_refused() -> None:
    """The old Kubernetes provider: it waited for the cluster and an SG rule, not for the deployer association."""
    cluster, entry, assoc, _ = base()
    provider = rec(PROVIDER, "cluster-k8s", (cluster.urn,))
    sc = rec("kubernetes:storage.k8s.io/v1:StorageClass", "cluster-gp3", (), provider.urn, metadata={"name": "gp3"})
    found = problems([cluster, entry, assoc, provider, sc])
    assert len(found) == 2  # the provider, and the object it creates
    assert any(
        "StorageClass cluster-gp3 (kubernetes:storage.k8s.io/v1:StorageClass) may reach the API" in p for p in found
    )
    assert all("access policy association (cluster-deployer)" in p and "depend on the association" in p for p in found)


def test_without_a_deploy_role_the_cluster_creator_entry_grants_access() -> None:
    cluster = rec(CLUSTER, "cluster-eksCluster")
    provider = rec(PROVIDER, "cluster-k8s", (cluster.urn,))
    ns = namespace("training", provider)
    assert problems([cluster, provider, ns]) == []


def test_two_data_repository_associations_in_parallel_are_refused() -> None:
    fs = rec(FS, "fsx")
    bucket = rec("aws:s3/bucket:Bucket", "datasets")
    long = {"create": "30m", "delete": "30m"}
    a = rec(DRA, "fsx-data", (fs.urn, bucket.urn))
    b = rec(DRA, "fsx-checkpoints", (fs.urn, bucket.urn))
    a.custom_timeouts = b.custom_timeouts = dict(long)
    (p,) = problems([fs, bucket, a, b])
    assert "fsx-checkpoints and DataRepositoryAssociation fsx-data" in p and "may be created at the same time" in p
    assert "terraform-provider-aws/issues/24678" in p and "chain them with depends_on" in p
    b.dependencies.append(a.urn)
    assert problems([fs, bucket, a, b]) == []


def test_default_timeouts_on_a_data_repository_association_are_refused() -> None:
    fs = rec(FS, "fsx")
    a = rec(DRA, "fsx-data", (fs.urn,))
    a.custom_timeouts = {"create": "10m", "delete": "1h"}
    (p,) = problems([fs, a])
    assert (
        "customTimeouts.create is 10m, shorter than the 30m" in p
        and "custom_timeouts=CustomTimeouts(create='30m')" in p
    )


def test_a_cost_allocation_tag_without_the_later_step_flag_is_refused() -> None:
    tag = rec(TAG, "cost-stack", tagKey="ekstrain.io/stack", status="Active")
    (p,) = problems([tag])
    assert "CostAllocationTag cost-stack (aws:costexplorer/costAllocationTag:CostAllocationTag)" in p
    assert f"needs `{kinds.COST_TAGS_FLAG}: true`" in p
    assert problems([tag], frozenset({kinds.COST_TAGS_FLAG})) == []


def test_an_addon_that_does_not_wait_for_the_cluster_is_refused() -> None:
    """The node monitoring agent's old shape: the cluster named by a string, no dependency."""
    cluster = rec(CLUSTER, "cluster-eksCluster")
    addon = rec("aws:eks/addon:Addon", "node-health-agent", clusterName="c")
    (p,) = problems([cluster, addon])
    assert "Addon node-health-agent (aws:eks/addon:Addon) names the EKS cluster by a plain string" in p
    addon.dependencies.append(cluster.urn)
    assert problems([cluster, addon]) == []


def test_an_after_precondition_is_refused_when_the_graph_does_not_order_it() -> None:
    cluster = rec(CLUSTER, "c")
    entry = rec(ENTRY, "e", (cluster.urn,))
    assoc = rec(ASSOC, "a", (cluster.urn,))
    (p,) = problems([cluster, entry, assoc])
    assert f"needs a {ENTRY} first" in p


def test_an_undocumented_step_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    bogus = kinds.Contract(type="aws:sqs/queue:Queue", source="x", preconditions=(kinds.step("nobody-wrote-it"),))
    monkeypatch.setitem(kinds.CONTRACTS, "aws:sqs/queue:Queue", bogus)  # type: ignore[index]
    (p,) = problems([rec("aws:sqs/queue:Queue", "q")])
    assert "undocumented step 'nobody-wrote-it'" in p


def test_every_contract_cites_a_source_and_uses_known_preconditions() -> None:
    known = {kinds.NAMESPACE, kinds.ACCESS, kinds.CRD, kinds.CLUSTER, kinds.NODES}
    for c in kinds.CONTRACTS.values():
        assert re.search(r"https?://", c.source), c.type
        for p in c.preconditions:
            assert p in known or p.startswith(("after:", "step:", "flag:")), (c.type, p)
            if p.startswith("after:"):
                assert p.removeprefix("after:") in kinds.CONTRACTS, (c.type, p)
        if c.timeouts:
            assert c.timeouts_source.startswith("http") and all(kinds.minutes(v) > 0 for v in c.timeouts.values())


def test_every_out_of_stack_step_is_a_marked_section_of_the_runbook() -> None:
    runbook = (REPO / "docs" / "delivery.md").read_text()
    for name in kinds.STEPS:
        assert f"<!-- step:{name} -->" in runbook, name
    assert kinds.COST_TAGS_FLAG.removeprefix("ekstrain:") in runbook


@pytest.mark.parametrize("duration,want", [("30m", 30), ("1h30m", 90), ("90s", 1.5), ("", 0), ("soon", 0), ("10", 0)])
def test_minutes(duration: str, want: float) -> None:
    assert kinds.minutes(duration) == want


def test_the_shipped_stacks_meet_every_contract(
    prod_recording: offline.Recording, dev_recording: offline.Recording
) -> None:
    for recording in (prod_recording, dev_recording):
        graph = order.Graph.of(recording)
        result = order.contracts_check(recording, graph)
        assert result.problems == []
        assert result.checked == sum(1 for r in graph.records.values())


def test_a_config_group_is_checked_object_by_object() -> None:
    """A yaml/v2 ConfigGroup applies its objects: each namespaced one needs its namespace (or the group's own)."""
    cluster, entry, assoc, provider = base()
    ns = namespace("mpi-operator", provider)
    objs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "op", "namespace": "mpi-operator"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "op"}},
    ]
    group = rec("kubernetes:yaml/v2:ConfigGroup", "operators-mpi", (), provider.urn, objs=objs)
    (p,) = problems([cluster, entry, assoc, provider, ns, group])
    assert "ConfigGroup operators-mpi (kubernetes:yaml/v2:ConfigGroup) in namespace 'mpi-operator'" in p
    group.dependencies.append(ns.urn)
    assert problems([cluster, entry, assoc, provider, ns, group]) == []
    own = rec(
        "kubernetes:yaml/v2:ConfigGroup",
        "self-contained",
        (),
        provider.urn,
        objs=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
            {**objs[0], "metadata": {"name": "s", "namespace": "x"}},
        ],
    )
    assert problems([cluster, entry, assoc, provider, own]) == []
