"""Hostile and careless planner input, per class: exit 2 with the file/flag, never a
traceback, never a hang; valid input is never refused, and ``--json`` never prints NaN/Infinity.

`make test` runs ``EKSTRAIN_FUZZ_EXAMPLES`` (default 40) examples per class: each case runs the whole planner
command, and a class draws from 12 keys or fewer (about three cases each). A bigger run, where
rare cases turn up, prints the counts:

    EKSTRAIN_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/planner/test_bad_input.py -s -q -p no:cacheprovider
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ekstrain.cli.main import main
from ekstrain.planner import inputs
from ekstrain.planner.fleet import FLEET_COUNTS, FLEET_NUMBERS, KNOWN_GENERATIONS
from ekstrain.planner.models import MODEL_BOUNDS, get_model

EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "40"))
SECONDS_PER_CASE = 10.0  # a hang guard on a loaded shared machine, not a speed target
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize="CI" in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

LLAMA = get_model("llama3-8b")
MODEL = {
    "name": "m",
    "layers": 4,
    "hidden": 1024,
    "heads": 8,
    "kv_heads": 8,
    "ffn_hidden": 4096,
    "vocab": 32000,
    "gated_mlp": True,
    "tied_embeddings": False,
}
FLEET = {
    "accelerators_per_node": 8,
    "peak_tflops_bf16": 989,
    "hbm_gib": 80,
    "hbm_gbytes_per_s": 3350,
    "intra_node_gbytes_per_s": 900,
    "inter_node_gbits_per_s": 3200,
    "generation": "h100",
}
INTEGER_KEYS = [("model", k) for k in MODEL_BOUNDS if k in MODEL] + [("fleet", k) for k in FLEET_COUNTS if k in FLEET]
NUMBER_KEYS = [("fleet", k) for k in FLEET_NUMBERS]
CLASSES = (
    "huge integers",
    "non-finite numbers",
    "fractional counts",
    "deep nesting",
    "non-UTF-8 bytes",
    "huge --nodes",
    "unwritable --out",
    "uncalibrated generation / absurd peaks",
    "valid input (--json strict)",
)
counts: dict[str, collections.Counter[str]] = {c: collections.Counter() for c in CLASSES}
slowest: dict[str, float] = collections.defaultdict(float)


def run(argv: list[str]) -> tuple[int, str, str, float]:
    """Exit code, stdout and stderr of ``ekstrain`` in-process; a traceback fails the test."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def base_argv(model: Path | None, fleet: Path | None, nodes: str = "1") -> list[str]:
    argv = ["plan", "evaluate"]
    argv += ["--model-json", str(model)] if model else ["--model", "llama3-8b"]
    argv += ["--fleet-json", str(fleet)] if fleet else ["--instance", "p5.48xlarge"]
    argv += ["--nodes", nodes, "--global-batch", "64", "--seq-len", "2048"]
    return argv + ["--tp", "1", "--pp", "1", "--dp", "8", "--micro-batch", "1", "--recompute", "none"]


def expect_refusal(cls: str, argv: list[str], *needles: str) -> None:
    code, out, err, seconds = run(argv)
    slowest[cls] = max(slowest[cls], seconds)
    counts[cls]["cases"] += 1
    assert seconds < SECONDS_PER_CASE, f"{cls}: {seconds:.1f} s for {argv}"
    assert code == 2, f"{cls}: accepted (exit {code}) {argv}: {out[:200]}"
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    counts[cls]["refused"] += 1


def write(tmp: Path, name: str, content: bytes | str) -> Path:
    path = tmp / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def files(tmp: Path, what: str, document: str) -> tuple[Path | None, Path | None]:
    path = write(tmp, f"{what}.json", document)
    return (path, None) if what == "model" else (None, path)


def with_value(what: str, key: str, value_text: str) -> str:
    """The base document with ``key`` set to the raw JSON text ``value_text``."""
    base = dict(MODEL if what == "model" else FLEET)
    base[key] = "@@"
    return json.dumps(base).replace('"@@"', value_text)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-input")


