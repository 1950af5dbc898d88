"""SUMMARY.md as real Markdown: GitHub-flavoured tables (a header row, a delimiter row, ``|`` escaped in cells), a
legend under every table, secret values masked, and what the stack costs: the budget it creates, the platform's
standing monthly cost and its cost with every partition at maxNodes.

Prices are on-demand list prices (us-east-1, USD), read from the public pricing pages named beside each constant
and not fetched at render time; the accelerated types' come from :mod:`ekstrain.facts.catalog` (the one price table),
FSx's from :mod:`ekstrain.layout.storage_sizing`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ekstrain.facts import catalog, spend
from ekstrain.layout import storage_sizing

SECRET = "[secret]"

EKS_CONTROL_PLANE_USD_PER_HOUR = 0.10
"""EKS standard support, per cluster-hour (https://aws.amazon.com/eks/pricing/)."""
NAT_GATEWAY_USD_PER_HOUR = 0.045
"""NAT gateway hour, us-east-1; data processed ($0.045/GB) comes on top (https://aws.amazon.com/vpc/pricing/)."""
GP3_USD_PER_GB_MONTH = 0.08
"""EBS gp3 storage, us-east-1 (https://aws.amazon.com/ebs/pricing/): the system nodes' root volumes."""
KMS_KEY_USD_PER_MONTH = 1.0
"""A customer managed KMS key per month; requests come on top (https://aws.amazon.com/kms/pricing/)."""
SYSTEM_NODE_USD_PER_HOUR = {
    # On-demand Linux, us-east-1 (https://aws.amazon.com/ec2/pricing/on-demand/): the system node group's types.
    "m7i.large": 0.1008,
    "m7i.xlarge": 0.2016,
    "m7i.2xlarge": 0.4032,
    "m7i.4xlarge": 0.8064,
    "m6i.large": 0.096,
    "m6i.xlarge": 0.192,
    "m6i.2xlarge": 0.384,
    "m5.large": 0.096,
    "m5.xlarge": 0.192,
    "m5.2xlarge": 0.384,
    "c7i.xlarge": 0.1785,
    "c7i.2xlarge": 0.357,
}

PARTITION_LEGEND = {
    "partition": "name of the partition (ekstrain:partitions[].name)",
    "instanceTypes": "EC2 instance types Karpenter may launch for it",
    "capacity": "on-demand, spot or capacity-block (reserved) capacity",
    "nodes": "minNodes-maxNodes",
    "acceleratorsPerNode": "per instance type: accelerators per node and their model",
    "maxAccelerators": "accelerators with maxNodes nodes",
    "efa": "per instance type: EFA interfaces per node",
    "nodePools": "Karpenter NodePools and each one's node limit",
    "placementGroup": "cluster placement group(s); - = none (the partition does not ask for one)",
    "usdPerHourAtMax": "list price per hour with maxNodes nodes (a range: cheapest-dearest type)",
    "slurmAlwaysOn": "nodes slurmd pods hold whether or not Slurm has work, and their hourly price; - = none",
}
COUNT_LEGEND = {"type": "Pulumi resource type", "count": "resources of that type the program registers"}
ORDER_LEGEND = {
    "stage": "creation stage of a first `pulumi up` (1 first)",
    "resources": "resources created in that stage",
    "created": "their names (the first few)",
}
COMPAT_LEGEND = {
    "component": "a pinned component, or the AMI's driver or kernel it runs on",
    "version": "its pinned version",
    "runs on": "what it runs against (Kubernetes, the NVIDIA driver, the kernel, a library)",
    "needs": "the range its source supports",
    "source": "where that range is published",
    "result": "ok, INCOMPATIBLE (the stack is refused), or not bounded (no source gives a range)",
}
CHECKS_LEGEND = {
    "check": "what is checked",
    "checked": "how many objects, releases or resources it looked at",
    "problems": "problems found (any fails the render)",
    "warnings": "warnings (reported, not failing)",
    "note": "why a check did not run or what it assumed; - = nothing to note",
}
IMAGES_LEGEND = {
    "registry": "registry host the image is pulled from",
    "image": "image reference (tag or digest)",
    "pull policy": "imagePullPolicy of the containers running it",
    "objects": "objects running it",
    "first": "the first of those objects",
}


def cell(value: Any) -> str:
    """A table cell: one line, ``|`` escaped (GFM), empty shown as -."""
    text = re.sub(r"\s+", " ", str(value)).strip()
    return text.replace("|", "\\|") if text else "-"


def table(rows: list[dict[str, Any]], legend: Mapping[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``rows`` (then a legend of its columns, when given)."""
    if not rows:
        return "(none)\n"
    cols = list(rows[0])
    lines = [
        "| " + " | ".join(cell(c) for c in cols) + " |",
        "| " + " | ".join("---:" if all(_numeric(r[c]) for r in rows) else "---" for c in cols) + " |",
        *("| " + " | ".join(cell(r[c]) for c in cols) + " |" for r in rows),
    ]
    if legend:
        lines += ["", "Columns:", "", *(f"- **{c}**: {legend[c]}" for c in cols if c in legend)]
    return "\n".join(lines) + "\n"


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def mask(value: Any, secrets: set[str], key: str = "") -> Any:
    """``value`` with every secret replaced by ``[secret]``: a string among ``secrets`` (what the program marked
    secret), or any value under a key that names a credential (password, secret, token, kubeconfig)."""
    if re.search(r"password|secret|token|kubeconfig|privatekey", key, re.IGNORECASE) and not isinstance(
        value, (dict, list)
    ):
        return SECRET if value not in (None, "") else value
    if isinstance(value, dict):
        return {k: mask(v, secrets, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, secrets, key) for v in value]
    if isinstance(value, str) and value in secrets:
        return SECRET
    return value


def _usd(x: float) -> str:
    return f"${x:,.0f}"


def cost_rows(cfg: Any, standing_nodes: Iterable[tuple[str, int, float | None]], kms_keys: int) -> list[dict[str, Any]]:
    """The platform's standing monthly cost, item by item (``standing_nodes``: partition, nodes slurmd holds,
    hourly price of one)."""
    h = spend.HOURS_PER_MONTH
    rows: list[dict[str, Any]] = [
        {
            "item": "EKS control plane",
            "quantity": "1 cluster",
            "usdPerMonth": _usd(EKS_CONTROL_PLANE_USD_PER_HOUR * h),
            "basis": f"${EKS_CONTROL_PLANE_USD_PER_HOUR}/h",
        }
    ]
    net = cfg.network
    if net.existing_vpc is None:
        n = 1 if net.nat_gateways == "single" else len(net.availability_zones)
        rows.append(
            {
                "item": "NAT gateways",
                "quantity": n,
                "usdPerMonth": _usd(n * NAT_GATEWAY_USD_PER_HOUR * h),
                "basis": f"${NAT_GATEWAY_USD_PER_HOUR}/h each, + $0.045/GB processed",
            }
        )
    sys_ng = cfg.cluster.system_node_group
    first = sys_ng.instance_types[0]
    price = SYSTEM_NODE_USD_PER_HOUR.get(first)
    disk = sys_ng.desired_size * sys_ng.disk_size_gib * GP3_USD_PER_GB_MONTH
    rows.append(
        {
            "item": "system node group",
            "quantity": f"{sys_ng.desired_size}x {first}",
            "usdPerMonth": "n/a" if price is None else _usd(sys_ng.desired_size * price * h + disk),
            "basis": ("no list price in the table" if price is None else f"${price}/h each")
            + f" + {sys_ng.disk_size_gib} GiB gp3 each",
        }
    )
    fsx = cfg.storage.fsx
    if fsx.enabled:
        tier = storage_sizing.per_unit_throughput(fsx.deployment_type, fsx.per_unit_storage_throughput)
        per_gib = storage_sizing.PRICE_PER_GIB_MONTH.get((fsx.deployment_type, tier))
        rows.append(
            {
                "item": "FSx for Lustre",
                "quantity": f"{fsx.storage_capacity_gib} GiB",
                "usdPerMonth": "n/a" if per_gib is None else _usd(fsx.storage_capacity_gib * per_gib),
                "basis": f"{fsx.deployment_type} @ {tier} MB/s/TiB"
                + ("" if per_gib is None else f", ${per_gib}/GB-month"),
            }
        )
    if cfg.storage.efs.enabled:
        rows.append(
            {
                "item": "EFS model store",
                "quantity": "as stored",
                "usdPerMonth": "$0",
                "basis": "pay per GB stored ($0.30/GB-month Standard); empty costs nothing",
            }
        )
    if kms_keys:
        rows.append(
            {
                "item": "KMS keys",
                "quantity": kms_keys,
                "usdPerMonth": _usd(kms_keys * KMS_KEY_USD_PER_MONTH),
                "basis": f"${KMS_KEY_USD_PER_MONTH:.0f} per key-month",
            }
        )
    for name, nodes, hourly in standing_nodes:
        if nodes:
            rows.append(
                {
                    "item": f"slurmd nodes of {name}",
                    "quantity": nodes,
                    "usdPerMonth": "n/a" if hourly is None else _usd(nodes * hourly * h),
                    "basis": "schedulers.slurm.nodesetReplicas hold these nodes up",
                }
            )
    return rows


def cost_lines(
    cfg: Any, budget_usd: float | None, standing_nodes: list[tuple[str, int, float | None]], kms_keys: int
) -> list[str]:
    """SUMMARY.md's "## Cost" section."""
    h = spend.HOURS_PER_MONTH
    rows = cost_rows(cfg, standing_nodes, kms_keys)
    standing = sum(float(r["usdPerMonth"].strip("$").replace(",", "")) for r in rows if r["usdPerMonth"] != "n/a")
    at_max = 0.0
    unpriced = []
    for p in cfg.partitions:
        lo, _ = catalog.price_range(p.instance_types)
        if lo is None:
            unpriced.append(p.name)
        else:
            at_max += lo * p.max_nodes * h
    out = [
        "## Cost",
        "",
        f"On-demand list prices (us-east-1, USD, {spend.HOURS_PER_MONTH} h a month; instances as of "
        f"{catalog.PRICES_AS_OF}); not a quote, and data transfer, requests and AMP samples come on top.",
        "",
        f"- budget: {'none (ekstrain:cost.enabled is false)' if budget_usd is None else _usd(budget_usd) + ' a month'}"
        + (
            ""
            if budget_usd is None
            else " (AWS Budgets; ekstrain:cost.budget.monthlyLimitUsd, else every partition at maxNodes)"
        ),
        f"- standing (idle platform, no training node up): {_usd(standing)} a month",
        f"- at maxNodes (every partition at its maxNodes, cheapest type): {_usd(standing + at_max)} a month"
        + (f" (no list price for {', '.join(unpriced)})" if unpriced else ""),
        "",
        table(
            rows,
            {
                "item": "what runs while no training node is up",
                "quantity": "how many, or how big",
                "usdPerMonth": "monthly list price",
                "basis": "the unit price it is computed from",
            },
        ),
    ]
    return out
