"""The program's source files parsed once per test process, for the tests that read every module's syntax tree.

The import-layer and import-circle checks, the deserialiser scan and the make-hint scan each parsed all ~290
modules again (about 1 s of CPU a pass). A tree is keyed by the file's text, so a file changed (or written by a
test) is parsed afresh. Readers only walk the trees: none may change one.
"""

from __future__ import annotations

import ast
import functools
import pathlib

_TREES: dict[str, ast.Module] = {}


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename)``, once per distinct text."""
    tree = _TREES.get(text)
    if tree is None:
        tree = _TREES[text] = ast.parse(text, filename)
    return tree


def parsed(path: pathlib.Path) -> ast.Module:
    return parse(path.read_text(), str(path))


@functools.cache
def nodes(tree: ast.AST) -> tuple[ast.AST, ...]:
    """Every node of ``tree`` in ``ast.walk``'s order (a tree hashes by identity)."""
    return tuple(ast.walk(tree))
