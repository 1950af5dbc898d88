"""The package layers point one way: ekstrain (pure logic) <- stacks (config) <- assembly <- components <- infra <- cli.

Read from the source (ast), so a lazy import inside a function counts as much as a top-level one. Every layer
is imported under the one ``ekstrain`` namespace (``ekstrain.components``: ekstrain/components is a symlink to
components/), so a module's layer is ``ekstrain.<layer>`` for the five upper layers and ``ekstrain`` otherwise.
cli/ (the command line, ``ekstrain.cli``) is the top: it may import every layer and none imports it.

Modules import each other in no circle either, counting a type-only import (``if TYPE_CHECKING:``) and a lazy one:
a circle means neither module can be read, tested or moved without the other.
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest
from support import trees

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
ROOMS: tuple[str, ...] = (
    "agents",
    "contracts",
    "diff",
    "facts",
    "files",
    "layout",
    "pages",
    "payloads",
    "planner",
    "simulate",
    "tooling",
    "workloads",
)
"""The named rooms of the ground floor (ekstrain/<room>/); once set, no module sits loose in ekstrain/ but the
package's entry points. scripts/rooms_codemod.py sets it when it moves the modules in."""
KNOWN_CIRCLES: list[set[str]] = []
"""Circles allowed for now, so that no new one gets in; the list only shrinks (and is empty)."""


def parsed_nodes(path: pathlib.Path) -> tuple[ast.AST, ...]:
    """The file's syntax tree, walked (tests/support/trees.py: parsed once per process)."""
    return trees.nodes(trees.parsed(path))


def imports_of(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for node in parsed_nodes(path):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def layer_of(module: str) -> str:
    """``ekstrain.components.cluster`` -> components; ``ekstrain.facts.catalog`` -> ekstrain; ``pulumi.x`` -> pulumi."""
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
    assert layer_of("ekstrain.facts.catalog") == "ekstrain" and layer_of("ekstrain.infra.render") == "infra"


def module_name(path: pathlib.Path) -> str:
    """components/cluster.py -> ekstrain.components.cluster; ekstrain/planner/__init__.py -> ekstrain.planner."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] != "ekstrain":
        parts.insert(0, "ekstrain")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (``from a import b`` counts as a.b when b is a module)."""
    files = {module_name(p): p for package in OURS for p in sources(package)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for node in parsed_nodes(path):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    edges |= {sub} if sub in files else {node.module} & files.keys()
        graph[name] = edges - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_GIVEN_every_module_WHEN_its_imports_are_followed_THEN_none_comes_back_to_itself() -> None:
    found = circles(import_graph())
    assert [c for c in found if c not in KNOWN_CIRCLES] == []
    # a listed circle that is gone is struck from the list, so the list only shrinks
    assert [c for c in KNOWN_CIRCLES if c not in found] == []


def test_GIVEN_a_type_only_circle_WHEN_read_THEN_it_is_found(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check itself can fail: a circle closed by an `if TYPE_CHECKING:` import is still a circle.
    (tmp_path / "ekstrain").mkdir()
    (tmp_path / "ekstrain" / "a.py").write_text("from ekstrain import b\n")
    (tmp_path / "ekstrain" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ekstrain.a import X\n"
    )
    (tmp_path / "ekstrain" / "c.py").write_text("import ekstrain.a\n")
    for package in OURS[1:]:
        (tmp_path / package).mkdir()
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    graph = import_graph()
    assert graph == {"ekstrain.a": {"ekstrain.b"}, "ekstrain.b": {"ekstrain.a"}, "ekstrain.c": {"ekstrain.a"}}
    assert circles(graph) == [{"ekstrain.a", "ekstrain.b"}]


def test_GIVEN_the_ground_floor_WHEN_listed_THEN_no_module_sits_outside_a_room() -> None:
    loose = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "ekstrain").glob("*.py")
        if p.relative_to(ROOT).as_posix() not in ENTRY_POINTS and p.name != "__init__.py"
    )
    assert all((ROOT / "ekstrain" / room / "__init__.py").is_file() for room in ROOMS)
    if ROOMS:
        assert loose == []
