"""The compute of the real stacks: partitions, their wiring to network/cluster/Karpenter, device plugins."""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import run_stack, stack_sections

from ekstrain.components.device_plugins import neuron_monitor_daemonset
from ekstrain.facts import names
from ekstrain.infra.offline import Recording
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROD_PARTITIONS = {"gpu-a100", "gpu-h100", "trainium"}
# NodePool/EC2NodeClass names per partition: trainium (trn1 8 EFA + trn1n 16 EFA) has one per layout.
PROD_POOLS = {"gpu-a100": ["gpu-a100"], "gpu-h100": ["gpu-h100"], "trainium": ["trainium-trn1", "trainium-trn1n"]}
BLOCK_POOLS = {"gpu-h100"}  # prod's 64-GPU partition runs on a Capacity Block (Pulumi.prod.yaml)


def _releases(rec: Recording) -> dict[str, dict]:
    return {r.inputs["name"]: r for r in rec.of_type(RELEASE)}


def test_prod_has_one_partition_component_per_partition(prod_recording: Recording) -> None:
    parts = prod_recording.of_type("ekstrain:partitions:Partition")
    assert {p.name for p in parts} == PROD_PARTITIONS
    for p in parts:
        children = {(c.type, c.name) for c in prod_recording.children_of(p.urn)}
        assert children == {
            (kind, f"{pool}-{suffix}")
            for pool in PROD_POOLS[p.name]
            for kind, suffix in ((NODECLASS, "nodeclass"), (NODEPOOL, "nodepool"))
        }


def test_prod_nodeclasses_are_wired_to_network_cluster_and_karpenter(prod_recording: Recording) -> None:
    rec = prod_recording
    karpenter = rec.one(RELEASE, "karpenter")
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    cluster_sg = rec.one("eks:index:Cluster", "cluster").outputs["clusterSecurityGroupId"]
    node_role = rec.one("aws:iam/role:Role", "karpenter-node").outputs["name"]
    for name, pool_name in ((n, pn) for n, pns in PROD_POOLS.items() for pn in pns):
        nc = rec.one(NODECLASS, f"{pool_name}-nodeclass")
        pool = rec.one(NODEPOOL, f"{pool_name}-nodepool")
        spec = nc.inputs["spec"]
        assert nc.inputs["metadata"]["name"] == pool.inputs["metadata"]["name"] == pool_name
        assert pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"] == pool_name
        assert pool.inputs["spec"]["template"]["metadata"]["labels"][names.PARTITION_LABEL] == name
        assert spec["role"] == node_role == "KarpenterNodeRole-ekstrain-prod"
        assert spec["securityGroupSelectorTerms"][0] == {"id": cluster_sg}
        if pool_name in BLOCK_POOLS:
            # a Capacity Block: EC2 co-locates its instances and it is bought without a placement group, so the
            # pool has none (docs/capacity.md); it launches only into the block
            assert "placementGroupSelector" not in spec
            assert f"network-pg-{pool_name}" not in {
                r.name for r in rec.of_type("aws:ec2/placementGroup:PlacementGroup")
            }
            assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-0a1b2c3d4e5f60718"}]
            reqs = {r["key"]: r["values"] for r in pool.inputs["spec"]["template"]["spec"]["requirements"]}
            assert reqs["karpenter.sh/capacity-type"] == ["reserved"]
            assert reqs["karpenter.k8s.aws/capacity-reservation-type"] == ["capacity-block"]
        else:
            # one cluster placement group per NodePool: trainium-trn1 and trainium-trn1n each have their own
            pg = rec.one("aws:ec2/placementGroup:PlacementGroup", f"network-pg-{pool_name}")
            assert spec["placementGroupSelector"] == {"name": pg.outputs["name"]}
            assert pg.inputs["strategy"] == "cluster" and pg.inputs["name"] == f"ekstrain-prod-{pool_name}"
            assert "capacityReservationSelectorTerms" not in spec
        assert karpenter.urn in nc.dependencies and karpenter.urn in pool.dependencies
        assert nc.urn in pool.dependencies
        assert nc.provider.startswith(provider.urn) and pool.provider.startswith(provider.urn)


