"""Check every recorded resource input against the pinned SDKs' own input types.

The mock engine accepts any input; the real providers reject unknown properties, missing
required ones and wrong types. The Python SDKs (pulumi-aws, pulumi-eks, pulumi-kubernetes,
pulumi-random) carry the provider schema as their ``*Args`` classes: each property getter has
its wire name (``@pulumi.getter(name="blockDeviceMappings")``) and a type annotation that names
the nested input type, a list/map, a scalar or an enum. This walks a recorded input tree
against those types, nested objects included.

Not checked: values the SDK types as ``Any`` (Helm values, Kubernetes ``spec`` of custom
resources: those are validated against the CRDs), unknowns and resource references.
"""

from __future__ import annotations

import collections.abc
import enum
import functools
import importlib
import inspect
import re
import sys
import types
import typing
from typing import Any

from pulumi import _types as ptypes

from ekstrain.infra import offline
from ekstrain.infra.verify import Check

SDKS = {"aws": "pulumi_aws", "eks": "pulumi_eks", "kubernetes": "pulumi_kubernetes", "random": "pulumi_random"}
_SCALARS: dict[type, tuple[type, ...]] = {str: (str,), bool: (bool,), int: (int,), float: (int, float)}


def args_class(type_token: str) -> type | None:
    """``aws:ec2/launchTemplate:LaunchTemplate`` -> ``pulumi_aws.ec2.LaunchTemplateArgs`` (None: no SDK type)."""
    pkg, _, rest = type_token.partition(":")
    module, _, name = rest.rpartition(":")
    sdk = SDKS.get(pkg)
    if sdk is None or not name:
        return None
    if pkg == "kubernetes":
        group, _, version = module.partition("/")
        if "." in group and not group.endswith(".k8s.io") and group != "helm.sh":
            # A custom resource's group (scheduling.volcano.sh) is not the built-in group of the same first label
            # (scheduling.k8s.io): the SDK has no type for it.
            return None
        sub = f"{group.split('.')[0]}.{version}" if version else group
        if group.split(".")[0] == "helm" and group.startswith("helm.sh"):
            sub = f"helm.{version}"
    else:
        sub = "" if module == "index" or module.startswith("index/") else module.split("/")[0]
    try:
        mod = importlib.import_module(f"{sdk}.{sub}" if sub else sdk)
    except ImportError:
        return None
    resource = getattr(mod, name, None)
    if not inspect.isclass(resource):
        return None
    # The Args class beside the resource class. Codegen names it <Name>InitArgs when a nested input type
    # already has the name <Name>Args (pulumi_aws.s3.BucketVersioningArgs is Bucket's `versioning` block).
    module_ns = sys.modules[resource.__module__]
    cls = getattr(module_ns, f"{name}InitArgs", None) or getattr(module_ns, f"{name}Args", None)
    return cls if inspect.isclass(cls) else None


@functools.cache
def properties(cls: type) -> dict[str, Any]:
    """Wire name -> raw type hint of every property of an input type."""
    return dict(ptypes._raw_return_hints(cls))  # noqa: SLF001 (the SDK's own resolver of its annotations)


@functools.cache
def required(cls: type) -> frozenset[str]:
    """Wire names the constructor requires (no default)."""
    names = {py: wire for py, wire, _ in ptypes._py_properties(cls)}  # noqa: SLF001
    params = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    return frozenset(
        names[p]
        for p, v in params.items()
        if p in names and v.default is inspect.Parameter.empty and v.kind is not v.VAR_KEYWORD
    )


