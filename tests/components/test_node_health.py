"""Bad hardware is replaced: the EKS node monitoring agent add-on sets node conditions, Karpenter repairs."""

from __future__ import annotations

from conftest import run_program, stack_config

from ekstrain.components.node_health import ADDON_NAME, NodeHealth, NodeHealthArgs
from ekstrain.infra.offline import Recording

ADDON = "aws:eks/addon:Addon"


def test_the_agent_is_an_eks_addon_of_the_cluster() -> None:
    rec = run_program(lambda: NodeHealth("nh", NodeHealthArgs(cluster_name="ml", addon_version="v1.4.0-eksbuild.1")))
    (addon,) = rec.of_type(ADDON)
    assert addon.inputs["addonName"] == ADDON_NAME == "eks-node-monitoring-agent"
    assert (addon.inputs["clusterName"], addon.inputs["addonVersion"]) == ("ml", "v1.4.0-eksbuild.1")


def test_prod_runs_the_agent_after_the_cluster_and_a_stack_pin_wins(prod_recording: Recording) -> None:
    addon = next(r for r in prod_recording.of_type(ADDON) if r.inputs["addonName"] == ADDON_NAME)
    assert addon.inputs["clusterName"] == stack_config("prod").cluster.name
    component = prod_recording.one("ekstrain:nodehealth:NodeHealth", "node-health")
    # depends_on a component waits for its children: the system node group the agent's pods first run on
    assert any("ManagedNodeGroup" in urn for urn in component.dependencies), component.dependencies
    pinned = stack_config("prod").versions.model_copy(update={"addons": {ADDON_NAME: "v1.4.0-eksbuild.1"}})
    assert pinned.addon(ADDON_NAME, "1.35") == "v1.4.0-eksbuild.1"
