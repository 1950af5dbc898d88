"""``ekstrain:instanceTypes``: instance types outside the built-in catalog, with their facts.

The built-in types live in ``ekstrain/facts/catalog.py`` (the one source of truth for them). A stack adds a type
the catalog does not have (a new generation, a smaller size) under its name here, with the facts the
program needs: accelerators, EFA interfaces and network cards, vCPU, memory, price, architecture. The
loader merges them into the catalog the stack is built with (:func:`ekstrain.facts.catalog.use_stack_types`),
so partitions, EFA layouts, subnet sizing, job templates and the summary treat them like built-ins
(``ekstrain simulate`` does not yet: ekstrain/simulate/nodes.py reads the built-in ``CATALOG`` and skips them).
A built-in type is never replaced silently: ``override: true`` says the stack's facts win.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from ekstrain.facts import catalog
from ekstrain.stacks.models.base import Model, _fail

INSTANCE_TYPE_NAME = re.compile(r"[a-z][a-z0-9-]*[0-9][a-z0-9-]*\.[a-z0-9]+")
"""EC2 instance type names: family (letters, generation digit, attributes), a dot, the size (p5.48xlarge)."""
REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]{1,2}")
"""AWS region names (us-west-2, ap-southeast-7)."""


class AcceleratorFacts(Model):
    """The type's accelerators; performance figures default to a built-in accelerator of the same ``model``."""

    kind: Literal["gpu", "trainium"]
    """``gpu`` (NVIDIA, nvidia.com/gpu) or ``trainium`` (AWS Neuron, aws.amazon.com/neuron)."""
    model: str = Field(min_length=1, max_length=64)
    """Device model, e.g. ``H200-SXM-141GB``. When it names a built-in accelerator (docs/catalog.md),
    memory and performance figures not given here are taken from it."""
    count: int = Field(ge=1, le=64)
    """Devices per instance."""
    memory_gib: float | None = Field(default=None, gt=0, le=4096, alias="memoryGiB")
    """Device memory per accelerator; @default the built-in accelerator's (required otherwise)."""
    peak_tflops_bf16: float | None = Field(default=None, gt=0, le=100000, alias="peakTflopsBf16")
    """Dense BF16 peak per device, for the planner; @default the built-in accelerator's (required otherwise)."""
    hbm_gbytes_per_s: float | None = Field(default=None, gt=0, le=100000, alias="hbmGBytesPerS")
    """Memory bandwidth per device; @default the built-in accelerator's (required otherwise)."""
    intra_node_gbytes_per_s: float | None = Field(default=None, gt=0, le=100000, alias="intraNodeGBytesPerS")
    """NVLink/NeuronLink bandwidth per device, one direction; @default the built-in accelerator's (required
    otherwise)."""
    cores_per_device: int | None = Field(default=None, ge=1, le=64)
    """NeuronCores per Trainium device; @default the built-in accelerator's, else 1."""
    generation: str | None = Field(default=None, min_length=1, max_length=64)
    """Architecture generation (a partition never mixes two); @default the built-in accelerator's, else model."""

    def to_catalog(self, where: str) -> catalog.Accelerator:
        base = catalog.ACCELERATORS.get(self.model)
        missing = [
            alias
            for alias, value in (
                ("memoryGiB", self.memory_gib),
                ("peakTflopsBf16", self.peak_tflops_bf16),
                ("hbmGBytesPerS", self.hbm_gbytes_per_s),
                ("intraNodeGBytesPerS", self.intra_node_gbytes_per_s),
            )
            if value is None
        ]
        if base is None and missing:
            raise _fail(
                f"{where}: accelerator model {self.model!r} is not a built-in accelerator and {', '.join(missing)} "
                "are not given",
                f"give them, or use a built-in model ({', '.join(sorted(catalog.ACCELERATORS))})",
            )

        def pick(value: float | None, default: float) -> float:
            return default if value is None else value

        return catalog.Accelerator(
            model=self.model,
            memory_gib=pick(self.memory_gib, base.memory_gib if base else 0),
            peak_tflops_bf16=pick(self.peak_tflops_bf16, base.peak_tflops_bf16 if base else 0),
            hbm_gbytes_per_s=pick(self.hbm_gbytes_per_s, base.hbm_gbytes_per_s if base else 0),
            intra_node_gbytes_per_s=pick(self.intra_node_gbytes_per_s, base.intra_node_gbytes_per_s if base else 0),
            peak_tflops_fp8=base.peak_tflops_fp8 if base else None,
            cores_per_device=self.cores_per_device or (base.cores_per_device if base else 1),
            generation=self.generation or (base.generation if base else self.model),
        )


