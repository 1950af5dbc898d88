"""Config problems, each naming the key in ``Pulumi.<stack>.yaml`` and how to fix it.

Below every layer (not in stacks/) because the builders in assembly/ raise them too, and importing a builder
must not load the stack models."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    key: str
    """Key path as written in the stack file, e.g. ``ekstrain:partitions[1] (gpu-h100).maxNodes``."""
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.key}: {self.problem}\n    fix: {self.fix}"


class ConfigError(Exception):
    """Raised before any resource registers; its text is the whole report (no traceback needed)."""

    def __init__(self, issues: list[ConfigIssue], source: str = "stack config"):
        self.issues = issues
        self.source = source
        lines = [f"{len(issues)} problem(s) in {source}:"] + [f"  - {i}" for i in issues]
        super().__init__("\n".join(lines))
