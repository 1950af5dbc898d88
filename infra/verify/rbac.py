"""Powerful RBAC grants have a reviewed reason: every ClusterRole and Role the stack applies (its own manifests and
every chart's objects) that grants ``nodes/proxy`` (the kubelet's API: exec, attach and logs of every pod on the
node, Kubernetes RBAC good practices "nodes/proxy"), ``pods/exec`` (a shell in any pod of its scope) or a wildcard
(``*`` verbs, resources or API groups) must be on security/reviewed-rbac-grants.yaml with the component's reason.
An unlisted grant is a problem; a listed one is shown with its reason (tests/infra/test_privilege.py fails on an entry
prod's render no longer needs).
"""

from __future__ import annotations

import fnmatch
import pathlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from ekstrain.files.paths import REVIEWS
from ekstrain.infra.verify import Check

NAME = "RBAC: nodes/proxy, pods/exec and wildcard grants reviewed"
REVIEWED_FILE = REVIEWS / "reviewed-rbac-grants.yaml"
ROLE_KINDS = ("ClusterRole", "Role")
SENSITIVE_RESOURCES = ("nodes/proxy", "pods/exec")


@dataclass(frozen=True)
class Grant:
    source: str
    """The component (the program's manifests) or ``<component>--<release>`` (a chart's objects)."""
    kind: str
    namespace: str
    name: str
    grant: str
    """``nodes/proxy``, ``pods/exec``, ``verbs *``, ``resources *`` or ``apiGroups *``."""

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.source}: {self.kind} {where}{self.name} grants {self.grant}"


@dataclass(frozen=True)
class Reviewed:
    source: str
    kind: str
    name: str
    grant: str
    why: str

    def matches(self, g: Grant) -> bool:
        return (
            fnmatch.fnmatchcase(g.source, self.source)
            and g.kind == self.kind
            and fnmatch.fnmatchcase(g.name, self.name)
            and g.grant == self.grant
        )


def rule_grants(rule: dict[str, Any]) -> Iterator[str]:
    resources = rule.get("resources") or []
    for r in SENSITIVE_RESOURCES:
        if r in resources:
            yield r
    for field in ("verbs", "resources", "apiGroups"):
        if "*" in (rule.get(field) or []):
            yield f"{field} *"


def grants(objects: Iterable[tuple[str, dict[str, Any]]]) -> list[Grant]:
    out = []
    for source, obj in objects:
        if not isinstance(obj, dict) or obj.get("kind") not in ROLE_KINDS:
            continue
        meta = obj.get("metadata") or {}
        for rule in obj.get("rules") or []:
            for g in rule_grants(rule):
                out.append(Grant(source, obj["kind"], meta.get("namespace") or "", meta.get("name") or "", g))
    return sorted(set(out), key=str)


def reviewed(path: pathlib.Path = REVIEWED_FILE) -> list[Reviewed]:
    entries = yaml.safe_load(path.read_text()) if path.is_file() else []
    return [Reviewed(e["source"], e["kind"], e["name"], e["grant"], e["why"]) for e in entries or []]


def check(
    manifests: Iterable[tuple[str, dict[str, Any]]],
    chart_objects: dict[str, list[dict[str, Any]]],
    accepted: list[Reviewed] | None = None,
) -> Check:
    """``manifests``: (component, object) of the program's own objects; ``chart_objects``: release key -> the
    objects helm rendered."""
    accepted = reviewed() if accepted is None else accepted
    objects = [*manifests, *((key, o) for key, objs in chart_objects.items() for o in objs)]
    found = grants(objects)
    out = Check(NAME, checked=sum(1 for _, o in objects if o.get("kind") in ROLE_KINDS), what="roles")
    for g in found:
        entry = next((r for r in accepted if r.matches(g)), None)
        if entry is None:
            out.problems.append(
                f"{g}: no reviewed reason; drop the grant (chart values, or the rule) or list the component's "
                f"reason in security/{REVIEWED_FILE.name}"
            )
        else:
            out.reviewed.append(f"{g}: {entry.why}")
    return out
