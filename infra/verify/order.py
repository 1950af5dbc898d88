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
   when another resource of the stack creates it;
4. (:func:`contracts_check`) every recorded kind has a deploy contract (ekstrain/contracts/kinds.py) and the graph
   meets it: namespaced objects after their Namespace, Kubernetes objects after the deploy role's access
   association, serial kinds chained, the contract's customTimeouts set, every other precondition earlier in the
   graph, an account step of the runbook, or a stack flag that declares a later step done.

:func:`stages` gives the order itself (stage -> resources) for the SUMMARY.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ekstrain.contracts import kinds
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


CONTRACTS_NAME = "deploy contracts: every kind modelled; namespaces, access, serial kinds, timeouts, preconditions"
CLUSTER_TYPE = "aws:eks/cluster:Cluster"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
DEPLOYER_SUFFIX = "-deployer"
"""components/cluster.py names the deploy role's access entry and its association ``<cluster>-deployer``."""
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"


def _namespaces_of(r: offline.Record) -> list[str]:
    """The namespaces a record creates objects in, besides those it creates itself (a release's createNamespace, a
    ConfigGroup's own Namespace objects)."""
    if r.type == RELEASE:
        return [] if r.inputs.get("createNamespace") else [str(r.inputs.get("namespace") or "default")]
    objs = r.inputs.get("objs")
    if isinstance(objs, list):  # yaml/v2 ConfigGroup given objects: each namespaced one in its namespace
        own = {
            str((o.get("metadata") or {}).get("name"))
            for o in objs
            if isinstance(o, dict) and o.get("kind") == "Namespace"
        }
        found = []
        for o in objs:
            if not isinstance(o, dict):
                continue
            api = str(o.get("apiVersion", ""))
            if kinds.namespaced(f"kubernetes:{'core/' + api if '/' not in api else api}:{o.get('kind')}"):
                ns = str((o.get("metadata") or {}).get("namespace") or "default")
                if ns not in own and ns not in found:
                    found.append(ns)
        return found
    metadata = r.inputs.get("metadata")
    return [str((metadata or {}).get("namespace") or "default") if isinstance(metadata, dict) else "default"]


def namespace_creators(rec: offline.Recording) -> dict[str, list[str]]:
    """Namespace name -> URNs of the resources that create it (a Namespace, a release with createNamespace)."""
    out: dict[str, list[str]] = {}
    for r in rec.records:
        if r.type == NAMESPACE_TYPE and isinstance(r.inputs.get("metadata"), dict):
            out.setdefault(str(r.inputs["metadata"].get("name")), []).append(r.urn)
        elif r.type == RELEASE and r.inputs.get("createNamespace"):
            out.setdefault(str(r.inputs.get("namespace")), []).append(r.urn)
    return out


def contracts_check(rec: offline.Recording, graph: Graph, flags: frozenset[str] = frozenset()) -> Check:
    """Every recorded kind has a deploy contract (ekstrain/contracts/kinds.py) and the graph meets it.

    ``flags``: the stack keys set true that declare a later step done (kinds.flag preconditions)."""
    result = Check(CONTRACTS_NAME, what="resources")
    by_type: dict[str, list[offline.Record]] = {}
    for r in graph.records.values():
        by_type.setdefault(r.type, []).append(r)
    creators = namespace_creators(rec)
    clusters = {r.urn for r in by_type.get(CLUSTER_TYPE, [])}
    deployer = {r.urn for r in by_type.get(ASSOCIATION, []) if r.name.endswith(DEPLOYER_SUFFIX)}
    used_providers = {provider_urn(r.provider) for r in graph.records.values() if r.provider}
    types = {t: {r.urn for r in records} for t, records in by_type.items()}
    missing: set[str] = set()
    for urn, r in sorted(graph.records.items()):
        c = kinds.contract(r.type)
        if c is None:
            if r.type not in missing:
                missing.add(r.type)
                result.problems.append(
                    f"{label(r)}: type {r.type} has no deploy contract, so nothing says what it needs before it "
                    "can be created: add its entry (preconditions, parallel, timeouts, source) to "
                    "ekstrain/contracts/kinds.py"
                )
            continue
        result.checked += 1
        before = graph.ancestors(urn)
        for pre in c.preconditions:
            result.problems += _precondition(r, pre, before, creators, clusters, deployer, used_providers, flags, types)
        for op, need in sorted(c.timeouts.items()):
            have = r.custom_timeouts.get(op, "")
            if kinds.minutes(have) < kinds.minutes(need):
                result.problems.append(
                    f"{label(r)} ({r.type}): customTimeouts.{op} is {have or 'the provider default'}, shorter than "
                    f"the {need} its contract needs ({c.timeouts_source}): pass "
                    f"ResourceOptions(custom_timeouts=CustomTimeouts({op}={need!r}))"
                )
    # Kinds that must not be created at the same time: every pair ordered by the graph.
    for type_token, records in sorted(by_type.items()):
        c = kinds.contract(type_token)
        if c is None or c.parallel:
            continue
        ordered = sorted(records, key=lambda x: x.urn)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                if a.urn not in graph.ancestors(b.urn) and b.urn not in graph.ancestors(a.urn):
                    result.problems.append(
                        f"{label(a)} and {label(b)} ({type_token}) may be created at the same time, and instances "
                        f"of this kind must be created one after the other ({c.source}): chain them with "
                        "depends_on"
                    )
    result.note = f"{len(kinds.CONTRACTS)} contracts (ekstrain/contracts/kinds.py)"
    return result


