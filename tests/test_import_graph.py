"""The package layers point one way: ekstrain (pure logic) <- stacks (config) <- assembly <- components <- infra <- cli.

Read from the source (ast), so a lazy import inside a function counts as much as a top-level one. Every layer
is imported under the one ``ekstrain`` namespace (``ekstrain.components``: ekstrain/components is a symlink to
components/), so a module's layer is ``ekstrain.<layer>`` for the five upper layers and ``ekstrain`` otherwise.
cli/ (the command line, ``ekstrain.cli``) is the top: it may import every layer and none imports it.
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
OURS = ("ekstrain", "stacks", "assembly", "components", "infra", "cli")
EXTERNAL_BANNED = {"ekstrain": {"pulumi", "pulumi_aws", "pulumi_eks", "pulumi_kubernetes"}}
ALLOWED = {
    "ekstrain": {"ekstrain"},
    "stacks": {"ekstrain", "stacks"},
    "assembly": {"ekstrain", "stacks", "assembly"},
    "components": {"ekstrain", "assembly", "components"},
    "infra": {"ekstrain", "stacks", "assembly", "components", "infra"},
    "cli": set(OURS),
}
# `python -m ekstrain` has to start the whole CLI, which lives in the top layer (cli/); nothing imports this file.
# ekstrain/testing.py is the public door to the offline engine for users' own tests (docs/components.md): it
# loads ekstrain.infra.offline lazily and nothing in the package imports it.
ENTRY_POINTS = {"ekstrain/__main__.py", "ekstrain/testing.py"}


def imports_of(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def layer_of(module: str) -> str:
    """``ekstrain.components.cluster`` -> components; ``ekstrain.catalog`` -> ekstrain; ``pulumi.x`` -> pulumi."""
    parts = module.split(".")
    if parts[0] == "ekstrain" and len(parts) > 1 and parts[1] in OURS[1:]:
        return parts[1]
    return parts[0]


def sources(package: str) -> list[pathlib.Path]:
    """The package's own files: ekstrain/ without the symlinked layers."""
    linked = {ROOT / "ekstrain" / name for name in OURS[1:]}
    return sorted(p for p in (ROOT / package).rglob("*.py") if not any(d in linked for d in p.parents))


def violations(package: str) -> list[str]:
    bad = []
    for path in sources(package):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ENTRY_POINTS:
            continue
        for line, module in imports_of(path):
            top = layer_of(module)
            if top in OURS[1:] and module.split(".")[0] != "ekstrain":
                bad.append(f"{rel}:{line} imports {module} (import it as ekstrain.{module})")
            elif (top in OURS and top not in ALLOWED[package]) or top in EXTERNAL_BANNED.get(package, set()):
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


def test_GIVEN_the_layers_WHEN_imported_THEN_only_through_the_ekstrain_namespace(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A top-level `components` import would collide with a user's own components/ package once installed.
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "m.py").write_text("from components.cluster import X\nfrom ekstrain.infra import render\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("stacks") == [
        "stacks/m.py:1 imports components.cluster (import it as ekstrain.components.cluster)",
        "stacks/m.py:2 imports ekstrain.infra",
    ]
    assert layer_of("ekstrain.catalog") == "ekstrain" and layer_of("ekstrain.infra.render") == "infra"
