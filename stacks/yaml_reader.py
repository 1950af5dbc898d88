"""Read a ``Pulumi.<stack>.yaml`` defensively: anything that is not a plain stack file is a ConfigError.

PyYAML's ``safe_load`` alone accepts duplicate keys (last wins), non-string keys, ``.inf``/``.nan``,
dates and binary values, recursion-deep nesting and alias "billion laughs" documents (it shares the
aliased objects, but every later walk over the result expands them). Here the event stream is checked
for depth and size first, the composed node graph for its expanded size (before any Python object is
built), and the constructed document for plain JSON types only.
"""

from __future__ import annotations

import copy
import hashlib
import math
import pathlib
from typing import Any

import yaml

from ekstrain.files import filememo, inputs_guard, yaml12
from ekstrain.stacks.errors import ConfigError, ConfigIssue

MAX_BYTES = 1 << 20
"""A stack file is a few KiB; 1 MiB is generous and bounds the parse time."""
MAX_DEPTH = 32
"""The deepest real key is about six levels below ``config``."""
MAX_NODES = 10_000
"""Scalars + collections after alias expansion: real stack files have a few hundred."""
MAX_INT = 2**63 - 1


class _Refused(Exception):
    def __init__(self, where: str, problem: str, fix: str):
        super().__init__(problem)
        self.issue = (where, problem, fix)


def _line(node_or_mark: Any) -> str:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return f"line {mark.line + 1}" if mark is not None else "?"


class _Loader(yaml12.Loader):
    """YAML 1.2 as Pulumi reads it (:mod:`ekstrain.files.yaml12`); duplicate keys refused also where the scalar
    texts differ but the keys are equal."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                raise _Refused(
                    _line(key_node), f"a mapping key is a {type(key).__name__}", "use plain text keys"
                ) from None
            if key in seen:
                raise _Refused(
                    _line(key_node),
                    f"key {key!r} appears twice in one mapping (also at {seen[key]})",
                    "keep one of them; YAML does not merge duplicate keys",
                )
            seen[key] = _line(key_node)
        return super().construct_mapping(node, deep=deep)


def _check_events(text: str) -> None:
    """Depth and event count from the (iterative) parser, before the recursive composer runs."""
    depth = 0
    for count, event in enumerate(yaml.parse(text, Loader=yaml12.Loader), 1):
        if count > MAX_NODES:
            raise _Refused("document", f"has more than {MAX_NODES} YAML nodes", "a stack file is a few KiB of YAML")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise _Refused(
                    _line(event),
                    f"nests deeper than {MAX_DEPTH} levels",
                    "flatten it; stack settings are at most a few levels deep",
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _check_expansion(root: yaml.Node | None) -> None:
    """Expanded size and depth of the node graph (aliases counted every time they are used), no copies made."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _Refused(
                _line(node),
                "an alias refers to the collection that contains it",
                "write the value out instead of a recursive alias",
            )
        if depth > MAX_DEPTH:
            raise _Refused(
                _line(node),
                f"nests deeper than {MAX_DEPTH} levels (through aliases)",
                "flatten it; stack settings are at most a few levels deep",
            )
        total = 1
        active.add(key)
        if isinstance(node, yaml.SequenceNode):
            for child in node.value:
                total += size(child, depth + 1)
                if total > MAX_NODES:
                    break
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                total += size(k, depth + 1) + size(v, depth + 1)
                if total > MAX_NODES:
                    break
        active.discard(key)
        if total > MAX_NODES:
            raise _Refused(
                _line(node),
                f"expands (through aliases) to more than {MAX_NODES} values",
                "write the values out; aliases that multiply are refused",
            )
        sizes[key] = total
        return total

    if root is not None:
        size(root, 0)


def _check_values(value: Any, where: str, depth: int = 0) -> None:
    """Only what JSON can carry (the engine hands config to the program as JSON), at most MAX_DEPTH deep."""
    if depth > MAX_DEPTH:
        raise _Refused(
            where, f"nests deeper than {MAX_DEPTH} levels", "flatten it; stack settings are at most a few levels deep"
        )
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                kind = type(k).__name__
                raise _Refused(
                    f"{where}.{k!r}" if where else repr(k),
                    f"key {k!r} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not text",
                    f'quote it: "{k}" (YAML reads yes/no/on/off as booleans)',
                )
            _check_values(v, f"{where}.{k}" if where else k, depth + 1)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, bool) or value is None or isinstance(value, str):
        return
    elif isinstance(value, int):
        if abs(value) > MAX_INT:
            raise _Refused(where, f"{value} is out of range", "use a number below 2^63")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Refused(where, f"{value} is not a finite number", "use a finite number")
    else:
        raise _Refused(
            where,
            f"is a YAML {type(value).__name__} ({str(value)[:40]!r}), not text, a number or a list/mapping",
            "quote it to make it text",
        )


