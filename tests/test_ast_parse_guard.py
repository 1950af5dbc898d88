"""The suite's ``ast.parse`` (tests/conftest.py) survives a finalizer that parses while a tree is being built, the
way a failed mock run's leftover asyncio Future logs a traceback (CPython 3.11's AST recursion count is per
interpreter: python/cpython#106905)."""

from __future__ import annotations

import ast
import gc
import pathlib


class _ParsesWhenCollected:
    def __init__(self) -> None:
        self.me = self  # a cycle: freed by the cyclic collector, in the middle of whatever allocates

    def __del__(self) -> None:
        ast.parse("x = (1 + 2)\n" * 20)


def test_a_parse_inside_a_finalizer_does_not_break_the_parse_it_interrupts():
    source = pathlib.Path(ast.__file__).read_text()
    thresholds = gc.get_threshold()
    gc.set_threshold(100, 10, 10)  # collect while the tree is built
    try:
        for _ in range(3):
            for _ in range(200):
                _ParsesWhenCollected()
            assert isinstance(ast.parse(source), ast.Module)
    finally:
        gc.set_threshold(*thresholds)
        gc.collect()
