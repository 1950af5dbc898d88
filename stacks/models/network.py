"""``ekstrain:network``: VPC, subnets across AZs, and the single training AZ for EFA."""

from __future__ import annotations

import ipaddress
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ekstrain.stacks.models.base import IPv4Cidr, Model, SecurityGroupId, SubnetId, VpcId


class ExistingSubnet(Model):
    id: SubnetId
    """The subnet's id (``subnet-`` and 8 or 17 hex digits)."""
    cidr: IPv4Cidr
    """The subnet's IPv4 block as AWS shows it: sizes the partitions' node IPs (``maxNodes``) against it."""


class ExistingVpc(Model):
    """Deploy into a VPC someone else runs: the program creates no VPC, subnet, route table, NAT gateway,
    S3 endpoint or flow log, and selects the subnets below by id (docs/delivery.md, existing VPC)."""

    vpc_id: VpcId
    """The VPC's id (``vpc-...``)."""
    private_subnets: dict[str, ExistingSubnet] = Field(min_length=2, max_length=4)
    """AZ -> private subnet (with egress: NAT or equivalent): control plane ENIs, system nodes, non-EFA
    partitions, EFS mount targets. At least two AZs (EKS); must include the training AZ."""
    efa_subnets: dict[str, ExistingSubnet] = Field(min_length=1)
    """AZ -> the subnet EFA partitions and FSx use (EFA traffic cannot cross subnets); must include the
    training AZ. May be the same subnet as the training AZ's private one (then they share its IPs)."""
    public_subnets: list[ExistingSubnet] = Field(default_factory=list)
    """@default none. Subnets for internet-facing load balancers, given to EKS (no node runs there)."""
    efa_security_group_id: SecurityGroupId | None = None
    """@default none: the program creates the EFA security group in the VPC. Set: use this group; it must
    allow all traffic to and from its own members."""

    def subnets(self) -> list[tuple[str, ExistingSubnet]]:
        """(key under ``existingVpc``, subnet) for every declared subnet."""
        return (
            [(f"privateSubnets.{az}", s) for az, s in self.private_subnets.items()]
            + [(f"efaSubnets.{az}", s) for az, s in self.efa_subnets.items()]
            + [(f"publicSubnets[{i}]", s) for i, s in enumerate(self.public_subnets)]
        )


class NetworkConfig(Model):
    vpc_cidr: IPv4Cidr = "10.0.0.0/16"
    """@default 10.0.0.0/16. Prefix /16 to /20; subnets are carved from it (``ekstrain.layout.subnets``). Not with
    ``existingVpc``."""
    availability_zones: list[str] = Field(min_length=2, max_length=4)
    """AZs for public and private subnets (EKS needs at least two). With ``existingVpc``: may be left out
    (the zones of ``existingVpc.privateSubnets``, in their order); if given, exactly those zones."""
    training_availability_zone: str
    """The one AZ holding the EFA subnet, placement groups and FSx: EFA traffic cannot cross subnets."""
    training_availability_zone_id: str | None = Field(default=None, pattern=r"^[a-z]{2,6}[0-9]+-az[0-9]+$")
    """@default none. The AZ ID (``usw2-az2``) of ``trainingAvailabilityZone`` in your account
    (``aws ec2 describe-availability-zones``): accelerator capacity, reservations and Capacity Blocks are offered per
    AZ ID, and AZ names map to different IDs in each account. Its region part must be the stack's region."""
    training_zone_instance_types: list[str] = Field(default_factory=list, max_length=500)
    """@default none (not checked). The instance types EC2 offers in ``trainingAvailabilityZoneId``, as
    ``aws ec2 describe-instance-type-offerings --location-type availability-zone-id --filters
    Name=location,Values=<AZ ID> --query 'InstanceTypeOfferings[].InstanceType'`` prints them; every EFA
    partition's type must be among them."""
    nat_gateways: Literal["single", "perAz"] = "single"
    """@default single (cheapest); perAz survives the loss of an AZ. Not with ``existingVpc``."""
    existing_vpc: ExistingVpc | None = None
    """@default none: the program creates the VPC. Set: deploy into this existing VPC and its subnets."""

    @model_validator(mode="before")
    @classmethod
    def _zones_of_existing_vpc(cls, data: Any) -> Any:
        """With ``existingVpc`` and no ``availabilityZones``: the private subnets' zones."""
        if isinstance(data, dict) and "availabilityZones" not in data and "availability_zones" not in data:
            existing = data.get("existingVpc")
            private = existing.get("privateSubnets") if isinstance(existing, dict) else None
            if isinstance(private, dict) and private:
                return {**data, "availabilityZones": list(private)}
        return data

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