@FUZZ
@given(st.sampled_from(INTEGER_KEYS + NUMBER_KEYS), st.integers(min_value=20, max_value=6000), st.booleans())
def test_huge_integers_are_refused(tmp: Path, field: tuple[str, str], digits: int, negative: bool) -> None:
    what, key = field
    value = ("-" if negative else "") + "9" * digits
    model, fleet = files(tmp, what, with_value(what, key, value))
    expect_refusal("huge integers", base_argv(model, fleet), f"--{what}-json", key if digits <= 4300 else "")


non_finite = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity"]),
    # decimal literals past the double range parse to +-inf in Python's json
    st.builds(
        lambda sign, mantissa, exponent: f"{sign}{mantissa}e{exponent}",
        st.sampled_from(["", "-"]),
        st.from_regex(r"[1-9](\.[0-9]{1,8})?", fullmatch=True),
        st.integers(min_value=310, max_value=10**6),
    ),
)


@FUZZ
@given(st.sampled_from(INTEGER_KEYS + NUMBER_KEYS), non_finite)
def test_non_finite_numbers_are_refused(tmp: Path, field: tuple[str, str], value: str) -> None:
    what, key = field
    model, fleet = files(tmp, what, with_value(what, key, value))
    expect_refusal("non-finite numbers", base_argv(model, fleet), f"--{what}-json")


@FUZZ
@given(st.sampled_from(INTEGER_KEYS), st.floats(min_value=0.5, max_value=1e6, allow_nan=False))
def test_fractional_counts_are_refused(tmp: Path, field: tuple[str, str], value: float) -> None:
    what, key = field
    text = repr(float(value))  # 8.0 as well as 1.5: a count is a JSON integer
    model, fleet = files(tmp, what, with_value(what, key, text))
    expect_refusal("fractional counts", base_argv(model, fleet), f"--{what}-json", key, "whole number")


@FUZZ
@given(
    st.sampled_from(["model", "fleet"]),
    st.integers(min_value=inputs.MAX_JSON_DEPTH + 1, max_value=200_000),
    st.sampled_from(["[", '{"a":']),
    st.booleans(),
)
def test_deep_nesting_is_refused(tmp: Path, what: str, depth: int, opener: str, closed: bool) -> None:
    closer = "]" if opener == "[" else "}"
    value = opener * depth + "1" + (closer * depth if closed else "")
    key = "layers" if what == "model" else "hbm_gib"
    model, fleet = files(tmp, what, with_value(what, key, value))
    expect_refusal("deep nesting", base_argv(model, fleet), f"--{what}-json")


@FUZZ
@given(st.sampled_from(["model", "fleet"]), st.data())
def test_non_utf8_bytes_are_refused(tmp: Path, what: str, data: st.DataObject) -> None:
    text = json.dumps(MODEL if what == "model" else FLEET).encode()
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    junk = data.draw(st.binary(min_size=1, max_size=8).filter(_not_utf8))
    model, fleet = files(tmp, what, text[:at] + junk + text[at:])
    expect_refusal("non-UTF-8 bytes", base_argv(model, fleet), f"--{what}-json", "UTF-8")


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@FUZZ
@given(st.integers(min_value=inputs.MAX_NODES + 1, max_value=10**40), st.sampled_from(["search", "evaluate"]))
def test_huge_node_counts_are_refused_at_once(nodes: int, command: str) -> None:
    argv = base_argv(None, None, str(nodes))
    if command == "search":
        argv = argv[: argv.index("--tp")]
        argv[1] = "search"
    expect_refusal("huge --nodes", argv, "--nodes", "bound")


@FUZZ
@given(
    st.sampled_from(["missing-dir", "a-directory", "nul", "under-a-file", "read-only", "too-long", "surrogate"]),
    st.text(alphabet="abcxyz", min_size=1, max_size=20),
)
def test_unwritable_out_is_refused_before_planning(tmp: Path, kind: str, name: str) -> None:
    target = {
        "missing-dir": str(tmp / "no-such-dir" / name),
        "a-directory": str(tmp),
        "nul": str(tmp / f"{name}\x00x"),
        "under-a-file": str(write(tmp, "plain-file", "x") / name),
        "read-only": str(_read_only(tmp)),
        "too-long": str(tmp / (name * 300)[:300]),
        "surrogate": str(tmp / f"{name}\ud800"),
    }[kind]
    if kind == "read-only" and os.access(target, os.W_OK):  # root ignores file modes: nothing to refuse
        counts["unwritable --out"]["skipped (running as root)"] += 1
        return
    expect_refusal("unwritable --out", [*base_argv(None, None), "--json", "--out", target], "--out")


