"""YAML read as the Pulumi CLI reads a stack file: YAML 1.2 as gopkg.in/yaml.v3 resolves it.

The Pulumi CLI parses ``Pulumi.<stack>.yaml`` with gopkg.in/yaml.v3 (pulumi sdk/go/common/resource/config
value.go ``unmarshalValue``: a top-level value is first decoded into a Go string, which keeps the scalar's
text as written; anything else into ``interface{}``, resolved by yaml.v3 resolve.go, then JSON-encoded).
PyYAML alone reads YAML 1.1, which differs; this loader is PyYAML with yaml.v3's resolution
(go-yaml/yaml v3 branch, f6f7691 2022-05-27, resolve.go ``resolve``/``resolveMapList``):

- booleans are only ``true True TRUE false False FALSE``; null ``~ null Null NULL`` and the empty scalar;
- integers as Go's ``strconv.ParseInt(s, 0, 64)``: decimal, ``0x``, ``0o``, ``0b``; floats as its
  ``yamlStyleFloat`` (``1e3`` is a float, as in YAML 1.2; PyYAML reads it as text);
- ``yes/no/on/off`` are text and ``1:30`` is text (base 60 "purposefully unsupported").

Scalars whose readings differ between YAML 1.1, the YAML 1.2 core schema and yaml.v3 are refused with
the fix instead of guessed (:func:`ambiguity`): ``010`` (yaml.v3 and 1.1: octal 8; YAML 1.2 core:
decimal 10), ``1_6`` (yaml.v3 and 1.1: 16; YAML 1.2 core and Pulumi's top-level string: the text
"1_6"), ``yes``/``on``/``y`` (1.1: booleans; 1.2: text) and ``1:30`` (1.1: 90; 1.2: text).

Tabs: yaml.v3's scanner (scannerc.go ``yaml_parser_scan_to_next_token``) skips a tab as separation
space in flow context and wherever a simple key cannot start (after ``key:``, after a value, before a
comment), and inside plain scalars (``yaml_parser_scan_plain_scalar``); a tab as indentation stays an
error. PyYAML refuses every tab outside quotes; :class:`Loader` follows yaml.v3.

Duplicate mapping keys are refused (YAML 1.2 section 3.2.1.1: keys are unique; yaml.v3 decoding into a
map fails with "mapping key ... already defined").
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

BOOL_TAG = "tag:yaml.org,2002:bool"
NULL_TAG = "tag:yaml.org,2002:null"
INT_TAG = "tag:yaml.org,2002:int"
FLOAT_TAG = "tag:yaml.org,2002:float"
STR_TAG = "tag:yaml.org,2002:str"

_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
# strconv.ParseInt(s, 0, 64) as yaml.v3 calls it: decimal, a leading 0 for octal (01-07 and 00: the same
# in every reading), 0x hex and 0o octal. Forms that the YAML 1.2 core schema reads otherwise (010, signed or
# upper-case prefixes, 0b, underscores) are refused before resolution: see ambiguity().
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*|0[0-7]+)$|^0x[0-9a-fA-F]+$|^0o[0-7]+$")
# yaml.v3 resolve.go yamlStyleFloat (08 and 1e3 are floats there, as in YAML 1.2), plus the .inf/.nan
# spellings of its resolveMapList.
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_BOOL_11 = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
"""YAML 1.1 booleans (yaml.org/type/bool.html) that YAML 1.2 and yaml.v3 read as text."""
_OCTAL_11 = re.compile(r"^([-+]?)0([0-7]+)$")
_PREFIXED = re.compile(r"^([-+]?)0([xXoObB])([0-9a-fA-F]+)$")
"""Go's base prefixes: yaml.v3 reads +0x10, 0X10, 0O7 and 0b11 as integers; the YAML 1.2 core schema
(yaml.org/spec/1.2.2 10.3.2) only unsigned lower-case 0x and 0o, the rest is text."""
_SEXAGESIMAL = re.compile(r"^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$|^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*$")
"""YAML 1.1 base-60 numbers (yaml.org/type/int.html, float.html; PyYAML's resolver); text in YAML 1.2 and
yaml.v3."""


class Refusal(Exception):
    """A document Pulumi would read differently, or not at all: the key path, its line, problem and fix."""

    def __init__(self, path: str, line: int, problem: str, fix: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.line, self.problem, self.fix = path, line, problem, fix


def ambiguity(text: str) -> tuple[str, str] | None:
    """(problem, fix) for a plain scalar that YAML 1.1, the YAML 1.2 core schema and yaml.v3 read differently.

    Not refused: a scalar that YAML 1.2 and yaml.v3 read alike and YAML 1.1 reads as text (``0o10``, ``1e3``,
    ``08``): Pulumi and the spec agree, and the text was never meant."""
    if _BOOL_11.match(text):
        return (
            f"{text} is a boolean in YAML 1.1 but the text {text!r} in YAML 1.2 (Pulumi's gopkg.in/yaml.v3)",
            f'write true or false for a boolean, or "{text}" for text',
        )
    m = _OCTAL_11.match(text)
    if m and int(m.group(2), 8) != int(m.group(2)):
        sign, digits = m.groups()
        return (
            f"{text} has a leading zero: gopkg.in/yaml.v3 (Pulumi) and YAML 1.1 read it as octal "
            f"{sign}{int(digits, 8)}, the YAML 1.2 core schema as decimal {sign}{int(digits)}",
            f'write {sign}{int(digits)} for decimal, 0o{digits} for octal (unsigned), or "{text}" for text',
        )
    m = _PREFIXED.match(text)
    if m and (m.group(1) or m.group(2) not in "xo"):
        sign, base, digits = m.groups()
        try:
            value = int(f"{sign}0{base.lower()}{digits}", 0)
        except ValueError:
            return None  # not a Go integer either (0b12): text everywhere
        return (
            f"{text} is the integer {value} in gopkg.in/yaml.v3 (Pulumi) but text in the YAML 1.2 core schema",
            f'write {value}, or "{text}" for text',
        )
    if "_" in text and text[:1] in "0123456789+-":
        plain = text.replace("_", "")
        if _go_int(plain) is not None or (_FLOAT.match(plain) and math.isfinite(float(plain))):
            return (
                f"{text} is the number {plain} in gopkg.in/yaml.v3 (Pulumi drops the underscores in a nested "
                "value) but text in YAML 1.2 and in a top-level Pulumi setting",
                f'write {plain} for the number, or "{text}" for text',
            )
    if _INT.match(text) and not -(2**63) <= _int_value(text) < 2**64:
        return (
            f"{text} is out of range: gopkg.in/yaml.v3 (Pulumi) reads no integer beyond 64 bits",
            "use a number from -2^63 to 2^64-1",
        )
    if (
        _FLOAT.match(text)
        and "." + text.lstrip("+-.")[:3].lower() not in (".inf", ".nan")
        and abs(float(text)) == float("inf")
    ):
        return (
            f"{text} is beyond the float range: gopkg.in/yaml.v3 (Pulumi) reads it as text, YAML 1.2 as infinity",
            "use a finite number",
        )
    if _SEXAGESIMAL.match(text):
        return (
            f"{text} is a base-60 number in YAML 1.1 but the text {text!r} in YAML 1.2 (Pulumi's gopkg.in/yaml.v3)",
            f'write the number in one unit (e.g. minutes), or "{text}" for text',
        )
    return None


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), else ParseUint (resolve.go tries both): the value or None."""
    sign, body = ("-", text[1:]) if text[:1] == "-" else ("", text[1:] if text[:1] == "+" else text)
    base, digits = 10, body
    if body[:2].lower() in ("0x", "0o", "0b"):
        base, digits = {"x": 16, "o": 8, "b": 2}[body[1].lower()], body[2:]
    elif body[:1] == "0" and len(body) > 1:
        base, digits = 8, body[1:]
    if not digits or any(c not in "0123456789abcdef"[:base] for c in digits.lower()):
        return None
    value = int(sign + digits, base)
    return value if -(2**63) <= value < 2**64 else None


def _path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part is not None:
            out += f".{part}" if out else str(part)
    return out


class Loader(yaml.SafeLoader):
    """PyYAML's safe loader with yaml.v3's scalar resolution, tab rules, and refusals (module doc)."""

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._parts: list[Any] = []

    # -- tabs, as yaml.v3's scanner treats them ----------------------------------------------------
    def scan_to_next_token(self) -> None:
        if self.index == 0 and self.peek() == "\ufeff":
            self.forward()
        while True:
            while self.peek() == " " or (self.peek() == "\t" and (self.flow_level or not self.allow_simple_key)):
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0\r\n\x85\u2028\u2029":
                    self.forward()
            if self.scan_line_break():
                if not self.flow_level:
                    self.allow_simple_key = True
            else:
                return

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> Any:
        # Blanks between the words of a plain scalar may be tabs (yaml.v3 "Consume a space or a tab").
        length = 0
        while self.peek(length) in " \t":
            length += 1
        if length and self.peek(length) not in "\r\n\x85\u2028\u2029":
            whitespaces = self.prefix(length)
            self.forward(length)
            return [whitespaces]
        return super().scan_plain_spaces(indent, start_mark)

    # -- key paths, ambiguous scalars, duplicate keys --------------------------------------------
    def compose_node(self, parent: Any, index: Any) -> Any:
        if isinstance(index, yaml.ScalarNode):
            part: Any = index.value
        elif isinstance(index, yaml.Node):
            part = "<key>"
        else:
            part = index if isinstance(index, int) else None
        self._parts.append(part)
        try:
            return super().compose_node(parent, index)
        finally:
            self._parts.pop()

    def compose_scalar_node(self, anchor: Any) -> Any:
        event = self.peek_event()
        node = super().compose_scalar_node(anchor)
        if event.tag is None and event.style is None:  # plain and untagged: resolved implicitly
            found = ambiguity(event.value)
            if found:
                raise Refusal(_path(self._parts) or "document", event.start_mark.line + 1, *found)
        return node

    def compose_mapping_node(self, anchor: Any) -> Any:
        node = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], int] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
                continue
            line = key.start_mark.line + 1
            ident = (key.tag, key.value)
            if ident in seen:
                raise Refusal(
                    _path([*self._parts, key.value]),
                    line,
                    f"key {key.value!r} appears twice in one mapping (also at line {seen[ident]})",
                    "keep one of them: YAML 1.2 keys are unique and Pulumi refuses the file",
                )
            seen[ident] = line
        return node


