"""One recorded resource registration, and the identity the engine diffs it by.

The engine matches old and new state by URN: ``urn:pulumi:<stack>::<project>::<type chain>::<name>``,
where the type chain is the parent's chain plus ``$`` and the type. Two stacks (or one stack before
and after an edit) are compared by the URN without the stack and project, called ``key`` here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Resource:
    """What one registration asked for (inputs as plain data: references are ``<ref URN>`` strings)."""

    urn: str
    type: str
    name: str
    parent: str = ""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    custom: bool = True
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    aliases: tuple[str, ...] = ()
    """Keys (see ``key``) this resource was known by before: the engine moves their state to it."""
    dependencies: tuple[str, ...] = ()
    ignore_changes: tuple[str, ...] = ()
    """Inputs the engine does not diff (``ignore_changes``): a change there is no change."""
    outputs: Mapping[str, Any] = field(default_factory=dict)
    """The physical identity others refer to (``id``, ``arn``): a replacement changes every input that holds it."""

    @property
    def key(self) -> str:
        return key_of(self.urn)

    def to_dict(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "deleteBeforeReplace": self.delete_before_replace,
            "aliases": list(self.aliases),
            "dependencies": list(self.dependencies),
            "ignoreChanges": list(self.ignore_changes),
            "outputs": dict(self.outputs),
            "inputs": dict(self.inputs),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Resource:
        """``aliases`` may hold keys or the SDK's alias messages (``{"urn"}``/``{"spec"}``), resolved here."""
        return cls(
            urn=d["urn"],
            type=d["type"],
            name=d["name"],
            parent=d.get("parent", ""),
            inputs=d.get("inputs") or {},
            custom=bool(d.get("custom", True)),
            protect=bool(d.get("protect", False)),
            retain_on_delete=bool(d.get("retainOnDelete", False)),
            delete_before_replace=bool(d.get("deleteBeforeReplace", False)),
            aliases=tuple(
                k
                for a in d.get("aliases") or ()
                if (k := a if isinstance(a, str) else alias_key(a, d["type"], d.get("parent", ""))) is not None
            ),
            dependencies=tuple(d.get("dependencies") or ()),
            ignore_changes=tuple(d.get("ignoreChanges") or ()),
            outputs=d.get("outputs") or {},
        )


def key_of(urn: str) -> str:
    """``urn:pulumi:prod::ekstrain::a$b::name`` -> ``a$b::name`` (same resource in any stack of the project)."""
    parts = urn.split("::", 2)
    return parts[2] if len(parts) == 3 else urn


def type_chain(urn: str) -> str:
    """The qualified type of a URN (``ekstrain:network:Network$aws:ec2/subnet:Subnet``); the stack's is empty."""
    chain = key_of(urn).split("::", 1)[0]
    # The engine leaves the stack out of its children's chains (the SDK's parent URN may carry it).
    return "" if chain == STACK_TYPE else chain.removeprefix(STACK_TYPE + "$")


def alias_key(alias: Mapping[str, Any], type_: str, parent: str) -> str | None:
    """The key an ``aliases`` entry (as the SDK sends it: ``{"urn"}`` or ``{"spec"}``) names."""
    if "urn" in alias:
        return key_of(str(alias["urn"]))
    spec = alias.get("spec")
    if not isinstance(spec, Mapping):
        return None
    name = spec.get("name")
    if not name:
        return None
    own_type = spec.get("type") or type_
    parent_chain = "" if spec.get("noParent") else type_chain(str(spec.get("parentUrn") or parent))
    return f"{parent_chain + '$' if parent_chain else ''}{own_type}::{name}"


def index(resources: Sequence[Resource]) -> dict[str, Resource]:
    """By key; a duplicate key is a program error the engine refuses too."""
    out: dict[str, Resource] = {}
    for r in resources:
        if r.key in out:
            raise ValueError(f"two resources share the URN {r.urn}")
        out[r.key] = r
    return out
