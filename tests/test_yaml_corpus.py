"""Corpus: stack and mix files read as the Pulumi CLI reads them.

Classes, fixed seed, CI-sized (``python tests/test_yaml_corpus.py`` prints the counts; docs/validation.md):

- ``scalar``: a table plus seeded random number-like and boolean-like scalars. The oracles are written from
  the sources, not from ekstrain/files/yaml12.py: gopkg.in/yaml.v3 resolve.go ``resolve`` (v3 f6f7691; what
  Pulumi reads), the YAML 1.2.2 core schema (yaml.org/spec/1.2.2 10.3.2) and YAML 1.1 (PyYAML's
  SafeLoader plus the y/n booleans of yaml.org/type/bool.html). A scalar is refused exactly when the three
  disagree (YAML 1.1 reading text aside: ``0o10``, ``1e3``); an accepted one equals yaml.v3's value.
- ``stack``: the repo's Pulumi.*.yaml, unchanged (0 false rejections) and mutated: a tab after ``key:``
  (read identically), an ambiguous spelling of a number or boolean, a duplicate key, a tab as indentation
  (refused, naming the key and a fix), a near-miss namespace (warned), a credential in plain text (warned).
- ``mix``: examples/mix-*.yaml (read alike) and a synthetic mix with unknown keys at every level,
  fractional counts, job files with no object, lists for names, duplicate keys, tabs, ambiguous scalars.

Every case ends in the expected verdict: no traceback (any exception but ConfigError/InputError fails),
no false rejection, no accepted-invalid.
"""

from __future__ import annotations

import json
import math
import pathlib
import random
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from ekstrain.files import yaml12
from ekstrain.simulate.inputs import InputError
from ekstrain.simulate.mix import read_mix
from ekstrain.stacks import loader
from ekstrain.stacks.errors import ConfigError

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = 32
RANDOM_SCALARS = 600
STACKS = sorted(ROOT.glob("Pulumi.*.yaml"))
MIXES = sorted((ROOT / "examples").glob("mix-*.yaml"))

# ---- oracles --------------------------------------------------------------------------------------------


def _go_parse_int(s: str, unsigned: bool) -> int | None:
    """Go strconv.ParseInt/ParseUint(s, 0, 64) (underscores already removed by yaml.v3)."""
    neg = False
    if s[:1] in "+-":
        if unsigned:
            return None
        neg, s = s[0] == "-", s[1:]
    base, digits = 10, s
    if s[:2].lower() in ("0x", "0b", "0o"):
        base, digits = {"x": 16, "b": 2, "o": 8}[s[1].lower()], s[2:]
    elif s[:1] == "0" and len(s) > 1:
        base, digits = 8, s[1:]
    if not digits or any(c not in "0123456789abcdef"[:base] for c in digits.lower()):
        return None
    value = -int(digits, base) if neg else int(digits, base)
    low, high = (0, 2**64 - 1) if unsigned else (-(2**63), 2**63 - 1)
    return value if low <= value <= high else None


_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_V3_MAP: dict[str, Any] = {
    **dict.fromkeys(["true", "True", "TRUE"], True),
    **dict.fromkeys(["false", "False", "FALSE"], False),
    **dict.fromkeys(["", "~", "null", "Null", "NULL"], None),
    **dict.fromkeys([".nan", ".NaN", ".NAN"], math.nan),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], -math.inf),
}


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None  # Go ParseFloat: a range error


def v3(s: str) -> Any:
    """gopkg.in/yaml.v3 resolve.go resolve("", s) for a plain scalar (no time stamps in the corpus)."""
    if s in _V3_MAP:
        return _V3_MAP[s]
    hint = s[:1]
    if hint == ".":
        if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", s):
            found = _finite(s)
            if found is not None:
                return found
        return s
    if hint and hint in "+-0123456789":
        plain = s.replace("_", "")
        for unsigned in (False, True):
            found_int = _go_parse_int(plain, unsigned)
            if found_int is not None:
                return found_int
        if _YAML_STYLE_FLOAT.match(plain):
            found = _finite(plain)
            if found is not None:
                return found
    return s


