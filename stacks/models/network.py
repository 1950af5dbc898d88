"""``ekstrain:network``: VPC, subnets across AZs, and the single training AZ for EFA."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator

from ekstrain.stacks.models.base import IPv4Cidr, Model


class NetworkConfig(Model):
    vpc_cidr: IPv4Cidr = "10.0.0.0/16"
    """@default 10.0.0.0/16. Prefix /16 to /20; subnets are carved from it (``ekstrain.subnets``)."""
    availability_zones: list[str] = Field(min_length=2, max_length=4)
    """AZs for public and private subnets (EKS needs at least two)."""
    training_availability_zone: str
    """The one AZ holding the EFA subnet, placement groups and FSx: EFA traffic cannot cross subnets."""
    nat_gateways: Literal["single", "perAz"] = "single"
    """@default single (cheapest); perAz survives the loss of an AZ."""

    @field_validator("vpc_cidr")
    @classmethod
    def _prefix(cls, value: str) -> str:
        prefix = ipaddress.IPv4Network(value).prefixlen
        if not 16 <= prefix <= 20:
            raise ValueError(f"prefix /{prefix} is outside /16../20")
        return value

    @field_validator("availability_zones")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("availability zones must be unique")
        return value