def test_prod_efa_layouts_limits_and_zone(prod_recording: Recording) -> None:
    efa, limits, zones = {}, {}, set()
    for name in (pn for pns in PROD_POOLS.values() for pn in pns):
        layout = prod_recording.one(NODECLASS, f"{name}-nodeclass").inputs["spec"]["networkInterfaces"]
        efa[name] = sum(i["interfaceType"] == "efa-only" for i in layout)
        assert layout[0] == {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
        pool = prod_recording.one(NODEPOOL, f"{name}-nodepool").inputs["spec"]
        limits[name] = pool["limits"]
        zones |= {
            v
            for r in pool["template"]["spec"]["requirements"]
            if r["key"] == "topology.kubernetes.io/zone"
            for v in r["values"]
        }
    # trn1n gets its full 16 EFA interfaces; trainium's 32 nodes / 512 devices are split 16 + 16
    assert efa == {"gpu-a100": 4, "gpu-h100": 32, "trainium-trn1": 8, "trainium-trn1n": 16}
    assert limits == {
        "gpu-a100": {"nvidia.com/gpu": "128", "nodes": "16"},
        "gpu-h100": {"nvidia.com/gpu": "64", "nodes": "8"},
        "trainium-trn1": {"aws.amazon.com/neuron": "256", "nodes": "16"},
        "trainium-trn1n": {"aws.amazon.com/neuron": "256", "nodes": "16"},
    }
    assert zones == {"us-west-2b"}


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_every_nodeclass_and_nodepool_validates_against_upstream_crds(
    stack: str, prod_recording: Recording, dev_recording: Recording
) -> None:
    if validation.upstream_dir() is None:
        pytest.skip("upstream CRDs absent")
    rec = prod_recording if stack == "prod" else dev_recording
    objs = rec.of_type(NODECLASS) + rec.of_type(NODEPOOL)
    assert len(objs) == (8 if stack == "prod" else 2) + 2  # + the cpu-helpers pool (tests/test_helper_pool.py)
    for r in objs:
        manifest = {k: v for k, v in r.inputs.items() if k != "id"}
        assert validation.validate_object(manifest, "1.34") == [], r.name


def test_prod_device_plugins_run_only_on_their_hardware(prod_recording: Recording) -> None:
    rel = _releases(prod_recording)
    assert {"nvidia-device-plugin", "dcgm-exporter", "aws-efa-k8s-device-plugin", "neuron"} <= set(rel)
    nvidia = rel["nvidia-device-plugin"].inputs
    assert nvidia["values"]["nodeSelector"] == {names.ACCELERATOR_LABEL: "gpu"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in nvidia["values"]["tolerations"]
    assert nvidia["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert nvidia["version"] == "0.20.0"
    efa = rel["aws-efa-k8s-device-plugin"].inputs["values"]
    assert efa["nodeSelector"] == {names.EFA_NODE_LABEL: "true"}
    assert {t["key"] for t in efa["tolerations"]} == {"nvidia.com/gpu", "aws.amazon.com/neuron"}
    assert efa["supportedInstanceLabels"]["values"] == [
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "trn1.32xlarge",
        "trn1n.32xlarge",
    ]
    neuron = rel["neuron"].inputs
    assert neuron["chart"] == "oci://public.ecr.aws/neuron/neuron-helm-chart" and "repositoryOpts" not in neuron
    assert neuron["values"]["devicePlugin"]["nodeSelector"] == {names.ACCELERATOR_LABEL: "trainium"}
    assert neuron["values"]["scheduler"]["enabled"] is True and neuron["values"]["npd"]["enabled"] is False
    # The extension's Deployment takes no nodeSelector/affinity with the custom scheduler (no-op values).
    assert not {"nodeSelector", "affinity"} & set(neuron["values"]["scheduler"])
    assert neuron["values"]["neuronInstances"] == ["trn1.32xlarge", "trn1n.32xlarge"]
    custom = neuron["values"]["scheduler"]["customScheduler"]
    assert custom["image"]["tag"].startswith(("v1.35.", "v1.36.")), "kube-scheduler within one minor of 1.36"
    assert custom["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"
    ] == [{"key": "ekstrain.io/node-role", "operator": "In", "values": ["system"]}]
    dcgm = rel["dcgm-exporter"].inputs
    assert dcgm["values"]["nodeSelector"] == {names.ACCELERATOR_LABEL: "gpu"}
    assert dcgm["repositoryOpts"] == {"repo": "https://nvidia.github.io/dcgm-exporter/helm-charts"}
    monitor = prod_recording.one("kubernetes:apps/v1:DaemonSet", "device-plugins-neuron-monitor")
    assert monitor.inputs["spec"]["template"]["spec"]["nodeSelector"] == {names.ACCELERATOR_LABEL: "trainium"}


def test_device_plugin_values_keys_exist_upstream(prod_recording: Recording) -> None:
    if validation.upstream_dir() is None:
        pytest.skip("upstream values.yaml absent")
    upstream = {
        "nvidia-device-plugin": "nvidia-device-plugin",
        "aws-efa-k8s-device-plugin": "aws-efa-k8s-device-plugin",
        "neuron": "neuron-helm-chart",
        "karpenter": "karpenter",
    }
    rel = _releases(prod_recording)
    for release, chart_dir in upstream.items():
        assert (
            validation.unknown_value_keys(rel[release].inputs["values"], validation.chart_defaults(chart_dir)) == []
        ), release


def test_dev_has_no_neuron_components(dev_recording: Recording) -> None:
    rel = _releases(dev_recording)
    assert "neuron" not in rel
    # The only DaemonSet is the GPU partition's health gate (no neuron-monitor).
    daemonsets = [r.inputs["metadata"]["name"] for r in dev_recording.of_type("kubernetes:apps/v1:DaemonSet")]
    assert daemonsets == ["health-gate-gpu-small"]  # metadata.name
    assert {"nvidia-device-plugin", "dcgm-exporter", "aws-efa-k8s-device-plugin"} <= set(rel)


def test_no_efa_plugin_without_an_efa_partition() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0]["efa"] = False
    cfg, _ = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    rec = run_stack(cfg)
    assert "aws-efa-k8s-device-plugin" not in _releases(rec)
    nc = rec.one(NODECLASS, "gpu-small-nodeclass").inputs["spec"]
    assert "networkInterfaces" not in nc and "placementGroupSelector" not in nc
    assert (
        names.EFA_NODE_LABEL
        not in rec.one(NODEPOOL, "gpu-small-nodepool").inputs["spec"]["template"]["metadata"]["labels"]
    )


def test_reserved_partition_selects_its_reservation_and_keeps_idle_nodes() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0].update(
        capacityType="reserved", capacityReservation={"ids": ["cr-0123456789abcdef0"], "instanceCount": 2}
    )
    cfg, _ = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    rec = run_stack(cfg)
    nc = rec.one(NODECLASS, "gpu-small-nodeclass").inputs["spec"]
    assert nc["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    pool = rec.one(NODEPOOL, "gpu-small-nodepool").inputs["spec"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in pool["template"]["spec"][
        "requirements"
    ]
    assert pool["disruption"]["consolidateAfter"] == "Never"


def test_neuron_monitor_daemonset_is_valid_builtin() -> None:
    if validation.upstream_dir() is None:
        pytest.skip("validation data absent")
    ds = neuron_monitor_daemonset()
    assert validation.validate_object(ds, "1.34") == []
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"].startswith("public.ecr.aws/neuron/neuron-monitor:")


def test_stack_outputs_name_karpenter_pieces(prod_recording: Recording) -> None:
    out = prod_recording.outputs
    assert out["karpenterInterruptionQueue"] == "ekstrain-prod"
    assert out["karpenterNodeRole"] == "KarpenterNodeRole-ekstrain-prod"
    assert out["nodePools"] == ["gpu-a100", "gpu-h100", "trainium-trn1", "trainium-trn1n"]


def test_neuron_kube_scheduler_tag_for_every_supported_version_respects_skew() -> None:
    from ekstrain.facts import versions

    assert set(versions.NEURON_CUSTOM_SCHEDULER_TAGS) == set(versions.SUPPORTED_KUBERNETES_VERSIONS)
    for k8s, tag in versions.NEURON_CUSTOM_SCHEDULER_TAGS.items():
        minor, scheduler_minor = versions.parse_semver(k8s)[1], versions.parse_semver(tag)[1]
        assert minor - 1 <= scheduler_minor <= minor, (k8s, tag)


def _matching(rec: Recording, type_token: str, tags: dict[str, str]) -> list[str]:
    return [
        r.name
        for r in rec.of_type(type_token)
        if all((r.inputs.get("tags") or {}).get(k) == v for k, v in tags.items())
    ]


def test_selector_terms_pick_exactly_the_efa_subnet_and_sg(prod_recording: Recording, dev_recording: Recording) -> None:
    for rec, az in ((prod_recording, "us-west-2b"), (dev_recording, "us-west-2a")):
        for nc in rec.of_type(NODECLASS):
            if nc.inputs["metadata"]["name"] == "cpu-helpers":  # no EFA: private subnets (test_helper_pool.py)
                continue
            spec = nc.inputs["spec"]
            (subnet_term,) = spec["subnetSelectorTerms"]
            assert _matching(rec, "aws:ec2/subnet:Subnet", subnet_term["tags"]) == [f"network-efa-{az}"]
            sg_terms = [t["tags"] for t in spec["securityGroupSelectorTerms"] if "tags" in t]
            assert [_matching(rec, "aws:ec2/securityGroup:SecurityGroup", t) for t in sg_terms] == [["network-efa"]]


def test_non_efa_partition_selects_only_private_subnets() -> None:
    sections = stack_sections("dev")
    sections["partitions"][0]["efa"] = False
    cfg, _ = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    rec = run_stack(cfg)
    (term,) = rec.one(NODECLASS, "gpu-small-nodeclass").inputs["spec"]["subnetSelectorTerms"]
    assert sorted(_matching(rec, "aws:ec2/subnet:Subnet", term["tags"])) == [
        "network-private-us-west-2a",
        "network-private-us-west-2b",
    ]
