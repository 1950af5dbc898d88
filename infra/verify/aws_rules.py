"""AWS rules the mock engine accepts but AWS rejects at create time, checked over a recording.

- names: length and characters per resource type, for explicit names and for Pulumi's autonames
  (logical name + ``-`` + 7 random characters = 8 more, when no name is given);
- tags: at most 50 per resource, keys <= 128 and values <= 256 characters, no ``aws:`` keys,
  only the characters AWS allows;
- S3 bucket names (or prefix + 8 characters);
- CIDRs: every subnet inside its VPC's block, subnets of a VPC disjoint;
- EFS: at most one mount target per Availability Zone per file system;
- FSx for Lustre: storage capacity in the steps its deployment type allows, and a per-unit
  throughput that type offers.
Each rule cites the AWS API reference it follows.
"""

from __future__ import annotations

import ipaddress
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ekstrain.infra import offline
from ekstrain.infra.verify import Check

AUTONAME_SUFFIX = 8  # "-" + 7 random hex characters (pulumi autonaming default)


@dataclass(frozen=True)
class NameRule:
    field: str
    max_len: int
    pattern: str
    source: str
    min_len: int = 1
    prefix_field: str | None = None
    autonamed: bool = True
    """Whether Pulumi autonames ``field`` when the program sets neither it nor its prefix."""


NAME_RULES: dict[str, NameRule] = {
    # IAM CreateRole / CreatePolicy / PutRolePolicy: RoleName 1-64, PolicyName 1-128, [\w+=,.@-]+
    "aws:iam/role:Role": NameRule("name", 64, r"[\w+=,.@-]+", "IAM CreateRole RoleName", prefix_field="namePrefix"),
    "aws:iam/policy:Policy": NameRule(
        "name", 128, r"[\w+=,.@-]+", "IAM CreatePolicy PolicyName", prefix_field="namePrefix"
    ),
    "aws:iam/rolePolicy:RolePolicy": NameRule(
        "name", 128, r"[\w+=,.@-]+", "IAM PutRolePolicy PolicyName", prefix_field="namePrefix"
    ),
    # SQS CreateQueue: up to 80 alphanumerics, hyphens, underscores (+ .fifo)
    "aws:sqs/queue:Queue": NameRule(
        "name", 80, r"[A-Za-z0-9_-]+(\.fifo)?", "SQS CreateQueue QueueName", prefix_field="namePrefix"
    ),
    # EventBridge PutRule: 1-64, [\.\-_A-Za-z0-9]+
    "aws:cloudwatch/eventRule:EventRule": NameRule(
        "name", 64, r"[.\-_A-Za-z0-9]+", "EventBridge PutRule Name", prefix_field="namePrefix"
    ),
    # CloudWatch Logs CreateLogGroup: 1-512, [\.\-_/#A-Za-z0-9]+
    "aws:cloudwatch/logGroup:LogGroup": NameRule(
        "name", 512, r"[.\-_/#A-Za-z0-9]+", "Logs CreateLogGroup", prefix_field="namePrefix"
    ),
    # KMS CreateAlias: alias/ + 1-256 of [a-zA-Z0-9/_-]; alias/aws/ is reserved
    "aws:kms/alias:Alias": NameRule(
        "name",
        256,
        r"alias/(?!aws/)[a-zA-Z0-9/_-]+",
        "KMS CreateAlias AliasName",
        prefix_field="namePrefix",
        autonamed=False,
    ),
    # EC2 CreateSecurityGroup: GroupName up to 255, may not start with sg-
    "aws:ec2/securityGroup:SecurityGroup": NameRule(
        "name", 255, r"(?!sg-)[\x20-\x7e]+", "EC2 CreateSecurityGroup GroupName", prefix_field="namePrefix"
    ),
    # EC2 CreateLaunchTemplate: 3-128, [a-zA-Z0-9\(\)\.\-/_]+
    "aws:ec2/launchTemplate:LaunchTemplate": NameRule(
        "name",
        128,
        r"[a-zA-Z0-9().\-/_]+",
        "EC2 CreateLaunchTemplate LaunchTemplateName",
        min_len=3,
        prefix_field="namePrefix",
    ),
    # EC2 CreatePlacementGroup: up to 255 ASCII characters
    "aws:ec2/placementGroup:PlacementGroup": NameRule("name", 255, r"[\x20-\x7e]+", "EC2 CreatePlacementGroup"),
    # EKS CreateCluster: 1-100, ^[0-9A-Za-z][A-Za-z0-9\-_]*
    "eks:index:Cluster": NameRule("name", 100, r"[0-9A-Za-z][A-Za-z0-9\-_]*", "EKS CreateCluster name"),
    "aws:eks/cluster:Cluster": NameRule("name", 100, r"[0-9A-Za-z][A-Za-z0-9\-_]*", "EKS CreateCluster name"),
    # EKS CreateNodegroup: nodegroupName 1-63, [0-9A-Za-z][A-Za-z0-9\-_]*
    "eks:index:ManagedNodeGroup": NameRule(
        "nodeGroupName",
        63,
        r"[0-9A-Za-z][A-Za-z0-9\-_]*",
        "EKS CreateNodegroup nodegroupName",
        prefix_field="nodeGroupNamePrefix",
    ),
    # EFS CreateFileSystem: CreationToken 1-64
    "aws:efs/fileSystem:FileSystem": NameRule("creationToken", 64, r".+", "EFS CreateFileSystem CreationToken"),
}