def check_value(value: Any, key: str) -> ConfigIssue | None:
    """The same checks for a config value the engine hands over (already decoded from JSON)."""
    try:
        _check_values(value, key)
    except _Refused as exc:
        return ConfigIssue(*exc.issue)
    return None


def load_document(path: pathlib.Path) -> dict[str, Any]:
    """The stack file as plain dict/list/str/int/float/bool/None; ConfigError for anything else."""
    return load_stack_document(path)[0]


def _config_texts(root: yaml.Node | None) -> dict[str, str]:
    """The text of each scalar directly under ``config:``, as written: the Pulumi CLI decodes a top-level
    value into a Go string first (pulumi sdk/go/common/resource/config/value.go ``unmarshalValue``), and
    yaml.v3 keeps a scalar's text when the target is a string (decode.go ``scalar``), so ``True`` reaches
    the program as "True" and ``0x10`` as "0x10". A null falls through to the object path ("null")."""
    out: dict[str, str] = {}
    if not isinstance(root, yaml.MappingNode):
        return out
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "config" and isinstance(value, yaml.MappingNode):
            for k, v in value.value:
                if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode) and v.tag != yaml12.NULL_TAG:
                    out[k.value] = v.value
    return out


PARSED_KEEP = 32
"""Stack files kept parsed by :func:`load_stack_document` (the latest read), by their bytes' sha256."""
_parsed: filememo.Recent[tuple[dict[str, Any], dict[str, str]]] = filememo.Recent(PARSED_KEEP)


def load_stack_document(path: pathlib.Path) -> tuple[dict[str, Any], dict[str, str]]:
    """:func:`load_document` and the written text of each top-level config scalar (:func:`_config_texts`).

    A file whose bytes this process has read and accepted before is not parsed again (the checked YAML 1.2 reader
    is pure Python, ~15 ms for prod's file; a process that runs the CLI many times, or renders a stack again, reads
    the same bytes): each caller gets its own copy. A refused file is read again each time."""
    name = str(path)

    def fail(where: str, problem: str, fix: str) -> ConfigError:
        return ConfigError([ConfigIssue(f"{name}: {where}" if where else name, problem, fix)], name)

    try:
        if path.is_dir():
            raise fail("", "is a directory, not a stack file", "pass the Pulumi.<stack>.yaml file inside it")
        data = inputs_guard.read_bytes(path, MAX_BYTES)
    except ConfigError:
        raise
    except inputs_guard.TooLarge:
        raise fail("", f"is larger than {MAX_BYTES // 1024} KiB", "a stack file is a few KiB of YAML") from None
    except inputs_guard.NotARegularFile as exc:  # a FIFO would block the read forever
        raise fail("", str(exc.strerror), "pass a regular Pulumi.<stack>.yaml file as --stack-file") from None
    except FileNotFoundError:
        raise fail(
            "", "does not exist", "run from the directory holding Pulumi.<stack>.yaml or pass --stack-file"
        ) from None
    except OSError as exc:
        raise fail("", f"cannot be read ({exc.strerror or exc})", "check the path and its permissions") from None
    if len(data) > MAX_BYTES:
        raise fail("", f"is larger than {MAX_BYTES // 1024} KiB", "a stack file is a few KiB of YAML")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise fail(
            f"line {line}", f"is not UTF-8 text (byte {data[exc.start]:#04x})", "save the file as UTF-8"
        ) from None
    key = hashlib.sha256(data).hexdigest()
    kept = _parsed.get(key)
    if kept is not None:
        return copy.deepcopy(kept)  # a fresh copy for each caller
    try:
        _check_events(text)
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
            _check_expansion(root)
            texts = _config_texts(root)
            doc = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
        if doc is None:
            raise _Refused("", "is empty", "start from Pulumi.dev.yaml")
        if not isinstance(doc, dict):
            raise _Refused(
                "",
                f"its top level is a {type(doc).__name__}, not a mapping",
                "a stack file is a mapping with a config: key (see Pulumi.dev.yaml)",
            )
        _check_values(doc, "")
    except _Refused as exc:
        raise fail(*exc.issue) from None
    except yaml12.Refusal as exc:
        raise fail(f"{exc.path} (line {exc.line})", exc.problem, exc.fix) from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise fail("", f"is not valid YAML: {problem[:300]}", "fix the YAML syntax") from None
    except (RecursionError, ValueError, OverflowError) as exc:
        # ValueError: e.g. an integer with more digits than Python converts; RecursionError: defensive.
        raise fail(
            "", f"cannot be read as a stack file ({type(exc).__name__}: {str(exc)[:200]})", "simplify the YAML"
        ) from None
    _parsed.put(key, copy.deepcopy((doc, texts)))
    return doc, texts