class EfaFacts(Model):
    """EC2 ``EfaInfo`` and ``NetworkInfo`` of the type (``aws ec2 describe-instance-types``)."""

    max_interfaces: int = Field(ge=0, le=64)
    """``EfaInfo.MaximumEfaInterfaces``: EFA interfaces the type takes (0: no EFA). Not the network-card count:
    they differ on p6-b200 (eksctl#8685)."""
    network_cards: int = Field(ge=1, le=64)
    """``NetworkInfo.MaximumNetworkCards``."""
    card_indices: list[int] | None = None
    """Network cards that carry an EFA interface, in layout order; @default every card from 0. p6-b300's card 0
    is ENA-only (cards 1-16)."""
    gpudirect_rdma: bool = False
    """EFA device RDMA (``FI_EFA_USE_DEVICE_RDMA=1``) is supported; @default false."""

    @model_validator(mode="after")
    def _cards(self) -> EfaFacts:
        cards = self.card_indices if self.card_indices is not None else list(range(self.network_cards))
        bad = [c for c in cards if not 0 <= c < self.network_cards]
        if bad:
            raise _fail(
                f"cardIndices {bad} are not network cards of a type with networkCards {self.network_cards}",
                f"use indices 0-{self.network_cards - 1}",
            )
        if len(set(cards)) != len(cards):
            raise _fail(f"cardIndices {cards} repeat a card", "list each card once (one EFA interface per card)")
        if self.max_interfaces > len(cards):
            raise _fail(
                f"maxInterfaces {self.max_interfaces} is more than the {len(cards)} EFA-capable cards",
                "list a card per EFA interface in cardIndices, or check EfaInfo.MaximumEfaInterfaces",
            )
        if self.gpudirect_rdma and self.max_interfaces == 0:
            raise _fail("gpudirectRdma is true on a type without EFA", "remove gpudirectRdma or set maxInterfaces")
        return self


class InstanceTypeFacts(Model):
    """One instance type the catalog does not have, as ``ekstrain:instanceTypes.<name>``."""

    accelerator: AcceleratorFacts
    """The accelerators: kind, model, count, and the figures a built-in model does not supply."""
    vcpus: int = Field(ge=1, le=4096)
    """``VCpuInfo.DefaultVCpus``."""
    memory_gib: int = Field(ge=1, le=65536, alias="memoryGiB")
    """Instance memory."""
    network_gbps: int = Field(ge=1, le=100000)
    """Network bandwidth (all cards)."""
    efa: EfaFacts
    """EFA interfaces and the network-card layout they go on (the EC2NodeClass's networkInterfaces)."""
    architecture: Literal["x86_64", "arm64"] = "x86_64"
    """CPU architecture; @default x86_64. The NodePools and AL2023 AMI aliases are x86_64 only today, so a
    partition of an arm64 type is refused."""
    price_per_hour_usd: float | None = Field(default=None, ge=0, le=10000, alias="pricePerHourUsd")
    """On-demand list price, for the summary's cost columns; @default none (no cost shown)."""
    instance_store_gib: int = Field(default=0, ge=0, le=1000000, alias="instanceStoreGiB")
    """Local NVMe (RAID0 for kubelet and containers); @default 0."""
    ipv4_per_eni: int = Field(default=50, ge=1, le=100, alias="ipv4PerENI")
    """``NetworkInfo.Ipv4AddressesPerInterface`` (subnet sizing); @default 50."""
    min_kubernetes_version: str = Field(default="1.29", pattern=r"^1\.[0-9]{2}$")
    """Oldest Kubernetes version whose EKS AMIs support the type; @default 1.29."""
    regions: list[str] = Field(default_factory=list, max_length=64)
    """Regions where EC2 offers the type (``aws ec2 describe-instance-type-offerings``), added to the offerings
    table of ``ekstrain/facts/offerings.py`` for this stack; @default [] (a stack type without regions is not checked,
    a built-in one keeps the table's)."""
    override: bool = False
    """The name is a built-in type and these facts replace the catalog's for this stack; @default false
    (naming a built-in type is refused, so a typo never shadows the catalog)."""

    def to_catalog(self, name: str) -> catalog.InstanceType:
        where = f"ekstrain:instanceTypes.{name}"
        return catalog.InstanceType(
            name=name,
            family=self.accelerator.kind,
            accelerator=self.accelerator.to_catalog(where),
            accelerator_count=self.accelerator.count,
            vcpus=self.vcpus,
            memory_gib=self.memory_gib,
            network_gbps=self.network_gbps,
            efa_max_interfaces=self.efa.max_interfaces,
            network_cards=self.efa.network_cards,
            efa_card_indices=tuple(self.efa.card_indices or ()),
            gpudirect_rdma=self.efa.gpudirect_rdma,
            instance_store_gib=self.instance_store_gib,
            price_per_hour_usd=self.price_per_hour_usd,
            min_kubernetes_version=self.min_kubernetes_version,
            ipv4_per_eni=self.ipv4_per_eni,
            architecture=self.architecture,
        )


def check_instance_types(value: dict[str, InstanceTypeFacts]) -> dict[str, InstanceTypeFacts]:
    """Names are EC2 instance type names; a built-in type needs ``override: true`` (and an override a built-in)."""
    for name, facts in value.items():
        if not INSTANCE_TYPE_NAME.fullmatch(name):
            raise _fail(
                f"{name!r} is not an EC2 instance type name",
                "write it as family.size, e.g. p5e.48xlarge (aws ec2 describe-instance-types lists them)",
            )
        if name in catalog.CATALOG and not facts.override:
            raise _fail(
                f"{name} is a built-in type (ekstrain/facts/catalog.py)",
                "remove the entry to use the catalog's facts, or set override: true to replace them for this stack",
            )
        bad = [r for r in facts.regions if not REGION_NAME.fullmatch(r)]
        if bad:
            raise _fail(
                f"{name}.regions: {', '.join(map(repr, bad))} is not a region name",
                "list region names such as us-west-2 (aws ec2 describe-regions)",
            )
        if facts.override and name not in catalog.CATALOG:
            raise _fail(
                f"{name} has override: true but is not a built-in type",
                "remove override (it only replaces a built-in type's facts)",
            )
        facts.to_catalog(name)
    return value


__all__ = ["AcceleratorFacts", "EfaFacts", "InstanceTypeFacts", "check_instance_types"]
