"""EC2NodeClass / NodePool builders: upstream Karpenter v1.14.1 CRD schema AND CEL rules, limits,
EFA layouts, disruption, for hand-made specs, every catalog type and the prod/dev stacks."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import pytest
from conftest import stack_config
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.facts import catalog, names
from ekstrain.layout.partitions import shape
from ekstrain.payloads import karpenter_specs as specs
from ekstrain.tooling import validation

try:  # cel-python (dev dependency) evaluates the CRDs' CEL rules; without it only those checks skip
    import celpy
except ImportError:  # pragma: no cover
    celpy = None

SG = "sg-0123456789abcdef0"
ROLE = "KarpenterNodeRole-ml"
K8S = "1.34"


def spec_for(types: list[str], name: str = "part", efa: bool | None = None, **kw: Any) -> specs.PartitionSpec:
    family = catalog.get(types[0]).family
    efa = all(catalog.get(t).efa_capable for t in types) if efa is None else efa
    return specs.PartitionSpec(
        name=name,
        shape=shape(name, family, types, efa),
        cluster_name="ml",
        availability_zone="us-west-2b",
        max_nodes=kw.pop("max_nodes", 4),
        placement_group=kw.pop("placement_group", efa),
        **kw,
    )


def node_class(spec: specs.PartitionSpec) -> dict[str, Any]:
    return specs.ec2_node_class(spec, node_role=ROLE, cluster_security_group_id=SG, tags={"Team": "ml"})


# ---- CEL: evaluate every x-kubernetes-validations rule of the CRD that applies to the object ----

_TOKENS = re.compile(r"\.([^.\[]+)|(\[\*\])")


def _values_at(obj: Any, path: str) -> list[Any]:
    current = [obj]
    for key, star in _TOKENS.findall(path):
        nxt: list[Any] = []
        for value in current:
            if star:
                nxt += value if isinstance(value, list) else []
            elif isinstance(value, dict) and key in value:
                nxt.append(value[key])
        current = nxt
    return current


def _find(value: Any, pattern: Any) -> Any:
    """Kubernetes' regex extension ``<string>.find(<regex>)``: first match or ''."""
    match = re.search(str(pattern), str(value))
    return celpy.celtypes.StringType(match.group(0) if match else "")


def _split(value: Any, sep: Any) -> Any:
    """Kubernetes' strings extension ``<string>.split(<sep>)``."""
    return celpy.celtypes.ListType([celpy.celtypes.StringType(p) for p in str(value).split(str(sep))])


K8S_CEL_EXTENSIONS = {"find": _find, "split": _split}


@functools.cache
def _program(rule: str) -> Any:
    env = celpy.Environment()
    try:
        return env.program(env.compile(rule), functions=K8S_CEL_EXTENSIONS)
    except Exception:  # noqa: BLE001 (a Kubernetes CEL extension cel-python does not parse)
        return None


SCHEMAS = validation.upstream_dir() is not None


def _need_schemas() -> None:
    if not SCHEMAS:
        pytest.skip("upstream CRDs absent: run `make fetch-upstream` (or set EKSTRAIN_UPSTREAM_DIR)")
    if celpy is None:
        pytest.skip("cel-python not installed: pip install -e '.[dev]'")


