"""Instance-type catalog: the one source of truth for accelerator, EFA and sizing facts.

Every component, the planner and the job templates read instance facts from here.
EFA counts are EC2's ``EfaInfo.MaximumEfaInterfaces`` (not ``MaximumNetworkCards``: they differ on
p6-b200, eksctl#8685) as listed in Karpenter v1.14's generated instance-type reference; see
``shared/research/platform-anchors.md`` section (d)1 and ``docs/catalog.md``.

Prices are us-east-1 Linux on-demand list prices per hour, as of ``PRICES_AS_OF``; they are a
planning aid for the offline render only and are never used to provision anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ekstrain.facts import names

PRICES_AS_OF = "2025-06-05"
PRICES_SOURCE = (
    "AWS EC2 on-demand pricing page, us-east-1, Linux, after the June 2025 P4/P5 price reduction; "
    "not fetched at render time. None = no public on-demand list price (capacity blocks only)."
)

GPU = "gpu"
TRAINIUM = "trainium"


@dataclass(frozen=True)
class Accelerator:
    """One accelerator device as the scheduler and the planner see it."""

    model: str
    memory_gib: float
    peak_tflops_bf16: float
    """Dense BF16 peak per device (no sparsity)."""
    hbm_gbytes_per_s: float
    intra_node_gbytes_per_s: float
    """Per-device bandwidth to the other devices of the node (NVLink / NeuronLink), one direction."""
    peak_tflops_fp8: float | None = None
    cores_per_device: int = 1
    """NeuronCores per Trainium device (logical, at the default LNC); 1 for GPUs."""
    generation: str = ""
    """Architecture generation (A100, Hopper, Blackwell, ...): one partition never mixes two, a
    job's ranks would run at the slowest generation's speed with different kernels."""


A100_40 = Accelerator("A100-SXM4-40GB", 40, 312, 1555, 300, generation="Ampere A100")
A100_80 = Accelerator("A100-SXM4-80GB", 80, 312, 2039, 300, generation="Ampere A100")
H100 = Accelerator("H100-SXM5-80GB", 80, 989, 3350, 450, peak_tflops_fp8=1979, generation="Hopper")
H200 = Accelerator("H200-SXM-141GB", 141, 989, 4800, 450, peak_tflops_fp8=1979, generation="Hopper")
B200 = Accelerator("B200-180GB", 179, 2250, 7700, 900, peak_tflops_fp8=4500, generation="Blackwell")
B300 = Accelerator("B300-270GB", 268, 2250, 7700, 900, peak_tflops_fp8=4500, generation="Blackwell Ultra")
A10G = Accelerator("A10G-24GB", 22, 125, 600, 32, generation="Ampere A10G")
L40S = Accelerator("L40S-48GB", 44, 362, 864, 32, peak_tflops_fp8=733, generation="Ada")
TRAINIUM1 = Accelerator("Trainium", 32, 190, 820, 192, peak_tflops_fp8=190, cores_per_device=2, generation="Trainium")
TRAINIUM2 = Accelerator(
    "Trainium2", 96, 667, 2900, 640, peak_tflops_fp8=1299, cores_per_device=4, generation="Trainium2"
)
ACCELERATORS: dict[str, Accelerator] = {
    a.model: a for a in (A100_40, A100_80, H100, H200, B200, B300, A10G, L40S, TRAINIUM1, TRAINIUM2)
}
"""Built-in accelerators by model name: a stack's own instance type (``ekstrain:instanceTypes``) naming one
inherits its memory and performance figures."""


@dataclass(frozen=True)
class InstanceType:
    """Facts about one EC2 instance type that the platform provisions or plans for."""

    name: str
    family: str
    """``gpu`` or ``trainium``: decides AMI, device plugin, taint and resource name."""
    accelerator: Accelerator
    accelerator_count: int
    vcpus: int
    memory_gib: int
    network_gbps: int
    efa_max_interfaces: int
    """EC2 ``EfaInfo.MaximumEfaInterfaces``; 0 when the type has no EFA."""
    network_cards: int
    efa_card_indices: tuple[int, ...] = field(default=())
    """Network cards that can carry an EFA interface, in the order interfaces are laid out.
    Defaults to every card; p6-b300's card 0 is ENA-only (aws-parallelcluster#7143)."""
    gpudirect_rdma: bool = False
    """EFA device RDMA (``FI_EFA_USE_DEVICE_RDMA=1``) is supported."""
    instance_store_gib: int = 0
    price_per_hour_usd: float | None = None
    min_kubernetes_version: str = "1.29"
    ipv4_per_eni: int = 50
    """EC2 ``Ipv4AddressesPerInterface``: the VPC CNI fills each ENI it attaches with this many IPs."""
    architecture: str = "x86_64"
    """EC2 ``ProcessorInfo.SupportedArchitectures``: every built-in type is x86_64."""

    def __post_init__(self) -> None:
        if not self.efa_card_indices:
            object.__setattr__(self, "efa_card_indices", tuple(range(self.network_cards)))

    @property
    def efa_capable(self) -> bool:
        return self.efa_max_interfaces > 0

    @property
    def accelerator_resource(self) -> str:
        """Kubernetes extended resource the device plugin advertises."""
        return names.GPU_RESOURCE if self.family == GPU else names.NEURON_RESOURCE

    @property
    def accelerator_taint_key(self) -> str:
        return self.accelerator_resource

    @property
    def accelerator_memory_gib_total(self) -> float:
        return self.accelerator.memory_gib * self.accelerator_count

    @property
    def neuron_cores(self) -> int:
        return self.accelerator.cores_per_device * self.accelerator_count if self.family == TRAINIUM else 0

    @property
    def workers_per_node(self) -> int:
        """Processes per node a launcher starts: one per GPU, one per NeuronCore."""
        return self.neuron_cores if self.family == TRAINIUM else self.accelerator_count

    @property
    def inter_node_gbits_per_s(self) -> int:
        return self.network_gbps


