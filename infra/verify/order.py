"""Creation order: what a real engine does with the dependency graph the program gives it.

The engine creates a resource once every resource it depends on exists: its ``dependsOn``, the
resources whose outputs feed its inputs (the SDK sends both as ``dependencies``) and its provider.
Nothing else orders creation, so on the first `pulumi up` from an empty account anything the graph does
not order runs at the same time. This module rebuilds that graph from the recording and checks:

1. every custom resource is created after its CRD and after the admission webhook that serves it
   (otherwise the API server answers "no matches for kind" or "failed calling webhook" and the `up` fails);
2. every Helm release or manifest whose objects must run pods before the wait ends (Deployments,
   StatefulSets, Jobs: Helm's ``--wait`` and Pulumi's await) is created after the system node group
   (before it there is no node to run them; the wait times out);
3. every Secret, ConfigMap, claim, account or class a release or manifest reads is created before it,
   when another resource of the stack creates it.

:func:`stages` gives the order itself (stage -> resources) for the SUMMARY.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ekstrain.infra import offline
from ekstrain.infra.verify import Check
from ekstrain.infra.verify.pods import Inventory, PodTemplate, describe, ref
from ekstrain.infra.verify.references import pod_references

NAME = "creation order: CRDs, webhooks, nodes, read objects first"
NODE_GROUP = "eks:index:ManagedNodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
BUILT_IN_GROUPS = frozenset({"core", "apps", "batch", "policy", "autoscaling"})
WAITED_KINDS = frozenset({"Deployment", "StatefulSet", "Job"})
TEMPLATE_ONLY_KINDS = frozenset({"ClusterTrainingRuntime", "TrainingRuntime", "JobTemplate"})
"""Objects holding pod templates that start no pod when applied (a TrainJob or vcjob uses them later)."""
"""Kinds whose readiness Helm --wait and Pulumi's await need running pods for (a DaemonSet with no
matching node is ready at zero pods)."""


def provider_urn(reference: str) -> str:
    """``urn:pulumi:...::name::id`` (a provider reference) -> the provider's URN."""
    return reference.rsplit("::", 1)[0] if reference else ""


def type_group_kind(type_token: str) -> tuple[str, str] | None:
    """``kubernetes:karpenter.sh/v1:NodePool`` -> (``karpenter.sh``, ``NodePool``); None for non-Kubernetes."""
    parts = type_token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    return parts[1].split("/", 1)[0], parts[2]


def built_in_group(group: str) -> bool:
    return group in BUILT_IN_GROUPS or group.endswith(".k8s.io")


@dataclass
class Graph:
    """Creation dependencies between the recorded resources (local components are not nodes)."""

    records: dict[str, offline.Record]
    deps: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, rec: offline.Recording) -> Graph:
        nodes = {r.urn: r for r in rec.records if r.custom or r.remote}
        graph = cls(nodes)
        for r in nodes.values():
            direct = set(r.dependencies)
            if r.provider:
                direct.add(provider_urn(r.provider))
            graph.deps[r.urn] = {d for d in direct if d in nodes and d != r.urn}
        # A remote component resolves its outputs once its provider has created every child: whatever depends on
        # it (its kubeconfig, its depends_on) waits for all of them.
        children: dict[str, list[str]] = {}
        for r in rec.records:
            children.setdefault(r.parent, []).append(r.urn)
        for r in nodes.values():
            if r.remote:
                below, frontier = set(), list(children.get(r.urn, ()))
                while frontier:
                    u = frontier.pop()
                    if u not in below:
                        below.add(u)
                        frontier.extend(children.get(u, ()))
                graph.deps[r.urn] |= {u for u in below if u in nodes}
        return graph

    def ancestors(self, urn: str) -> set[str]:
        seen: set[str] = set()
        stack = list(self.deps.get(urn, ()))
        while stack:
            u = stack.pop()
            if u not in seen:
                seen.add(u)
                stack.extend(self.deps.get(u, ()))
        return seen

    def stages(self) -> list[list[str]]:
        """Resources by the earliest stage the engine can create them in (longest dependency chain)."""
        level: dict[str, int] = {}

        def depth(urn: str, trail: frozenset[str] = frozenset()) -> int:
            if urn in level:
                return level[urn]
            if urn in trail:  # the SDK refuses cycles; never loop on a malformed recording
                return 0
            parents = self.deps.get(urn, set())
            level[urn] = 0 if not parents else 1 + max(depth(p, trail | {urn}) for p in parents)
            return level[urn]

        for urn in self.records:
            depth(urn)
        out: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
        for urn, n in level.items():
            out[n].append(urn)
        return [sorted(s) for s in out]


def label(r: offline.Record) -> str:
    return f"{r.type.rsplit(':', 1)[-1]} {r.name}"


