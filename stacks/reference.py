"""Generate docs/configuration.md from the config models (one source of truth for keys and defaults).

python -m ekstrain.cli.reference configuration > docs/configuration.md      (tests fail when it is stale)
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ekstrain.stacks import keys
from ekstrain.stacks.models import StackConfig


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(repr(a).replace("'", '"') for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    if origin in (list, tuple):
        return f"list of {_type_name(typing.get_args(annotation)[0])}"
    if origin is dict:
        return "map"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        parts = [a for a in typing.get_args(annotation) if a is not type(None)]
        return " or ".join(_type_name(a) for a in parts) + (
            " or null" if len(parts) < len(typing.get_args(annotation)) else ""
        )
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default is not PydanticUndefined:
        return f"`{json.dumps(field.default)}`"
    if field.default_factory is not None:
        value = field.default_factory()
        return "see below" if isinstance(value, BaseModel) else f"`{json.dumps(value)}`"
    return "**required**"


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _rows(model: type[BaseModel], prefix: str, out: list[str], nested: list[tuple[str, type[BaseModel]]]) -> None:
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        doc = " ".join((field.description or "").split())
        out.append(f"| `{key}` | {_type_name(field.annotation)} | {_default(field)} | {doc} |")
        sub = _model_of(field.annotation)
        if sub is not None:
            nested.append((key + _nested_prefix(field.annotation), sub))


def _nested_prefix(annotation: Any) -> str:
    """How keys below a field are written: ``[].`` for a list of objects, ``.<name>.`` for a map of them."""
    origin = typing.get_origin(annotation)
    return "[]." if origin is list else ".<name>." if origin is dict else "."


def render() -> str:
    lines = [
        "# Stack configuration reference",
        "",
        "Generated from `stacks/models/` by `python -m ekstrain.cli.reference configuration`; do not edit by hand.",
        "Keys go under `config:` in `Pulumi.<stack>.yaml` (camelCase; unknown keys are errors).",
        "",
    ]
    for name, field in StackConfig.model_fields.items():
        section = keys.config_key(field.alias or name)
        lines += [
            f"## `{section}`",
            "",
            " ".join((field.description or "").split()),
            "",
            "| key | type | default | meaning |",
            "|---|---|---|---|",
        ]
        rows: list[str] = []
        sub = _model_of(field.annotation)
        if sub is None:
            rows.append(f"| `{section}` | {_type_name(field.annotation)} | {_default(field)} | |")
        else:
            nested: list[tuple[str, type[BaseModel]]] = []
            _rows(sub, _nested_prefix(field.annotation).removeprefix("."), rows, nested)
            while nested:
                prefix, model = nested.pop(0)
                _rows(model, prefix, rows, nested)
        lines += rows + [""]
    return "\n".join(lines)
