"""Launchers and Ray heads get nodes: an untainted CPU NodePool that Karpenter grows with the jobs."""

from __future__ import annotations

import pytest
from conftest import stack_config

from ekstrain.facts import names
from ekstrain.infra.offline import Recording
from ekstrain.payloads import karpenter_specs as specs
from ekstrain.simulate import match
from ekstrain.simulate.nodes import nodes_of
from ekstrain.tooling import validation

SPEC = specs.HelperPoolSpec(cluster_name="ml-prod", availability_zone="us-west-2a", ami_alias_version="v20260818")


def test_the_pool_is_untainted_and_removed_only_when_empty() -> None:
    pool = specs.helper_node_pool(SPEC)["spec"]
    assert "taints" not in pool["template"]["spec"]
    assert pool["disruption"]["consolidationPolicy"] == "WhenEmpty"  # a launcher's eviction ends its job
    assert pool["template"]["spec"]["expireAfter"] == "Never"
    assert pool["limits"] == {"cpu": str(specs.HELPER_MAX_VCPUS)}
    # system components select role=system: they never move onto these nodes
    assert pool["template"]["metadata"]["labels"] == {names.SYSTEM_NODE_LABEL: "cpu-helpers"}


def test_a_launcher_without_selector_or_toleration_lands_on_it() -> None:
    """GIVEN a launcher pod (no nodeSelector, no toleration, 2 vCPU) WHEN matched against the pool's nodes
    THEN it fits one (before: only the fixed system nodes took it)."""
    pool = specs.helper_node_pool(SPEC)
    nodes = nodes_of(
        pool, {specs.HELPER_POOL: specs.helper_node_class(SPEC, node_role="r", cluster_security_group_id="sg")}
    )
    assert nodes, "the simulator knows the pool's instance types"
    launcher = {"containers": [{"name": "launcher", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}}}]}
    assert any(match.lands(launcher, n.labels, n.taints) for n in nodes)
    assert all(n.allocatable["cpu"] >= 2 for n in nodes)


@pytest.mark.skipif(validation.upstream_dir() is None, reason="upstream schemas absent")
def test_manifests_validate_against_karpenter_crds() -> None:
    assert validation.validate_object(specs.helper_node_pool(SPEC), "1.35") == []
    nc = specs.helper_node_class(SPEC, node_role="KarpenterNodeRole-ml-prod", cluster_security_group_id="sg-0123")
    assert validation.validate_object(nc, "1.35") == []


def test_prod_registers_the_pool_after_karpenter(prod_recording: Recording) -> None:
    pools = [r for r in prod_recording.of_type("kubernetes:karpenter.sh/v1:NodePool")]
    helper = next(r for r in pools if r.inputs["metadata"]["name"] == specs.HELPER_POOL)
    zone = stack_config("prod").network.training_availability_zone
    reqs = {r["key"]: r["values"] for r in helper.inputs["spec"]["template"]["spec"]["requirements"]}
    assert reqs[specs.ZONE_LABEL] == [zone]
    assert any("karpenter" in urn and "Release" in urn for urn in helper.dependencies)