def _types(*items: InstanceType) -> dict[str, InstanceType]:
    return {t.name: t for t in items}


# One row per entry reads as a table: keep the formatter out of it.
# fmt: off
CATALOG: dict[str, InstanceType] = _types(
    InstanceType("p4d.24xlarge", GPU, A100_40, 8, 96, 1152, 400, efa_max_interfaces=4, network_cards=4,
                 gpudirect_rdma=True, instance_store_gib=7600, price_per_hour_usd=21.96),
    InstanceType("p4de.24xlarge", GPU, A100_80, 8, 96, 1152, 400, efa_max_interfaces=4, network_cards=4,
                 gpudirect_rdma=True, instance_store_gib=7600, price_per_hour_usd=27.45),
    InstanceType("p5.48xlarge", GPU, H100, 8, 192, 2048, 3200, efa_max_interfaces=32, network_cards=32,
                 gpudirect_rdma=True, instance_store_gib=30400, price_per_hour_usd=55.04),
    InstanceType("p5e.48xlarge", GPU, H200, 8, 192, 2048, 3200, efa_max_interfaces=32, network_cards=32,
                 gpudirect_rdma=True, instance_store_gib=30400, price_per_hour_usd=None),
    InstanceType("p5en.48xlarge", GPU, H200, 8, 192, 2048, 3200, efa_max_interfaces=16, network_cards=16,
                 gpudirect_rdma=True, instance_store_gib=30400, price_per_hour_usd=63.30),
    InstanceType("p6-b200.48xlarge", GPU, B200, 8, 192, 2048, 3200, efa_max_interfaces=8, network_cards=8,
                 gpudirect_rdma=True, instance_store_gib=30400, price_per_hour_usd=113.93,
                 min_kubernetes_version="1.31"),
    InstanceType("p6-b300.48xlarge", GPU, B300, 8, 192, 4096, 6400, efa_max_interfaces=16, network_cards=17,
                 efa_card_indices=tuple(range(1, 17)), gpudirect_rdma=True, instance_store_gib=30400,
                 price_per_hour_usd=None, min_kubernetes_version="1.32"),
    InstanceType("g5.8xlarge", GPU, A10G, 1, 32, 128, 25, efa_max_interfaces=1, network_cards=1,
                 instance_store_gib=900, price_per_hour_usd=2.448, ipv4_per_eni=30),
    InstanceType("g5.48xlarge", GPU, A10G, 8, 192, 768, 100, efa_max_interfaces=1, network_cards=1,
                 instance_store_gib=7600, price_per_hour_usd=16.288),
    InstanceType("g6e.48xlarge", GPU, L40S, 8, 192, 1536, 400, efa_max_interfaces=4, network_cards=4,
                 instance_store_gib=7600, price_per_hour_usd=30.131),
    InstanceType("trn1.2xlarge", TRAINIUM, TRAINIUM1, 1, 8, 32, 12, efa_max_interfaces=0, network_cards=1,
                 instance_store_gib=474, price_per_hour_usd=1.3438, ipv4_per_eni=15),
    InstanceType("trn1.32xlarge", TRAINIUM, TRAINIUM1, 16, 128, 512, 800, efa_max_interfaces=8, network_cards=8,
                 gpudirect_rdma=True, instance_store_gib=7600, price_per_hour_usd=21.50),
    InstanceType("trn1n.32xlarge", TRAINIUM, TRAINIUM1, 16, 128, 512, 1600, efa_max_interfaces=16,
                 network_cards=16, gpudirect_rdma=True, instance_store_gib=7600, price_per_hour_usd=24.78),
    InstanceType("trn2.48xlarge", TRAINIUM, TRAINIUM2, 16, 192, 2048, 3200, efa_max_interfaces=16,
                 network_cards=16, gpudirect_rdma=True, instance_store_gib=7600, price_per_hour_usd=None,
                 min_kubernetes_version="1.32"),
)
# fmt: on