def cel_results(obj: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(path, rule, True/False, or None when cel-python cannot evaluate a Kubernetes CEL extension)."""
    _need_schemas()
    crd = validation.crd_schemas()[(obj["apiVersion"], obj["kind"])]
    out = []
    for path, rule, _message in crd.cel_rules:
        if "oldSelf" in rule:  # transition rules only run on updates
            continue
        for value in _values_at(obj, path):
            out.append((path, rule, _evaluate(rule, json.dumps(value, default=str))))
    return out


@functools.cache
def _evaluate(rule: str, value: str) -> bool | None:
    """``rule`` on ``self`` = the JSON ``value``: a rule's answer depends on nothing else, so each (rule, value) is
    evaluated once (cel-python walks its parse tree in Python: the property tests' node classes and pools repeat most
    of their parts, whose rules were 90 % of their time)."""
    program = _program(rule)
    try:
        result = program.evaluate({"self": celpy.json_to_cel(json.loads(value))}) if program else None
    except Exception:  # noqa: BLE001 (an extension function such as find() at run time)
        result = None
    return bool(result) if isinstance(result, celpy.celtypes.BoolType) else None


def assert_valid(obj: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    _need_schemas()
    assert validation.validate_object(obj, K8S) == []
    results = cel_results(obj)
    failed = [(p, r) for p, r, ok in results if ok is not True]
    assert failed == [], failed
    return results


def test_cel_extensions_reject_restricted_labels() -> None:
    pool = specs.node_pool(spec_for(["p4d.24xlarge"]))
    pool["spec"]["template"]["metadata"]["labels"]["karpenter.k8s.aws/custom"] = "x"
    assert False in [ok for _, _, ok in cel_results(pool)]


# ---- builders ------------------------------------------------------------------------------------


def test_networkinterfaces_cel_rules_are_evaluated_and_catch_bad_layouts() -> None:
    obj = node_class(spec_for(["p5.48xlarge"]))
    results = assert_valid(obj)
    ni_rules = [ok for path, _, ok in results if path == "$.spec.networkInterfaces"]
    assert ni_rules == [True, True], "both networkInterfaces CEL rules ran and passed"
    bad_layouts = {
        "no primary": [{"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "efa-only"}],
        "duplicate pair": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ],
        "two efa-only on one card": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
            {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "efa-only"},
        ],
    }
    for case, layout in bad_layouts.items():
        broken = {**obj, "spec": {**obj["spec"], "networkInterfaces": layout}}
        assert False in [ok for p, _, ok in cel_results(broken) if p == "$.spec.networkInterfaces"], case


def test_ec2nodeclass_fields_for_an_efa_gpu_partition() -> None:
    s = node_class(
        spec_for(
            ["p5.48xlarge"],
            name="h100",
            capacity_reservation_ids=("cr-0abc",),
            capacity_type="reserved",
            root_volume_gib=800,
        )
    )["spec"]
    assert s["role"] == ROLE
    assert s["amiSelectorTerms"] == [{"alias": "al2023@latest"}]
    assert s["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "ml", "ekstrain.io/subnet-role": "efa"}}]
    assert s["securityGroupSelectorTerms"] == [
        {"id": SG},
        {"tags": {"karpenter.sh/discovery": "ml", "ekstrain.io/sg-role": "efa"}},
    ]
    assert s["placementGroupSelector"] == {"name": "ml-h100"}
    assert s["metadataOptions"]["httpTokens"] == "required"
    assert s["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert s["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {"volumeSize": "800Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
        }
    ]
    assert s["instanceStorePolicy"] == "RAID0"
    assert s["capacityReservationSelectorTerms"] == [{"id": "cr-0abc"}]
    assert s["tags"] == {"Team": "ml", names.PARTITION_LABEL: "h100"}
    layout = s["networkInterfaces"]
    assert sum(i["interfaceType"] == "efa-only" for i in layout) == 32
    assert max(i["deviceIndex"] for i in layout) <= 1, "p5 allows device index 0 or 1 per card (eksctl#7520)"


def test_non_efa_partition_has_no_interfaces_placement_group_or_efa_sg() -> None:
    s = node_class(spec_for(["trn1.2xlarge"], efa=False))["spec"]
    assert "networkInterfaces" not in s and "placementGroupSelector" not in s
    assert s["securityGroupSelectorTerms"] == [{"id": SG}]
    assert s["subnetSelectorTerms"][0]["tags"]["ekstrain.io/subnet-role"] == "private"
    assert_valid(node_class(spec_for(["trn1.2xlarge"], efa=False)))


def test_capacity_reservation_by_tags() -> None:
    s = node_class(
        spec_for(["p5.48xlarge"], capacity_type="reserved", capacity_reservation_tags={"purpose": "training"})
    )
    assert s["spec"]["capacityReservationSelectorTerms"] == [{"tags": {"purpose": "training"}}]
    assert_valid(s)


def test_nodepool_requirements_taints_labels_limits() -> None:
    pool = specs.node_pool(
        spec_for(
            ["trn1.32xlarge", "trn1n.32xlarge"],
            name="trn",
            max_nodes=32,
            labels={"team.example.com/owner": "llm"},
            weight=10,
        )
    )
    tmpl = pool["spec"]["template"]
    reqs = {r["key"]: r["values"] for r in tmpl["spec"]["requirements"]}
    assert reqs["node.kubernetes.io/instance-type"] == ["trn1.32xlarge", "trn1n.32xlarge"]
    assert reqs["karpenter.sh/capacity-type"] == ["on-demand"]
    assert reqs["topology.kubernetes.io/zone"] == ["us-west-2b"]
    assert tmpl["spec"]["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NoSchedule"}]
    assert tmpl["metadata"]["labels"] == {
        "team.example.com/owner": "llm",
        names.PARTITION_LABEL: "trn",
        names.ACCELERATOR_LABEL: "trainium",
        names.EFA_NODE_LABEL: "true",
    }
    assert pool["spec"]["limits"] == {"aws.amazon.com/neuron": "512", "nodes": "32"}
    assert pool["spec"]["weight"] == 10
    assert tmpl["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "trn"}
    assert_valid(pool)


def test_nodepool_disruption_never_touches_running_jobs() -> None:
    pool = specs.node_pool(spec_for(["p4d.24xlarge"]))
    spec = pool["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "Never"
    assert "terminationGracePeriod" not in spec["template"]["spec"]
    d = spec["disruption"]
    assert d["consolidationPolicy"] == "WhenEmpty" and d["consolidateAfter"] == "10m"
    by_reason = {reason: b["nodes"] for b in d["budgets"] for reason in b["reasons"]}
    assert by_reason == {"Drifted": "0", "Underutilized": "0", "Empty": "100%"}
    assert all("reasons" in b for b in d["budgets"]), "no catch-all budget that would also cap Empty"
    reserved = specs.node_pool(spec_for(["p4d.24xlarge"], capacity_type="reserved", consolidate_after="Never"))
    assert reserved["spec"]["disruption"]["consolidateAfter"] == "Never"
    assert_valid(reserved)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(catalog.CATALOG)),
    max_nodes=st.integers(1, 500),
    capacity=st.sampled_from(["on-demand", "spot", "reserved"]),
    root=st.integers(100, 16384),
)
def test_every_catalog_type_renders_valid_manifests(name: str, max_nodes: int, capacity: str, root: int) -> None:
    # GIVEN any catalog type as a one-type partition (EFA whenever the type has it)
    it = catalog.get(name)
    spec = spec_for(
        [name],
        max_nodes=max_nodes,
        capacity_type=capacity,
        root_volume_gib=root,
        capacity_reservation_ids=("cr-0123",) if capacity == "reserved" else (),
    )
    nc, pool = node_class(spec), specs.node_pool(spec)
    # THEN the limits are maxNodes x accelerators, the EFA count is EC2's maximum, pairs are unique
    assert int(pool["spec"]["limits"][it.accelerator_resource]) == max_nodes * it.accelerator_count
    efa_only = [i for i in nc["spec"].get("networkInterfaces", []) if i["interfaceType"] == "efa-only"]
    assert len(efa_only) == it.efa_max_interfaces
    pairs = [(i["networkCardIndex"], i["deviceIndex"]) for i in nc["spec"].get("networkInterfaces", [])]
    assert len(pairs) == len(set(pairs))
    # AND both manifests are valid against the CRD schema and every CEL rule
    if SCHEMAS and celpy is not None:
        assert validation.validate_object(nc, K8S) == [] and validation.validate_object(pool, K8S) == []
        assert [r for r in cel_results(nc) + cel_results(pool) if r[2] is not True] == []


# ---- the real stacks ------------------------------------------------------------------------------


def stack_specs(stack: str) -> dict[str, specs.PartitionSpec]:
    cfg = stack_config(stack)
    return {
        p.name: specs.PartitionSpec(
            name=p.name,
            shape=shape(p.name, p.accelerator, p.instance_types, p.efa),
            cluster_name=cfg.cluster.name,
            availability_zone=cfg.network.training_availability_zone,
            max_nodes=p.max_nodes,
            capacity_type=p.capacity_type,
            placement_group=p.wants_placement_group,
            consolidate_after=p.effective_consolidate_after,
            ami_alias_version=cfg.versions.ami_alias_version,
        )
        for p in cfg.partitions
    }


def test_prod_partitions_efa_counts_and_limits() -> None:
    parts = stack_specs("prod")
    efa = {
        n: sum(i["interfaceType"] == "efa-only" for i in node_class(s)["spec"]["networkInterfaces"])
        for n, s in parts.items()
    }
    assert efa == {"gpu-a100": 4, "gpu-h100": 32, "trainium": 8}, "the partition-level layout (the common one)"
    limits = {n: specs.node_pool(s)["spec"]["limits"] for n, s in parts.items()}
    assert limits == {
        "gpu-a100": {"nvidia.com/gpu": "128", "nodes": "16"},
        "gpu-h100": {"nvidia.com/gpu": "64", "nodes": "8"},
        "trainium": {"aws.amazon.com/neuron": "512", "nodes": "32"},
    }
    assert {node_class(s)["spec"]["amiSelectorTerms"][0]["alias"] for s in parts.values()} == {"al2023@v20261119"}


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_stack_manifests_pass_schema_and_cel(stack: str) -> None:
    for s in stack_specs(stack).values():
        assert_valid(node_class(s))
        assert_valid(specs.node_pool(s))


def test_a_capacity_block_partition_requires_the_block_and_validates() -> None:
    """GIVEN a reserved p5en partition whose reservation is an EC2 Capacity Block WHEN its NodePool and EC2NodeClass
    render THEN the pool requires karpenter.sh/capacity-type reserved and karpenter.k8s.aws/capacity-reservation-type
    capacity-block (karpenter.sh/docs/tasks/odcrs), the class selects the block by tags, both valid against the
    pinned Karpenter v1.14.1 CRDs; an ODCR partition has no reservation-type requirement."""
    block = spec_for(
        ["p5en.48xlarge"],
        name="h200",
        capacity_type="reserved",
        capacity_reservation_tags={"ekstrain.io/block": "llm-pretrain"},
        capacity_reservation_type="capacity-block",
        placement_group=False,
    )
    pool = specs.node_pool(block)
    reqs = {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"] == ["reserved"]
    assert reqs["karpenter.k8s.aws/capacity-reservation-type"] == ["capacity-block"]
    assert_valid(pool)
    nc = node_class(block)
    assert nc["spec"]["capacityReservationSelectorTerms"] == [{"tags": {"ekstrain.io/block": "llm-pretrain"}}]
    assert "placementGroupSelector" not in nc["spec"]
    assert_valid(nc)
    odcr = specs.node_pool(spec_for(["p5.48xlarge"], capacity_type="reserved", capacity_reservation_ids=("cr-0abc",)))
    keys = [r["key"] for r in odcr["spec"]["template"]["spec"]["requirements"]]
    assert "karpenter.k8s.aws/capacity-reservation-type" not in keys