def core12(s: str) -> Any:
    """The YAML 1.2.2 core schema (yaml.org/spec/1.2.2, 10.3.2 Tag Resolution)."""
    if re.fullmatch(r"null|Null|NULL|~|", s):
        return None
    if re.fullmatch(r"true|True|TRUE|false|False|FALSE", s):
        return s.lower() == "true"
    if re.fullmatch(r"[-+]?[0-9]+", s):
        return int(s, 10)
    if re.fullmatch(r"0o[0-7]+", s):
        return int(s[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", s):
        return int(s[2:], 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", s):
        return float(s)
    if re.fullmatch(r"[-+]?\.(inf|Inf|INF)", s):
        return -math.inf if s[0] == "-" else math.inf
    if re.fullmatch(r"\.nan|\.NaN|\.NAN", s):
        return math.nan
    return s


def yaml11(s: str) -> Any:
    """YAML 1.1: PyYAML's SafeLoader, plus y/Y/n/N, which yaml.org/type/bool.html lists and PyYAML omits."""
    if s in ("y", "Y", "n", "N"):
        return s in ("y", "Y")
    return yaml.load(f"a: {s}", Loader=yaml.SafeLoader)["a"]


def _canon(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return ("const", value)
    if isinstance(value, (int, float)):
        return ("nan",) if isinstance(value, float) and math.isnan(value) else ("num", value)
    return (type(value).__name__, value)


def ambiguous(s: str) -> bool:
    pulumi, spec, old = _canon(v3(s)), _canon(core12(s)), _canon(yaml11(s))
    return pulumi != spec or (old[0] != "str" and old != pulumi)


# ---- scalar corpus -------------------------------------------------------------------------------------

SCALAR_TABLE = [
    "010",
    "08",
    "00",
    "07",
    "-07",
    "0o10",
    "0O10",
    "0x1f",
    "0X1F",
    "+0x10",
    "-0o7",
    "0b11",
    "0b12",
    "1_6",
    "1_000",
    "-_1",
    "_1",
    "1_",
    "1__0",
    "0_8",
    "1:30",
    "-1:30",
    "0:30",
    "1:30.5",
    "0:30.5",
    "190:20:30",
    "1e3",
    "1.0e3",
    "1.0e+3",
    "1.",
    ".5",
    "-.5",
    "+.5",
    ".inf",
    "-.Inf",
    "+.nan",
    ".NaN",
    "1e400",
    "99999999999999999999",
    "18446744073709551615",
    "-9223372036854775808",
    "-9223372036854775809",
    "y",
    "Y",
    "n",
    "N",
    "yes",
    "No",
    "ON",
    "off",
    "True",
    "TRUE",
    "tRUE",
    "false",
    "null",
    "Null",
    "NULL",
    "~",
    "0",
    "-0",
    "+0",
    "+1",
    "01.5",
    "0x",
    "0o",
    "0b",
    "1.2.3",
    "0.1_5",
    "1e_3",
]


def _random_scalars(rng: random.Random) -> Iterator[str]:
    words = ["yes", "no", "on", "off", "y", "n", "true", "false", "null", "inf", "nan"]
    for _ in range(RANDOM_SCALARS):
        kind = rng.random()
        if kind < 0.15:
            w = rng.choice(words)
            yield "".join(c.upper() if rng.random() < 0.3 else c for c in w) if w not in ("inf", "nan") else "." + w
            continue
        sign = rng.choice(["", "", "-", "+"])
        prefix = rng.choice(["", "", "", "0", "0x", "0o", "0b", "0X", "0O"])
        digits = "".join(rng.choice("0123456789" + "_" * (rng.random() < 0.2)) for _ in range(rng.randint(1, 6)))
        tail = ""
        roll = rng.random()
        if roll < 0.2:
            tail = "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 3)))
        elif roll < 0.3:
            tail = rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.randint(0, 40))
        elif roll < 0.4:
            tail = ":" + str(rng.randint(0, 70))
        text = sign + prefix + digits + tail
        if re.match(r"^\d{4}-", text):  # time stamps are refused downstream, not a 1.1/1.2 difference
            continue
        yield text


def scalar_cases() -> list[str]:
    return list(dict.fromkeys([*SCALAR_TABLE, *_random_scalars(random.Random(SEED))]))


def check_scalar(s: str) -> str:
    """'refused' or 'accepted'; AssertionError on a false rejection or an accepted-invalid."""
    try:
        got = yaml12.load(f"a: {s}")["a"]
    except yaml12.Refusal as exc:
        assert ambiguous(s), f"false rejection of {s!r}: {exc.problem}"
        assert exc.path == "a" and exc.line == 1 and f'"{s}"' in exc.fix or "use " in exc.fix, exc.fix
        return "refused"
    assert not ambiguous(s), f"accepted the ambiguous {s!r} as {got!r} (yaml.v3 {v3(s)!r}, 1.2 {core12(s)!r})"
    assert _canon(yaml12.go_json(got)) == _canon(yaml12.go_json(v3(s))), f"{s!r}: {got!r}, yaml.v3 reads {v3(s)!r}"
    return "accepted"


@pytest.mark.parametrize("chunk", range(4))
def test_scalars_are_refused_exactly_when_the_readings_differ(chunk: int) -> None:
    cases = scalar_cases()[chunk::4]
    verdicts = Counter(check_scalar(s) for s in cases)
    assert verdicts["refused"] and verdicts["accepted"], verdicts


def test_the_oracles_read_the_issue_examples_as_their_sources_say() -> None:
    # resolve.go: ParseInt(s, 0, 64) reads 010 as octal; underscores are dropped; "1:30" is text.
    assert (v3("010"), core12("010"), yaml11("010")) == (8, 10, 8)
    assert (v3("1_6"), core12("1_6"), yaml11("1_6")) == (16, "1_6", 16)
    assert (v3("1:30"), yaml11("1:30"), v3("yes"), yaml11("yes")) == ("1:30", 90, "yes", True)
    assert (v3("1e3"), core12("1e3"), yaml11("1e3")) == (1000.0, 1000.0, "1e3")


# ---- stack files ---------------------------------------------------------------------------------------


def _read(path: pathlib.Path) -> tuple[dict[str, str], list[str]]:
    flat, secrets = loader.read_stack_file(path)
    _, warnings = loader.load_flat(flat, path.name, secret_keys=secrets)
    return flat, warnings


def _lines(text: str, pattern: str) -> list[int]:
    return [i for i, line in enumerate(text.splitlines()) if re.match(pattern, line)]


def stack_cases(rng: random.Random) -> Iterator[tuple[str, str, str, str]]:
    """(class, stack file, mutated text, expectation): 'same', 'refuse:<text>' or 'warn:<text>'."""
    for stack in STACKS:
        text = stack.read_text()
        lines = text.splitlines()
        yield "stack-valid", stack.name, text, "same"
        # A tab after `key:` (yaml.v3 skips it as separation space): read identically.
        for i in rng.sample(_lines(text, r"^\s*[A-Za-z][\w:.-]*: \S"), 12):
            mutated = lines.copy()
            mutated[i] = re.sub(r"^(\s*[A-Za-z][\w:.-]*):( )", "\\1:\t", lines[i], count=1)
            yield "stack-tab", stack.name, "\n".join(mutated) + "\n", "same"
        # A tab as indentation: refused with the line (YAML forbids it everywhere).
        for i in rng.sample(_lines(text, r"^  +[A-Za-z]"), 4):
            mutated = lines.copy()
            mutated[i] = "\t" + lines[i].lstrip(" ")
            yield "stack-tab-indent", stack.name, "\n".join(mutated) + "\n", "refuse:YAML"
        # Numbers spelled so that YAML 1.1, 1.2 and yaml.v3 differ: refused, naming the key.
        for i in _lines(text, r"^\s+[A-Za-z]\w*: [1-9][0-9]*\s*(#.*)?$"):
            key, value = re.match(r"^\s+(\w+): (\d+)", lines[i]).groups()  # type: ignore[union-attr]
            n = int(value)
            for spelling in (f"{value[:-1] or '0'}_{value[-1]}", f"0{n:o}" if n >= 8 else None, f"+0x{n:x}"):
                if spelling:
                    mutated = lines.copy()
                    mutated[i] = lines[i].replace(f"{key}: {value}", f"{key}: {spelling}", 1)
                    yield "stack-number", stack.name, "\n".join(mutated) + "\n", f"refuse:{key} (line {i + 1})"
            if n < 8:  # 0N: every reading agrees; and 0oN is YAML 1.2's octal, yaml.v3's too
                for spelling in (f"0{n}", f"0o{n:o}"):
                    mutated = lines.copy()
                    mutated[i] = lines[i].replace(f"{key}: {value}", f"{key}: {spelling}", 1)
                    yield "stack-number", stack.name, "\n".join(mutated) + "\n", "same"
        # Booleans: YAML 1.1 words refused; True/TRUE are YAML 1.2 booleans.
        for i in _lines(text, r"^\s+\w+: (true|false)\s*(#.*)?$"):
            key, value = re.match(r"^\s+(\w+): (\w+)", lines[i]).groups()  # type: ignore[union-attr]
            for spelling, expect in (
                ({"true": "yes", "false": "off"}[value], f"refuse:{key} (line {i + 1})"),
                (value.capitalize(), "same"),
                (value.upper(), "same"),
            ):
                mutated = lines.copy()
                mutated[i] = lines[i].replace(f"{key}: {value}", f"{key}: {spelling}", 1)
                yield "stack-bool", stack.name, "\n".join(mutated) + "\n", expect
        # A duplicate key: the line repeated below itself (scalars only, so the mapping stays valid).
        for i in rng.sample(_lines(text, r"^\s+[A-Za-z]\w*: [^\s#][^#]*$"), 6):
            key = lines[i].split(":")[0].strip()
            mutated = [*lines[: i + 1], lines[i], *lines[i + 1 :]]
            yield "stack-duplicate", stack.name, "\n".join(mutated) + "\n", f"refuse:key '{key}' appears twice"
        # A near-miss namespace: warned with the key it meant.
        for typo in ("ekstrian", "Ekstrain", "ekstran", "awss", "kuberentes"):
            meant = {"awss": "aws", "kuberentes": "kubernetes"}.get(typo, "ekstrain")
            extra = f"  {typo}:someSetting: 1\n"
            yield "stack-namespace", stack.name, text + extra, f"warn:did you mean {meant}:someSetting?"
        # A credential in plain text: warned (pulumi up warns too: infra/__main__.py logs load()'s warnings).
        if "jupyterhubClientSecret:\n    secure:" in text:
            plain = re.sub(r"jupyterhubClientSecret:\n    secure: \S+", "jupyterhubClientSecret: hunter2", text)
            yield "stack-secret", stack.name, plain, "warn:ekstrain:jupyterhubClientSecret: set in plain text"


def check_stack(tmp: pathlib.Path, name: str, text: str, expect: str, base: dict[str, Any]) -> str:
    path = tmp / name
    path.write_text(text)
    try:
        flat, warnings = _read(path)
    except ConfigError as exc:
        assert expect.startswith("refuse:"), f"false rejection ({expect}): {exc}"
        assert expect.removeprefix("refuse:") in str(exc) and "fix: " in str(exc), str(exc)
        return "refused"
    assert not expect.startswith("refuse:"), f"accepted-invalid, expected {expect}"
    if expect == "same":
        assert flat == base[name], "read differently from the unchanged file"
    else:
        assert any(expect.removeprefix("warn:") in w for w in warnings), warnings
    return "accepted"


def test_stack_file_corpus(tmp_path: pathlib.Path) -> None:
    assert len(STACKS) >= 2
    base = {s.name: loader.read_stack_file(s)[0] for s in STACKS}
    for stack in STACKS:  # the repo's own stacks: accepted, no did-you-mean
        assert not [w for w in _read(stack)[1] if "did you mean" in w]
    verdicts: Counter[str] = Counter()
    for cls, name, text, expect in stack_cases(random.Random(SEED)):
        verdicts[(cls, check_stack(tmp_path, name, text, expect, base))] += 1  # type: ignore[index]
    assert verdicts[("stack-tab", "accepted")] >= 20 and verdicts[("stack-number", "refused")] >= 10, verdicts
    assert verdicts[("stack-duplicate", "refused")] == 6 * len(STACKS), verdicts


def test_top_level_scalars_reach_the_program_as_written(tmp_path: pathlib.Path) -> None:
    """pulumi config/value.go decodes a top-level value into a string first: the text as written."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  aws:region: us-west-2\n  ekstrain:a: True\n  ekstrain:b: 0x10\n  ekstrain:c: 1e3\n")
    flat, _ = loader.read_stack_file(path)
    assert (flat["ekstrain:a"], flat["ekstrain:b"], flat["ekstrain:c"]) == ("True", "0x10", "1e3")
    path.write_text("config:\n  ekstrain:partitions:\n    - {maxNodes: 1e3, size: 2.0, w: 1.5}\n")
    flat, _ = loader.read_stack_file(path)  # nested: JSON as Go writes it (whole floats without a fraction)
    assert json.loads(flat["ekstrain:partitions"]) == [{"maxNodes": 1000, "size": 2, "w": 1.5}]
    assert json.loads(flat["ekstrain:partitions"])[0]["maxNodes"].__class__ is int


# ---- mix files -----------------------------------------------------------------------------------------

JOB = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: corpus}\nspec:\n  template:\n    spec:\n      containers: []\n"


def _mix(job: pathlib.Path) -> str:
    return (
        "hours: 4\ncheckpointMinutes: 30\ncheckpointSaveSeconds: 60\nlaunchMinutes: {gpu: 6, cpu: 3}\n"
        f"jobs:\n  - file: {job}\n    at: 0\n    hours: 1\n    count: 2\n"
        "faults:\n  - {at: 0.5, kind: node-lost, job: 'Job/corpus#1'}\n"
    )


def mix_cases(tmp: pathlib.Path) -> Iterator[tuple[str, str, str]]:
    """(class, mix text, expectation): 'ok' or the key path (after the file name) the refusal names."""
    job = tmp / "job.yaml"
    job.write_text(JOB)
    base = _mix(job)
    yield "mix-valid", base, "ok"
    yield "mix-valid", base.replace("hours: 4\n", "hours:\t4\n").replace("at: 0\n", "at:\t0   \t# tab\n"), "ok"
    yield "mix-valid", base.replace("count: 2", "count: 2.0"), "ok"
    for old, new, where in (
        ("hours: 4\n", "hours: 4\nhorus: 4\n", ": unknown key(s) horus"),
        ("{gpu: 6, cpu: 3}", "{gpu: 6, cpu: 3, gpuu: 2}", "launchMinutes: unknown key(s) gpuu"),
        ("    count: 2\n", "    count: 2\n    cuont: 1\n", "jobs[0]: unknown key(s) cuont"),
        ("{at: 0.5,", "{at: 0.5, severity: 3,", "faults[0]: unknown key(s) severity"),
        ("count: 2", "count: 1.5", "jobs[0].count: is 1.5, not a whole number"),
        ("checkpointMinutes: 30", "checkpointMinutes: 30.5", "checkpointMinutes: is 30.5"),
        ("{gpu: 6,", "{gpu: 6.5,", "launchMinutes.gpu: is 6.5"),
        ("checkpointSaveSeconds: 60", "checkpointSaveSeconds: 1e400", "checkpointSaveSeconds (line 3)"),
        ("job: 'Job/corpus#1'", "job: [Job/corpus#1]", "faults[0].job: is a list"),
        ("kind: node-lost", "kind: {a: 1}", "faults[0].kind: is a dict"),
        (
            "faults:\n  - {at: 0.5, kind: node-lost, job: 'Job/corpus#1'}",
            "faults: {x: 1}",
            "faults: is a dict, not a list",
        ),
        (f"file: {job}", "file: [a, b]", "jobs[0].file: is a list"),
        (f"file: {job}", f"file: {tmp / 'missing.yaml'}", "jobs[0].file: "),
        ("hours: 4\n", "hours: 4\nhours: 5\n", "hours (line 2): key 'hours' appears twice"),
        ("    at: 0\n", "    at: 0\n    at: 1\n", "jobs[0].at (line 8): key 'at' appears twice"),
        ("count: 2", "count: 0_2", "jobs[0].count (line 9): 0_2 is the number"),
        ("count: 2", "count: 010", "jobs[0].count (line 9): 010 has a leading zero"),
        ("hours: 4\n", "hours: 1:30\n", "hours (line 1): 1:30 is a base-60 number"),
        ("cpu: 3}", "cpu: 3, on: 1}", "launchMinutes (line 4): on is a boolean"),
        ("hours: 4\n", "\thours: 4\n", ": is not a valid UTF-8 YAML file"),
    ):
        assert old in base, old
        yield "mix-refused", base.replace(old, new, 1), where
    for name, content in (("empty", ""), ("separators", "---\n---\n"), ("comments", "# nothing\n")):
        (tmp / f"{name}.yaml").write_text(content)
        yield "mix-job-file", base.replace(str(job), str(tmp / f"{name}.yaml")), "jobs[0].file: "
    (tmp / "runtime.yaml").write_text("kind: TrainingRuntime\nmetadata: {name: r}\n")
    yield "mix-job-file", base.replace(str(job), str(tmp / "runtime.yaml")), "jobs[0].file: "


def test_mix_file_corpus(tmp_path: pathlib.Path) -> None:
    verdicts: Counter[str] = Counter()
    for i, (cls, text, where) in enumerate(mix_cases(tmp_path)):
        path = tmp_path / f"mix-{i}.yaml"
        path.write_text(text)
        try:
            mix = read_mix(path, tmp_path)
        except InputError as exc:
            assert where != "ok", f"false rejection: {exc.report()}"
            assert exc.report().startswith(f"error: ekstrain simulate: {path}") and where in exc.report(), exc.report()
            assert "\nfix: " in exc.report()
            verdicts[cls] += 1
            continue
        assert where == "ok", f"accepted-invalid, expected a refusal naming {where}"
        assert [a.name for a in mix.arrivals] == ["Job/corpus#1", "Job/corpus#2"] and mix.minutes == 240
        assert mix.arrivals[0].runs == 60 and mix.launch_minutes["gpu"] == 6 and len(mix.faults) == 1
        verdicts[cls] += 1
    assert verdicts == {"mix-valid": 3, "mix-refused": 20, "mix-job-file": 4}, verdicts


@pytest.mark.parametrize("mix", MIXES, ids=lambda p: p.name)
def test_example_mixes_read_alike(mix: pathlib.Path) -> None:
    """The reviewed mixes: no ambiguous scalar or duplicate, and YAML 1.2 reads what YAML 1.1 read."""
    assert yaml12.load(mix.read_text()) == yaml.safe_load(mix.read_text())


if __name__ == "__main__":  # the counts docs/validation.md gives
    import tempfile

    scalars = Counter(check_scalar(s) for s in scalar_cases())
    print("scalar", len(scalar_cases()), dict(scalars))
    with tempfile.TemporaryDirectory() as tmp:
        base = {s.name: loader.read_stack_file(s)[0] for s in STACKS}
        stacks: Counter[tuple[str, str]] = Counter()
        for cls, name, text, expect in stack_cases(random.Random(SEED)):
            stacks[(cls, check_stack(pathlib.Path(tmp), name, text, expect, base))] += 1
        for key, count in sorted(stacks.items()):
            print(*key, count)
        print("mix", sum(1 for _ in mix_cases(pathlib.Path(tmp))))
