"""A generated corpus of names and free text for the stack config (queue-name collisions, control characters,
booleans as counts, notification emails, Unicode tags, Capacity Block types), about half of it valid or
borderline so that false rejections are measured as well as false acceptances.

GIVEN each case (a change to prod or dev, and an oracle: valid, invalid) WHEN the stack config is parsed THEN an
invalid case is refused with a ConfigError naming a stack key, a valid one is accepted, and nothing raises
anything else (no traceback). The cases are drawn with a fixed seed (``EKSTRAIN_CORPUS_SEED``, default 44);
``python tests/test_names_corpus.py`` prints the counts per class, and the test prints them too.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import string
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import stack_sections

from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse

SEED = int(os.environ.get("EKSTRAIN_CORPUS_SEED", "44"))
TODAY = dt.date(2026, 12, 3)


@dataclass(frozen=True)
class Case:
    kind: str
    what: str
    stack: str
    change: Callable[[dict[str, Any]], None]
    valid: bool


def _part(name: str, max_nodes: int = 2) -> dict[str, Any]:
    return {"name": name, "accelerator": "gpu", "instanceTypes": ["p5.48xlarge"], "maxNodes": max_nodes}


# ---- queue names ----------------------------------------------------------------------------------------------------


def queue_cases(rng: random.Random) -> Iterator[Case]:
    """Partitions and teams drawn from a small alphabet so that derived names meet often; the oracle computes the
    queue names independently (partition; with teams <p>-<team> and <p>-shared) and asks for uniqueness."""
    letters = "ab"
    for _ in range(60):
        extra = sorted({"-".join(rng.choice(letters) for _ in range(rng.randint(1, 2))) for _ in range(2)})
        parts = ["gpu-h100", *(f"gpu-h100-{e}" for e in extra[: rng.randint(0, 2)])]
        if rng.random() < 0.2:
            parts.append("gpu-h100-shared")
        teams = sorted({"-".join(rng.choice(letters) for _ in range(rng.randint(1, 2))) for _ in range(2)})
        team_parts = {t: sorted(set(rng.sample(parts, k=rng.randint(1, min(2, len(parts)))))) for t in teams}
        names: list[str] = [*(p for p in parts), "gpu-a100", "trainium"]
        for p in parts:
            named = [t for t in teams if p in team_parts[t]]
            names += [f"{p}-{t}" for t in named] + ([f"{p}-shared"] if named else [])
        valid = len(names) == len(set(names)) and "shared" not in teams

        def change(s: dict[str, Any], parts: list[str] = parts, team_parts: dict[str, list[str]] = team_parts) -> None:
            s["partitions"] = [p for p in s["partitions"] if p["name"] != "gpu-h100"]
            s["partitions"] += [_part(p) for p in parts]
            s["schedulers"]["volcano"]["queueWeights"] = {}
            s["schedulers"]["volcano"]["teams"] = [
                {"name": t, "guarantees": {p: 0 for p in ps}} for t, ps in team_parts.items()
            ]

        yield Case("queue names", f"{parts} {team_parts}", "prod", change, valid)


# ---- control characters in free text --------------------------------------------------------------------------------

CONTROL = ["\n", "\t", "\r", "\x00", "\x1b", "\x7f", "\u0085", "\u2028", "\u2029", "\u202e", "\u2066"]
PRINTABLE_UNICODE = ["H100 SXM", "Größe", "チーム", "قيمة", "a-b_c.d", "x" * 60, "emoji-free ☃ snow", "Ω-1"]


def _text_fields() -> list[tuple[str, Callable[[dict[str, Any], str], None], str]]:
    def model(s: dict[str, Any], v: str) -> None:
        facts = {"kind": "gpu", "model": v, "count": 8, "memoryGiB": 80, "peakTflopsBf16": 989,
                 "hbmGBytesPerS": 3350, "intraNodeGBytesPerS": 450}  # fmt: skip
        s["instanceTypes"] = {"p5x.48xlarge": {"accelerator": facts, "vcpus": 192, "memoryGiB": 2048,
                              "networkGbps": 3200, "efa": {"maxInterfaces": 32, "networkCards": 32}}}  # fmt: skip

    def label(s: dict[str, Any], v: str) -> None:
        s["partitions"][0]["labels"] = {"ekstrain-corpus/tier": v}

    def alias(s: dict[str, Any], v: str) -> None:
        s["observability"]["amp"]["workspaceAlias"] = v

    return [("accelerator model", model, "prod"), ("node label value", label, "prod"), ("AMP alias", alias, "prod")]


def text_cases(rng: random.Random) -> Iterator[Case]:
    for name, setter, stack in _text_fields():
        for _ in range(14):
            base = rng.choice(PRINTABLE_UNICODE)[:30]
            bad = rng.choice(CONTROL)
            at = rng.randint(0, len(base))
            value = base[:at] + bad + base[at:]
            yield Case("control characters", f"{name} {value!r}", stack, lambda s, v=value, f=setter: f(s, v), False)
        for value in PRINTABLE_UNICODE:
            if name == "node label value" and not all(c in string.ascii_letters + string.digits + "-_." for c in value):
                continue  # Kubernetes label values are ASCII: not this corpus's question
            yield Case("control characters", f"{name} {value!r}", stack, lambda s, v=value, f=setter: f(s, v), True)


# ---- booleans as counts ---------------------------------------------------------------------------------------------

COUNTS: list[tuple[str, Callable[[dict[str, Any], Any], None]]] = [
    ("maxNodes", lambda s, v: s["partitions"][1].update(maxNodes=v)),
    ("rootVolumeGiB", lambda s, v: s["partitions"][1].update(rootVolumeGiB=v if v is not True else True)),
    ("weight", lambda s, v: s["partitions"][1].update(weight=v)),
    ("queueWeights", lambda s, v: s["schedulers"]["volcano"].update(queueWeights={"gpu-h100": v})),
    ("nodesetReplicas", lambda s, v: s["schedulers"]["slurm"].update(nodesetReplicas={"gpu-a100": v})),
    (
        "guarantees",
        lambda s, v: s["schedulers"]["volcano"].update(teams=[{"name": "a", "guarantees": {"gpu-h100": v}}]),
    ),
    ("retentionDays", lambda s, v: s["logging"].update(retentionDays=v)),
    ("thresholdsPercent", lambda s, v: s["cost"]["budget"].update(thresholdsPercent=[v])),
    ("monthlyLimitUsd", lambda s, v: s["cost"]["budget"].update(monthlyLimitUsd=v)),
]
GOOD_COUNT = {"maxNodes": 3, "rootVolumeGiB": 600, "weight": 10, "queueWeights": 3, "nodesetReplicas": 1,
              "guarantees": 1, "retentionDays": 30, "thresholdsPercent": 90, "monthlyLimitUsd": 1000.5}  # fmt: skip


def count_cases(rng: random.Random) -> Iterator[Case]:
    for name, setter in COUNTS:
        for value in (True, False):
            yield Case("booleans as counts", f"{name}={value}", "prod", lambda s, v=value, f=setter: f(s, v), False)
        good = GOOD_COUNT[name]
        yield Case("booleans as counts", f"{name}={good}", "prod", lambda s, v=good, f=setter: f(s, v), True)


# ---- emails ---------------------------------------------------------------------------------------------------------

GOOD_LOCAL = ["ml", "ml-costs", "first.last", "a+b", "o'brien", "x_y", "A1"]
GOOD_DOMAIN = ["example.com", "sub.example.co.uk", "x-y.io", "a1.example"]


def email_cases(rng: random.Random) -> Iterator[Case]:
    for _ in range(20):
        email = f"{rng.choice(GOOD_LOCAL)}@{rng.choice(GOOD_DOMAIN)}"
        yield Case("emails", repr(email), "prod", lambda s, e=email: s["cost"]["budget"].update(notifyEmails=[e]), True)
    mutations: list[Callable[[str], str]] = [
        lambda e: e + "\n",
        lambda e: e.replace("@", "\n@"),
        lambda e: e + "\tcc",
        lambda e: f"<{e}>",
        lambda e: f"Team <{e}>",
        lambda e: e + "," + e,
        lambda e: e.replace("@", "@@"),
        lambda e: e.split("@")[0],
        lambda e: e.split("@")[0] + "@localhost",
        lambda e: '"' + e.split("@")[0] + '"@' + e.split("@")[1],
        lambda e: e.replace("@", " @"),
        lambda e: "<b>" + e,
        lambda e: e.split("@")[0] + "..x@" + e.split("@")[1],
        lambda e: "ü" + e,
        lambda e: e + ".",
    ]
    for mutate in mutations:
        email = mutate(f"{rng.choice(GOOD_LOCAL)}@{rng.choice(GOOD_DOMAIN)}")
        yield Case(
            "emails", repr(email), "prod", lambda s, e=email: s["cost"]["budget"].update(notifyEmails=[e]), False
        )


# ---- Unicode tags ---------------------------------------------------------------------------------------------------

TAG_WORDS = ["チーム", "équipe", "Größe", "فريق", "团队", "команда", "팀", "Ωmega", "cost_centre", "a.b:c/d=e+f-g@h"]
SPACES = [" ", "\u3000", "\u00a0"]  # space separators AWS's \p{Z} takes
BAD_TAG_CHARS = ["<", ">", "#", "!", "?", "*", "&", "😀", "\n", "\t", "\u0301"]


def tag_cases(rng: random.Random) -> Iterator[Case]:
    for _ in range(15):
        n = rng.randint(1, 41)  # dev: room for 41
        tags = {f"{rng.choice(TAG_WORDS)}{i}": f"{rng.choice(TAG_WORDS)}{rng.choice(SPACES)}{i}" for i in range(n)}
        yield Case("unicode tags", f"{n} tags on dev", "dev", lambda s, t=tags: s.update(tags=t), True)
    for _ in range(5):
        n = rng.randint(42, 49)
        tags = {f"k{i}": "v" for i in range(n)}
        yield Case("unicode tags", f"{n} tags on dev", "dev", lambda s, t=tags: s.update(tags=t), False)
    for n, valid in ((38, True), (39, False)):  # prod has cost tags: 12 of the program's
        tags = {f"{rng.choice(TAG_WORDS)}{i}": "値" for i in range(n)}
        yield Case("unicode tags", f"{n} tags on prod", "prod", lambda s, t=tags: s.update(tags=t), valid)
    for bad in BAD_TAG_CHARS:
        key = f"{rng.choice(TAG_WORDS)}{bad}x"
        yield Case("unicode tags", f"key {key!r}", "dev", lambda s, k=key: s.update(tags={k: "v"}), False)
    for length, valid in ((128, True), (129, False)):
        key = "é" * length
        yield Case("unicode tags", f"key of {length} chars", "dev", lambda s, k=key: s.update(tags={k: "v"}), valid)


# ---- Capacity Block types -------------------------------------------------------------------------------------------

BLOCK_TYPES = ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"]
NOT_BLOCK_TYPES = ["p3dn.24xlarge", "g6e.48xlarge", "g5.48xlarge", "p4d.24xlarge-typo"]


def block_cases(rng: random.Random) -> Iterator[Case]:
    from ekstrain.facts import catalog

    for t in BLOCK_TYPES + NOT_BLOCK_TYPES:
        if t in BLOCK_TYPES and t not in catalog.known():
            continue

        def change(s: dict[str, Any], t: str = t) -> None:
            s["partitions"][0].update(
                instanceTypes=[t],
                capacityType="reserved",
                capacityReservation={"ids": ["cr-0123456789abcdef0"], "type": "capacity-block"},
            )
            # offered in prod's training AZ ID too: only the Capacity Block type rule speaks
            s["network"]["trainingZoneInstanceTypes"].append(t)

        yield Case("capacity block types", t, "prod", change, t in BLOCK_TYPES)


def corpus() -> list[Case]:
    rng = random.Random(SEED)
    return [
        *queue_cases(rng),
        *text_cases(rng),
        *count_cases(rng),
        *email_cases(rng),
        *tag_cases(rng),
        *block_cases(rng),
    ]


def run(case: Case) -> str:
    """``accepted``, ``refused`` (a ConfigError naming stack keys) or ``crashed: <exception>``."""
    sections = stack_sections(case.stack)
    try:
        case.change(sections)
        parse(sections, f"Pulumi.{case.stack}.yaml", today=TODAY)
    except ConfigError as exc:
        keys = [i.key for i in exc.issues]
        if not keys or not all(k.startswith(("ekstrain:", "aws:")) for k in keys):
            return f"crashed: refusal without a stack key {keys}"
        return "refused"
    except Exception as exc:  # noqa: BLE001 - what the corpus measures
        return f"crashed: {type(exc).__name__}: {exc}"
    return "accepted"


def tally(cases: list[Case]) -> tuple[dict[str, Counter[str]], list[str]]:
    counts: dict[str, Counter[str]] = {}
    wrong = []
    for case in cases:
        outcome = run(case)
        c = counts.setdefault(case.kind, Counter())
        c["cases"] += 1
        c["valid"] += case.valid
        if outcome.startswith("crashed"):
            c["tracebacks"] += 1
            wrong.append(f"{case.kind}: {case.what}: {outcome}")
        elif case.valid and outcome == "refused":
            c["false rejections"] += 1
            wrong.append(f"{case.kind}: {case.what}: valid, refused")
        elif not case.valid and outcome == "accepted":
            c["false acceptances"] += 1
            wrong.append(f"{case.kind}: {case.what}: invalid, accepted")
    return counts, wrong


def report(counts: dict[str, Counter[str]]) -> str:
    lines = [f"{'class':<22} {'cases':>5} {'valid':>5} {'false rej':>9} {'false acc':>9} {'tracebacks':>10}"]
    for kind, c in counts.items():
        lines.append(
            f"{kind:<22} {c['cases']:>5} {c['valid']:>5} {c['false rejections']:>9} {c['false acceptances']:>9} "
            f"{c['tracebacks']:>10}"
        )
    total = sum((c for c in counts.values()), Counter())
    lines.append(
        f"{'total':<22} {total['cases']:>5} {total['valid']:>5} {total['false rejections']:>9} "
        f"{total['false acceptances']:>9} {total['tracebacks']:>10}"
    )
    return "\n".join(lines)


def test_names_and_free_text_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    cases = corpus()
    counts, wrong = tally(cases)
    with capsys.disabled():
        print(f"\nnames and free-text corpus (seed {SEED}):\n{report(counts)}")
    valid = sum(c.valid for c in cases)
    assert len(cases) >= 200 and 0.35 <= valid / len(cases) <= 0.65, (len(cases), valid)
    assert wrong == []


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    found, bad = tally(corpus())
    print(report(found))
    print("\n".join(bad))
