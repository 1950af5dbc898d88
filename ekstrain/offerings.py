"""Where each accelerated catalog type is offered, and when it launched: one dated table, the only source of truth.

Regions (``OFFERED_IN``): the regions with an EC2 on-demand Linux list price for the type, as of
``OFFERINGS_AS_OF``, read from the instances.vantage.sh data that github.com/tsaol/aws-gpu vendors
(``data/<family>_instances.js``, "Last updated: 2026-01-21", field ``availability``; commit 77fcd9f),
restricted to the regions of ``ekstrain/regions.py`` (GovCloud and Local Zones are not supported there).
An on-demand price implies an offering (``aws ec2 describe-instance-type-offerings --location-type region``
is the authority an account can ask). Types sold only through Capacity Blocks (p5e, trn2) have no on-demand
price anywhere, so the table cannot know their regions: ``None``, and the rule warns instead of refusing.
Karpenter's generated pricing (karpenter-provider-aws ``pkg/providers/pricing/zz_generated.pricing_aws.go``,
"generated at 2026-07-20T13:44:30Z for us-east-1") lists us-east-1 only, so it confirms that region and no other.

Launch dates (``LAUNCHED``): the AWS "What's New" general-availability announcement of each type (the
preview date for p4de, which AWS never moved out of preview in name). An EKS AMI release (``al2023@vYYYYMMDD``)
older than the type's launch was never tested on it (new GPU generations need a newer NVIDIA driver), so a
stack pinning one is refused. Where a date is uncertain the earliest plausible one is used: the rule may then
miss a bad pin, never refuse a good one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from ekstrain import regions

OFFERINGS_AS_OF = "2026-01-21"
OFFERINGS_SOURCE = (
    "instances.vantage.sh on-demand prices by region (vendored in github.com/tsaol/aws-gpu data/*_instances.js, "
    f"last updated {OFFERINGS_AS_OF})"
)

COVERED_REGIONS = frozenset(regions.AVAILABILITY_ZONES)
"""The regions the table knew when it was written: a region added to ``regions.AVAILABILITY_ZONES`` later is
one the table cannot speak for (a warning, never a refusal)."""

_US = ("us-east-1", "us-east-2", "us-west-2")

# One row per type: regions (None = the table cannot know), then the source of the row.
# fmt: off
OFFERED_IN: dict[str, frozenset[str] | None] = {
    "p4d.24xlarge": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2",
                               "ca-central-1", "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2", "sa-east-1",
                               *_US}),
    "p4de.24xlarge": frozenset({"ap-northeast-1", "ap-southeast-1", "eu-central-1", "il-central-1", "us-east-1",
                                "us-west-2"}),
    "p5.48xlarge": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ap-southeast-3",
                              "ca-central-1", "eu-north-1", "eu-west-2", "sa-east-1", "us-west-1", *_US}),
    "p5e.48xlarge": None,  # Capacity Blocks only: no on-demand price in any region
    "p5en.48xlarge": frozenset({"ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-3", "eu-north-1",
                                "eu-south-2", "me-central-1", "us-west-1", *_US}),
    "p6-b200.48xlarge": frozenset(_US),
    "p6-b300.48xlarge": frozenset({"us-west-2"}),
    "g5.8xlarge": frozenset({"ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2",
                             "ap-southeast-3", "ca-central-1", "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2",
                             "il-central-1", "me-central-1", "sa-east-1", *_US}),
    "g5.48xlarge": frozenset({"ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2",
                              "ap-southeast-3", "ca-central-1", "eu-central-1", "eu-north-1", "eu-west-1", "eu-west-2",
                              "il-central-1", "me-central-1", "sa-east-1", *_US}),
    "g6e.48xlarge": frozenset({"ap-northeast-1", "ap-northeast-2", "eu-central-1", "eu-north-1", "eu-south-2", *_US}),
    "trn1.2xlarge": frozenset(_US),
    "trn1.32xlarge": frozenset(_US),
    "trn1n.32xlarge": frozenset(_US),
    "trn2.48xlarge": None,  # Capacity Blocks only: no on-demand price in any region
}
# fmt: on


@dataclass(frozen=True)
class Launch:
    date: dt.date
    source: str


def _d(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


_NEWS = "https://aws.amazon.com/about-aws/whats-new/"
LAUNCHED: dict[str, Launch] = {
    "p4d.24xlarge": Launch(_d("2020-11-02"), _NEWS + "2020/11/announcing-amazon-ec2-p4d-instances/"),
    "p4de.24xlarge": Launch(_d("2022-05-01"), _NEWS + "2022/05/amazon-ec2-p4de-gpu-instances-ml-training-hpc/"),
    "p5.48xlarge": Launch(_d("2023-07-26"), _NEWS + "2023/07/amazon-ec2-p5-instances-generally-available/"),
    "p5e.48xlarge": Launch(_d("2024-09-09"), _NEWS + "2024/09/amazon-ec2-p5e-instances-generally-available/"),
    "p5en.48xlarge": Launch(_d("2024-12-02"), _NEWS + "2024/12/amazon-ec2-p5en-instances-generally-available/"),
    "p6-b200.48xlarge": Launch(
        _d("2025-05-15"),
        _NEWS + "2025/05/amazon-ec2-p6-b200-instances-generally-available/ (GA May 15, 2025; also "
        "nextplatform.com 'Sizing Up AWS Blackwell GPU Systems')",
    ),
    "p6-b300.48xlarge": Launch(_d("2025-11-18"), _NEWS + "2025/11/amazon-ec2-p6-b300-instances-generally-available/"),
    "g5.8xlarge": Launch(_d("2021-11-11"), _NEWS + "2021/11/amazon-ec2-g5-instances-nvidia-gpus/"),
    "g5.48xlarge": Launch(_d("2021-11-11"), _NEWS + "2021/11/amazon-ec2-g5-instances-nvidia-gpus/"),
    "g6e.48xlarge": Launch(_d("2024-08-15"), _NEWS + "2024/08/general-availability-amazon-ec2-g6e-instances/"),
    "trn1.2xlarge": Launch(
        _d("2022-10-10"), _NEWS + "2022/10/ec2-trn1-instances-high-performance-cost-effective-deep-learning-training/"
    ),
    "trn1.32xlarge": Launch(
        _d("2022-10-10"), _NEWS + "2022/10/ec2-trn1-instances-high-performance-cost-effective-deep-learning-training/"
    ),
    "trn1n.32xlarge": Launch(_d("2023-04-13"), _NEWS + "2023/04/amazon-ec2-trn1n-instances-generally-available/"),
    "trn2.48xlarge": Launch(_d("2024-12-03"), _NEWS + "2024/12/amazon-ec2-trn2-instances-available/"),
}


def offered_in(instance_type: str, extra: dict[str, frozenset[str]] | None = None) -> frozenset[str] | None:
    """Regions where ``instance_type`` is offered: the stack's own list (``ekstrain:instanceTypes.<t>.regions``)
    extends the table's; None when neither knows."""
    own = (extra or {}).get(instance_type)
    table = OFFERED_IN.get(instance_type)
    if own is None:
        return table
    return own | (table or frozenset())