def _precondition(
    r: offline.Record,
    pre: str,
    before: set[str],
    creators: dict[str, list[str]],
    clusters: set[str],
    deployer: set[str],
    used_providers: set[str],
    flags: frozenset[str],
    types: dict[str, set[str]],
) -> list[str]:
    what = f"{label(r)} ({r.type})"
    if pre == kinds.NAMESPACE:
        out = []
        for ns in _namespaces_of(r):
            if ns in kinds.BUILT_IN_NAMESPACES:
                continue
            made_by = [u for u in creators.get(ns, []) if u != r.urn]
            if any(u in before for u in made_by):
                continue
            if not made_by:
                out.append(
                    f"{what} is created in namespace {ns!r}, which no resource of the stack creates: create the "
                    "Namespace in the stack (or the release with createNamespace)"
                )
                continue
            names = ", ".join(u.rsplit("::", 1)[-1] for u in made_by)
            out.append(
                f"{what} in namespace {ns!r} may be created before the namespace exists ({names} creates it): pass "
                "that resource in depends_on (NamespaceLifecycle refuses objects in a missing namespace)"
            )
        return out
    if pre == kinds.ACCESS:
        if r.type.startswith("pulumi:providers:") and r.urn not in used_providers:
            return []
        target = deployer or clusters
        if not target or target & before:
            return []
        first = sorted(target)[0].rsplit("::", 1)[-1]
        if not deployer:
            return [
                f"{what} may reach the API server before the EKS cluster ({first}) whose creator's bootstrap entry "
                "grants the deploy access exists: make it, or its Kubernetes provider, depend on the cluster"
            ]
        return [
            f"{what} may reach the API server before the deploy role's access policy association ({first}) exists:"
            " with bootstrapClusterCreatorAdminPermissions false the role has no Kubernetes permission until then;"
            " make it, or its Kubernetes provider, depend on the association (components/cluster.py)"
        ]
    if pre == kinds.CLUSTER:
        if not clusters or clusters & before:
            return []
        return [
            f"{what} names the EKS cluster by a plain string, with no dependency on it: on a first `up` it is "
            "created while the cluster does not exist yet; pass the cluster in depends_on"
        ]
    if pre.startswith("after:"):
        needed = pre.removeprefix("after:")
        present = types.get(needed, set())
        if not present or present & before:
            return []
        return [f"{what} needs a {needed} first and may be created before it: pass it in depends_on"]
    if pre.startswith("step:"):
        name = pre.removeprefix("step:")
        return [] if name in kinds.STEPS else [f"{what}: its contract names an undocumented step {name!r}"]
    if pre.startswith("flag:"):
        key = pre.removeprefix("flag:")
        if key in flags:
            return []
        return [
            f"{what} needs `{key}: true`, a later step this stack has not declared done (its AWS precondition "
            "cannot hold on a first `up`): remove the resource, or set that key once the step is done "
            "(docs/delivery.md)"
        ]
    return []  # CRD and NODES: the creation-order check above (rules 1 and 2)
