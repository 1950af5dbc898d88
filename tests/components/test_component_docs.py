"""docs/components.md documents every component argument with its default and every output, and is generated
from the source (scripts/component_docs.py), so it cannot drift from the args classes."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pathlib
import re

import pytest

from scripts import component_docs

REPO = pathlib.Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "components.md").read_text()


def sections() -> dict[str, str]:
    """``### Name`` heading -> its text up to the next heading."""
    parts = re.split(r"^### ", DOC, flags=re.M)[1:]
    return {p.split("\n", 1)[0].split(" ")[0]: p for p in parts}


def documented_classes() -> list[tuple[str, type]]:
    out = []
    for path in sorted((REPO / "components").glob("*.py")):
        module = importlib.import_module(f"ekstrain.components.{path.stem}")
        for node in ast.parse(path.read_text()).body:
            cls = getattr(module, getattr(node, "name", ""), None)
            if isinstance(node, ast.ClassDef) and dataclasses.is_dataclass(cls) and isinstance(cls, type):
                out.append((path.stem, cls))
    for module_name, names in component_docs.EXTRA_ARGS.items():
        module = importlib.import_module(module_name)
        out += [(module_name, getattr(module, n)) for n in names]
    return out


ARG_CLASSES = documented_classes()


def test_the_docs_are_generated_from_the_source() -> None:
    assert component_docs.render() == DOC, "docs/components.md is stale: run python -m scripts.component_docs"


def test_every_component_args_class_is_documented() -> None:
    names = {cls.__name__ for _, cls in ARG_CLASSES}
    assert {"NetworkArgs", "ClusterArgs", "PartitionArgs", "HelperPoolArgs", "KarpenterArgs", "PartitionSpec"} <= names
    assert len([n for n in names if n.endswith("Args")]) == 23  # + HealthGateArgs, CheckpointRotationArgs


@pytest.mark.parametrize(("module", "cls"), ARG_CLASSES, ids=[c.__name__ for _, c in ARG_CLASSES])
def test_every_argument_appears_with_its_default_and_a_description(module: str, cls: type) -> None:
    section = sections()[cls.__name__]
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        row = re.search(rf"^\| `{f.name}` \| `[^\n]*` \| `([^`]+)` \| (.+) \|$", section, flags=re.M)
        assert row, f"{cls.__name__}.{f.name} is not in docs/components.md"
        default, text = row.groups()
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        assert (default == "required") == required, (cls.__name__, f.name, default)
        assert text.strip() not in ("", "-"), f"{cls.__name__}.{f.name}: no description"
        assert ("Required" in text) if required else ("Default:" in text), (
            f"{cls.__name__}.{f.name}: say Required, or @default <value> in its docstring"
        )


def test_every_component_output_is_documented() -> None:
    for path in sorted((REPO / "components").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("ComponentResource") for b in node.bases):
                section = sections()[node.name]
                docs = component_docs.attribute_docs(node)
                for st in node.body:
                    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                        assert st.target.id in docs, f"{node.name}.{st.target.id}: no docstring"
                        assert f"| `{st.target.id}` |" in section
