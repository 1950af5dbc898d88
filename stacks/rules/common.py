"""What every section's keys are written with.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.stacks.models.partitions import PartitionConfig


def _p(index: int, part: PartitionConfig, field: str = "") -> str:
    return f"ekstrain:partitions[{index}] ({part.name})" + (f".{field}" if field else "")
