"""Property-based fuzzing of stack input: every input exits 0 or 2, never a traceback, in bounded time.

Two generators, both seeded from the real stack files:
- model mutations: the parsed sections of Pulumi.prod.yaml/Pulumi.dev.yaml with values set, deleted,
  added or nudged anywhere in the tree, fed to ``ekstrain.stacks.loader.parse`` (what ``pulumi up`` runs);
- raw YAML mutations: the files' text with lines deleted, duplicated, re-indented or truncated and
  values replaced by YAML oddities (anchors, aliases, tags, .inf, dates, bytes), fed to the stack-file
  reader and ``load_flat`` (what the offline render and ``ekstrain job`` run).

"Exit 0 or 2" is checked on the same functions the entry points call: a ConfigError is exit 2 (the
render and ``infra/__main__.py`` turn it into one report); any other exception fails the test. Valid
cases additionally run the real program under the mock engine (up to ``EKSTRAIN_FUZZ_RENDER`` of them).

`make test` runs 100 examples per generator and renders one valid case of each (about 8 CPU-s): every class is
reached well within that (the test asserts it), and the program run per valid case is the slow part. Bigger runs,
which is where rare crashes turn up, print how many cases fell in each class:

    EKSTRAIN_FUZZ_EXAMPLES=3000 EKSTRAIN_FUZZ_RENDER=20 .venv/bin/python -m pytest tests/stacks/test_fuzz_stack.py \\
        -s -q --hypothesis-seed=14
"""

from __future__ import annotations

import collections
import copy
import datetime as dt
import json
import os
import pathlib
import time
from typing import Any

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ekstrain.facts import catalog
from ekstrain.infra import render
from ekstrain.stacks import keys
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import _inner_model, load_flat, parse, read_stack_file, sections_from_flat
from ekstrain.stacks.models import StackConfig

EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "100"))
RENDERS = int(os.environ.get("EKSTRAIN_FUZZ_RENDER", "1"))
SECONDS_PER_CASE = 10.0  # a hang guard for a loaded 2-core CI machine, not a speed target
TODAY = dt.date(2026, 12, 3)
SOURCES = {name: (REPO / f"Pulumi.{name}.yaml").read_text() for name in ("prod", "dev")}
BASE_SECTIONS = {name: sections_from_flat(read_stack_file(REPO / f"Pulumi.{name}.yaml")[0])[0] for name in SOURCES}

