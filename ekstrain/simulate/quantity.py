"""Kubernetes resource quantities (k8s.io/apimachinery pkg/api/resource/quantity.go, v0.35).

Grammar (quantity.go ``ParseQuantity``): ``<signedNumber><suffix>`` with suffix a binary SI (Ki..Ei), a
decimal SI (n, u, m, "", k, M, G, T, P, E) or a decimal exponent (``e``/``E`` + signed number). Anything
else is refused by the API server, so it is refused here with the same rule.
"""

from __future__ import annotations

import functools
import math
import re

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_QUANTITY = re.compile(
    r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d{1,4})?"
)
MAX_TEXT = 64
"""Longer text is no quantity a manifest carries (and keeps the regex linear on hostile input)."""


def parse(value: object) -> float:
    """The quantity's value; ValueError naming the grammar for anything the API server would refuse."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity (a number or a string such as 500m, 16Gi, 8)")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{value!r} is not a finite quantity")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a quantity (a number or a string such as 500m, 16Gi, 8)")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> float:
    """A quantity's text -> its value, kept per text (the simulator reads the same few requests at every step; a
    refused text raises each time: lru_cache keeps no exceptions). ParseQuantity does not trim: " 1Gi" is refused
    by the API server too."""
    m = _QUANTITY.fullmatch(text) if len(text) <= MAX_TEXT else None
    if m is None:
        shown = text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "..."
        raise ValueError(
            f"{shown!r} is not a Kubernetes quantity (<number><suffix>, suffix one of Ki Mi Gi Ti Pi Ei n u m k M G T "
            "P E or e<exponent>)"
        )
    number, suffix = float(m.group("num")), m.group("suffix") or ""
    if suffix in _BINARY:
        out = number * _BINARY[suffix]
    elif suffix in _DECIMAL:
        out = number * _DECIMAL[suffix]
    elif suffix:
        exponent = int(suffix[1:])
        out = 0.0 if exponent < -300 or number == 0 else number * 10.0**exponent if exponent < 300 else math.inf
    else:
        out = number
    if not math.isfinite(out):
        raise ValueError(f"{text!r} is beyond any quantity a node can hold")
    return out


def show(resource: str, value: float) -> str:
    """Human form: GiB for memory-like resources, cores for cpu, plain counts otherwise."""
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return f"{value / 2**30:.1f}Gi"
    return f"{value:g}"