def offering_problem(
    instance_type: str, region: str, extra: dict[str, frozenset[str]] | None = None
) -> tuple[str, str, str] | None:
    """("error" | "warning", problem, fix) when ``instance_type`` is not (or not knowably) offered in ``region``."""
    where = offered_in(instance_type, extra)
    if instance_type not in OFFERED_IN and instance_type not in (extra or {}):
        return None  # not an accelerated type of the table (system node types, a stack's own type without regions)
    if region not in COVERED_REGIONS and not (where and region in where):
        return (
            "warning",
            f"the offerings table (as of {OFFERINGS_AS_OF}) is older than region {region}: it cannot tell whether "
            f"{instance_type} is offered there",
            f"check `aws ec2 describe-instance-type-offerings --region {region} --filters "
            f"Name=instance-type,Values={instance_type}`, then list the region under "
            f"ekstrain:instanceTypes.{instance_type}.regions",
        )
    if where is None:
        return (
            "warning",
            f"{instance_type} has no on-demand price in any region (Capacity Blocks only), so the offerings table "
            f"cannot tell whether {region} offers it",
            f"check `aws ec2 describe-instance-type-offerings --region {region} --filters "
            f"Name=instance-type,Values={instance_type}` and list the region under "
            f"ekstrain:instanceTypes.{instance_type}.regions",
        )
    if region in where:
        return None
    return (
        "error",
        f"{instance_type} is not offered in {region} (offered in {', '.join(sorted(where))}; {OFFERINGS_SOURCE})",
        f"use a region that offers it or a type {region} offers; if EC2 now offers it there, list {region} under "
        f"ekstrain:instanceTypes.{instance_type}.regions (an entry with override: true and the type's facts)",
    )


def launched(instance_type: str) -> Launch | None:
    return LAUNCHED.get(instance_type)
