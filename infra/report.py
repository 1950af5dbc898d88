"""The render's structured result: ``checks.json`` beside SUMMARY.md in the output directory.

SUMMARY.md is for people; this file is what the CLI (and a CI step) reads: every check with whether it ran, what
it looked at, its problems, warnings and reviewed findings. A replayed render restores it with the other files
(infra/replay.py stores every file written under the output directory).
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from typing import Any

from ekstrain.files import inputs_guard

FILE = "checks.json"
VERSION = 1


@dataclass(frozen=True)
class CheckRow:
    name: str
    ran: bool
    checked: int
    what: str
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    reviewed: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class RenderReport:
    stack: str
    resources: int
    kubernetes: str
    checks: tuple[CheckRow, ...]

    @property
    def failed(self) -> list[CheckRow]:
        return [c for c in self.checks if c.ran and c.problems]

    @property
    def not_run(self) -> list[CheckRow]:
        return [c for c in self.checks if not c.ran]

    @property
    def passed(self) -> list[CheckRow]:
        return [c for c in self.checks if c.ran and not c.problems]

    def check(self, name_prefix: str) -> CheckRow:
        """The one check whose name starts with ``name_prefix`` (KeyError: none)."""
        for c in self.checks:
            if c.name.startswith(name_prefix):
                return c
        raise KeyError(name_prefix)


def write(out: pathlib.Path, stack: str, resources: int, kubernetes: str, checks: list[dict[str, Any]]) -> None:
    body = {"version": VERSION, "stack": stack, "resources": resources, "kubernetes": kubernetes, "checks": checks}
    (out / FILE).write_text(json.dumps(body, indent=1) + "\n")


class ReportError(ValueError):
    pass


def load(out: pathlib.Path) -> RenderReport:
    """The report a render wrote into ``out``; ReportError when it is missing or not of this version's shape."""
    path = out / FILE
    try:
        body = json.loads(inputs_guard.read_text(path))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: {exc}") from exc
    if not isinstance(body, dict) or body.get("version") != VERSION or not isinstance(body.get("checks"), list):
        raise ReportError(f"{path}: not a version-{VERSION} render report")
    try:
        rows = tuple(
            CheckRow(
                name=str(c["name"]),
                ran=bool(c["ran"]),
                checked=int(c["checked"]),
                what=str(c["what"]),
                problems=tuple(map(str, c["problems"])),
                warnings=tuple(map(str, c["warnings"])),
                reviewed=tuple(map(str, c["reviewed"])),
                note=str(c["note"]),
            )
            for c in body["checks"]
        )
        return RenderReport(str(body["stack"]), int(body["resources"]), str(body["kubernetes"]), rows)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReportError(f"{path}: a check row lacks {exc}") from exc
