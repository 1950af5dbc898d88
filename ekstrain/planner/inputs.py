"""Reading what a user hands the planner: JSON files, numeric bounds, output paths.

Every refusal is a PlanError naming the file or flag, the problem and the fix (the CLI prints it
as one line and exits 2). The bounds exist so that no input can make the planner hang or
overflow: the search enumerates divisors of the rank count and of the per-replica batch, and
float arithmetic on a 400-digit integer raises. They are far above anything trained today
(Llama 3 405B: 16,384 GPUs, 8k-128k tokens, 16M tokens per step).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ekstrain.files import outputs
from ekstrain.planner.errors import PlanError

MAX_JSON_BYTES = 1 << 20
"""A model or fleet description is a few hundred bytes; a megabyte is not one."""
MAX_JSON_DEPTH = 32
"""Both files are flat objects; nesting beyond this is refused before json's recursion limit."""
MAX_STRING = 128
MAX_RANKS = 1 << 20
"""1,048,576 ranks: 64x the 16,384 GPUs of Llama 3 405B's run (arXiv 2407.21783 section 3.3)."""
MAX_NODES = 1 << 17
MAX_SEQ_LEN = 1 << 24
"""16M tokens per sequence (Llama 3 stopped at 128k; Gemini-class contexts reach a few million)."""
MAX_GLOBAL_BATCH = 1 << 24
"""Sequences per step."""
WHY_BATCH = "sequences per step: 2^24 is 8,000x Llama 3 405B's 2,048 sequences of 8k tokens"
WHY_SEQ_LEN = "tokens per sequence: 2^24 is 128x Llama 3's 128k context"
MAX_GLOBAL_BATCH_TOKENS = 1 << 36
MAX_DEGREE = MAX_RANKS
MAX_LORA_RANK = 1 << 16


def check_count(flag: str, value: int | None, low: int, high: int, fix: str = "") -> None:
    """A whole-number flag within [low, high]; ``fix`` says what to do instead."""
    if value is None:
        return
    if value < low:
        raise PlanError(f"{flag} must be >= {low}, got {value}")
    if value > high:
        hint = f"; {fix}" if fix else ""
        raise PlanError(f"{flag} {value} exceeds the planner's bound of {high:,}{hint}")


def check_lora_rank(model: Any, rank: int) -> None:
    """A LoRA rank no larger than the narrowest matrix it adapts: the adapter B·A of a d x k weight has rank
    r <= min(d, k) (Hu et al. 2021, LoRA, arXiv 2106.09685 section 4.1); the planner adapts every linear layer,
    K and V (kv_heads x head_dim wide under GQA) included."""
    if rank <= 0:
        return
    narrowest = min(model.hidden, model.kv_dim, model.ffn_hidden)
    if rank > narrowest:
        raise PlanError(
            f"--lora-rank {rank} is past {model.name}'s narrowest adapted matrix ({narrowest}; a rank-r adapter of "
            f"a d x k weight needs r <= min(d, k)): use a rank of at most {narrowest} (4-256 in practice)"
        )


class _Constant(str):
    """``NaN``/``Infinity``/``-Infinity`` as json read them: kept, so the refusal can name the key holding it."""


def _constant_path(value: Any, path: str = "") -> str | None:
    """The key path (``a.b[2]``) of the first NaN/Infinity in ``value`` (depth is bounded by MAX_JSON_DEPTH)."""
    if isinstance(value, _Constant):
        return path or "(top level)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _constant_path(item, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}".lstrip("."))
        if found is not None:
            return found
    return None