def _alternatives(hint: Any) -> list[Any]:
    """The concrete types a hint admits: Input/Output/Awaitable/Optional unwrapped, unions flattened."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(hint):
            out += _alternatives(arg)
        return out
    if origin in (collections.abc.Awaitable, typing.Awaitable) or hint is type(None):
        return []
    if isinstance(hint, typing.ForwardRef) or (isinstance(hint, type) and hint.__name__ == "Output"):
        return []
    if origin is not None and getattr(origin, "__name__", "") == "Output":
        return _alternatives(typing.get_args(hint)[0])
    return [hint]


def _describe(hint: Any) -> str:
    alts = _alternatives(hint)
    names = []
    for a in alts:
        origin = typing.get_origin(a)
        if origin in (list, collections.abc.Sequence, typing.Sequence):
            names.append("list")
        elif origin in (dict, collections.abc.Mapping, typing.Mapping):
            names.append("map")
        elif isinstance(a, type):
            names.append(a.__name__.removesuffix("Args") + (" object" if ptypes.is_input_type(a) else ""))
        else:
            names.append(str(a))
    return " or ".join(dict.fromkeys(names)) or "?"


def _opaque(value: Any) -> bool:
    return value == offline.UNKNOWN or (isinstance(value, dict) and "$ref" in value)


def check_value(value: Any, hint: Any, path: str) -> list[str]:
    """Problems of ``value`` against a type hint; empty when some alternative accepts it."""
    if _opaque(value):
        return []
    alts = _alternatives(hint)
    if not alts or any(a is Any or a is object for a in alts):
        return []
    best: list[str] | None = None
    for alt in alts:
        found = _check_one(value, alt, path)
        if found is None:
            continue
        if not found:
            return []
        if best is None or len(found) < len(best):
            best = found
    return (
        best
        if best is not None
        else [f"{path}: expected {_describe(hint)}, got {type(value).__name__} {_short(value)}"]
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_one(value: Any, alt: Any, path: str) -> list[str] | None:
    """[] if ``value`` is an ``alt``; problems inside it if it has the right shape; None if the shape differs."""
    origin = typing.get_origin(alt)
    if origin in (list, collections.abc.Sequence, typing.Sequence):
        if not isinstance(value, list):
            return None
        (item,) = typing.get_args(alt) or (Any,)
        return [p for i, v in enumerate(value) for p in check_value(v, item, f"{path}[{i}]")]
    if origin in (dict, collections.abc.Mapping, typing.Mapping):
        if not isinstance(value, dict):
            return None
        args = typing.get_args(alt)
        item = args[1] if len(args) == 2 else Any
        return [p for k, v in value.items() for p in check_value(v, item, f"{path}.{k}")]
    if isinstance(alt, type) and issubclass(alt, enum.Enum):
        return [] if value in {m.value for m in alt} else None
    if isinstance(alt, type) and alt in _SCALARS:
        ok = isinstance(value, _SCALARS[alt]) and not (alt is not bool and isinstance(value, bool))
        if alt is int and isinstance(value, float) and value.is_integer():
            ok = True
        return [] if ok else None
    if isinstance(alt, type) and ptypes.is_input_type(alt):
        return check_object(value, alt, path) if isinstance(value, dict) else None
    if isinstance(alt, type) and alt.__name__ in ("Resource", "CustomResource", "ComponentResource"):
        return None
    if isinstance(alt, type) and any(b.__name__ == "Resource" for b in alt.__mro__):
        return None  # a resource object is serialised as a reference, handled by _opaque
    return []  # a type this walker does not model (Archive, Asset, ...): accept


def check_object(value: dict[str, Any], cls: type, path: str) -> list[str]:
    """Unknown keys, missing required keys and wrong types of one input object of type ``cls``."""
    props = properties(cls)
    out = []
    for key, v in value.items():
        where = f"{path}.{key}" if path else key
        if key not in props:
            close = _closest(key, props)
            out.append(
                f"{where}: unknown property of {cls.__name__.removesuffix('Args')}"
                + (f" (did you mean {close!r}?)" if close else "")
            )
        elif v is not None:
            out += check_value(v, props[key], where)
    for key in sorted(required(cls) - set(value)):
        out.append(f"{path + '.' if path else ''}{key}: required by {cls.__name__.removesuffix('Args')}, missing")
    return out


def _closest(key: str, props: dict[str, Any]) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(props), n=1, cutoff=0.75)
    return found[0] if found else None


# Inputs the engine or the SDK adds to the wire that are not Args properties.
_ENGINE_KEYS = {"__defaults", "__meta"}
_K8S_NAME = re.compile(r"^kubernetes:")


def check_recording(rec: offline.Recording) -> Check:
    """Every recorded resource with an SDK input type, against it."""
    check = Check("SDK input types: keys, required, types", what="resources")
    for r in rec.records:
        if r.type.startswith("pulumi:") or (r.synthetic and not r.custom):
            continue  # a remote component's own sub-components are the provider's, not SDK calls
        cls = args_class(r.type)
        if cls is None:
            continue
        check.checked += 1
        inputs = {k: v for k, v in r.inputs.items() if k not in _ENGINE_KEYS}
        if _K8S_NAME.match(r.type):
            inputs.pop("apiVersion", None), inputs.pop("kind", None)
        check.problems += [f"{r.type} {r.name}: {p}" for p in check_object(inputs, cls, "")]
    return check