# S3 bucket naming rules (general purpose buckets): 3-63, lowercase letters, digits, dots, hyphens;
# begin and end with a letter or digit; no "..", not an IP address; reserved prefixes/suffixes.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_BUCKET_BAD_PREFIX = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_BAD_SUFFIX = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
# Tag restrictions (Tagging AWS resources, "Tag naming limits and requirements").
_TAG_CHARS = re.compile(r"^[\w\s.:/=+\-@]*$", re.UNICODE)
MAX_TAGS, MAX_TAG_KEY, MAX_TAG_VALUE = 50, 128, 256


def _plain(value: Any) -> str | None:
    return value if isinstance(value, str) and value != offline.UNKNOWN and "$ref" not in value else None


def effective_name(record: offline.Record, rule: NameRule) -> tuple[str, bool] | None:
    """(the name AWS will get, whether it is a worst-case autoname) or None when computed elsewhere."""
    explicit = _plain(record.inputs.get(rule.field))
    if explicit is not None:
        return explicit, False
    prefix = _plain(record.inputs.get(rule.prefix_field)) if rule.prefix_field else None
    if prefix is not None:
        return prefix + "x" * (26 if rule.field == "name" and record.type.startswith("aws:iam/") else 8), True
    if rule.autonamed and rule.field not in record.inputs:
        return f"{record.name}-{'x' * (AUTONAME_SUFFIX - 1)}", True
    return None


def check_name(record: offline.Record) -> list[str]:
    rule = NAME_RULES.get(record.type)
    found = effective_name(record, rule) if rule else None
    if rule is None or found is None:
        return []
    name, auto = found
    what = f"{record.type} {record.name}: {rule.field}"
    shown = f"autoname {name[: -(AUTONAME_SUFFIX - 1)]}<7 random>" if auto else repr(name)
    out = []
    if not rule.min_len <= len(name) <= rule.max_len:
        out.append(f"{what} {shown} is {len(name)} characters; {rule.source} allows {rule.min_len}-{rule.max_len}")
    if not re.fullmatch(rule.pattern, name):
        out.append(f"{what} {shown} has characters {rule.source} rejects (allowed: {rule.pattern})")
    return out


def bucket_name_problems(name: str) -> list[str]:
    out = []
    if not _BUCKET.fullmatch(name):
        out.append("3-63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit")
    if ".." in name:
        out.append("no two adjacent dots")
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", name):
        out.append("not formatted as an IP address")
    if name.startswith(_BUCKET_BAD_PREFIX) or name.endswith(_BUCKET_BAD_SUFFIX):
        out.append("no reserved prefix (xn--, sthree-, amzn-s3-demo-) or suffix (-s3alias, --ol-s3, ...)")
    return out


