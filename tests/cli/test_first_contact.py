"""First contact: the first `pulumi up` from an empty account does not race what it needs.

Regression tests for the defects a first real `up` would have hit (each fails on the program before the deploy
contracts): cost-allocation tags activated in the first `up`, Kubernetes objects ahead of their namespace and of the
deploy role's access association, two FSx data repository associations created at once with default timeouts, an
EKS add-on created beside its cluster. And the render itself refuses seeded variants, naming the type and the fix.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Any

import pytest
from conftest import REPO, STACK_NAMES, cfg_with, run_stack, shipped_recording, stack_config

from ekstrain.assembly import cost
from ekstrain.cli import render as render_cli
from ekstrain.contracts import kinds, quotas
from ekstrain.facts import catalog, spend
from ekstrain.infra import offline
from ekstrain.infra.verify import order
from ekstrain.payloads import karpenter_specs
from ekstrain.simulate.nodes import general_purpose

DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
SIX = {
    ("kubernetes:storage.k8s.io/v1:StorageClass", "cluster-gp3"),
    ("kubernetes:core/v1:Service", "observability-neuron-monitor"),
    ("kubernetes:core/v1:Namespace", "storage-volumes-ns"),
    ("kubernetes:core/v1:ConfigMap", "cost-dashboard-spend"),
    ("kubernetes:core/v1:PersistentVolume", "slurm-fsx-pv"),
    ("kubernetes:core/v1:PersistentVolume", "jupyterhub-fsx-pv"),
}
"""The six objects that reached neither their namespace nor the access association (their recorded names)."""


@pytest.fixture(params=STACK_NAMES)
def recording(request: pytest.FixtureRequest) -> offline.Recording:
    return shipped_recording(request, request.param)


def _one(rec: offline.Recording, type_: str, name: str) -> offline.Record:
    return rec.one(type_, name)


def test_no_cost_allocation_tag_in_the_first_up(recording: offline.Recording) -> None:
    assert recording.of_type("aws:costexplorer/costAllocationTag:CostAllocationTag") == []


def test_every_kubernetes_object_waits_for_the_deploy_roles_access_association(recording: offline.Recording) -> None:
    graph = order.Graph.of(recording)
    (association,) = [r for r in recording.of_type(order.ASSOCIATION) if r.name.endswith(order.DEPLOYER_SUFFIX)]
    (nodes,) = recording.of_type("eks:index:ManagedNodeGroup")
    provider = _one(recording, "pulumi:providers:kubernetes", "cluster-k8s")
    # The provider waits for the association, and for the system node group (the association takes effect
    # asynchronously; the node group's minutes cover it).
    assert {association.urn, nodes.urn} <= set(provider.dependencies)
    objects = [
        r
        for r in graph.records.values()
        if r.type.startswith("kubernetes:") and r.provider and order.provider_urn(r.provider) == provider.urn
    ]
    assert len(objects) > 30
    late = [r.name for r in objects if association.urn not in graph.ancestors(r.urn)]
    assert late == []
    present = {(r.type, r.name) for r in objects}
    for key in SIX & present:
        assert association.urn in graph.ancestors(recording.one(*key).urn), key


def test_the_spend_dashboard_waits_for_the_monitoring_namespace(prod_recording: offline.Recording) -> None:
    graph = order.Graph.of(prod_recording)
    dashboard = prod_recording.one("kubernetes:core/v1:ConfigMap", "cost-dashboard-spend")
    assert dashboard.inputs["metadata"]["namespace"] == "monitoring"
    ns = prod_recording.one("kubernetes:core/v1:Namespace", "observability-ns")
    assert ns.urn in graph.ancestors(dashboard.urn)


def test_data_repository_associations_are_serialised_with_long_timeouts(recording: offline.Recording) -> None:
    dras = sorted(recording.of_type(DRA), key=lambda r: r.name)
    if not dras:
        pytest.skip("no data repository association in this stack")
    graph = order.Graph.of(recording)
    for i, a in enumerate(dras):
        for b in dras[i + 1 :]:
            assert a.urn in graph.ancestors(b.urn) or b.urn in graph.ancestors(a.urn), (a.name, b.name)
        assert kinds.minutes(a.custom_timeouts.get("create", "")) >= 30
        assert kinds.minutes(a.custom_timeouts.get("delete", "")) >= 30


def test_every_eks_addon_waits_for_the_cluster(recording: offline.Recording) -> None:
    graph = order.Graph.of(recording)
    (cluster,) = recording.of_type("aws:eks/cluster:Cluster")
    for addon in recording.of_type("aws:eks/addon:Addon"):
        assert cluster.urn in graph.ancestors(addon.urn), addon.name


def test_a_later_up_with_the_flag_activates_the_tags_and_passes_its_contract() -> None:
    cfg = cfg_with(lambda s: s["cost"].update(activateCostAllocationTags=True))
    rec = run_stack(cfg)
    tags = rec.of_type("aws:costexplorer/costAllocationTag:CostAllocationTag")
    assert sorted(t.inputs["tagKey"] for t in tags) == sorted(spend.COST_ALLOCATION_TAGS)
    graph = order.Graph.of(rec)
    assert order.contracts_check(rec, graph, frozenset({kinds.COST_TAGS_FLAG})).problems == []
    assert order.contracts_check(rec, graph, frozenset()).problems  # the flag is what allows them


def test_the_render_refuses_a_cost_tag_in_the_first_up_and_a_kind_without_a_contract(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeded variants of prod through the whole render: a cost-allocation tag without the flag, and a recorded kind
    whose contract is missing. Each is a problem naming the type and the fix; the render exits 1."""
    monkeypatch.setenv("EKSTRAIN_REPLAY", "0")  # the checks are patched: never replay a stored render
    real = cost.plan
    monkeypatch.setattr(
        cost, "plan", lambda cfg, stack: dataclasses.replace(real(cfg, stack), tag_keys=spend.COST_ALLOCATION_TAGS)
    )
    monkeypatch.delitem(kinds.CONTRACTS, "aws:sqs/queue:Queue")  # type: ignore[attr-defined]
    out = tmp_path / "prod"
    code = render_cli.main(["--stack", "prod", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--out", str(out)])
    summary = (out / "SUMMARY.md").read_text()
    assert code == 1
    assert f"needs `{kinds.COST_TAGS_FLAG}: true`" in summary
    assert "(aws:costexplorer/costAllocationTag:CostAllocationTag)" in summary
    assert "type aws:sqs/queue:Queue has no deploy contract" in summary and "ekstrain/contracts/kinds.py" in summary


def stack_quota_needs(stack: str) -> list[quotas.Need]:
    """The EC2 vCPU quotas the stack needs with every node pool at its maximum."""
    cfg = stack_config(stack)

    def vcpus(t: str) -> int:
        general = general_purpose(t)
        return general.vcpus if general is not None else catalog.get(t).vcpus

    system = cfg.cluster.system_node_group
    pools = [
        quotas.Pool("system", system.instance_types, system.max_size),
        quotas.Pool("cpu-helpers", ["m7i.xlarge"], 0, vcpus=karpenter_specs.HELPER_MAX_VCPUS),
        *(
            quotas.Pool(
                p.name,
                p.instance_types,
                p.max_nodes,
                "capacity-block"
                if p.capacity_reservation is not None and p.capacity_reservation.type == "capacity-block"
                else p.capacity_type,
            )
            for p in cfg.partitions
        ),
    ]
    return quotas.needs(pools, vcpus)


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_the_runbook_lists_the_quotas_each_stack_needs_at_max_nodes(stack: str) -> None:
    runbook = (REPO / "docs" / "delivery.md").read_text()
    want = quotas.table(stack_quota_needs(stack))
    match = re.search(rf"<!-- quotas:{stack} -->\n(.*?)\n<!-- /quotas -->", runbook, re.S)
    assert match, f"docs/delivery.md has no quotas:{stack} table"
    assert match.group(1).strip() == want, f"docs/delivery.md quotas:{stack} should read:\n{want}"


def test_quota_families() -> None:
    assert [
        quotas.family(t) for t in ("p5.48xlarge", "trn1n.32xlarge", "g6e.48xlarge", "inf2.xlarge", "c7i.large")
    ] == [
        "p",
        "trn",
        "g",
        "inf",
        "standard",
    ]
    rows = quotas.needs(
        [quotas.Pool("a", ["p5.48xlarge"], 2), quotas.Pool("b", ["p4d.24xlarge"], 1, "spot")],
        lambda t: 192 if "p5" in t else 96,
    )
    assert [(r.quota, r.vcpus) for r in rows] == [
        ("All P Spot Instance Requests", 96),
        ("Running On-Demand P instances", 384),
    ]


def _seeded(rec: offline.Recording, edit: Any) -> list[str]:
    """contracts_check on a copy of ``rec`` whose records ``edit`` may change (the fixture stays untouched)."""
    records = [
        dataclasses.replace(r, dependencies=list(r.dependencies), custom_timeouts=dict(r.custom_timeouts))
        for r in rec.records
    ]
    for r in records:
        edit(r)
    copy = offline.Recording(records=records, outputs=rec.outputs, invokes=rec.invokes)
    return order.contracts_check(copy, order.Graph.of(copy)).problems


def test_seeded_prod_variants_are_refused_with_the_type_and_the_fix(prod_recording: offline.Recording) -> None:
    """prod as it was before the contracts, one defect at a time: each is a problem naming the type and the fix."""

    def dashboard_alone(r: offline.Record) -> None:
        if r.name == "cost-dashboard-spend":
            r.dependencies = []

    found = _seeded(prod_recording, dashboard_alone)
    assert any(
        "ConfigMap cost-dashboard-spend (kubernetes:core/v1:ConfigMap) in namespace 'monitoring' may be created before"
        in p
        and "depends_on" in p
        for p in found
    )

    def provider_without_access(r: offline.Record) -> None:
        if r.type == "pulumi:providers:kubernetes" and r.name == "cluster-k8s":
            r.dependencies = [
                d for d in r.dependencies if "AccessPolicyAssociation" not in d and "ManagedNodeGroup" not in d
            ]

    found = _seeded(prod_recording, provider_without_access)
    assert any(
        "StorageClass cluster-gp3 (kubernetes:storage.k8s.io/v1:StorageClass) may reach the API server" in p
        for p in found
    )
    assert any("PersistentVolume slurm-fsx-pv" in p and "depend on the association" in p for p in found)

    def dras_at_once(r: offline.Record) -> None:
        if r.type == DRA:
            r.dependencies = [d for d in r.dependencies if DRA not in d]
            r.custom_timeouts = {}

    found = _seeded(prod_recording, dras_at_once)
    assert any("fsx-checkpoints and DataRepositoryAssociation fsx-data" in p and "chain them" in p for p in found)
    assert any("fsx-data (aws:fsx/dataRepositoryAssociation" in p and "customTimeouts.create" in p for p in found)
