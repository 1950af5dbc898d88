"""The accelerator fleet a plan runs on, read from ``ekstrain.catalog`` or from a fleet JSON.

What a planner *device* is: one launcher rank. On GPUs that is one GPU. On Trainium the Neuron
launcher starts one rank per NeuronCore (catalog ``workers_per_node``), and neuronx-distributed
expresses TP/PP degrees in those ranks, so the planner's device is one NeuronCore: it gets
``1 / cores_per_device`` of its chip's HBM, peak FLOP/s, HBM bandwidth and NeuronLink bandwidth.
Degrees (tp, pp, dp, ...) therefore always multiply to ``ranks``; ``accelerators_per_node`` stays the
physical count the Kubernetes device plugin advertises (GPUs, or Neuron chips).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ekstrain import catalog
from ekstrain.planner.errors import PlanError
from ekstrain.planner.models import _read_json_object

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
    a100, h100, h200, b200, trainium1, trainium2); empty = the A100 calibration."""

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

    @classmethod
    def from_instance(cls, instance_type: str, nodes: int) -> Fleet:
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
        )

    @classmethod
    def from_json(cls, path: str | Path, nodes: int) -> Fleet:
        """Read ``--fleet-json``: ``accelerators_per_node, peak_tflops_bf16, hbm_gib,
        hbm_gbytes_per_s, intra_node_gbytes_per_s, inter_node_gbits_per_s``; optional ``name,
        peak_tflops_fp8, ranks_per_accelerator, family, generation``. ``hbm_gbps`` (the old name of
        ``hbm_gbytes_per_s``, also GB/s) is still read. Units and scope as in Fleet."""
        data = _read_json_object(path, "fleet")
        data = {LEGACY_KEYS.get(k, k): v for k, v in data.items()}
        required = (
            "accelerators_per_node",
            "peak_tflops_bf16",
            "hbm_gib",
            "hbm_gbytes_per_s",
            "intra_node_gbytes_per_s",
            "inter_node_gbits_per_s",
        )
        optional = ("name", "peak_tflops_fp8", "ranks_per_accelerator", "family", "generation")
        missing = [k for k in required if k not in data]
        if missing:
            raise PlanError(f"fleet JSON: missing keys {', '.join(missing)}")
        unknown = sorted(set(data) - set(required) - set(optional))
        if unknown:
            raise PlanError(f"fleet JSON: unknown keys {', '.join(unknown)}")
        values = {k: data[k] for k in (*required, *optional) if k in data}
        numeric = [*required, "peak_tflops_fp8", "ranks_per_accelerator"]
        for key in numeric:
            if key in values and (not isinstance(values[key], (int, float)) or isinstance(values[key], bool)):
                raise PlanError(f"fleet JSON: {key} must be a number, got {values[key]!r}")
        for key in ("name", "family", "generation"):
            if key in values and not isinstance(values[key], str):
                raise PlanError(f"fleet JSON: {key} must be a string, got {values[key]!r}")
        return cls(nodes=nodes, **{"name": "custom", **values})

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
        the intra-node link if the span fits in one node, else the rank's network share."""
        return self.rank_intra_node_bytes_per_s if span <= self.ranks_per_node else self.rank_network_bytes_per_s
