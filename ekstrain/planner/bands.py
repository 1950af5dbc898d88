"""How far to trust a predicted step time: the error band per generation and framework, and which
generations are calibrated at all.

The band is the largest held-out (validation) error of tokens/s per device among the published
runs of that generation and framework (calibration.py; ``ekstrain plan calibrate`` prints them),
so a printed ``8.15 s ±10%`` means no held-out run of that kind was further off. A framework
without held-out rows on a generation takes the generation's largest held-out error over all
frameworks. ``ERROR_BANDS`` stores the values (tests recompute them from the measurements).

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
    ("a100", "megatron"): 0.072,
    ("a100", "fsdp"): 0.141,
    ("a100", "deepspeed"): 0.123,
    ("a100", ANY_FRAMEWORK): 0.141,
    ("h100", "megatron"): 0.104,
    ("h100", ANY_FRAMEWORK): 0.104,
    ("b200", "megatron"): 0.030,
    ("b200", ANY_FRAMEWORK): 0.030,
    ("trainium1", "megatron"): 0.184,
    ("trainium1", ANY_FRAMEWORK): 0.184,
}
"""Largest held-out error per (generation, framework), from calibration.MEASUREMENTS."""
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
    basis = f"largest held-out error of {nearest} {framework if (nearest, framework) in ERROR_BANDS else 'runs'}"
    name = generation or "unknown"
    if nearest != generation:
        return Band(fraction, False, f"uncalibrated: {name} runs on {nearest}'s constants; band: {basis}")
    if generation == "b200" and precision == BF16:
        return Band(fraction, False, f"uncalibrated: b200 bf16 is derived from h100 bf16 and fp8; band: {basis}")
    return Band(fraction, True, f"calibrated; band: {basis}")
