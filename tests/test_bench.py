"""`make bench`'s inputs stay valid stacks (a bench that exits 2 measures nothing)."""

from __future__ import annotations

import pathlib

import pytest

from ekstrain.stacks.loader import load_flat, read_stack_file
from scripts.bench import synthetic_stack


@pytest.mark.parametrize("partitions", [8, 32])
def test_synthetic_stack_is_a_valid_stack(tmp_path: pathlib.Path, partitions: int) -> None:
    # GIVEN the bench's synthetic stack, derived from prod with its partitions replaced
    path = synthetic_stack(partitions, tmp_path)
    # WHEN loaded as the render loads it THEN it is valid (no prod-only partition names left behind)
    flat, _ = read_stack_file(path)
    cfg, _ = load_flat(flat, path.name)
    assert [p.name for p in cfg.partitions] == [f"part-{i:02d}" for i in range(partitions)]
