"""Input that AWS or Kubernetes would reject, or that is unsafe, is refused naming the key and the fix.

Each case: GIVEN the dev (or prod) stack with one change, WHEN it is parsed, THEN exactly this key is
blamed and the problem or fix contains the given words. Valid neighbours of each limit are accepted.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stack_sections

from ekstrain.facts import catalog, regions
from ekstrain.layout import subnets
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGtra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2tr alice@laptop"
KEY_ARN = "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
P0 = "ekstrain:partitions[0] (gpu-small)"


def _errors(sections: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.test.yaml", today=dt.date(2026, 12, 3))
    return [(i.key, f"{i.problem} / {i.fix}") for i in caught.value.issues]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(s: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = s
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        node[last] = value

    return change


def _az(zones: list[str], training: str) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["network"].update(availabilityZones=zones, trainingAvailabilityZone=training)


REFUSED: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    # region and zones
    "China partition": (_set("region", "cn-north-1"), "aws:region", "aws-cn partition"),
    "GovCloud partition": (_set("region", "us-gov-west-1"), "aws:region", "aws-us-gov partition"),
    "made-up region": (_set("region", "us-west-9"), "aws:region", "not an AWS region"),
    "zone that does not exist": (
        _az(["us-west-2a", "us-west-2e"], "us-west-2a"),
        "ekstrain:network.availabilityZones[1]",
        "does not exist",
    ),
    "Local Zone": (
        _az(["us-west-2a", "us-west-2-lax-1a"], "us-west-2a"),
        "ekstrain:network.availabilityZones[1]",
        "Local Zone",
    ),
    "Wavelength Zone": (
        _az(["us-west-2a", "us-west-2-wl1-sea-wlz-1"], "us-west-2a"),
        "ekstrain:network.availabilityZones[1]",
        "Wavelength",
    ),
    "zone ID": (_az(["usw2-az1", "us-west-2b"], "us-west-2b"), "ekstrain:network.availabilityZones[0]", "zone ID"),
    "EKS-unsupported zone": (
        lambda s: (s.update(region="us-east-1"), _az(["us-east-1a", "us-east-1e"], "us-east-1a")(s)),
        "ekstrain:network.availabilityZones[1]",
        "EKS does not",
    ),
    # tags
    # dev has no cost tags: Project, Environment, ManagedBy and Karpenter's six leave 41 of AWS's 50
    "too many tags": (_set("tags", {f"k{i}": "v" for i in range(42)}), "ekstrain:tags", "at most 41"),
    "long tag key": (_set("tags", {"k" * 129: "v"}), "ekstrain:tags", "1-128"),
    "long tag value": (_set("tags", {"k": "v" * 257}), "ekstrain:tags", "at most 256"),
    "aws: prefix": (_set("tags", {"aws:cost": "x"}), "ekstrain:tags", "aws: prefix"),
    "override Project": (_set("tags", {"Project": "other"}), "ekstrain:tags", "set by the program"),
    "override Name": (_set("tags", {"Name": "x"}), "ekstrain:tags", "set by the program"),
    "kubernetes.io tag": (_set("tags", {"kubernetes.io/cluster/x": "owned"}), "ekstrain:tags", "set by the program"),
    "reservation tag too long": (
        lambda s: s["partitions"][0].update(capacityType="reserved", capacityReservation={"tags": {"k": "v" * 300}}),
        f"{P0}.capacityReservation.tags",
        "at most 256",
    ),
    # CIDRs
    "internet split in halves": (
        _set("cluster.publicAccessCidrs", ["0.0.0.0/1", "128.0.0.0/1"]),
        "ekstrain:cluster.publicAccessCidrs",
        "split into pieces",
    ),
    "internet in /2s": (
        _set("cluster.publicAccessCidrs", [f"{i}.0.0.0/2" for i in (0, 64, 128, 192)]),
        "ekstrain:cluster.publicAccessCidrs",
        "internet",
    ),
    "private range on public endpoint": (
        _set("cluster.publicAccessCidrs", ["10.0.0.0/24"]),
        "ekstrain:cluster.publicAccessCidrs",
        "private or reserved",
    ),
    "login open by splitting": (
        _set("schedulers.slurm.loginAllowedCidrs", ["0.0.0.0/1", "128.0.0.0/1"]),
        "ekstrain:schedulers.slurm.loginAllowedCidrs",
        "internet",
    ),
    "public VPC range": (_set("network.vpcCidr", "54.0.0.0/16"), "ekstrain:network.vpcCidr", "private range"),
    "multicast VPC range": (_set("network.vpcCidr", "224.0.0.0/16"), "ekstrain:network.vpcCidr", "private range"),
    "docker bridge overlap": (_set("network.vpcCidr", "172.17.0.0/16"), "ekstrain:network.vpcCidr", "Docker"),
    "EFA subnet too small": (
        lambda s: (
            s["network"].update(vpcCidr="10.50.0.0/20"),
            s["partitions"][0].update(instanceTypes=["g5.48xlarge"], maxNodes=10),
        ),
        "ekstrain:network.vpcCidr",
        "EFA subnet 10.50.0.0/22 has room for 917",
    ),
    "maxNodes above bound": (_set("partitions.0.maxNodes", 2001), f"{P0}.maxNodes", "2000"),
    "maxNodes zero": (_set("partitions.0.maxNodes", 0), f"{P0}.maxNodes", "greater than or equal to 1"),
    # Kubernetes names and labels
    "partition name not DNS-1123": (
        _set("partitions.0.name", "GPU_small"),
        "ekstrain:partitions[0] (GPU_small).name",
        "pattern",
    ),
    "partition name too long": (
        _set("partitions.0.name", "a" * 41),
        f"ekstrain:partitions[0] ({'a' * 41}).name",
        "at most 40",
    ),
    "Volcano default queue": (_set("partitions.0.name", "default"), "ekstrain:partitions[0] (default).name", "Volcano"),
    "Volcano root queue": (_set("partitions.0.name", "root"), "ekstrain:partitions[0] (root).name", "root queue"),
    "label value too long": (_set("partitions.0.labels", {"team": "x" * 64}), f"{P0}.labels.team", "at most 63"),
    "label name too long": (_set("partitions.0.labels", {"a" * 64: "x"}), f"{P0}.labels.{'a' * 64}", "at most 63"),
    "label prefix too long": (
        _set("partitions.0.labels", {"a" * 254 + "/x": "y"}),
        f"{P0}.labels.{'a' * 254}/x",
        "not a valid Kubernetes label key",
    ),
    "project not DNS label": (_set("project", "My Project"), "ekstrain:project", "pattern"),
    # reservations, KMS, buckets
    "short reservation id": (
        lambda s: s["partitions"][0].update(capacityType="reserved", capacityReservation={"ids": ["cr-0abc"]}),
        f"{P0}.capacityReservation.ids",
        "cr-0123456789abcdef0",
    ),
    "KMS alias ARN": (
        _set("storage.efs.kmsKeyArn", "arn:aws:kms:us-west-2:111122223333:alias/x"),
        "ekstrain:storage.efs.kmsKeyArn",
        "not a KMS key ARN",
    ),
    "KMS key in another region": (
        _set("storage.buckets.kmsKeyArn", KEY_ARN.replace("us-west-2", "eu-west-1")),
        "ekstrain:storage.buckets.kmsKeyArn",
        "in eu-west-1",
    ),
    "KMS key in another partition": (
        _set("storage.buckets.kmsKeyArn", KEY_ARN.replace("arn:aws:", "arn:aws-cn:")),
        "ekstrain:storage.buckets.kmsKeyArn",
        "aws partition",
    ),
    "bucket uppercase": (
        _set("storage.buckets.datasetsBucket", "ML-data"),
        "ekstrain:storage.buckets.datasetsBucket",
        "not a valid S3 bucket name",
    ),
    "bucket too short": (
        _set("storage.buckets.datasetsBucket", "ab"),
        "ekstrain:storage.buckets.datasetsBucket",
        "3-63",
    ),
    "bucket too long": (
        _set("storage.buckets.datasetsBucket", "a" * 64),
        "ekstrain:storage.buckets.datasetsBucket",
        "3-63",
    ),
    "bucket IP address": (
        _set("storage.buckets.datasetsBucket", "192.168.5.4"),
        "ekstrain:storage.buckets.datasetsBucket",
        "IP address",
    ),
    "bucket double dot": (
        _set("storage.buckets.datasetsBucket", "my..bucket"),
        "ekstrain:storage.buckets.datasetsBucket",
        "adjacent periods",
    ),
    "bucket xn-- prefix": (
        _set("storage.buckets.datasetsBucket", "xn--bucket"),
        "ekstrain:storage.buckets.datasetsBucket",
        "reserves",
    ),
    "bucket -s3alias suffix": (
        _set("storage.buckets.checkpointsBucket", "ckpt-s3alias"),
        "ekstrain:storage.buckets.checkpointsBucket",
        "reserves",
    ),
    "bucket with periods": (
        _set("storage.buckets.datasetsBucket", "my.bucket"),
        "ekstrain:storage.buckets.datasetsBucket",
        "periods",
    ),
    # paths
    "dot-dot mount path": (
        _set("storage.fsx.mountPath", "/fsx/../etc"),
        "ekstrain:storage.fsx.mountPath",
        "normalised",
    ),
    "relative mount path": (_set("storage.fsx.mountPath", "fsx"), "ekstrain:storage.fsx.mountPath", "absolute"),
    "mount over /etc": (
        _set("schedulers.slurm.sharedMountPath", "/etc/slurm"),
        "ekstrain:schedulers.slurm.sharedMountPath",
        "system directory",
    ),
    "trailing slash": (_set("storage.fsx.dataPath", "/data/"), "ekstrain:storage.fsx.dataPath", "normalised"),
    "EFS path with ..": (
        _set("storage.efs.modelsPath", "/models/../x"),
        "ekstrain:storage.efs.modelsPath",
        "normalised",
    ),
    # SSH keys
    "two keys in one entry": (
        _set("schedulers.slurm.loginSshAuthorizedKeys", [ED25519 + "\n" + ED25519]),
        "ekstrain:schedulers.slurm.loginSshAuthorizedKeys[0]",
        "several lines",
    ),
    "options injection": (
        _set("schedulers.slurm.loginSshAuthorizedKeys", ['command="sh" ' + ED25519]),
        "ekstrain:schedulers.slurm.loginSshAuthorizedKeys[0]",
        "options",
    ),
    "not base64": (
        _set("schedulers.slurm.loginSshAuthorizedKeys", ["ssh-ed25519 not!base64"]),
        "ekstrain:schedulers.slurm.loginSshAuthorizedKeys[0]",
        "not base64",
    ),
    "type mismatch": (
        _set("schedulers.slurm.loginSshAuthorizedKeys", [ED25519.replace("ssh-ed25519", "ssh-rsa", 1)]),
        "ekstrain:schedulers.slurm.loginSshAuthorizedKeys[0]",
        "not a ssh-rsa key",
    ),
    # EFS ids, sizes, architecture
    "EFS uid negative": (_set("storage.efs.posixUid", -1), "ekstrain:storage.efs.posixUid", "greater than"),
    "EFS gid above 32 bits": (_set("storage.efs.posixGid", 2**32), "ekstrain:storage.efs.posixGid", "4294967295"),
    "root volume too big": (_set("partitions.0.rootVolumeGiB", 16385), f"{P0}.rootVolumeGiB", "16384"),
    "system disk too big": (
        _set("cluster.systemNodeGroup.diskSizeGiB", 20000),
        "ekstrain:cluster.systemNodeGroup.diskSizeGiB",
        "16384",
    ),
    "MariaDB volume too big": (
        _set("schedulers.slurm.accountingVolumeGiB", 70000),
        "ekstrain:schedulers.slurm.accountingVolumeGiB",
        "16384",
    ),
    "log retention not offered": (
        _set("storage.fsx.logRetentionDays", 31),
        "ekstrain:storage.fsx.logRetentionDays",
        "365",
    ),
    "Graviton system nodes": (
        _set("cluster.systemNodeGroup.instanceTypes", ["m7g.xlarge"]),
        "ekstrain:cluster.systemNodeGroup.instanceTypes",
        "AL2023_x86_64_STANDARD",
    ),
    # versions
    "karpenter-crd differs": (
        _set("versions", {"charts": {"karpenter": "1.14.2"}}),
        "ekstrain:versions",
        "karpenter-crd 1.14.1 differs from karpenter 1.14.2",
    ),
    "chart version not semver": (
        _set("versions", {"charts": {"volcano": "latest"}}),
        "ekstrain:versions.charts",
        "not a chart version",
    ),
    "chart major jump": (
        _set("versions", {"charts": {"volcano": "2.0.0"}}),
        "ekstrain:versions.charts",
        "another major version",
    ),
    "chart v prefix": (
        _set("versions", {"charts": {"volcano": "v1.15.2"}}),
        "ekstrain:versions.charts",
        "written like 1.15.1",
    ),
    "add-on version format": (
        _set("versions", {"addons": {"coredns": "1.11"}}),
        "ekstrain:versions.addons",
        "eksbuild",
    ),
    "AMI alias format": (
        _set("versions", {"amiAliasVersion": "2025-11-20"}),
        "ekstrain:versions.amiAliasVersion",
        "v20251120",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_key_and_fix(case: str) -> None:
    change, key, words = REFUSED[case]
    sections = stack_sections("dev")
    change(sections)
    errors = _errors(sections)
    assert any(k == key and words in text for k, text in errors), errors


ACCEPTED: dict[str, Callable[[dict[str, Any]], None]] = {
    "38 tags of maximum size": _set("tags", {f"{i:03d}" + "k" * 125: "v" * 256 for i in range(38)}),
    "reservation by 17-hex id": lambda s: s["partitions"][0].update(
        capacityType="reserved", capacityReservation={"ids": ["cr-0123456789abcdef0"]}
    ),
    "reservation selected by an aws: tag": lambda s: s["partitions"][0].update(
        capacityType="reserved", capacityReservation={"tags": {"aws:cloudformation:stack-name": "gpu"}}
    ),
    "KMS key of the region": _set("storage.efs.kmsKeyArn", KEY_ARN),
    "multi-region KMS key": _set(
        "storage.buckets.kmsKeyArn", "arn:aws:kms:us-west-2:111122223333:key/mrk-1234abcd12ab34cd56ef1234567890ab"
    ),
    "63-character bucket": _set("storage.buckets.datasetsBucket", "a" * 63),
    "one SSH key": _set("schedulers.slurm.loginSshAuthorizedKeys", [ED25519]),
    "nested mount path": _set("storage.fsx.mountPath", "/mnt/fsx"),
    "EFS ids at the top": lambda s: s["storage"]["efs"].update(posixUid=4294967295, posixGid=0),
    "both Karpenter charts moved": _set("versions", {"charts": {"karpenter": "1.14.2", "karpenter-crd": "1.14.2"}}),
    "dated AMI alias": _set("versions", {"amiAliasVersion": "v20260901"}),
    "100.64/10 VPC": _set("network.vpcCidr", "100.64.0.0/16"),
    "non-EFA maxNodes that fits the private subnet": lambda s: s["partitions"][0].update(efa=False, maxNodes=122),
    "other region and its zones": lambda s: (
        s.update(region="eu-west-1"),
        _az(["eu-west-1a", "eu-west-1c"], "eu-west-1c")(s),
    ),
    "Slurm partition named like a word": _set("partitions.0.name", "defaults"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_valid_neighbours_are_accepted(case: str) -> None:
    sections = stack_sections("dev")
    ACCEPTED[case](sections)
    parse(sections, "Pulumi.test.yaml", today=dt.date(2026, 12, 3))


def test_user_tags_never_replace_the_programs_own() -> None:
    sections = stack_sections("prod")
    cfg, _ = parse(sections, today=dt.date(2026, 12, 3))
    assert cfg.common_tags == {
        "CostCenter": "ml-platform",
        "Project": "ekstrain",
        "Environment": "prod",
        "ManagedBy": "pulumi",
    }


def test_prod_efa_subnet_holds_every_efa_node_at_max() -> None:
    """GIVEN prod's /16 WHEN every EFA partition runs at maxNodes THEN its node IPs fit the /18 EFA subnet."""
    sections = stack_sections("prod")
    cfg, _ = parse(sections, today=dt.date(2026, 12, 3))
    plan = subnets.plan_subnets(cfg.network.vpc_cidr, cfg.network.availability_zones)
    need = sum(
        p.max_nodes * max(subnets.ips_per_node(catalog.get(t)) for t in p.instance_types)
        for p in cfg.partitions
        if p.efa
    )
    assert (plan.efa, need) == ("10.40.0.0/18", (16 + 8 + 32) * 100)
    assert need <= subnets.usable_ips(plan.efa) * subnets.EFA_SUBNET_NODE_SHARE


def test_ips_per_node_follow_the_eni_size() -> None:
    assert subnets.ips_per_node(catalog.get("p5.48xlarge")) == 100
    assert subnets.ips_per_node(catalog.get("g5.8xlarge")) == 60
    assert subnets.ips_per_node(catalog.get("trn1.2xlarge")) == 30


def test_region_table_is_the_only_source() -> None:
    """Every region has at least three zone letters; partitions map by prefix."""
    assert all(len(z) >= 3 for z in regions.AVAILABILITY_ZONES.values())
    assert regions.partition("us-west-2") == "aws" and regions.partition("cn-northwest-1") == "aws-cn"
    assert regions.zone_problem("us-west-2", "us-west-2d") is None