def _depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings (a linear scan, so it cannot recurse)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def read_json_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` (``what`` = model or fleet), or PlanError saying why not."""
    flag = f"--{what}-json {str(path)!r}"
    try:
        if not os.path.isfile(path):
            reason = "does not exist" if not os.path.lexists(path) else "is not a regular file"
            raise PlanError(f"{flag}: {reason}; pass the path of a {what} JSON file (docs/planner.md)")
        with open(path, "rb") as handle:
            raw = handle.read(MAX_JSON_BYTES + 1)
    except OSError as error:
        raise PlanError(f"{flag}: cannot read: {error.strerror}") from None
    except ValueError as error:  # embedded NUL byte in the path
        raise PlanError(f"{flag}: bad path ({error}); pass a plain file path") from None
    if len(raw) > MAX_JSON_BYTES:
        raise PlanError(f"{flag}: larger than {MAX_JSON_BYTES:,} bytes; a {what} JSON is one small object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PlanError(
            f"{flag}: not UTF-8 (byte {error.start}: {raw[error.start : error.start + 1]!r}); "
            "JSON must be UTF-8 (RFC 8259 section 8.1): re-save the file as UTF-8"
        ) from None
    if _depth(text) > MAX_JSON_DEPTH:
        raise PlanError(f"{flag}: nested deeper than {MAX_JSON_DEPTH} levels; a {what} JSON is one flat object")
    try:
        data = json.loads(text, parse_constant=_Constant)
    except json.JSONDecodeError as error:
        raise PlanError(f"{flag}: not valid JSON: {error.msg} at line {error.lineno}; fix the syntax") from None
    except (ValueError, RecursionError) as error:  # NaN/Infinity, integers past int_max_str_digits
        raise PlanError(f"{flag}: {str(error).splitlines()[0]}") from None
    where = _constant_path(data)
    if where is not None:
        raise PlanError(
            f"{flag}: {where} is not a number JSON allows (NaN and Infinity are not JSON, RFC 8259 section 6); "
            "write a finite number"
        )
    if not isinstance(data, dict):
        raise PlanError(f"{flag}: must be a JSON object ({{...}}), got {type(data).__name__}")
    return data


def check_string(flag: str, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise PlanError(f"{flag}: {key} must be a string, got {_show(value)}")
    if not value or len(value) > MAX_STRING or not value.isprintable():
        raise PlanError(f"{flag}: {key} must be 1-{MAX_STRING} printable characters, got {_show(value)}")
    return value


def check_integer(flag: str, key: str, value: object, low: int, high: int) -> int:
    """A JSON integer in [low, high]: not a bool, not a float (1.5 layers, 8.0 GPUs are refused)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError(f"{flag}: {key} must be a whole number (a JSON integer), got {_show(value)}")
    if not low <= value <= high:
        raise PlanError(f"{flag}: {key} must be between {low:,} and {high:,}, got {_show(value)}")
    return value


def check_number(flag: str, key: str, value: object, low: float, high: float, unit: str) -> float:
    """A finite JSON number in (low, high]; ``unit`` tells the user what the figure is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PlanError(f"{flag}: {key} must be a number ({unit}), got {_show(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise PlanError(f"{flag}: {key} must be finite, got {value}")
    if not low < value <= high:
        raise PlanError(
            f"{flag}: {key} = {_show(value)} is outside the plausible range ({low:g}, {high:g}] {unit}; "
            "check the unit against docs/planner.md"
        )
    return float(value)


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str) if not isinstance(value, int) else str(value)
    if isinstance(value, int) and not isinstance(value, bool) and len(text) > 24:
        return f"an integer of {len(text)} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def check_output_path(flag: str, path: str) -> Path:
    """Refuse an ``--out`` that cannot be written before any work is done (the write guard, ekstrain/files/outputs.py:
    not a directory, not a stack or project file, in a writable directory)."""
    if "\x00" in path or not path:
        raise PlanError(f"{flag} {path!r}: not a usable file path; pass a writable file path")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise PlanError(f"{flag} {path!r}: not encodable as a file name; use a UTF-8 path") from None
    try:
        return outputs.check_file(flag, Path(path), make_parents=False)
    except outputs.OutputRefused as error:
        raise PlanError(str(error)) from None
    except OSError as error:  # a name too long, a loop of symlinks, ...
        raise PlanError(f"{flag} {path[:80]!r}: unusable path: {error.strerror}; choose another path") from None


def write_output(flag: str, path: str, text: str) -> None:
    try:
        outputs.write_file(flag, check_output_path(flag, path), text)
    except outputs.OutputRefused as error:
        raise PlanError(str(error)) from None


def dumps(data: object) -> str:
    """JSON with no NaN or Infinity (RFC 8259 has neither; Python would print them)."""
    try:
        return json.dumps(data, indent=2, allow_nan=False)
    except ValueError:
        raise PlanError(
            "the plan holds a non-finite number (an input outside what the time model covers); "
            "report the command line as a planner bug"
        ) from None
