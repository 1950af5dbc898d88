"""How far to trust a predicted step time: the error band per generation and framework, and which
generations are calibrated at all.

The band is the largest of the leave-one-source-out errors of tokens/s per device of that
generation (validation.py: each published source predicted with constants fitted without it;
``ekstrain plan calibrate`` prints them), DeepSpeed ZeRO-3 with its own. Its coverage of a source it
was not computed from is measured nested and printed with the table (docs/planner.md). ``ERROR_BANDS``
stores the values (tests recompute them).

Uncalibrated generations run on the constants of the nearest calibrated one and carry its band:
H200 on H100's (same SM; no independent public training run with a printed layout beyond the two
torchtitan rows held out for H100's band), Trainium2 on Trainium1's (no public training
throughput), and a fleet JSON whose generation is unknown on A100's. B200 BF16 is derived from
H100's BF16 and B200/H100 FP8 (efficiency.py), so it is marked uncalibrated too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ekstrain.planner.fleet import BF16

ANY_FRAMEWORK = "*"
ERROR_BANDS: dict[tuple[str, str], float] = {
    ("a100", ANY_FRAMEWORK): 0.277,
    ("a100", "deepspeed"): 0.293,
    ("b200", ANY_FRAMEWORK): 0.079,
    ("h100", ANY_FRAMEWORK): 0.199,
    ("trainium1", ANY_FRAMEWORK): 0.114,
}
"""validation.bands(): the largest leave-one-source-out error per generation (DeepSpeed ZeRO-3 apart);
tests recompute them."""
NEAREST_CALIBRATED = {"h200": "h100", "trainium2": "trainium1", "": "a100"}


@dataclass(frozen=True)
class Band:
    fraction: float
    """Relative half-width of the band around the predicted step time."""
    calibrated: bool
    basis: str
    """Which held-out runs the band comes from, and what is uncalibrated."""


def band_for(generation: str, framework: str, precision: str) -> Band:
    nearest = NEAREST_CALIBRATED.get(generation, generation)
    if (nearest, ANY_FRAMEWORK) not in ERROR_BANDS:
        nearest = "a100"
    fraction = ERROR_BANDS.get((nearest, framework), ERROR_BANDS[(nearest, ANY_FRAMEWORK)])
    which = framework if (nearest, framework) in ERROR_BANDS else "runs"
    basis = f"largest leave-one-source-out error of {nearest} {which}"
    name = generation or "unknown"
    if nearest != generation:
        return Band(fraction, False, f"uncalibrated: {name} runs on {nearest}'s constants; band: {basis}")
    if generation == "b200" and precision == BF16:
        return Band(fraction, False, f"uncalibrated: b200 bf16 takes b200's fp8 efficiency; band: {basis}")
    return Band(fraction, True, f"calibrated; band: {basis}")
