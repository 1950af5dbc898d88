"""Where each accelerated catalog type is offered, and when it launched: one dated table, the only source of truth.

Regions (``OFFERED_IN``): the regions with an EC2 on-demand Linux list price for the type, as of
``OFFERINGS_AS_OF``, read from the instances.vantage.sh data that github.com/tsaol/aws-gpu vendors
(``data/<family>_instances.js``, "Last updated: 2026-01-21", field ``availability``; commit 77fcd9f),
restricted to the regions of ``ekstrain/facts/regions.py`` (GovCloud and Local Zones are not supported there).
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

from ekstrain.facts import regions

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
    # + us-east-1 and ap-northeast-2 after the table's date: see ADDED_SINCE
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


ADDED_SINCE: dict[str, dict[str, str]] = {
    "p6-b300.48xlarge": {
        "ap-northeast-2": (
            "AWS What's New 2026-08-20, Amazon EC2 P6-B300 instances now available in Asia Pacific (Seoul) "
            "(aws.amazon.com/about-aws/whats-new/2026/08/amazon-ec2-p6-b300/)"
        ),
        "us-east-1": "public launch scripts requesting p6-b300.48xlarge in us-east-1 (use1-az6), 2026",
    },
}
"""Offerings seen after ``OFFERINGS_AS_OF``, each with its source; merged into ``OFFERED_IN`` below."""
for _name, _added in ADDED_SINCE.items():
    OFFERED_IN[_name] = (OFFERED_IN[_name] or frozenset()) | frozenset(_added)

STALE_AFTER_DAYS = 365
"""Past this age the table only warns: regions gain types every few months, and a stale table must never refuse a
stack EC2 would now accept (the fix line says how to refresh it or extend it per stack)."""


@dataclass(frozen=True)
class Launch:
    date: dt.date
    source: str


def _d(text: str) -> dt.date:
    return dt.date.fromisoformat(text)


_NEWS = "AWS What's New"
LAUNCHED: dict[str, Launch] = {
    # (date, source). "corroborated": a second dated public source seen while writing this table; the others are
    # the announcement dates as recorded here, not re-fetched (an error there errs early: see the module docstring).
    "p4d.24xlarge": Launch(_d("2020-11-02"), f"{_NEWS} 2020-11-02, Amazon EC2 P4d instances generally available"),
    "p4de.24xlarge": Launch(
        _d("2022-05-01"), f"{_NEWS} May 2022, Amazon EC2 P4de instances (preview; earliest day of the month)"
    ),
    "p5.48xlarge": Launch(
        _d("2023-07-26"),
        f"{_NEWS} 2023-07-26, Amazon EC2 P5 instances generally available; corroborated: nextplatform.com "
        "2023-07-27 'H100 GPU Instance Pricing On AWS'",
    ),
    "p5e.48xlarge": Launch(_d("2024-09-09"), f"{_NEWS} 2024-09-09, Amazon EC2 P5e instances generally available"),
    "p5en.48xlarge": Launch(_d("2024-12-02"), f"{_NEWS} 2024-12-02, Amazon EC2 P5en instances generally available"),
    "p6-b200.48xlarge": Launch(
        _d("2025-05-15"),
        f"{_NEWS} 2025-05-15, Amazon EC2 P6-B200 instances generally available; corroborated: nextplatform.com "
        "'Sizing Up AWS Blackwell GPU Systems' (P6-B200 'became generally available on May 15')",
    ),
    "p6-b300.48xlarge": Launch(
        _d("2025-11-18"), f"{_NEWS} 2025-11-18, Amazon EC2 P6-B300 instances generally available"
    ),
    "g5.8xlarge": Launch(_d("2021-11-11"), f"{_NEWS} 2021-11-11, Amazon EC2 G5 instances generally available"),
    "g5.48xlarge": Launch(_d("2021-11-11"), f"{_NEWS} 2021-11-11, Amazon EC2 G5 instances generally available"),
    "g6e.48xlarge": Launch(_d("2024-08-15"), f"{_NEWS} 2024-08-15, Amazon EC2 G6e instances generally available"),
    "trn1.2xlarge": Launch(
        _d("2022-10-10"),
        f"{_NEWS} 2022-10-10, Amazon EC2 Trn1 instances generally available; corroborated: "
        "github.com/JGalego/HF-on-Trainium README ('Update (October 2022) ... Trn1 ... now generally available')",
    ),
    "trn1.32xlarge": Launch(
        _d("2022-10-10"),
        f"{_NEWS} 2022-10-10, Amazon EC2 Trn1 instances generally available; corroborated: "
        "github.com/JGalego/HF-on-Trainium README ('Update (October 2022) ... Trn1 ... now generally available')",
    ),
    "trn1n.32xlarge": Launch(
        _d("2023-04-13"),
        f"{_NEWS} 2023-04-13, Amazon EC2 Trn1n instances generally available; the EC2 API added the type by "
        "aws-cli 1.27.129 (May 2023 changelog: 'adds support the inf2 and trn1n instances')",
    ),
    "trn2.48xlarge": Launch(_d("2024-12-03"), f"{_NEWS} 2024-12-03, Amazon EC2 Trn2 instances generally available"),
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
    instance_type: str,
    region: str,
    extra: dict[str, frozenset[str]] | None = None,
    today: dt.date | None = None,
) -> tuple[str, str, str] | None:
    """("error" | "warning", problem, fix) when ``instance_type`` is not (or not knowably) offered in ``region``;
    a refusal becomes a warning once the table is older than ``STALE_AFTER_DAYS`` on ``today``."""
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
    age = ((today or dt.date.today()) - dt.date.fromisoformat(OFFERINGS_AS_OF)).days
    builtin = instance_type in OFFERED_IN
    source = OFFERINGS_SOURCE if builtin else f"ekstrain:instanceTypes.{instance_type}.regions"
    entry = " (an entry with override: true and the type's facts)" if builtin else ""
    return (
        "error" if age <= STALE_AFTER_DAYS else "warning",
        f"{instance_type} is not offered in {region} (offered in {', '.join(sorted(where))}; {source})",
        f"use a region that offers it or a type {region} offers; if EC2 now offers it there, list {region} under "
        f"ekstrain:instanceTypes.{instance_type}.regions{entry}",
    )


def launched(instance_type: str) -> Launch | None:
    return LAUNCHED.get(instance_type)
