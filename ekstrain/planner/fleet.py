"""The accelerator fleet a plan runs on, read from ``ekstrain.facts.catalog`` or from a fleet JSON.

What a planner *device* is: one launcher rank. On GPUs that is one GPU. On Trainium the Neuron
launcher starts one rank per NeuronCore (catalog ``workers_per_node``), and neuronx-distributed
expresses TP/PP degrees in those ranks, so the planner's device is one NeuronCore: it gets
``1 / cores_per_device`` of its chip's HBM, peak FLOP/s, HBM bandwidth and NeuronLink bandwidth.
Degrees (tp, pp, dp, ...) therefore always multiply to ``ranks``; ``accelerators_per_node`` stays the
physical count the Kubernetes device plugin advertises (GPUs, or Neuron chips).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from math import log
from pathlib import Path
from typing import Any

from ekstrain.facts import catalog
from ekstrain.layout import topology
from ekstrain.planner import inputs
from ekstrain.planner.errors import PlanError

LEGACY_KEYS = {"hbm_gbps": "hbm_gbytes_per_s"}
"""Fleet JSON keys of earlier releases and the key each one now reads as."""
GENERATION_PREFIXES = (
    ("A100", "a100"),
    ("H100", "h100"),
    ("H200", "h200"),
    ("B200", "b200"),
    ("B300", "b200"),
    ("Trainium2", "trainium2"),
    ("Trainium", "trainium1"),
)


def generation_of(accelerator_model: str) -> str:
    """The calibrated generation of a catalog accelerator model name ('' when none applies)."""
    for prefix, generation in GENERATION_PREFIXES:
        if accelerator_model.startswith(prefix):
            return generation
    return ""


KNOWN_GENERATIONS = ("a100", "h100", "h200", "b200", "trainium1", "trainium2")
"""Generations the efficiency table has constants for (efficiency.GENERATIONS, same order)."""
GENERATION_PEAKS = {
    "a100": (312, 2039),
    "h100": (989, 3350),
    "h200": (989, 4800),
    "b200": (2250, 7700),
    "trainium1": (190, 820),
    "trainium2": (667, 2900),
}
"""(dense BF16 TFLOP/s, HBM GB/s) per accelerator, as ekstrain.facts.catalog and the datasheets give them
(research notes, section 8): what a fleet JSON without ``generation`` is matched against."""

FLEET_COUNTS: dict[str, tuple[int, int]] = {"accelerators_per_node": (1, 64), "ranks_per_accelerator": (1, 16)}
FLEET_NUMBERS: dict[str, tuple[float, float, str]] = {
    "peak_tflops_bf16": (1, 20_000, "dense TFLOP/s per accelerator (B200: 2,250)"),
    "hbm_gib": (1, 4_096, "GiB per accelerator (B300: 268)"),
    "hbm_gbytes_per_s": (10, 100_000, "GB/s per accelerator (B200: 7,700)"),
    "intra_node_gbytes_per_s": (1, 100_000, "GB/s per accelerator, bidirectional (B200: 1,800)"),
    "inter_node_gbits_per_s": (1, 1_000_000, "Gbit/s per node (p5: 3,200)"),
}
"""Required numbers and their plausible ranges: about 10x today's largest figure, so a unit slip
(bytes for GB, Gbit for GB) or a typo of three orders of magnitude is refused, not planned."""
FLEET_OPTIONAL_NUMBERS: dict[str, tuple[float, float, str]] = {
    "peak_tflops_fp8": (1, 40_000, "dense TFLOP/s per accelerator (B200: 4,500)"),
}


def infer_generation(peak_tflops_bf16: float, hbm_gbytes_per_s: float) -> str:
    """The generation whose (BF16 peak, HBM bandwidth) is nearest on a log scale."""

    def distance(generation: str) -> float:
        peak, hbm = GENERATION_PEAKS[generation]
        return abs(log(peak_tflops_bf16 / peak)) + abs(log(hbm_gbytes_per_s / hbm))

    return min(KNOWN_GENERATIONS, key=distance)


BF16 = "bf16"
FP8 = "fp8"
GIB = 2**30


@dataclass(frozen=True)
class Fleet:
    """``nodes`` identical nodes. Per-accelerator figures as in ``catalog.Accelerator``; the network
    figure is per node, as in ``catalog.InstanceType.network_gbps``."""

    name: str
    nodes: int
    accelerators_per_node: int
    peak_tflops_bf16: float
    hbm_gib: float
    hbm_gbytes_per_s: float
    """HBM bandwidth per accelerator in GB/s (10^9 bytes/s), as the datasheet quotes it."""
    intra_node_gbytes_per_s: float
    """NVLink / NeuronLink bandwidth per accelerator in GB/s as spec sheets quote it: the
    bidirectional total (A100 600, H100/H200 900, B200 1,800; Trainium 384, Trainium2 1,280).
    One direction carries half of it."""
    inter_node_gbits_per_s: float
    """Per node: the sum over its EFA / InfiniBand interfaces, in Gbit/s."""
    peak_tflops_fp8: float | None = None
    ranks_per_accelerator: int = 1
    """Launcher ranks per accelerator: 1 on GPUs, NeuronCores per chip on Trainium."""
    family: str = catalog.GPU
    generation: str = ""
    """Accelerator generation the time model's efficiencies are calibrated for (``perf.GENERATIONS``:
    a100, h100, h200, b200, trainium1, trainium2); empty = none (uncalibrated: A100's constants)."""
    generation_inferred: bool = False
    """True when a fleet JSON gave no ``generation`` and it was inferred from the peak figures."""
    network_topology: str = ""
    """An instance type whose EC2 network topology narrows a group spanning many nodes (ekstrain/layout/topology.py
    ``ring_bandwidth_fraction``: the tier the nodes span when packed, and the share of the node's EFA bandwidth a
    wider tier keeps, a stated assumption). Empty: every node pair at the full network figure, as the validation
    runs are priced (their clusters' topology is not published)."""

    def __post_init__(self) -> None:
        for key in ("nodes", "accelerators_per_node", "ranks_per_accelerator"):
            if getattr(self, key) < 1:
                raise PlanError(f"fleet {self.name!r}: {key} must be >= 1")
        for key in (
            "peak_tflops_bf16",
            "hbm_gib",
            "hbm_gbytes_per_s",
            "intra_node_gbytes_per_s",
            "inter_node_gbits_per_s",
        ):
            if getattr(self, key) <= 0:
                raise PlanError(f"fleet {self.name!r}: {key} must be > 0")
        inputs.check_count("--nodes", self.nodes, 1, inputs.MAX_NODES, "plan a smaller fleet")
        if self.ranks > inputs.MAX_RANKS:
            raise PlanError(
                f"--nodes {self.nodes} x {self.ranks_per_node} ranks per node = {self.ranks:,} ranks exceeds the "
                f"planner's bound of {inputs.MAX_RANKS:,} (the search enumerates the layouts of every rank); "
                "plan fewer nodes"
            )

    @classmethod
    def from_instance(cls, instance_type: str, nodes: int, network_tiers: bool = False) -> Fleet:
        try:
            it = catalog.get(instance_type)
        except catalog.UnknownInstanceType as error:
            raise PlanError(str(error)) from None
        acc = it.accelerator
        return cls(
            name=it.name,
            nodes=nodes,
            accelerators_per_node=it.accelerator_count,
            peak_tflops_bf16=acc.peak_tflops_bf16,
            peak_tflops_fp8=acc.peak_tflops_fp8,
            hbm_gib=acc.memory_gib,
            hbm_gbytes_per_s=acc.hbm_gbytes_per_s,
            # The catalog stores one direction; the fleet holds the spec-sheet bidirectional total.
            intra_node_gbytes_per_s=2 * acc.intra_node_gbytes_per_s,
            inter_node_gbits_per_s=it.inter_node_gbits_per_s,
            ranks_per_accelerator=it.workers_per_node // it.accelerator_count,
            family=it.family,
            generation=generation_of(acc.model),
            network_topology=instance_type if network_tiers else "",
        )

    @classmethod
    def from_json(cls, path: str | Path, nodes: int) -> Fleet:
        """Read ``--fleet-json``: ``accelerators_per_node, peak_tflops_bf16, hbm_gib,
        hbm_gbytes_per_s, intra_node_gbytes_per_s, inter_node_gbits_per_s``; optional ``name,
        peak_tflops_fp8, ranks_per_accelerator, family, generation``. ``hbm_gbps`` (the old name of
        ``hbm_gbytes_per_s``, also GB/s) is still read. Units and scope as in Fleet. Without
        ``generation`` it is inferred from the peaks (``generation_inferred`` says so)."""
        return cls.from_dict(inputs.read_json_object(path, "fleet"), nodes, f"--fleet-json {str(path)!r}")

    @classmethod
    def from_dict(cls, data: dict[str, Any], nodes: int, source: str = "--fleet-json") -> Fleet:
        data = {LEGACY_KEYS.get(k, k): v for k, v in data.items()}
        missing = [k for k in FLEET_NUMBERS if k not in data]
        if missing:
            raise PlanError(f"{source}: missing keys {', '.join(missing)} (docs/planner.md, --fleet-json)")
        known = {*FLEET_NUMBERS, *FLEET_COUNTS, *FLEET_OPTIONAL_NUMBERS, "name", "family", "generation"}
        unknown = sorted(set(data) - known)
        if unknown:
            shown = ", ".join(repr(k)[:40] for k in unknown[:5])
            raise PlanError(f"{source}: unknown keys {shown}; the keys are {', '.join(sorted(known))}")
        values: dict[str, Any] = {}
        for key, (low, high) in FLEET_COUNTS.items():
            if key in data:
                values[key] = inputs.check_integer(source, key, data[key], low, high)
        for key, (bottom, top, unit) in {**FLEET_NUMBERS, **FLEET_OPTIONAL_NUMBERS}.items():
            if key in data:
                values[key] = inputs.check_number(source, key, data[key], bottom, top, unit)
        for key in ("name", "family"):
            if key in data:
                values[key] = inputs.check_string(source, key, data[key])
        if values.get("family", catalog.GPU) not in (catalog.GPU, catalog.TRAINIUM):
            raise PlanError(
                f"{source}: family must be {catalog.GPU!r} or {catalog.TRAINIUM!r}, got {values['family']!r}"
            )
        fp8 = values.get("peak_tflops_fp8")
        if fp8 is not None and fp8 < values["peak_tflops_bf16"]:
            raise PlanError(
                f"{source}: peak_tflops_fp8 {fp8:g} is below peak_tflops_bf16 {values['peak_tflops_bf16']:g}; "
                "FP8 peaks are 1-2x the BF16 peak (dense): check the figures"
            )
        if "generation" in data:
            generation = inputs.check_string(source, "generation", data["generation"])
            if generation not in KNOWN_GENERATIONS:
                raise PlanError(
                    f"{source}: generation {generation!r} has no calibration; use one of "
                    f"{', '.join(KNOWN_GENERATIONS)} (the nearest one; the output then says it is uncalibrated "
                    "for anything but the exact hardware)"
                )
            values["generation"] = generation
            inferred = False
        else:
            values["generation"] = infer_generation(values["peak_tflops_bf16"], values["hbm_gbytes_per_s"])
            inferred = True
        return cls(nodes=nodes, generation_inferred=inferred, **{"name": "custom", **values})

    @property
    def hbm_gbps(self) -> float:
        """Old name of ``hbm_gbytes_per_s`` (it was always GB/s, not Gbit/s)."""
        return self.hbm_gbytes_per_s

    # --- per-rank view (what memory and step-time models use) ----------------------------------
    @property
    def ranks_per_node(self) -> int:
        return self.accelerators_per_node * self.ranks_per_accelerator

    @property
    def ranks(self) -> int:
        """World size: the product of all parallel degrees."""
        return self.nodes * self.ranks_per_node

    @property
    def rank_memory_bytes(self) -> float:
        return self.hbm_gib * GIB / self.ranks_per_accelerator

    def rank_peak_flops(self, precision: str) -> float:
        if precision == FP8:
            if self.peak_tflops_fp8 is None:
                raise PlanError(f"fleet {self.name!r} has no FP8 peak; use --precision bf16")
            tflops = self.peak_tflops_fp8
        else:
            tflops = self.peak_tflops_bf16
        return tflops * 1e12 / self.ranks_per_accelerator

    @property
    def rank_hbm_bytes_per_s(self) -> float:
        return self.hbm_gbytes_per_s * 1e9 / self.ranks_per_accelerator

    @property
    def rank_intra_node_bytes_per_s(self) -> float:
        """One direction: what a ring step moves per second (half the bidirectional spec figure)."""
        return self.intra_node_gbytes_per_s / 2 * 1e9 / self.ranks_per_accelerator

    @property
    def rank_network_bytes_per_s(self) -> float:
        """A rank's share of the node's network when every rank communicates at once (the usual
        case: all DP or PP groups run their collectives concurrently)."""
        return self.inter_node_gbits_per_s * 1e9 / 8 / self.ranks_per_node

    def group_bytes_per_s(self, span: int) -> float:
        """Bandwidth per rank of a process group whose ranks lie within ``span`` consecutive ranks:
        the intra-node link if the span fits in one node, else the rank's network share, narrowed by the network
        tier the span's nodes reach when ``network_topology`` is set."""
        if span <= self.ranks_per_node:
            return self.rank_intra_node_bytes_per_s
        return self.rank_network_bytes_per_s * self.tier_share(span)

    def tier_share(self, span: int) -> float:
        """The share of the network figure a group over ``span`` consecutive ranks keeps: 1 without
        ``network_topology``, else its packed nodes' tier's (ekstrain/layout/topology.py
        ``ring_bandwidth_fraction``)."""
        if not self.network_topology or span <= self.ranks_per_node:
            return 1.0
        return _tier_fraction(self.network_topology, min(self.nodes, -(-span // self.ranks_per_node)))


@functools.lru_cache(maxsize=4096)
def _tier_fraction(instance_type: str, nodes: int) -> float:
    return topology.ring_bandwidth_fraction(instance_type, nodes)[1]
