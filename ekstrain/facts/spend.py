"""Spend as data: the one price table every reader of prices uses, the stack's default monthly budget, and the
OpenCost CSV price file made from the same table.

Every price comes from :mod:`ekstrain.facts.catalog` (``price_per_hour_usd``, on-demand list prices as of
``catalog.PRICES_AS_OF``): SUMMARY.md's partition table (``catalog.price_range``), the simulator's idle dollars
(``instance.price_per_hour_usd``) and OpenCost's node prices (:func:`opencost_pricing_csv`) read it, and
tests/assembly/test_logs_and_spend.py keeps the three equal.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from ekstrain.facts import catalog

HOURS_PER_MONTH = 730
"""AWS's billing month (8,760 h / 12), as the AWS pricing calculator uses."""

STACK_TAG = "ekstrain.io/stack"
PARTITION_TAG = "ekstrain.io/partition"
TEAM_TAG = "ekstrain.io/team"
COST_ALLOCATION_TAGS = (STACK_TAG, PARTITION_TAG, TEAM_TAG)
"""User-defined tags the program puts on nodes (EC2NodeClass ``tags``), file systems and log groups, and activates
as cost-allocation tags so Cost Explorer and the budget can group and filter by them."""

OPENCOST_CSV_HEADER = (
    "EndTimestamp",
    "InstanceID",
    "Region",
    "AssetClass",
    "InstanceIDField",
    "InstanceType",
    "MarketPriceHourly",
    "Version",
)
"""The columns OpenCost's CSV pricing provider decodes (opencost/opencost pkg/cloud/provider/csvprovider.go,
``type price struct``)."""
INSTANCE_TYPE_FIELD = "metadata.labels.node.kubernetes.io/instance-type"
"""``InstanceIDField``: the node label OpenCost matches ``InstanceID`` against (csvprovider.go
``NodeValueFromMapField``: ``metadata.labels.<key>``); with ``Region`` set, the key is ``<region>,<type>``, and the
class key it falls back to is ``<region>,<instance type>,node`` (``csvKey.Features``)."""


def price_table(instance_types: Iterable[str]) -> dict[str, float]:
    """Instance type -> on-demand USD per hour, for the types that have a list price (the one price table)."""
    out = {}
    known = catalog.known()
    for name in sorted(set(instance_types)):
        price = known[name].price_per_hour_usd if name in known else None
        if price is not None:
            out[name] = price
    return out


def default_monthly_limit_usd(partitions: Iterable[tuple[Sequence[str], int]]) -> float:
    """What every partition costs at ``maxNodes`` for a month, at its most expensive priced type:
    ``(instance types, max nodes)`` pairs -> USD, rounded up to a whole hundred. 0 when nothing is priced."""
    total = 0.0
    for types, max_nodes in partitions:
        prices = price_table(types)
        if prices:
            total += max(prices.values()) * max_nodes * HOURS_PER_MONTH
    return float(-(-int(total) // 100) * 100) if total else 0.0


def opencost_pricing_csv(region: str, instance_types: Iterable[str]) -> str:
    """OpenCost's CSV price file: one ``node`` row per priced instance type, matched by the instance-type label in
    the stack's region. Types without a list price are left out (OpenCost then prices those nodes at zero)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(OPENCOST_CSV_HEADER)
    for name, price in price_table(instance_types).items():
        w.writerow(["", name, region, "node", INSTANCE_TYPE_FIELD, name, f"{price}", ""])
    return out.getvalue()


def read_opencost_pricing_csv(text: str) -> dict[str, float]:
    """Instance type -> hourly price from an OpenCost CSV (the inverse of :func:`opencost_pricing_csv`)."""
    rows = list(csv.DictReader(io.StringIO(text)))
    return {r["InstanceType"]: float(r["MarketPriceHourly"]) for r in rows if r["AssetClass"] == "node"}