# Minimum all-reduce bus bandwidth (GB/s) the pre-flight health check accepts across >= 2 nodes, at the
# largest message (2 GiB all_reduce_perf; 1 GiB nccom-test): about 60 % of the EFA line rate
# (network_gbps / 8). Measured runs on healthy nodes sit near 80-90 % of line rate (AWS
# awsome-distributed-training nccl-tests results: p4d ~45, p5 ~350 GB/s); a node that fell back to
# TCP sockets or lost EFA interfaces lands far below. Types without an entry are checked for NET/OFI only.
NCCL_MIN_BUSBW_GB_S: dict[str, float] = {
    "p4d.24xlarge": 30.0,
    "p4de.24xlarge": 30.0,
    "p5.48xlarge": 240.0,
    "p5e.48xlarge": 240.0,
    "p5en.48xlarge": 240.0,
    "p6-b200.48xlarge": 240.0,
    "p6-b300.48xlarge": 480.0,
    "g6e.48xlarge": 30.0,
    "trn1.32xlarge": 60.0,
    "trn1n.32xlarge": 120.0,
    "trn2.48xlarge": 240.0,
}

# Instance families that carry accelerators; the system node group must never use them.
ACCELERATED_FAMILY_PREFIXES = ("p", "g", "trn", "inf", "dl", "f1", "vt1")


_STACK_TYPES: dict[str, InstanceType] = {}
"""The instance types of the stack loaded last (``ekstrain:instanceTypes``), set by the stack loader."""


def use_stack_types(types: Mapping[str, InstanceType]) -> None:
    """Make a stack's own instance types part of the catalog (replacing the previous stack's).

    ``stacks.loader.parse`` calls this for every stack it validates, so the rules, the program and the job
    templates of that stack see its types; a stack without ``ekstrain:instanceTypes`` leaves only the
    built-ins. A stack type named like a built-in one replaces it (the stack model allows that only with
    ``override: true``)."""
    _STACK_TYPES.clear()
    _STACK_TYPES.update(types)


def stack_types() -> dict[str, InstanceType]:
    """The current stack's own types (empty when it has none)."""
    return dict(_STACK_TYPES)


def known() -> dict[str, InstanceType]:
    """Every type the current stack may use: the built-ins, then its own (which win)."""
    return {**CATALOG, **_STACK_TYPES}


