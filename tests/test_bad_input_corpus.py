"""A corpus of numeric extremes for every command that reads numbers (issue 32, deliverable 7).

GIVEN each numeric flag of `ekstrain storage`, `ekstrain job render` and `ekstrain plan search/evaluate`, and values a
careless user or a hostile CI input passes (NaN, infinities, 1e308, 10^30, 5000 digits, zero, negatives, int32 + 1,
fractions, hex, underscores, blanks) WHEN the command runs THEN it answers (exit 0/1) or refuses with exit 2 and a
message naming the flag, in under a second; never a traceback, another exit code or a hang. A value the flag's
oracle calls valid is never refused (no false rejection), one it calls invalid is never accepted.

The cases are drawn with a fixed seed (``EKSTRAIN_CORPUS_SEED``, default 32) at a CI size
(``EKSTRAIN_CORPUS_SIZE`` per command, default 60; 0 = every case); `python tests/test_bad_input_corpus.py` prints
the counts (docs/validation.md).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import REPO

from ekstrain.assembly.cli import main

SEED = int(os.environ.get("EKSTRAIN_CORPUS_SEED", "32"))
SIZE = int(os.environ.get("EKSTRAIN_CORPUS_SIZE", "60"))
SECONDS = 1.0

EXTREMES = [
    "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e309", "-1e308", "0", "-0", "-1", "1", "2", "3",
    str(2**31 - 1), str(2**31), str(2**63), str(10**30), "9" * 5000, "0.5", "1.5", "1e3", "0x10", "1_0",
    "", " ", " 4", "4 ", "four", "1/2", "+4", "٣",
]  # fmt: skip


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(text: str) -> int | None:
    """What a whole-number flag may accept: decimal digits (argparse's int() also takes '+4', ' 4', '1_0' and
    other scripts' digits; the oracle leaves those undecided)."""
    return int(text) if text.isascii() and text.isdigit() and len(text) < 4300 else None


def _undecided(text: str) -> bool:
    """Spellings int()/float() read that a stricter reader may refuse: either answer is right."""
    return text != text.strip() or text.startswith("+") or "_" in text or not text.isascii() or text == "-0"


# flag -> (argv builder, oracle: True valid / False invalid / None either)
Oracle = Callable[[str], bool | None]
STORAGE_BASE = ["storage", "--checkpoint-gib", "920"]
JOB = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--image", "img:1", "--model", "llama3-8b"]
JOB += ["--scheduler", "volcano", "--partition", "gpu-h100"]
JOB_SIZE = {"--nodes": "2", "--global-batch": "256", "--seq-len": "4096"}
PLAN = ["plan", "search", "--model", "llama3-8b", "--instance", "p5.48xlarge", "--top", "1"]
PLAN_SIZE = {"--nodes": "2", "--global-batch": "256", "--seq-len": "4096"}


def _whole(lo: int, hi: int) -> Oracle:
    def oracle(text: str) -> bool | None:
        if _undecided(text):
            return None
        value = _int(text)
        return (
            None
            if value is not None and not lo <= value <= hi and hi >= 2**62
            else (value is not None and lo <= value <= hi)
        )

    return oracle


def _real(lo: float, hi: float) -> Oracle:
    def oracle(text: str) -> bool | None:
        if _undecided(text) or text.startswith("0x"):
            return None
        value = _finite(text)
        return value is not None and lo <= value <= hi

    return oracle


def _outcome_only(text: str) -> bool | None:
    return None


COMMANDS: dict[str, dict[str, tuple[Callable[[str], list[str]], Oracle]]] = {
    "storage": {
        "--checkpoint-gib": (lambda v: ["storage", f"--checkpoint-gib={v}"], _outcome_only),
        "--checkpoint-bytes": (lambda v: ["storage", f"--checkpoint-bytes={v}"], _outcome_only),
        "--target-seconds": (lambda v: [*STORAGE_BASE, f"--target-seconds={v}"], _real(1, 86400)),
        "--capacity-gib": (lambda v: [*STORAGE_BASE, f"--capacity-gib={v}"], _outcome_only),
        "--throughput": (lambda v: [*STORAGE_BASE, f"--throughput={v}"], _outcome_only),
    },
    "job render": {
        flag: (
            lambda v, flag=flag: [*JOB, *(a for k, d in JOB_SIZE.items() if k != flag for a in (k, d)), f"{flag}={v}"],
            _outcome_only,
        )
        for flag in [*JOB_SIZE, "--lora-rank", "--max-restarts", "--tp", "--pp", "--hugepages-2mi"]
    },
    "plan search": {
        flag: (
            lambda v, flag=flag: [
                *PLAN,
                *(a for k, d in PLAN_SIZE.items() if k != flag for a in (k, d)),
                f"{flag}={v}",
            ],
            _outcome_only,
        )
        for flag in [*PLAN_SIZE, "--lora-rank", "--top"]
    },
}
# Whole-number flags: a fraction, a float spelling or NaN is never a count (argparse int() refuses them too).
for flags in COMMANDS.values():
    for flag, (argv, oracle) in list(flags.items()):
        if oracle is _outcome_only and flag not in ("--throughput", "--hugepages-2mi", "--checkpoint-gib"):
            flags[flag] = (argv, lambda t: False if _int(t) is None and not _undecided(t) else None)


def cases(command: str) -> list[tuple[str, str]]:
    every = [(flag, value) for flag in COMMANDS[command] for value in EXTREMES]
    if SIZE == 0 or len(every) <= SIZE:
        return every
    return random.Random(f"{SEED}-{command}").sample(every, SIZE)


class Hang(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"no answer in {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(command: str, flag: str, value: str) -> tuple[str, str]:
    """(outcome, detail): accepted, refused, or a defect class (traceback, hang, slow, exit N, unnamed refusal)."""
    argv = COMMANDS[command][flag][0](value)
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    try:
        with _deadline(30), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
    except Hang as exc:
        return "hang", str(exc)
    except Exception as exc:  # noqa: BLE001 - the defect class this corpus counts
        return "traceback", f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.perf_counter() - started
    text = err.getvalue()
    if "Traceback" in text:
        return "traceback", text[-300:]
    if code == 2 and "does not fit on" in text and "with any layout" in text:
        outcome = "accepted"  # the planner's answer for a size it read: no layout fits (docs/planner.md)
    elif code == 2:
        if flag not in text and flag.lstrip("-") not in text:
            return "unnamed refusal", text.strip()[-300:]
        outcome = "refused"
    elif code in (0, 1):
        outcome = "accepted"
    else:
        return f"exit {code}", text[-300:]
    if outcome == "refused" and seconds > SECONDS:
        return "slow refusal", f"{seconds:.2f} s"
    return outcome, ""


def judge(command: str, flag: str, value: str) -> tuple[str, str]:
    """The outcome class, with the oracle applied: false rejection / accepted invalid are defects too."""
    outcome, detail = run_case(command, flag, value)
    expected = COMMANDS[command][flag][1](value)
    if outcome == "refused" and expected is True:
        return "false rejection", detail
    if outcome == "accepted" and expected is False:
        return "accepted invalid", detail
    return outcome, detail


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_numeric_extremes_are_answered_or_refused_by_name(command: str) -> None:
    found: Counter[str] = Counter()
    defects = []
    for flag, value in cases(command):
        outcome, detail = judge(command, flag, value)
        found[outcome] += 1
        if outcome not in ("accepted", "refused"):
            defects.append(f"{command} {flag}={value[:40]!r}: {outcome} {detail}")
    assert not defects, "\n".join(defects)
    assert found["refused"] > 0 and sum(found.values()) == len(cases(command))


if __name__ == "__main__":  # the counts docs/validation.md quotes
    sys.path.insert(0, str(REPO / "tests"))
    for command in sorted(COMMANDS):
        counts: Counter[str] = Counter()
        for flag, value in cases(command):
            outcome, detail = judge(command, flag, value)
            counts[outcome] += 1
            if outcome not in ("accepted", "refused"):
                print(f"  {command} {flag}={value[:40]!r}: {outcome} {detail}")
        print(f"{command}: {sum(counts.values())} cases: {dict(sorted(counts.items()))}")