for _tag, _regexp, _first in (
    (BOOL_TAG, _BOOL, "tTfF"),
    (INT_TAG, _INT, "-+0123456789"),
    (FLOAT_TAG, _FLOAT, "-+0123456789."),
    (NULL_TAG, _NULL, ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), "<"),
    # Dates stay dates, for the readers to refuse: yaml.v3 turns them into RFC 3339 time stamps, not the text.
    (
        "tag:yaml.org,2002:timestamp",
        re.compile(
            r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?"
            r"(?:[Tt]|[ \t]+)?(?:[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?"
            r"(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)?)$"
        ),
        "0123456789",
    ),
):
    Loader.add_implicit_resolver(_tag, _regexp, list(_first))


def _construct_int(loader: Loader, node: yaml.ScalarNode) -> int:
    return _int_value(str(loader.construct_scalar(node)))


def _int_value(text: str) -> int:
    """An _INT scalar's value as Go's strconv.ParseInt(s, 0, 64) reads it."""
    sign, body = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    if len(body) > 1 and body[0] == "0" and body[1].isdigit():
        return sign * int(body, 8)  # Go's ParseInt base 0: a leading 0 is octal (only 00-07 get here)
    return sign * int(body, 0)


def _construct_float(loader: Loader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if text.endswith(".inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    if text == ".nan":
        return float("nan")
    return float(text)


def _construct_bool(loader: Loader, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)).lower() == "true"


Loader.add_constructor(INT_TAG, _construct_int)
Loader.add_constructor(FLOAT_TAG, _construct_float)
Loader.add_constructor(BOOL_TAG, _construct_bool)


def go_json(value: Any) -> Any:
    """``value`` as Go's encoding/json writes it and the program reads it back: a whole float below 1e21
    is written without a fraction (encoding/json floatEncoder, 'f' format), so ``1e3`` reaches the
    program as the integer 1000, as under ``pulumi up``."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: go_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [go_json(v) for v in value]
    return value


def load(text: str) -> Any:
    """One document, read as yaml.v3 reads it; Refusal or yaml.YAMLError when refused."""
    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