def _read_only(tmp: Path) -> Path:
    path = tmp / "read-only.json"
    path.write_text("{}")
    path.chmod(0o444)
    return path


generations = st.text(min_size=1, max_size=20).filter(lambda g: g not in KNOWN_GENERATIONS)


@FUZZ
@given(
    st.one_of(
        generations.map(lambda g: ("generation", json.dumps(g))),
        st.sampled_from(sorted(FLEET_NUMBERS)).flatmap(
            lambda key: st.one_of(
                st.floats(min_value=FLEET_NUMBERS[key][1] * 1.001, max_value=1e300),
                st.floats(min_value=-1e300, max_value=FLEET_NUMBERS[key][0]),
            ).map(lambda v: (key, repr(v)))
        ),
    )
)
def test_uncalibrated_generations_and_absurd_peaks_are_refused(tmp: Path, change: tuple[str, str]) -> None:
    key, value = change
    _, fleet = files(tmp, "fleet", with_value("fleet", key, value))
    expect_refusal("uncalibrated generation / absurd peaks", base_argv(None, fleet), "--fleet-json", key)


def _bounded(key: str) -> st.SearchStrategy[float]:
    low, high, _ = FLEET_NUMBERS[key]
    return st.floats(min_value=low, max_value=high, exclude_min=True)


valid_fleets = st.fixed_dictionaries(
    {k: _bounded(k) for k in FLEET_NUMBERS},
    optional={"generation": st.sampled_from(KNOWN_GENERATIONS)},
).map(lambda fleet: {**fleet, "accelerators_per_node": 8})


@FUZZ
@given(
    valid_fleets,
    st.sampled_from([1, 2, 4]),
    st.integers(min_value=1, max_value=1 << 12),
    st.sampled_from([1, 2, 4, 8]),
    st.integers(min_value=1, max_value=128),
    st.sampled_from(["search", "evaluate"]),
)
def test_valid_input_is_planned_and_json_is_strict(
    tmp: Path, fleet: dict[str, Any], heads: int, seq_len: int, kv_div: int, layers: int, command: str
) -> None:
    cls = "valid input (--json strict)"
    model = {**MODEL, "heads": heads * 8, "hidden": heads * 8 * 64, "kv_heads": heads * 8 // kv_div, "layers": layers}
    if fleet.get("peak_tflops_fp8", 1e9) < fleet["peak_tflops_bf16"]:
        fleet.pop("peak_tflops_fp8")
    argv = base_argv(
        write(tmp, "valid-model.json", json.dumps(model)), write(tmp, "valid-fleet.json", json.dumps(fleet))
    )
    argv[argv.index("--seq-len") + 1] = str(seq_len)
    if command == "search":
        argv = [*argv[: argv.index("--tp")], "--top", "3"]
        argv[1] = "search"
    code, out, err, seconds = run([*argv, "--json"])
    slowest[cls] = max(slowest[cls], seconds)
    counts[cls]["cases"] += 1
    assert seconds < SECONDS_PER_CASE and "Traceback" not in err
    if code == 2:  # the one refusal valid input may get: nothing fits this memory
        assert "does not fit" in err, (argv, err)
        counts[cls]["no layout fits (exit 2)"] += 1
        return
    assert code == 0, (argv, err)
    json.loads(out, parse_constant=lambda name: pytest.fail(f"--json printed {name}"))
    counts[cls]["planned"] += 1


def test_report_counts() -> None:
    """Prints the per-class counts of this run (with -s); runs last in this file."""
    if "EKSTRAIN_FUZZ_EXAMPLES" in os.environ:
        for cls in CLASSES:
            c = counts[cls]
            shown = ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
            print(f"\n{cls}: {shown}; slowest {slowest[cls] * 1000:.0f} ms")
    assert all(counts[c]["cases"] for c in CLASSES if counts[c]), counts