class UnknownInstanceType(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown instance type {self.name!r}; known: {', '.join(sorted(known()))}"


def get(name: str) -> InstanceType:
    found = _STACK_TYPES.get(name) or CATALOG.get(name)
    if found is None:
        raise UnknownInstanceType(name)
    return found


def is_accelerated(instance_type: str) -> bool:
    """True for GPU/Trainium/Inferentia/FPGA families (p4d, g5, trn1, inf2, dl1, ...)."""
    family = instance_type.split(".", 1)[0]
    return any(family.startswith(p) and family[len(p) :][:1].isdigit() for p in ACCELERATED_FAMILY_PREFIXES)


def price_range(names: Iterable[str]) -> tuple[float | None, float | None]:
    """(min, max) on-demand price per node-hour over the types that have a list price."""
    prices = [p for p in (get(n).price_per_hour_usd for n in names) if p is not None]
    return (min(prices), max(prices)) if prices else (None, None)


def _offerings_markdown() -> list[str]:
    """Where each type is offered and when it launched (``ekstrain/facts/offerings.py``, the stack rules' table)."""
    from ekstrain.facts import offerings

    lines = [
        "",
        "## Regions and launch dates",
        "",
        f"Regions: {offerings.OFFERINGS_SOURCE}. A partition type its stack's `aws:region` does not offer is refused; "
        "a region newer than the table, or a type it cannot place, is a warning. "
        "`ekstrain:instanceTypes.<type>.regions` adds regions for one stack. Launch: the AWS What's New "
        "announcement; an `amiAliasVersion` pin dated before a partition type's launch is refused.",
        "",
        "| type | offered in | launched | announcement |",
        "|---|---|---|---|",
    ]
    for name in CATALOG:
        where = offerings.OFFERED_IN.get(name)
        regions = "unknown (Capacity Blocks only)" if where is None else ", ".join(sorted(where))
        launch = offerings.launched(name)
        date, source = (str(launch.date), launch.source) if launch else ("-", "-")
        lines.append(f"| {name} | {regions} | {date} | {source} |")
    return lines


def markdown() -> str:
    """docs/catalog.md: the catalog as a table (``python -m ekstrain.cli.reference catalog > docs/catalog.md``)."""
    lines = [
        "# Instance catalog",
        "",
        "Generated from `ekstrain/facts/catalog.py` by `python -m ekstrain.cli.reference catalog`; do not "
        "edit by hand.",
        "EFA = EC2 `EfaInfo.MaximumEfaInterfaces` (the count Karpenter advertises as `vpc.amazonaws.com/efa`).",
        f"Prices: {PRICES_SOURCE} As of {PRICES_AS_OF}.",
        "A type not listed here is added per stack under `ekstrain:instanceTypes` with its facts "
        "(docs/configuration.md); naming a type listed here there needs `override: true`.",
        "",
        "| type | family | accelerators | HBM/device GiB | BF16 TFLOPS/device | vCPU | memory GiB | network Gbps "
        "| EFA | network cards | EFA cards | GPUDirect RDMA | USD/h |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in CATALOG.values():
        cards = f"{t.efa_card_indices[0]}-{t.efa_card_indices[-1]}" if t.efa_capable else "-"
        price = "n/a" if t.price_per_hour_usd is None else f"{t.price_per_hour_usd:.2f}"
        rdma = "yes" if t.gpudirect_rdma else "no"
        lines.append(
            f"| {t.name} | {t.family} | {t.accelerator_count}x {t.accelerator.model} | {t.accelerator.memory_gib:g} "
            f"| {t.accelerator.peak_tflops_bf16:g} | {t.vcpus} | {t.memory_gib} | {t.network_gbps} "
            f"| {t.efa_max_interfaces} | {t.network_cards} | {cards} | {rdma} | {price} |"
        )
    lines += _offerings_markdown()
    lines += [
        "",
        "## A type the catalog lacks",
        "",
        "Add it to the stack file with its facts (`aws ec2 describe-instance-types`: `EfaInfo.MaximumEfaInterfaces`, "
        "`NetworkInfo.MaximumNetworkCards`, `VCpuInfo`, `MemoryInfo`); an accelerator model listed above lends "
        "its memory and performance figures. The partition then gets the EFA layout of those facts (primary "
        "interface on card 0, one `efa-only` interface per EFA card). The facts below are an illustration, not EC2's:",
        "",
        "```yaml",
        "  ekstrain:instanceTypes:",
        "    p5e.12xlarge:",
        "      accelerator: {kind: gpu, model: H200-SXM-141GB, count: 2}",
        "      vcpus: 48",
        "      memoryGiB: 512",
        "      networkGbps: 800",
        "      efa: {maxInterfaces: 4, networkCards: 4, gpudirectRdma: true}",
        "      pricePerHourUsd: 15.5",
        "  ekstrain:partitions:",
        "    - name: gpu-h200-small",
        "      accelerator: gpu",
        "      instanceTypes: [p5e.12xlarge]",
        "      maxNodes: 4",
        "```",
    ]
    return "\n".join(lines) + "\n"
