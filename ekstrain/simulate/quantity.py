"""Kubernetes resource quantities as floats (cores, bytes, counts), k8s.io/apimachinery resource.Quantity rules."""

from __future__ import annotations

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


def parse(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    if text[-1:] in _DECIMAL and text[-2:-1] != "e":
        return float(text[:-1]) * _DECIMAL[text[-1]]
    return float(text)


def show(resource: str, value: float) -> str:
    """Human form: GiB for memory-like resources, cores for cpu, plain counts otherwise."""
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return f"{value / 2**30:.1f}Gi"
    if resource == "cpu":
        return f"{value:g}"
    return f"{value:g}"