def check_bucket(record: offline.Record) -> list[str]:
    if record.type != "aws:s3/bucket:Bucket":
        return []
    explicit = _plain(record.inputs.get("bucket"))
    prefix = _plain(record.inputs.get("bucketPrefix"))
    if explicit is None and prefix is not None:
        if len(prefix) > 37:
            return [
                f"{record.type} {record.name}: bucketPrefix {prefix!r} is {len(prefix)} characters; "
                "the provider allows 37 (a 26-character unique suffix is appended)"
            ]
        name = prefix + "x" * 26
    else:
        name = explicit if explicit is not None else f"{record.name}-{'x' * (AUTONAME_SUFFIX - 1)}"
    return [
        f"{record.type} {record.name}: bucket name {name!r}: {p} (S3 bucket naming rules)"
        for p in bucket_name_problems(name)
    ]


def tag_problems(tags: dict[str, Any]) -> list[str]:
    out = []
    if len(tags) > MAX_TAGS:
        out.append(f"{len(tags)} tags; AWS allows {MAX_TAGS} per resource")
    for k, v in tags.items():
        if len(k) > MAX_TAG_KEY:
            out.append(f"tag key {k[:40]!r}... is {len(k)} characters (max {MAX_TAG_KEY})")
        if k.lower().startswith("aws:"):
            out.append(f"tag key {k!r} uses the reserved aws: prefix")
        if not _TAG_CHARS.fullmatch(k):
            out.append(f"tag key {k!r} has characters AWS rejects (letters, digits, spaces, _ . : / = + - @)")
        if isinstance(v, str) and v != offline.UNKNOWN:
            if len(v) > MAX_TAG_VALUE:
                out.append(f"tag {k!r} value is {len(v)} characters (max {MAX_TAG_VALUE})")
            if not _TAG_CHARS.fullmatch(v):
                out.append(f"tag {k!r} value {v!r} has characters AWS rejects")
    return out


def check_tags(record: offline.Record) -> list[str]:
    tags = record.inputs.get("tags")
    if not record.type.startswith(("aws:", "eks:")) or not isinstance(tags, dict):
        return []
    return [f"{record.type} {record.name}: {p}" for p in tag_problems(tags)]


def _by_id(records: Iterable[offline.Record], type_token: str) -> dict[str, offline.Record]:
    return {str(r.outputs.get("id")): r for r in records if r.type == type_token}


def check_cidrs(records: list[offline.Record]) -> list[str]:
    """Subnets inside their VPC's CIDR and disjoint from each other (EC2 CreateSubnet)."""
    vpcs = _by_id(records, "aws:ec2/vpc:Vpc")
    per_vpc: dict[str, list[tuple[str, ipaddress.IPv4Network]]] = defaultdict(list)
    out = []
    for r in records:
        if r.type != "aws:ec2/subnet:Subnet" or not _plain(r.inputs.get("cidrBlock")):
            continue
        try:
            net = ipaddress.ip_network(r.inputs["cidrBlock"])
        except ValueError as exc:
            out.append(f"{r.type} {r.name}: cidrBlock {r.inputs['cidrBlock']!r}: {exc}")
            continue
        vpc = vpcs.get(str(r.inputs.get("vpcId")))
        if vpc is not None and _plain(vpc.inputs.get("cidrBlock")):
            vnet = ipaddress.ip_network(vpc.inputs["cidrBlock"])
            if (
                not isinstance(net, ipaddress.IPv4Network)
                or not isinstance(vnet, ipaddress.IPv4Network)
                or not net.subnet_of(vnet)
            ):
                out.append(f"{r.type} {r.name}: cidrBlock {net} is not inside VPC {vpc.name}'s {vnet}")
        if isinstance(net, ipaddress.IPv4Network) and not 16 <= net.prefixlen <= 28:
            out.append(f"{r.type} {r.name}: cidrBlock {net}: EC2 subnets are /16 to /28")
        per_vpc[str(r.inputs.get("vpcId"))].append((r.name, net))  # type: ignore[arg-type]
    for subnets in per_vpc.values():
        for i, (a, na) in enumerate(subnets):
            for b, nb in subnets[i + 1 :]:
                if na.overlaps(nb):
                    out.append(f"aws:ec2/subnet:Subnet {a} ({na}) overlaps {b} ({nb}) in the same VPC")
    return out