INTERESTING = [
    "",
    " ",
    "a" * 300,
    "\x00",
    "\u202e",
    "default",
    "DEFAULT",
    "root",
    "us-west-2",
    "cn-north-1",
    "us-west-2e",
    "us-west-2-lax-1a",
    "0.0.0.0/0",
    "0.0.0.0/1",
    "10.0.0.0/8",
    "10.40.0.0/16",
    "::/0",
    "/fsx/../etc",
    "/",
    "relative",
    "cr-0123456789abcdef0",
    "cr-x",
    "arn:aws:kms:us-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "1.34",
    "1.31",
    "1.3",
    "latest",
    "v20251120",
    "ssh-ed25519 AAAA",
    "on-demand",
    "reserved",
    "PERSISTENT_2",
    "SCRATCH_2",
    "gpu",
    "trainium",
    *sorted(catalog.CATALOG),
    "m7g.large",
    "30m",
    "Never",
    "spot",
    "single",
    "perAz",
    "trainer",
    "training-operator",
    "none",
    "elastic",
    "bursting",
    "prod",
    "dev",
    "us-west-2a",
    "us-west-2d",
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-2, max_value=70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(INTERESTING),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


def _model_keys(model: type[BaseModel], seen: set[type[BaseModel]] | None = None) -> set[str]:
    """Every key the stack models know (camelCase), so "add" edits often write a real setting."""
    seen = seen if seen is not None else set()
    seen.add(model)
    out = set()
    for name, field in model.model_fields.items():
        out.add(field.alias or name)
        inner = _inner_model(field.annotation)
        if inner is not None and inner not in seen:
            out |= _model_keys(inner, seen)
    return out


KNOWN_KEYS = sorted(_model_keys(StackConfig))

YAML_TOKENS = [
    ".inf",
    "-.inf",
    ".nan",
    "~",
    "null",
    "yes",
    "no",
    "on",
    "2024-01-01",
    "0x1F",
    "0o17",
    "1e999",
    "9" * 40,
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!python/name:os.system",
    "&a x",
    "*a",
    "*nope",
    "[",
    "{",
    "}",
    "'",
    '"',
    "|",
    ">",
    "? x",
    "- x",
    "{a: 1, a: 2}",
    "[[[[[[]]]]]]",
    "\t",
    "\x00",
    "\xff",
    "é",
    "'1.34'",
    "1.34",
    "0",
    "-1",
]


def _bomb(levels: int) -> str:
    """Ten times more values per level through aliases: 10**levels once expanded (namespaced keys, so
    nothing refuses them before the values are used)."""
    return "".join(
        ["  ekstrain:bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]\n"]
        + [f"  ekstrain:bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]\n" for i in range(1, levels)]
    )


CLASSES = ("valid", "not-a-stack-file", "invalid-by-model", "invalid-by-rule")
counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
rendered: dict[str, list[int]] = collections.defaultdict(list)


def _classify_sections(sections: dict[str, Any]) -> str:
    """Parse as ``pulumi up`` would; only a ConfigError may escape (exit 2), anything else is a crash."""
    try:
        parse(copy.deepcopy(sections), "fuzz", today=TODAY)
    except ConfigError as exc:
        assert exc.issues and all(i.key and i.problem and i.fix for i in exc.issues), exc
        assert "Traceback" not in str(exc)
        try:
            StackConfig.model_validate(sections)
        except ValidationError:
            return "invalid-by-model"
        return "invalid-by-rule"
    return "valid"


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def _nudge(value: Any, data: st.DataObject) -> Any:
    """A small, often still-valid change: the kind a user makes by hand."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + data.draw(st.sampled_from([-1, 1, 1, 2, -value, value, 2400]))
    if isinstance(value, str) and value in catalog.CATALOG:
        return data.draw(st.sampled_from(sorted(catalog.CATALOG)))
    if isinstance(value, str):
        return data.draw(st.sampled_from(INTERESTING))
    return data.draw(SCALARS)


def _mutate_sections(sections: dict[str, Any], data: st.DataObject) -> None:
    # Mostly one edit: a case with several is usually refused by the first, hiding the rules behind it.
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]))):
        paths = _paths(sections)[1:]
        # Leaves (the values users edit) twice as often as whole sections and lists.
        leaves = [p for p in paths if not isinstance(_at(sections, p), (dict, list))]
        path = data.draw(st.sampled_from(leaves if leaves and data.draw(st.booleans()) else paths))
        parent: Any = sections
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        op = data.draw(st.sampled_from(["set", "nudge", "nudge", "delete", "add", "clone"]))
        if op == "set":
            parent[last] = data.draw(VALUES)
        elif op == "nudge":
            parent[last] = _nudge(parent[last], data)
        elif op == "delete":
            del parent[last]
        elif op == "add" and isinstance(parent[last], dict):
            key = data.draw(st.sampled_from(KNOWN_KEYS) | st.text(min_size=1, max_size=12))
            parent[last][key] = data.draw(st.sampled_from(INTERESTING) | VALUES)
        elif op == "clone" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))


def _mutate_text(text: str, data: st.DataObject) -> bytes:
    lines = text.splitlines(keepends=True)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(lines) - 1))
        op = data.draw(
            st.sampled_from(
                ["token", "token", "delete", "duplicate", "indent", "dedent", "swap", "bomb", "truncate", "bytes"]
            )
        )
        line = lines[i]
        if op == "token" and ": " in line:
            head, _ = line.split(": ", 1)
            lines[i] = f"{head}: {data.draw(st.sampled_from(YAML_TOKENS))}\n"
        elif op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "indent":
            lines[i] = "  " + line
        elif op == "dedent":
            lines[i] = line[2:] if line.startswith("  ") else line
        elif op == "swap":
            j = data.draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "bomb":
            # before a top-level config key, where the aliases are read as settings
            tops = [j for j, x in enumerate(lines) if x.startswith("  ") and not x.startswith("   ")] or [i]
            lines.insert(data.draw(st.sampled_from(tops)), _bomb(data.draw(st.integers(2, 8))))
        elif op == "truncate":
            lines = lines[:i] + [line[: data.draw(st.integers(0, len(line)))]]
    raw = "".join(lines).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()) and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    return raw


def _flat(sections: dict[str, Any]) -> dict[str, str]:
    """Sections back to the engine's flat config map (strings stay strings, the rest JSON)."""
    return {keys.config_key(k): v if isinstance(v, str) else json.dumps(v) for k, v in sections.items()}


def _maybe_render(name: str, flat: dict[str, str], secrets: list[str]) -> None:
    """A valid case runs the real program offline (the slow part: only the first few per generator)."""
    if len(rendered[name]) >= RENDERS:
        return
    rec = render.run_program(flat, secrets, "fuzz")
    assert rec.records and rec.outputs, "a valid stack registers resources and exports outputs"
    rendered[name].append(len(rec.records))


def _report(name: str) -> None:
    if "EKSTRAIN_FUZZ_EXAMPLES" in os.environ:
        c = counts[name]
        print(
            f"\n{name}: {sum(c.values())} cases: "
            + ", ".join(f"{k} {c[k]}" for k in CLASSES)
            + f"; valid cases run under the mock engine: {len(rendered[name])}"
        )


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="CI" in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_fuzz_stack_models() -> None:
    """GIVEN a real stack's sections with random edits WHEN parsed THEN valid or a ConfigError, quickly."""

    @FUZZ
    @given(base=st.sampled_from(sorted(BASE_SECTIONS)), data=st.data())
    def run(base: str, data: st.DataObject) -> None:
        sections = copy.deepcopy(BASE_SECTIONS[base])
        _mutate_sections(sections, data)
        started = time.perf_counter()
        klass = _classify_sections(sections)
        assert time.perf_counter() - started < SECONDS_PER_CASE
        counts["models"][klass] += 1
        if klass == "valid":
            _maybe_render("models", _flat(sections), [])

    run()
    _report("models")
    assert counts["models"]["valid"] and counts["models"]["invalid-by-model"] and counts["models"]["invalid-by-rule"], (
        f"the generator reaches every class: {counts['models']}"
    )


def test_fuzz_raw_yaml(tmp_path_factory: pytest.TempPathFactory) -> None:
    """GIVEN a real stack file's text with random edits WHEN read and loaded THEN valid (and it renders) or
    exit 2 with a report, never another exception, within a few seconds."""
    path: pathlib.Path = tmp_path_factory.mktemp("fuzz") / "Pulumi.fuzz.yaml"

    @FUZZ
    @given(base=st.sampled_from(sorted(SOURCES)), data=st.data())
    def run(base: str, data: st.DataObject) -> None:
        path.write_bytes(_mutate_text(SOURCES[base], data))
        started = time.perf_counter()
        try:
            flat, secrets = read_stack_file(path)
        except ConfigError as exc:
            assert exc.issues and "Traceback" not in str(exc)
            klass = "not-a-stack-file"
        else:
            try:
                load_flat(flat, path.name, today=TODAY)
                klass = "valid"
            except ConfigError:
                sections, unknown = sections_from_flat(flat)
                klass = "invalid-by-model" if unknown else _classify_sections(sections)
        assert time.perf_counter() - started < SECONDS_PER_CASE
        counts["yaml"][klass] += 1
        if klass == "valid":
            _maybe_render("yaml", flat, secrets)

    run()
    _report("yaml")
    assert counts["yaml"]["valid"] and counts["yaml"]["not-a-stack-file"], counts["yaml"]
