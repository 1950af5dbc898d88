"""examples/stacks/Pulumi.reserved.yaml: the documented example of reserved training capacity.

GIVEN the example stack (an On-Demand Capacity Reservation, an EC2 Capacity Block for ML, an on-demand partition)
WHEN the program runs under the mock engine
THEN each partition's EC2NodeClass/NodePool selects its reservation the way Karpenter documents
(karpenter.sh/docs/tasks/odcrs: ``capacityReservationSelectorTerms``, capacity type ``reserved``, the
``karpenter.k8s.aws/capacity-reservation-type`` label for blocks), valid against the pinned v1.14.1 CRDs.
"""

from __future__ import annotations

import datetime as dt
import pathlib

from test_compute_specs import assert_valid

from ekstrain.infra import render
from ekstrain.stacks.loader import load_stack_file, read_stack_file

REPO = pathlib.Path(__file__).resolve().parents[2]
STACK = REPO / "examples" / "stacks" / "Pulumi.reserved.yaml"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def test_the_example_stack_loads_with_only_the_odcr_placement_warning() -> None:
    cfg, warnings = load_stack_file(STACK, today=dt.date(2026, 12, 5))
    assert [(p.name, p.capacity_type, p.capacity_block) for p in cfg.partitions] == [
        ("gpu-h100", "reserved", False),
        ("gpu-h200", "reserved", True),
        ("gpu-a100", "on-demand", False),
    ]
    assert len(warnings) == 1 and warnings[0].startswith("ekstrain:partitions[0] (gpu-h100).placementGroup")


def test_each_partition_selects_its_reservation_and_validates() -> None:
    flat, secrets = read_stack_file(STACK)
    rec = render.run_program(flat, secrets, "reserved")
    classes = {r.inputs["metadata"]["name"]: r.inputs for r in rec.of_type(NODECLASS)}
    pools = {r.inputs["metadata"]["name"]: r.inputs for r in rec.of_type(NODEPOOL)}
    req = {
        name: {r["key"]: r["values"] for r in pool["spec"]["template"]["spec"]["requirements"]}
        for name, pool in pools.items()
    }
    # the ODCR: by id, capacity type reserved, in its own cluster placement group
    assert classes["gpu-h100"]["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    assert req["gpu-h100"]["karpenter.sh/capacity-type"] == ["reserved"]
    assert "karpenter.k8s.aws/capacity-reservation-type" not in req["gpu-h100"]
    assert classes["gpu-h100"]["spec"]["placementGroupSelector"]["name"] == "ekstrain-reserved-gpu-h100"
    # the Capacity Block: by tag, only block instances, no placement group of ours, empty nodes kept
    assert classes["gpu-h200"]["spec"]["capacityReservationSelectorTerms"] == [
        {"tags": {"ekstrain.io/capacity-block": "llm-pretrain"}}
    ]
    assert req["gpu-h200"]["karpenter.sh/capacity-type"] == ["reserved"]
    assert req["gpu-h200"]["karpenter.k8s.aws/capacity-reservation-type"] == ["capacity-block"]
    assert "placementGroupSelector" not in classes["gpu-h200"]["spec"]
    assert pools["gpu-h200"]["spec"]["disruption"]["consolidateAfter"] == "Never"
    # on demand beside them
    assert req["gpu-a100"]["karpenter.sh/capacity-type"] == ["on-demand"]
    assert "capacityReservationSelectorTerms" not in classes["gpu-a100"]["spec"]
    assert set(rec.outputs["placementGroups"]) == {"gpu-h100", "gpu-a100"}
    for name in ("gpu-h100", "gpu-h200", "gpu-a100"):
        for obj in (classes[name], pools[name]):
            assert_valid(obj)
