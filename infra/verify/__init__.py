"""Checks the offline render runs over what a stack would apply (see infra/render.py).

Each check returns a ``Check``: how many things it looked at, the problems (the render exits
non-zero on any), warnings (reported, not failing: a new one should stand out) and reviewed findings
(accepted in a reviewed file under security/ with a reason: listed, neither failing nor a warning).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Check:
    name: str
    checked: int = 0
    what: str = "objects"
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reviewed: list[str] = field(default_factory=list)
    note: str = ""

    def as_json(self, ran: bool) -> dict[str, Any]:
        """The check as the render's checks.json row (what a CLI or CI tool reads instead of SUMMARY.md)."""
        return {
            "name": self.name,
            "ran": ran,
            "checked": self.checked,
            "what": self.what,
            "problems": list(self.problems),
            "warnings": list(self.warnings),
            "reviewed": list(self.reviewed),
            "note": self.note,
        }
