"""Argument checks shared by the components' args classes.

Every args class checks itself in ``__post_init__``, so a bad value is refused when the args are built: before
the component, let alone any child, is registered. Messages name the argument (``PartitionArgs.spec.max_nodes``),
the value, what is wrong and the fix. The stack config (``stacks/``) checks the same facts for the shipped
program with its own key names; these checks are for programs that use the components directly.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ekstrain.facts.cloudwatch import RETENTION_DAYS

CLUSTER_NAME = re.compile(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}")
"""EKS cluster names (CreateCluster): 1-100 characters, alphanumeric first."""
REGION = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d")
AWS_ID = {kind: re.compile(rf"{kind}-[0-9A-Za-z]+") for kind in ("vpc", "subnet", "sg")}
"""The id's prefix and a suffix: catches a name, a CIDR or an ARN where an id belongs (AWS checks the rest)."""
LOG_RETENTION_DAYS = RETENTION_DAYS
"""CloudWatch Logs' allowed retentions (days): the one table stack validation reads too."""


class ComponentArgsError(ValueError):
    """A component argument is invalid. ``argument`` is its dotted name (``NetworkArgs.nat_gateways``)."""

    def __init__(self, argument: str, value: Any, problem: str, fix: str):
        self.argument = argument
        super().__init__(f"{argument}={value!r}: {problem}; fix: {fix}")


def is_plain(value: Any) -> bool:
    """True for a value known now (not a ``pulumi.Output``): only those can be checked before registration."""
    return not hasattr(value, "apply")


def check(ok: bool, argument: str, value: Any, problem: str, fix: str) -> None:
    if not ok:
        raise ComponentArgsError(argument, value, problem, fix)


def cluster_name(argument: str, value: str) -> None:
    check(
        isinstance(value, str) and bool(CLUSTER_NAME.fullmatch(value)),
        argument,
        value,
        "not an EKS cluster name",
        "use 1-100 letters, digits, '-' or '_', starting with a letter or digit",
    )


def region(argument: str, value: str) -> None:
    check(
        isinstance(value, str) and bool(REGION.fullmatch(value)),
        argument,
        value,
        "not an AWS region code",
        "give a region such as us-west-2",
    )


def availability_zone(argument: str, value: str, region_: str) -> None:
    check(
        isinstance(value, str) and value.startswith(region_) and len(value) > len(region_),
        argument,
        value,
        f"not an availability zone of {region_}",
        f"give a zone name such as {region_}a",
    )


def aws_id(argument: str, value: Any, kind: str) -> None:
    """A literal id must look like one (``vpc-0abc...``); an Output is checked by AWS at deploy time."""
    if is_plain(value):
        check(
            isinstance(value, str) and bool(AWS_ID[kind].fullmatch(value)),
            argument,
            value,
            f"not a {kind} id",
            f"give the id as AWS prints it ({kind}-0123456789abcdef0)",
        )


def aws_ids(argument: str, values: Any, kind: str, *, allow_empty: bool = True) -> None:
    if not is_plain(values):
        return
    check(
        not isinstance(values, str | bytes | Mapping),
        argument,
        values,
        "a single value where a list is expected",
        f"pass a list: [{values!r}]",
    )
    items = list(values)
    check(allow_empty or bool(items), argument, values, "empty", f"give at least one {kind} id")
    for i, item in enumerate(items):
        aws_id(f"{argument}[{i}]", item, kind)
    plain = [item for item in items if is_plain(item)]
    check(len(set(plain)) == len(plain), argument, values, "lists an id twice", "list each id once")


def positive_int(argument: str, value: Any, fix: str, minimum: int = 1, maximum: int | None = None) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= minimum
    ok = ok and (maximum is None or value <= maximum)
    bounds = f"at least {minimum}" + (f" and at most {maximum}" if maximum is not None else "")
    check(ok, argument, value, f"must be an integer {bounds}", fix)


def one_of(argument: str, value: Any, choices: Iterable[Any], fix: str | None = None) -> None:
    allowed = list(choices)
    check(value in allowed, argument, value, f"must be one of {allowed}", fix or f"use one of {allowed}")


def ipv4_network(argument: str, value: str) -> None:
    try:
        ipaddress.IPv4Network(value)
    except (ValueError, TypeError) as exc:
        raise ComponentArgsError(
            argument, value, f"not an IPv4 CIDR ({exc})", "give a block such as 10.0.0.0/16"
        ) from None
