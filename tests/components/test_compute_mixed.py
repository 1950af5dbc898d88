"""Mixed-layout partitions: one EC2NodeClass + NodePool per EFA layout, sharing the partition's
labels, placement group, Volcano queue and Slurm NodeSet; limits split; mixed generations refused."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pulumi
import pytest
from conftest import run_program, stack_config, stack_sections
from hypothesis import given
from hypothesis import strategies as st
from support.jobs import FakePlanner
from test_compute_specs import assert_valid, spec_for

from ekstrain.assembly.jobs import render as render_job
from ekstrain.assembly.jobs.spec import RunSpec
from ekstrain.assembly.schedulers import slurm, volcano
from ekstrain.components.partitions import Partition, PartitionArgs
from ekstrain.facts import names
from ekstrain.infra.offline import Recording
from ekstrain.infra.render import partition_rows
from ekstrain.layout.partitions import split_nodes
from ekstrain.payloads import karpenter_specs as specs
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def _efa(node_class: dict[str, Any]) -> int:
    return sum(i["interfaceType"] == "efa-only" for i in node_class["spec"]["networkInterfaces"])


@pytest.fixture(scope="module")
def rec() -> Recording:
    # GIVEN a p5 + p5en partition of 9 nodes, in a placement group, run through the component
    def program() -> pulumi.Output[list[str]]:
        part = Partition(
            "gpu-hopper",
            PartitionArgs(
                spec=spec_for(
                    ["p5.48xlarge", "p5en.48xlarge"],
                    name="gpu-hopper",
                    max_nodes=9,
                    weight=10,
                    labels={"team.example.com/owner": "ml"},
                ),
                node_role_name="KarpenterNodeRole-ml",
                cluster_security_group_id="sg-0123456789abcdef0",
                placement_group_name="ml-gpu-hopper",
            ),
        )
        return part.node_pool_names

    return run_program(program)


def test_component_registers_one_nodeclass_and_nodepool_per_layout(rec: Recording) -> None:
    (part,) = rec.of_type("ekstrain:partitions:Partition")
    children = sorted((c.type, c.name) for c in rec.children_of(part.urn))
    assert children == [
        (NODECLASS, "gpu-hopper-p5-nodeclass"),
        (NODECLASS, "gpu-hopper-p5en-nodeclass"),
        (NODEPOOL, "gpu-hopper-p5-nodepool"),
        (NODEPOOL, "gpu-hopper-p5en-nodepool"),
    ]
    assert rec.outputs == ["gpu-hopper-p5", "gpu-hopper-p5en"]


def test_each_layout_gets_its_types_full_efa_and_a_share_of_the_limits(rec: Recording) -> None:
    # THEN p5 keeps 32 EFA interfaces and p5en gets 16; the 9 nodes are split 5 + 4 (sum = maxNodes)
    got = {}
    for pool_name in ("gpu-hopper-p5", "gpu-hopper-p5en"):
        nc = rec.one(NODECLASS, f"{pool_name}-nodeclass").inputs
        pool = rec.one(NODEPOOL, f"{pool_name}-nodepool")
        p = pool.inputs["spec"]
        types = next(
            r["values"] for r in p["template"]["spec"]["requirements"] if r["key"] == "node.kubernetes.io/instance-type"
        )
        got[pool_name] = (types, _efa(nc), p["limits"])
        # AND the layouts share the partition's labels, taints, placement group and weight
        assert p["template"]["metadata"]["labels"] == {
            "team.example.com/owner": "ml",
            names.PARTITION_LABEL: "gpu-hopper",
            names.ACCELERATOR_LABEL: "gpu",
            names.EFA_NODE_LABEL: "true",
        }
        assert p["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
        assert p["template"]["spec"]["nodeClassRef"]["name"] == pool_name == nc["metadata"]["name"]
        assert nc["spec"]["placementGroupSelector"] == {"name": "ml-gpu-hopper"}
        assert nc["metadata"]["labels"] == {names.PARTITION_LABEL: "gpu-hopper"}
        assert p["weight"] == 10
        assert rec.one(NODECLASS, f"{pool_name}-nodeclass").urn in pool.dependencies
    assert got == {
        "gpu-hopper-p5": (["p5.48xlarge"], 32, {"nvidia.com/gpu": "40", "nodes": "5"}),
        "gpu-hopper-p5en": (["p5en.48xlarge"], 16, {"nvidia.com/gpu": "32", "nodes": "4"}),
    }


def test_layout_manifests_pass_the_karpenter_crds_and_cel_rules() -> None:
    for types in (
        ["p5.48xlarge", "p5en.48xlarge"],
        ["trn1.32xlarge", "trn1n.32xlarge"],
        ["p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"],
    ):
        for s in specs.layout_specs(spec_for(types, max_nodes=7)):
            assert_valid(specs.ec2_node_class(s, node_role="r", cluster_security_group_id="sg-1"))
            assert_valid(specs.node_pool(s))


def test_types_with_the_same_layout_stay_in_one_nodepool() -> None:
    # p5 and p5e both have 32 EFA: one pool named after the partition; p5en is split off
    layouts = specs.layout_specs(spec_for(["p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"], name="h", max_nodes=3))
    assert [(s.resource_name, [t.name for t in s.shape.instance_types], s.max_nodes) for s in layouts] == [
        ("h-p5-p5e", ["p5.48xlarge", "p5e.48xlarge"], 2),
        ("h-p5en", ["p5en.48xlarge"], 1),
    ]
    (single,) = specs.layout_specs(spec_for(["p4d.24xlarge", "p4de.24xlarge"], name="a100"))
    assert single.resource_name == "a100" and single.pool_name is None


@given(st.integers(1, 10_000), st.integers(1, 8))
def test_split_never_exceeds_the_partition_and_is_even(total: int, parts: int) -> None:
    shares = split_nodes(total, parts)
    assert sum(shares) == total and len(shares) == parts
    assert max(shares) - min(shares) <= 1


def test_prod_trainium_shares_queue_nodeset_and_jobs_select_the_partition() -> None:
    cfg = stack_config("prod")
    facts = {q["metadata"]["name"]: q["spec"]["capability"] for q in volcano.queues(cfg)}
    # one queue for both layouts: 16 trn1 x 8 EFA + 16 trn1n x 16 EFA
    assert facts["trainium"]["vpc.amazonaws.com/efa"] == str(16 * 8 + 16 * 16)
    ns = slurm.slurm_values(cfg)["nodesets"]["trainium"]
    assert ns["podSpec"]["nodeSelector"] == {names.PARTITION_LABEL: "trainium"}
    # a slurmd pod fits a node of either layout: it asks for the EFA count every node has
    assert ns["slurmd"]["resources"]["limits"]["vpc.amazonaws.com/efa"] == 8
    # a job pinned to trn1n gets all 16 interfaces of its node
    spec = RunSpec(
        name="trn1n-job",
        partition="trainium",
        nodes=2,
        instance_type="trn1n.32xlarge",
        framework="neuronx-distributed",
        model="llama3-8b",
        image="example.com/neuron:1",
        global_batch=256,
        seq_len=4096,
    )
    objs = render_job(spec, cfg, "trainium", FakePlanner())
    containers = [
        c for o in objs for c in _containers(o) if "aws.amazon.com/neuron" in c.get("resources", {}).get("limits", {})
    ]
    assert containers and {c["resources"]["limits"]["vpc.amazonaws.com/efa"] for c in containers} == {16}


def _containers(obj: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(obj, dict):
        if isinstance(obj.get("containers"), list):
            found += obj["containers"]
        for v in obj.values():
            found += _containers(v)
    elif isinstance(obj, list):
        for v in obj:
            found += _containers(v)
    return found


def test_summary_shows_accelerators_and_efa_per_type() -> None:
    rows = {r["partition"]: r for r in partition_rows(stack_config("prod"))}
    assert rows["trainium"]["efa"] == "trn1:8,trn1n:16"
    assert rows["trainium"]["acceleratorsPerNode"] == "trn1:16xTrainium,trn1n:16xTrainium"
    assert rows["trainium"]["nodePools"] == "trainium-trn1(16),trainium-trn1n(16)"
    assert rows["gpu-a100"]["efa"] == "p4d:4,p4de:4" and rows["gpu-a100"]["nodePools"] == "gpu-a100(16)"


def _refused(change: Any) -> list[str]:
    sections = stack_sections("prod")
    change(sections)
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml", today=dt.date(2026, 12, 3))
    return [f"{i.key}: {i.problem} / {i.fix}" for i in caught.value.issues]


def test_mixed_accelerator_generations_are_refused_with_the_fix() -> None:
    errors = _refused(lambda s: s["partitions"][1].update(instanceTypes=["p4d.24xlarge", "p5.48xlarge"]))
    assert errors == [
        "ekstrain:partitions[1] (gpu-h100).instanceTypes: instance types mix accelerator generations "
        "({'Ampere A100': ['p4d.24xlarge'], 'Hopper': ['p5.48xlarge']}); one job's ranks would run at "
        "the slowest generation's speed / keep one generation per partition: move p5.48xlarge into a "
        "partition of its own"
    ]


def test_fewer_nodes_than_layouts_is_refused() -> None:
    errors = _refused(lambda s: s["partitions"][2].update(maxNodes=1))
    assert errors == [
        "ekstrain:partitions[2] (trainium).maxNodes: maxNodes 1 cannot be split over the 2 EFA layouts "
        "of ['trn1.32xlarge', 'trn1n.32xlarge'] (one NodePool each) / raise maxNodes to at least 2 or "
        "keep one EFA layout per partition"
    ]