def check_efs_mount_targets(records: list[offline.Record]) -> list[str]:
    """EFS CreateMountTarget: one mount target per Availability Zone per file system."""
    subnets = _by_id(records, "aws:ec2/subnet:Subnet")
    seen: dict[tuple[str, str], str] = {}
    out = []
    for r in records:
        if r.type != "aws:efs/mountTarget:MountTarget":
            continue
        subnet = subnets.get(str(r.inputs.get("subnetId")))
        az = _plain(subnet.inputs.get("availabilityZone")) if subnet else None
        if az is None:
            continue
        key = (str(r.inputs.get("fileSystemId")), az)
        if key in seen:
            out.append(
                f"{r.type} {r.name}: a second mount target in {az} for the same file system (also "
                f"{seen[key]}); EFS allows one per Availability Zone (MountTargetConflict)"
            )
        seen.setdefault(key, r.name)
    return out


# FSx for Lustre CreateFileSystem StorageCapacity and PerUnitStorageThroughput (API reference).
_FSX_SSD_STEP = {"SCRATCH_1": 3600, "SCRATCH_2": 2400, "PERSISTENT_1": 2400, "PERSISTENT_2": 2400}
_FSX_THROUGHPUT = {
    ("PERSISTENT_1", "SSD"): {50, 100, 200},
    ("PERSISTENT_1", "HDD"): {12, 40},
    ("PERSISTENT_2", "SSD"): {125, 250, 500, 1000},
}
_FSX_HDD_STEP = {12: 6000, 40: 1800}


def fsx_problems(deployment: str, storage_type: str, capacity: int, throughput: int | None) -> list[str]:
    out = []
    if storage_type == "HDD":
        step = _FSX_HDD_STEP.get(throughput or 0)
        if step and capacity % step:
            out.append(f"storageCapacity {capacity} GiB: HDD at {throughput} MB/s/TiB takes multiples of {step} GiB")
    else:
        step = _FSX_SSD_STEP.get(deployment)
        if step and capacity not in (1200, 2400) and capacity % step:
            out.append(f"storageCapacity {capacity} GiB: {deployment} SSD takes 1200, 2400 or multiples of {step} GiB")
    allowed = _FSX_THROUGHPUT.get((deployment, storage_type))
    if allowed is not None and throughput is not None and throughput not in allowed:
        out.append(f"perUnitStorageThroughput {throughput}: {deployment} {storage_type} offers {sorted(allowed)}")
    if allowed is not None and throughput is None:
        out.append(f"perUnitStorageThroughput: required for {deployment} {storage_type}")
    return out


def check_fsx(record: offline.Record) -> list[str]:
    if record.type != "aws:fsx/lustreFileSystem:LustreFileSystem":
        return []
    i = record.inputs
    capacity = i.get("storageCapacity")
    if not isinstance(capacity, int):
        return []
    throughput = i.get("perUnitStorageThroughput")
    return [
        f"{record.type} {record.name}: {p}"
        for p in fsx_problems(
            str(i.get("deploymentType") or "SCRATCH_1"),
            str(i.get("storageType") or "SSD"),
            capacity,
            throughput if isinstance(throughput, int) else None,
        )
    ]


def check_recording(rec: offline.Recording) -> Check:
    check = Check("AWS create-time rules: names, tags, buckets, CIDRs, EFS, FSx", what="resources")
    records = [r for r in rec.records if r.type.startswith(("aws:", "eks:"))]
    check.checked = len(records)
    for r in records:
        check.problems += check_name(r) + check_bucket(r) + check_tags(r) + check_fsx(r)
    check.problems += check_cidrs(records) + check_efs_mount_targets(records)
    return check