@dataclass
class Applied:
    """One resource of the recording and the Kubernetes objects it applies (a manifest, or a release's)."""

    urn: str
    objects: list[dict[str, Any]]
    templates: list[PodTemplate]
    waits: bool


def check(
    rec: offline.Recording, applied: list[Applied], inventory: Inventory, creators: dict[tuple[str, str, str], str]
) -> tuple[Check, Graph]:
    """``creators``: object -> URN of the resource that creates it (manifest or release)."""
    result = Check(NAME, what="resources")
    graph = Graph.of(rec)
    crds: dict[tuple[str, str], tuple[str, str]] = {}  # (group, kind) -> (installer URN, plural)
    webhooks: list[tuple[str, dict[str, Any]]] = []  # (installer URN, rule)
    for installer in applied:
        for obj in installer.objects:
            if obj.get("kind") == "CustomResourceDefinition":
                spec = obj.get("spec") or {}
                names = spec.get("names") or {}
                crds.setdefault(
                    (spec.get("group", ""), names.get("kind", "")), (installer.urn, names.get("plural", ""))
                )
            if obj.get("kind") in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
                for hook in obj.get("webhooks") or []:
                    if hook.get("failurePolicy", "Fail") == "Fail":
                        for rule in hook.get("rules") or []:
                            webhooks.append((installer.urn, rule))
    node_groups = [r.urn for r in graph.records.values() if r.type == NODE_GROUP]
    by_urn = {a.urn: a for a in applied}
    for urn, r in graph.records.items():
        result.checked += 1
        before = graph.ancestors(urn)
        gk = type_group_kind(r.type)
        a = by_urn.get(urn)
        # 1. CRD and webhook first (custom resources the program applies itself).
        if gk and not r.type.startswith("kubernetes:helm.sh/") and gk[1] != "Provider":
            group, kind = gk
            if not built_in_group(group) and group not in ("yaml", "kustomize"):
                crd = crds.get((group, kind))
                if crd is None:
                    result.problems.append(
                        f"{label(r)} is a {group} {kind} but no CRD for it is in the stack: install the chart or "
                        "manifest that brings the CRD"
                    )
                elif crd[0] not in before:
                    result.problems.append(
                        f"{label(r)} may be created before its CRD ({label(graph.records[crd[0]])}): pass that "
                        "resource in depends_on (components/deps.py)"
                    )
                plural = crd[1] if crd else ""
                for hook_urn, rule in webhooks:
                    if hook_urn != urn and hook_urn not in before and _rule_matches(rule, group, plural):
                        result.problems.append(
                            f"{label(r)} may be created before the admission webhook that serves {group}/{plural} "
                            f"({label(graph.records[hook_urn])}) is up: depend on it"
                        )
        if a is None:
            continue
        # 2. Pods need nodes before the wait ends.
        if a.waits and node_groups and not any(n in before for n in node_groups):
            kinds = sorted({str(o.get("kind")) for o in a.objects if o.get("kind") in WAITED_KINDS})
            result.problems.append(
                f"{label(r)} waits for {', '.join(kinds)} pods but does not depend on the system node group: on a "
                "first `up` its wait runs while the nodes are still being created; depend on the cluster component"
            )
        # 3. What it reads exists first (pods started by this apply; a runtime's template runs only with a job).
        for t in a.templates:
            if t.kind in TEMPLATE_ONLY_KINDS:
                continue
            for target, where in pod_references(t):
                creator = creators.get(target)
                if creator and creator != urn and creator not in before and creator in graph.records:
                    result.problems.append(
                        f"{label(r)}: {t.owner} {where} reads {describe(target)}, created by "
                        f"{label(graph.records[creator])} with no dependency between them; depend on it"
                    )
    return result, graph


def _rule_matches(rule: dict[str, Any], group: str, plural: str) -> bool:
    operations = rule.get("operations") or ["*"]
    if not any(op in ("*", "CREATE") for op in operations):
        return False
    groups = rule.get("apiGroups") or [""]
    resources = rule.get("resources") or []
    return any(fnmatch.fnmatchcase(group, g) for g in groups) and any(
        res == "*" or res == plural or fnmatch.fnmatchcase(plural, res) for res in resources
    )


def stage_rows(graph: Graph, limit: int = 8) -> list[dict[str, Any]]:
    rows = []
    for n, urns in enumerate(graph.stages()):
        names = [label(graph.records[u]) for u in urns]
        shown = ", ".join(names[:limit]) + (f", ... (+{len(names) - limit})" if len(names) > limit else "")
        rows.append({"stage": n, "resources": len(urns), "created": shown})
    return rows


def creators_of(applied: Iterable[Applied]) -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for a in applied:
        for obj in a.objects:
            out.setdefault(ref(obj), a.urn)
    return out
