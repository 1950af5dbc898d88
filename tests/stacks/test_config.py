"""Stack config: every stack file loads; each rule rejects bad input naming the key and the fix."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from conftest import REPO, STACK_NAMES, stack_sections

from ekstrain.facts import versions
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import load_stack_file, parse


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_every_stack_file_loads(stack: str) -> None:
    cfg, _ = load_stack_file(REPO / f"Pulumi.{stack}.yaml")
    assert cfg.partitions, "every stack has compute"


def test_prod_is_the_seed_platform() -> None:
    cfg, _ = load_stack_file(REPO / "Pulumi.prod.yaml")
    parts = {p.name: (p.instance_types, p.max_nodes, p.accelerator) for p in cfg.partitions}
    assert parts == {
        "gpu-a100": (["p4d.24xlarge", "p4de.24xlarge"], 16, "gpu"),
        "gpu-h100": (["p5.48xlarge"], 8, "gpu"),
        "trainium": (["trn1.32xlarge", "trn1n.32xlarge"], 32, "trainium"),
    }
    assert cfg.region == "us-west-2"
    assert (cfg.storage.fsx.deployment_type, cfg.storage.fsx.storage_capacity_gib) == ("PERSISTENT_2", 7200)
    assert cfg.storage.protect


def test_dev_is_cheap() -> None:
    cfg, _ = load_stack_file(REPO / "Pulumi.dev.yaml")
    assert [p.max_nodes for p in cfg.partitions] == [2]
    assert cfg.storage.fsx.deployment_type == "SCRATCH_2"


def _errors(sections: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.test.yaml", today=dt.date(2026, 12, 3))
    return [(i.key, i.problem, i.fix) for i in caught.value.issues]


def _part(sections: dict[str, Any], **changes: Any) -> dict[str, Any]:
    sections["partitions"][0].update(changes)
    return sections


# Each case: GIVEN the dev stack with one change, THEN exactly this key is blamed and the fix says what to do.
CASES = {
    "unknown key": (lambda s: s["cluster"].update(nmae="x"), "ekstrain:cluster.nmae", "allowed here"),
    "wrong type": (lambda s: _part(s, maxNodes="many"), "ekstrain:partitions[0] (gpu-small).maxNodes", "int"),
    "max below min": (
        lambda s: _part(s, minNodes=3, maxNodes=2),
        "ekstrain:partitions[0] (gpu-small).maxNodes",
        "raise maxNodes",
    ),
    "no EFA on type": (
        lambda s: _part(s, accelerator="trainium", instanceTypes=["trn1.2xlarge"]),
        "ekstrain:partitions[0] (gpu-small).instanceTypes[0]",
        "efa: false",
    ),
    "AZ mismatch": (
        lambda s: s["network"].update(trainingAvailabilityZone="us-west-2d"),
        "ekstrain:network.trainingAvailabilityZone",
        "availabilityZones",
    ),
    "AZ of another region": (
        lambda s: s["network"].update(
            availabilityZones=["us-east-1a", "us-east-1b"], trainingAvailabilityZone="us-east-1a"
        ),
        "ekstrain:network.availabilityZones[0]",
        "us-west-2a",
    ),
    "unknown instance": (
        lambda s: _part(s, instanceTypes=["p9.huge"]),
        "ekstrain:partitions[0] (gpu-small).instanceTypes[0]",
        "p5.48xlarge",
    ),
    "family mismatch": (
        lambda s: _part(s, instanceTypes=["trn1.32xlarge"]),
        "ekstrain:partitions[0] (gpu-small).instanceTypes[0]",
        "accelerator: trainium",
    ),
    "unquoted version": (
        lambda s: s["cluster"].update(kubernetesVersion=1.3),
        "ekstrain:cluster.kubernetesVersion",
        "quote",
    ),
    "unsupported version": (
        lambda s: s["cluster"].update(kubernetesVersion="1.29"),
        "ekstrain:cluster.kubernetesVersion",
        "1.31",
    ),
    "public endpoint without CIDRs": (
        lambda s: s["cluster"].update(endpointPublicAccess=True, publicAccessCidrs=[]),
        "ekstrain:cluster.publicAccessCidrs",
        "CIDRs",
    ),
    "world-open endpoint": (
        lambda s: s["cluster"].update(publicAccessCidrs=["0.0.0.0/0"]),
        "ekstrain:cluster.publicAccessCidrs",
        "specific",
    ),
    "GPU system nodes": (
        lambda s: s["cluster"]["systemNodeGroup"].update(instanceTypes=["g5.xlarge"]),
        "ekstrain:cluster.systemNodeGroup.instanceTypes",
        "m7i",
    ),
    "duplicate partition": (
        lambda s: s["partitions"].append(dict(s["partitions"][0])),
        "ekstrain:partitions[1] (gpu-small).name",
        "unique",
    ),
    "reserved without reservation": (
        lambda s: _part(s, capacityType="reserved"),
        "ekstrain:partitions[0] (gpu-small).capacityReservation",
        "cr-",
    ),
    "beyond reservation": (
        lambda s: _part(
            s,
            capacityType="reserved",
            maxNodes=4,
            capacityReservation={"ids": ["cr-0123456789abcdef0"], "instanceCount": 2},
        ),
        "ekstrain:partitions[0] (gpu-small).maxNodes",
        "lower maxNodes to 2",
    ),
    "trn2 on old Kubernetes": (
        lambda s: (
            s["cluster"].update(kubernetesVersion="1.31"),
            _part(s, accelerator="trainium", instanceTypes=["trn2.48xlarge"]),
        ),
        "ekstrain:partitions[0] (gpu-small).instanceTypes[0]",
        "1.32",
    ),
    "mixed accelerator counts": (
        lambda s: _part(s, instanceTypes=["g5.8xlarge", "g5.48xlarge"]),
        "ekstrain:partitions[0] (gpu-small).instanceTypes",
        "split",
    ),
    "bad CIDR": (lambda s: s["network"].update(vpcCidr="10.0.0.1/16"), "ekstrain:network.vpcCidr", "10.0.0.0/16"),
    "FSx capacity step": (
        lambda s: s["storage"]["fsx"].update(storageCapacityGiB=3000),
        "ekstrain:storage.fsx.storageCapacityGiB",
        "2400",
    ),
    "FSx throughput tier": (
        lambda s: s["storage"]["fsx"].update(deploymentType="PERSISTENT_2", perUnitStorageThroughput=300),
        "ekstrain:storage.fsx.perUnitStorageThroughput",
        "125, 250, 500, 1000",
    ),
    "MPI CRD conflict": (
        lambda s: s["schedulers"].update(kubeflow={"flavor": "training-operator"}),
        "ekstrain:schedulers.kubeflow.flavor",
        "trainer",
    ),
    "queue for unknown partition": (
        lambda s: s["schedulers"]["volcano"].update(queueWeights={"nope": 1}),
        "ekstrain:schedulers.volcano.queueWeights",
        "gpu-small",
    ),
    "old vpc-cni": (
        lambda s: s.update(versions={"addons": {"vpc-cni": "v1.18.3-eksbuild.1"}}),
        "ekstrain:versions.addons.vpc-cni",
        "v1.20",
    ),
    "unknown chart": (
        lambda s: s.update(versions={"charts": {"karpentr": "1.0"}}),
        "ekstrain:versions.charts",
        "karpenter",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_config_names_key_and_fix(case: str) -> None:
    mutate, key, fix_word = CASES[case]
    sections = stack_sections("dev")
    mutate(sections)
    errors = _errors(sections)
    assert any(k == key and fix_word in fix + problem for k, problem, fix in errors), errors


def test_a_throughput_tier_fsx_does_not_offer_is_refused_with_a_checkpoint_size() -> None:
    """prod sizes a checkpoint, so its capacity-window rule derives the checkpoint's write time from the FSx tier: a
    tier FSx does not offer (found by tests/stacks/test_fuzz_stack.py: 500 nudged to 499) is the storage rule's one
    refusal, not a ValueError from the sizing model."""
    sections = stack_sections("prod")
    assert sections["storage"]["checkpoint"]["sizeGiB"]
    sections["storage"]["fsx"].update(deploymentType="PERSISTENT_2", perUnitStorageThroughput=499)
    errors = _errors(sections)
    assert [(k, fix) for k, _, fix in errors] == [
        ("ekstrain:storage.fsx.perUnitStorageThroughput", "use one of 125, 250, 500, 1000")
    ], errors


def test_all_problems_are_reported_at_once() -> None:
    sections = stack_sections("dev")
    sections["cluster"]["nmae"] = "x"
    sections["partitions"][0]["maxNodes"] = 0
    assert len(_errors(sections)) == 2


def test_error_text_is_one_readable_report() -> None:
    sections = stack_sections("dev")
    sections["network"]["trainingAvailabilityZone"] = "us-west-2d"
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.dev.yaml")
    text = str(caught.value)
    assert text.startswith("1 problem(s) in Pulumi.dev.yaml:")
    assert "ekstrain:network.trainingAvailabilityZone" in text and "fix:" in text
    assert "Traceback" not in text


def test_support_warning_dates() -> None:
    release = versions.KUBERNETES_RELEASES["1.32"]
    assert versions.support_warning("1.32", release.standard_support_end - dt.timedelta(days=61)) is None
    assert "standard support" in versions.support_warning("1.32", release.standard_support_end)
    assert "extended support" in versions.support_warning("1.32", release.extended_support_end + dt.timedelta(days=1))


def test_stack_warns_past_standard_support() -> None:
    sections = stack_sections("dev")
    sections["cluster"]["kubernetesVersion"] = "1.32"
    _, warnings = parse(sections, today=dt.date(2026, 6, 1))
    assert any("ekstrain:cluster.kubernetesVersion" in w and "2026-03-23" in w for w in warnings)


def test_mixed_efa_layouts_are_accepted_without_a_warning(prod_sections: dict[str, Any]) -> None:
    # GIVEN prod's trainium partition (trn1 8 EFA + trn1n 16 EFA) WHEN parsed THEN no EFA warning:
    # each layout gets its own NodePool (tests/components/test_compute_mixed.py)
    _, warnings = parse(prod_sections, today=dt.date(2026, 12, 3))
    assert not any("EFA" in w for w in warnings)


def test_unknown_top_level_key_is_rejected() -> None:
    from ekstrain.stacks.loader import load_flat

    with pytest.raises(ConfigError, match="ekstrain:partition: is not a known setting"):
        load_flat({"aws:region": "us-west-2", "ekstrain:partition": "[]"}, "Pulumi.x.yaml")


def test_configuration_reference_is_current() -> None:
    from ekstrain.stacks import reference

    current = (REPO / "docs" / "configuration.md").read_text()
    assert current.strip() == reference.render().strip(), (
        "run: python -m ekstrain.cli.reference configuration > docs/configuration.md"
    )
