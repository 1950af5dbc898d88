"""AWS regions and availability zones a stack may use: one dated table, the only source of truth.

Regions: the ``aws`` partition of botocore 1.35.99's ``endpoints.json`` (January 2025) plus the
regions launched since (ap-east-2 Taipei, ap-southeast-6 New Zealand, both 2025). Zone letters: the
AWS "Regions and Availability Zones" page as of ``AS_OF``. Zone *names* are mapped per account, so a
name in this table can still be one the account does not see; a name outside it exists for nobody.

Only the ``aws`` partition is supported: ARNs, service principals and endpoints built by the
program (``arn:aws:``, ``ec2.amazonaws.com``) differ in ``aws-cn``, ``aws-us-gov`` and the isolated
partitions, so those regions are refused rather than half supported.
"""

from __future__ import annotations

import re

AS_OF = "2025-12-01"

AVAILABILITY_ZONES: dict[str, str] = {
    # region: zone letters
    "us-east-1": "abcdef",
    "us-east-2": "abc",
    "us-west-1": "abc",  # each account sees two of the three
    "us-west-2": "abcd",
    "af-south-1": "abc",
    "ap-east-1": "abc",
    "ap-east-2": "abc",
    "ap-northeast-1": "abcd",  # 1b only for accounts created before 2013
    "ap-northeast-2": "abcd",
    "ap-northeast-3": "abc",
    "ap-south-1": "abc",
    "ap-south-2": "abc",
    "ap-southeast-1": "abc",
    "ap-southeast-2": "abc",
    "ap-southeast-3": "abc",
    "ap-southeast-4": "abc",
    "ap-southeast-5": "abc",
    "ap-southeast-6": "abc",
    "ap-southeast-7": "abc",
    "ca-central-1": "abd",
    "ca-west-1": "abc",
    "eu-central-1": "abc",
    "eu-central-2": "abc",
    "eu-north-1": "abc",
    "eu-south-1": "abc",
    "eu-south-2": "abc",
    "eu-west-1": "abc",
    "eu-west-2": "abc",
    "eu-west-3": "abc",
    "il-central-1": "abc",
    "me-central-1": "abc",
    "me-south-1": "abc",
    "mx-central-1": "abc",
    "sa-east-1": "abc",
}

EKS_UNSUPPORTED_ZONES = frozenset({"us-east-1e"})
"""EKS refuses control-plane subnets here (UnsupportedAvailabilityZoneException)."""

OTHER_PARTITIONS: dict[str, str] = {
    "cn-": "aws-cn",
    "us-gov-": "aws-us-gov",
    "us-isob-": "aws-iso-b",
    "us-isof-": "aws-iso-f",
    "us-iso-": "aws-iso",
    "eu-isoe-": "aws-iso-e",
    "eusc-": "aws-eusc",
}

_ZONE_ID = re.compile(r"[a-z]{3,5}\d{1,2}-az\d{1,2}")
_LOCAL_ZONE = re.compile(r"(?P<region>[a-z]{2}(-[a-z]+)+-\d{1,2})-(?!wl\d)[a-z]+-\d+[a-z]")
_WAVELENGTH_ZONE = re.compile(r"(?P<region>[a-z]{2}(-[a-z]+)+-\d{1,2})-wl\d+-[a-z0-9-]+")


def partition(region: str) -> str:
    return next((p for prefix, p in OTHER_PARTITIONS.items() if region.startswith(prefix)), "aws")


def region_problem(region: str) -> tuple[str, str] | None:
    """(problem, fix) when ``region`` cannot host this platform, else None."""
    other = partition(region)
    if other != "aws":
        return (
            f"{region!r} is in the {other} partition, which this program does not support (its ARNs, "
            "service principals and endpoints are built for the aws partition)",
            "use a region of the aws partition, e.g. us-west-2",
        )
    if region not in AVAILABILITY_ZONES:
        return (
            f"{region!r} is not an AWS region (table as of {AS_OF})",
            f"use one of {', '.join(sorted(AVAILABILITY_ZONES))}",
        )
    return None


def zone_problem(region: str, zone: str) -> tuple[str, str] | None:
    """(problem, fix) when ``zone`` is not a usable availability zone of ``region`` for training."""
    letters = AVAILABILITY_ZONES.get(region, "")
    examples = ", ".join(region + x for x in letters[:3]) or f"{region}a"
    if _WAVELENGTH_ZONE.fullmatch(zone):
        return (f"{zone!r} is a Wavelength Zone", f"training needs a full availability zone, e.g. {examples}")
    if _LOCAL_ZONE.fullmatch(zone):
        return (
            f"{zone!r} is a Local Zone (no EKS control plane, FSx or accelerator capacity for training)",
            f"use an availability zone such as {examples}",
        )
    if _ZONE_ID.fullmatch(zone):
        return (f"{zone!r} is a zone ID, not a zone name", f"use the zone name, e.g. {examples}")
    if not (zone.startswith(region) and len(zone) == len(region) + 1):
        return (f"{zone!r} is not an availability zone of aws:region {region}", f"use zones such as {examples}")
    if zone[-1] not in letters:
        return (
            f"{zone!r} does not exist (zones of {region} as of {AS_OF}: {', '.join(region + x for x in letters)})",
            f"use one of them, e.g. {examples}",
        )
    if zone in EKS_UNSUPPORTED_ZONES:
        return (f"EKS does not place clusters in {zone}", f"use another zone, e.g. {examples}")
    return None


def partition_of(region: str) -> str:
    """The ARN partition of ``region`` (IAM User Guide, "IAM identifiers", ARN format), so no ``get_partition``
    invoke is needed."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"
