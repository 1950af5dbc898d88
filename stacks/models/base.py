"""Base model shared by every stack-config section."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """camelCase YAML keys, snake_case attributes, no unknown keys, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, validate_default=True,
        use_attribute_docstrings=True,
    )


def _ipv4_cidr(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        problem = f"{value!r} is not an IPv4 CIDR with zero host bits ({exc})"
        raise ValueError(f"{problem}; write it like 10.0.0.0/16") from None
    return str(net)


IPv4Cidr = Annotated[str, AfterValidator(_ipv4_cidr)]

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
