"""The package layers point one way: ekstrain (pure logic) <- stacks (config) <- assembly <- components <- infra.

Read from the source (ast), so a lazy import inside a function counts as much as a top-level one.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
OURS = ("ekstrain", "stacks", "assembly", "components", "infra")
EXTERNAL_BANNED = {"ekstrain": {"pulumi", "pulumi_aws", "pulumi_eks", "pulumi_kubernetes"}}
ALLOWED = {
    "ekstrain": {"ekstrain"},
    "stacks": {"ekstrain", "stacks"},
    "assembly": {"ekstrain", "stacks", "assembly"},
    "components": {"ekstrain", "assembly", "components"},
    "infra": set(OURS),
}
# `python -m ekstrain` has to start the whole CLI, which lives in the top layer; nothing imports this file.
ENTRY_POINTS = {"ekstrain/__main__.py"}


def imports_of(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def violations(package: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ENTRY_POINTS:
            continue
        for line, module in imports_of(path):
            top = module.split(".")[0]
            if (top in OURS and top not in ALLOWED[package]) or top in EXTERNAL_BANNED.get(package, set()):
                bad.append(f"{rel}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("package", OURS)
def test_GIVEN_a_layer_WHEN_its_imports_are_read_THEN_none_points_up(package: str) -> None:
    assert violations(package) == []


def test_GIVEN_an_upward_import_WHEN_read_THEN_it_is_reported(tmp_path: pathlib.Path) -> None:
    # The check itself can fail: a module with a lazy upward import is caught.
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from stacks.models import StackConfig\n    import pulumi\n")
    assert imports_of(mod) == [(2, "stacks.models"), (3, "pulumi")]
