"""A rehearsal of the first ``pulumi up`` and of ``pulumi destroy`` on the recorded resource graph.

Reads build/<stack>/resources.yaml (each resource's ``dependsOn``, ``parent`` and ``provider``) and plays it as the
Pulumi engine does:

- ``up``: a resource starts when every resource it waits for is done, all such at once (``pulumi up --parallel``
  defaults to unbounded: ekstrain/contracts/timing.py ``PULUMI_PARALLEL``); each takes its type's creation time
  (ekstrain/contracts/timing.py). A resource waits for its dependencies, its provider and its parent (the SDK
  registers a child once its parent's registration returns, which for a custom resource is after its creation); a
  dependency on a component waits for all the component's descendants (Pulumi docs, resource options ``dependsOn``).
- On the first failure the engine starts nothing new and lets the running steps finish (Pulumi blog, "Continue on
  Error in the Pulumi CLI": "letting already in-flight operations complete, but not starting any new operations").
- ``destroy``: the reverse graph, each resource after everything that waits for it, with its type's deletion time.
  A ``protect``ed resource fails its delete step (pulumi/pulumi pkg/resource/deploy/step.go ``DeleteStep.Apply``:
  "unable to delete resource ... as it is currently marked for protection"); the check runs before the preview
  test, so the destroy's preview already fails and nothing is deleted; with ``--skip-preview`` the engine deletes
  what comes before it and stops there (what this plays). A ``retainOnDelete`` one leaves the
  state and stays in AWS; an EKS cluster with ``deletionProtection`` refuses DeleteCluster (EKS API reference,
  DeleteCluster: InvalidRequestException while deletion protection is enabled). These facts, and what a resource
  left behind keeps costing, are read from ekstrain/contracts/teardown.py (the runbook's teardown table reads the
  same functions).

Failures modelled are graph facts: a dependency that names nothing the stack registers, a cycle, and the teardown
stops above.
"""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ekstrain.contracts import kinds, teardown, timing
from ekstrain.contracts.kinds import FSX_PERSISTENT2_USD_PER_GB_MONTH, MONTHLY_USD
from ekstrain.facts.spend import HOURS_PER_MONTH
from ekstrain.files.yaml_safe import SAFE_LOADER

COMPONENT_PREFIXES = ("ekstrain:", "eks:index:", "pulumi:pulumi:Stack", "kubernetes:yaml/v2:ConfigGroup")


@dataclass
class Node:
    key: str
    type: str
    name: str
    custom: bool
    protect: bool = False
    retain: bool = False
    inputs: Mapping[str, Any] = field(default_factory=dict)
    parent: str = ""
    waits: set[str] = field(default_factory=set)
    """Keys this node's creation waits for (dependencies, provider, parent), components expanded."""
    missing: list[str] = field(default_factory=list)
    timeouts: Mapping[str, str] = field(default_factory=dict)
    """``customTimeouts`` as recorded (create/update/delete durations such as ``30m``)."""
    index: int = 0
    """Its place in resources.yaml: the order the program registered resources in."""


def key_of(type_token: str, name: str) -> str:
    return f"{type_token}::{name}"


def resolve(
    ref: str, by_name: Mapping[str, Sequence[Node]], want: str = "custom", before: int | None = None
) -> tuple[list[str], bool]:
    """The keys a reference in resources.yaml names, and whether it named anything: a URN
    (``urn:pulumi:<stack>::<project>::<type chain>::<name>``), ``type::name``, or a bare name. A bare name is
    ambiguous when resources share it (a bucket and its policy): only those registered before the referring one
    (index below ``before``) can be meant, since a program can only pass a resource it already constructed; then
    ``want`` picks the custom resources for a dependency, the component for a parent, the provider for a provider;
    when still ambiguous, all of them (waiting for more never starts anything early)."""
    if not ref:
        return [], True
    if ref.startswith("urn:pulumi:"):
        parts = ref.split("::")
        type_token, name = parts[-2].rsplit("$", 1)[-1], parts[-1]
        found = [n.key for n in by_name.get(name, ()) if n.type == type_token]
        return found, bool(found)
    if "::" in ref:
        type_token, name = ref.rsplit("::", 1)
        found = [n.key for n in by_name.get(name, ()) if n.type == type_token]
        return found, bool(found)
    candidates = [n for n in by_name.get(ref, ()) if before is None or n.index < before]
    if not candidates:
        return [], False
    preferred = {
        "custom": [n for n in candidates if n.custom],
        "parent": [n for n in candidates if not n.custom],
        "provider": [n for n in candidates if n.type.startswith("pulumi:providers:")],
    }[want]
    return [n.key for n in (preferred or candidates)], True


def read_graph(rows: Iterable[Mapping[str, Any]]) -> dict[str, Node]:
    """resources.yaml rows -> nodes with their waits resolved."""
    rows = list(rows)
    nodes: dict[str, Node] = {}
    by_name: dict[str, list[Node]] = {}
    for i, r in enumerate(rows):
        t, name = str(r["type"]), str(r["name"])
        custom = not t.startswith(COMPONENT_PREFIXES)
        node = Node(
            key_of(t, name),
            t,
            name,
            custom,
            bool(r.get("protect")),
            bool(r.get("retainOnDelete")),
            r.get("inputs") or {},
            timeouts=dict(r.get("customTimeouts") or {}),
            index=i,
        )
        nodes[node.key] = node
        by_name.setdefault(name, []).append(node)
    for r in rows:
        node = nodes[key_of(str(r["type"]), str(r["name"]))]
        parents, _ = resolve(str(r.get("parent") or ""), by_name, "parent", node.index)
        node.parent = parents[0] if parents else ""
        for ref, want in [(d, "custom") for d in r.get("dependsOn") or []] + [
            (str(r.get("provider") or ""), "provider")
        ]:
            keys, found = resolve(str(ref), by_name, want, node.index)
            if not found:
                node.missing.append(str(ref))
            node.waits.update(k for k in keys if k != node.key)
        if node.parent:
            node.waits.add(node.parent)
    return nodes


def descendants(nodes: Mapping[str, Node]) -> dict[str, set[str]]:
    children: dict[str, set[str]] = {}
    for n in nodes.values():
        if n.parent:
            children.setdefault(n.parent, set()).add(n.key)
    out: dict[str, set[str]] = {}

    def walk(k: str) -> set[str]:
        if k not in out:
            out[k] = set()
            for c in children.get(k, ()):
                out[k] |= {c} | walk(c)
        return out[k]

    for k in nodes:
        walk(k)
    return out


def expanded_waits(nodes: Mapping[str, Node]) -> dict[str, set[str]]:
    """Each node's waits with a component dependency replaced by its descendants (not for the node's own parent
    chain: a child registers under a component that is not done until the child is)."""
    desc = descendants(nodes)
    out: dict[str, set[str]] = {}
    for n in nodes.values():
        waits: set[str] = set()
        for w in n.waits:
            target = nodes[w]
            waits.add(w)
            if not target.custom and w != n.parent and n.key not in desc[w]:
                waits |= {d for d in desc[w] if n.key not in desc.get(d, set())}
        out[n.key] = waits - {n.key}
    return out


@dataclass
class Step:
    key: str
    start: float
    end: float


@dataclass
class Play:
    steps: dict[str, Step]
    failed: list[tuple[str, float, str]]
    """(key, when, why): the steps that failed."""
    never_started: list[str]
    cycle: list[str]

    @property
    def end(self) -> float:
        return max((s.end for s in self.steps.values()), default=0.0)


Check = Callable[[str, set[str]], "str | None"]
"""(key, the keys done by the step's start) -> why the step fails then, or None."""


def play(
    order_waits: Mapping[str, set[str]],
    seconds: Mapping[str, float],
    fails: Mapping[str, str],
    check: Check | None = None,
    late: Mapping[str, tuple[float, str]] | None = None,
) -> Play:
    """Event-driven, unbounded parallelism: a step starts when all it waits for ended; a failing step (``fails``,
    or ``check`` answering at its start) ends at its start, one in ``late`` ((seconds after its start, why): a
    create that runs out of its timeout) then; after the first failure nothing new starts (running steps
    finish)."""
    waits = {k: set(v) for k, v in order_waits.items()}
    done_at: dict[str, float] = {}
    steps: dict[str, Step] = {}
    failed: list[tuple[str, float, str]] = []
    stop_at: float | None = None
    remaining = set(waits)
    while remaining:
        ready = [k for k in remaining if all(w in done_at for w in waits[k])]
        if not ready:
            break
        # The next step to start: the one whose waits end first.
        k = min(ready, key=lambda k: (max((done_at[w] for w in waits[k]), default=0.0), k))
        start = max((done_at[w] for w in waits[k]), default=0.0)
        if stop_at is not None and start > stop_at:
            break
        remaining.discard(k)
        why = fails.get(k) or (check(k, {d for d, t in done_at.items() if t <= start}) if check else None)
        if why:
            steps[k] = Step(k, start, start)
            done_at[k] = float("inf")  # never completes: what waits for it never starts
            failed.append((k, start, why))
            stop_at = start if stop_at is None else min(stop_at, start)
            continue
        if late and k in late:
            end = start + late[k][0]
            steps[k] = Step(k, start, end)
            done_at[k] = float("inf")
            failed.append((k, end, late[k][1]))
            stop_at = end if stop_at is None else min(stop_at, end)
            continue
        end = start + seconds.get(k, 0.0)
        steps[k] = Step(k, start, end)
        done_at[k] = end
    failed.sort(key=lambda f: f[1])
    cycle = sorted(remaining) if not failed and remaining else []
    if stop_at is not None:
        # Steps that would have started after the failure did not.
        for k, s in list(steps.items()):
            if s.start > stop_at:
                del steps[k]
                remaining.add(k)
    return Play(steps, failed, sorted(remaining), cycle)


# ---- a kind's deploy contract, played at each step's start (ekstrain/contracts/kinds.py) -----------------------

INITIAL_NAMESPACES = kinds.BUILT_IN_NAMESPACES
LOCAL_COMPONENT_PREFIXES = ("ekstrain:", "pulumi:pulumi:Stack")
"""The program's own components: no API call, no contract (the render's contracts check skips them too)."""
NODE_GROUP_TYPES = ("aws:eks/nodeGroup:NodeGroup", "eks:index:ManagedNodeGroup")
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def namespace_of(node: Node) -> str:
    """The namespace a Kubernetes object (``metadata.namespace``) or a Helm release (``namespace``) goes into."""
    if node.type == RELEASE_TYPE:
        return str(node.inputs.get("namespace") or "")
    return str((node.inputs.get("metadata") or {}).get("namespace") or "")


def crd_group_kind(path: pathlib.Path) -> tuple[str, str] | None:
    """A rendered CRD file's ``spec.group`` and ``spec.names.kind``, read from its head (the files are written
    block-style by the render, and a CRD's schema after them runs to megabytes); the whole file when the head
    does not say."""
    group = kind = ""
    section = ""
    with contextlib.suppress(OSError), path.open() as f:
        for line in f:
            if not line.startswith(" "):
                section = line.strip()
            elif section == "spec:" and line.startswith("  group: "):
                group = line.split(":", 1)[1].strip().strip("'\"")
            elif section == "spec:" and line.startswith("    kind: "):
                kind = line.split(":", 1)[1].strip().strip("'\"")
            elif section == "spec:" and line.startswith("  versions:"):
                break
            if group and kind:
                return group, kind
    with contextlib.suppress(yaml.YAMLError, OSError, AttributeError):
        spec = (yaml.safe_load(path.read_text()) or {}).get("spec") or {}
        if spec.get("group") and (spec.get("names") or {}).get("kind"):
            return str(spec["group"]), str(spec["names"]["kind"])
    return None


def crd_installers(build: pathlib.Path) -> dict[tuple[str, str], str]:
    """(group, kind) -> the Helm release name whose chart, as rendered under build/charts/<group>--<release>/,
    holds the CustomResourceDefinition; a CRD among the program's own manifests maps to ``""`` (applied by the
    program itself, ordered by the render's creation-order check)."""
    out: dict[tuple[str, str], str] = {}
    for where in ("charts", "manifests"):
        for f in sorted((build / where).glob("*/CustomResourceDefinition-*.yaml")):
            found = crd_group_kind(f)
            if found:
                out.setdefault(found, f.parent.name.split("--", 1)[-1] if where == "charts" else "")
    return out


def contract_check(
    nodes: Mapping[str, Node],
    deploy_role_arn: str | None = None,
    flags: frozenset[str] = frozenset(),
    crds: Mapping[tuple[str, str], str] | None = None,
) -> tuple[Check, list[str]]:
    """Each step's kind contract (:func:`ekstrain.contracts.kinds.contract`, the only place the rehearsal reads
    contracts from), played at the step's start. Returns the check and the account steps it took as done.

    A precondition must be reached through the graph (the step waits for it through dependsOn, its provider or its
    parent, transitively): one that is merely done earlier in this play could come later on another day, so it is
    a failure at the step's start, named as a race. The preconditions:

    - ``namespace``: the object's namespace exists (NamespaceLifecycle admission refuses an object in a missing one:
      ``namespaces "<ns>" not found``), made by a Namespace or a Helm release with ``createNamespace``;
    - ``access``: with ``accessConfig.bootstrapClusterCreatorAdminPermissions: false`` the deploy role has no
      Kubernetes permission until its AccessPolicyAssociation exists (EKS User Guide, access entries): that of
      ``deploy_role_arn`` (unchecked when no role is named);
    - ``cluster`` / ``nodes`` / ``after:<type>``: an EKS cluster, a node group, a resource of that type of the stack;
    - ``crd``: the release whose chart holds the kind's CRD (``crds``, from the render's charts; unchecked without);
    - ``step:<name>``: an account step of the runbook (kinds.STEPS), done before the first `up`;
    - ``flag:<key>``: the stack declares, with that key true, a later step done (the render's contract_flags).

    ``parallel=False``: an instance started while another one the graph does not order with it has started (it
    runs, or is done only by chance) fails (the contract's source: the second creation ends FAILED). A type
    with no contract fails at its start: nothing says what it needs first.
    """
    waits = expanded_waits(nodes)
    reach: dict[str, set[str]] = {}

    def ancestors(key: str) -> set[str]:
        if key not in reach:
            reach[key] = set()  # a cycle stops here
            out: set[str] = set()
            for w in waits.get(key, ()):
                out |= {w} | ancestors(w)
            reach[key] = out
        return reach[key]

    by_type: dict[str, set[str]] = {}
    for k, n in nodes.items():
        by_type.setdefault(n.type, set()).add(k)
    makers: dict[str, set[str]] = {}
    for k, n in nodes.items():
        if n.type == "kubernetes:core/v1:Namespace":
            makers.setdefault(str((n.inputs.get("metadata") or {}).get("name") or n.name), set()).add(k)
        elif n.type == RELEASE_TYPE and n.inputs.get("createNamespace"):
            makers.setdefault(namespace_of(n), set()).add(k)
    no_bootstrap = any(
        n.type == "aws:eks/cluster:Cluster"
        and (n.inputs.get("accessConfig") or {}).get("bootstrapClusterCreatorAdminPermissions") is False
        for n in nodes.values()
    )
    access = {
        k
        for k in by_type.get("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", set())
        if deploy_role_arn and nodes[k].inputs.get("principalArn") == deploy_role_arn
    }
    used_providers = {w for n in nodes.values() for w in n.waits if nodes[w].type.startswith("pulumi:providers:")}
    releases = {str(n.inputs.get("name") or n.name): k for k, n in nodes.items() if n.type == RELEASE_TYPE}
    parents = {n.parent for n in nodes.values() if n.parent}
    started: set[str] = set()
    steps_taken: list[str] = []

    def race(targets: set[str], done: set[str], what: str) -> str:
        late = "not done yet" if not targets & done else "done earlier here only by chance (a race)"
        return f"{what} is {late}: nothing makes this step wait for it"

    def refs(keys: set[str]) -> str:
        return ", ".join(sorted(keys)[:3]) + (f" (+{len(keys) - 3})" if len(keys) > 3 else "")

    def precondition(key: str, n: Node, pre: str, done: set[str]) -> str | None:
        before = ancestors(key)
        if pre == kinds.NAMESPACE:
            ns = namespace_of(n)
            made = makers.get(ns, set()) - {key}
            if not ns or ns in INITIAL_NAMESPACES or key in makers.get(ns, set()) or made & before:
                return None
            if not made:
                return f'namespaces "{ns}" not found: nothing in the stack creates it; fix: create the Namespace'
            return (
                f'namespaces "{ns}" not found: '
                + race(made, done, f"its Namespace ({refs(made)})")
                + "; fix: depend on it through dependsOn"
            )
        if pre == kinds.ACCESS:
            if not (no_bootstrap and deploy_role_arn) or (
                n.type.startswith("pulumi:providers:") and key not in used_providers
            ):
                return None
            if not access:
                return (
                    f"the deploy role {deploy_role_arn} has no AccessPolicyAssociation and the cluster does not "
                    "bootstrap its creator's admin permissions; fix: give cluster.deployRoleArn an access entry"
                )
            if access & before:
                return None
            return (
                "Unauthorized: "
                + race(access, done, "the deploy role's AccessPolicyAssociation")
                + f" (bootstrapClusterCreatorAdminPermissions: false); fix: make it depend on {refs(access)} "
                "through dependsOn or its provider"
            )
        if pre in (kinds.CLUSTER, kinds.NODES) or pre.startswith("after:"):
            wanted = (
                ("aws:eks/cluster:Cluster",)
                if pre == kinds.CLUSTER
                else NODE_GROUP_TYPES
                if pre == kinds.NODES
                else (pre.removeprefix("after:"),)
            )
            present = set().union(*(by_type.get(t, set()) for t in wanted)) - {key}
            if not present or present & before:
                return None
            return race(present, done, f"its precondition {pre!r} ({refs(present)})") + ("; fix: pass it in depends_on")
        if pre == kinds.CRD:
            if crds is None:
                return None
            parts = n.type.split(":")
            group, kind = parts[1].split("/", 1)[0], parts[2]
            if (group, kind) not in crds:
                return (
                    f'no matches for kind "{kind}" in group "{group}": no CRD for it in the render; fix: install '
                    "the chart that brings it"
                )
            installer = releases.get(crds[(group, kind)])
            if installer is None or installer in before:
                return None  # the program's own manifest: the render's creation-order check orders it
            return (
                f'no matches for kind "{kind}": '
                + race({installer}, done, f"its CRD's release ({installer})")
                + "; fix: depend on it through dependsOn"
            )
        if pre.startswith("step:"):
            name = pre.removeprefix("step:")
            if name in kinds.STEPS:
                if name not in steps_taken:
                    steps_taken.append(name)
                return None
            return (
                f"its contract names an account step {name!r} the runbook does not document; fix: add it to kinds.STEPS"
            )
        if pre.startswith("flag:"):
            flag_key = pre.removeprefix("flag:")
            if flag_key in flags:
                return None
            c = kinds.contract(n.type)
            later = [
                kinds.STEPS[name]
                for name in (q.removeprefix("step:") for q in (c.preconditions if c else ()) if q.startswith("step:"))
                if name in kinds.STEPS
            ]
            return (
                f"its precondition cannot hold on a first `up`: {'; '.join(later) or (c.note if c else '')} "
                f"(contract: {c.source if c else ''}); fix: leave it out of the first `up`, do the step "
                f"(docs/delivery.md), then set `{flag_key}: true`"
            )
        return None

    def check(key: str, done: set[str]) -> str | None:
        n = nodes[key]
        if n.type.startswith(LOCAL_COMPONENT_PREFIXES):
            return None
        c = kinds.contract(n.type)
        if c is None:
            return (
                f"type {n.type} has no deploy contract: nothing says what it needs first; fix: add its entry "
                "(preconditions, parallel, timeouts, source) to ekstrain/contracts/kinds.py"
            )
        # A component's contract holds for what it creates: its recorded children play their own; one whose
        # objects are not recorded as children (a yaml/v2 ConfigGroup's) plays its contract itself.
        if n.custom or n.type.startswith("pulumi:providers:") or key not in parents:
            for pre in c.preconditions:
                why = precondition(key, n, pre, done)
                if why:
                    return why
        if not c.parallel:
            others = (by_type[n.type] & started) - ancestors(key)
            if others:
                running = others - done
                return (
                    f"{refs(others)} of the same kind "
                    + ("is being created now" if running else "was created earlier here only by chance (a race)")
                    + f", and instances of it must be created one after the other ({c.source}); fix: chain them "
                    "with depends_on"
                )
        started.add(key)
        return None

    return check, steps_taken


def timeout_of(node: Node, op: str = "create") -> tuple[float | None, str]:
    """The timeout the program sets for ``op`` (``customTimeouts.<op>``) in seconds, and where it comes from; a
    contract that names a longer one says the provider's default (in effect when none is set) is too short."""
    c = kinds.contract(node.type)
    need = (c.timeouts if c else {}).get(op, "")
    have = str(node.timeouts.get(op) or "")
    if have and kinds.minutes(have) > 0:
        return kinds.minutes(have) * 60, f"customTimeouts.{op} {have}"
    if need:
        return None, f"the provider default, which its contract says is too short (needs {need})"
    return None, ""


def timeout_failures(nodes: Mapping[str, Node], op: str) -> dict[str, tuple[float, str]]:
    """Steps that run out of their ``op`` timeout: key -> (seconds after the step's start, why).

    The step's duration is timing.py's (``create_s`` / ``delete_s``). One that outlasts the timeout the program sets
    fails when it runs out; one whose contract names a timeout (the provider's default is known to be too short)
    run under the default or a shorter one is reported at its end, naming the timeout to set."""
    out: dict[str, tuple[float, str]] = {}
    for k, n in nodes.items():
        allowed, src = timeout_of(n, op)
        if not src or not n.custom or (op == "delete" and n.retain):
            continue
        d = timing.duration(n.type, n.custom)
        takes = float(d.create_s if op == "create" else d.delete_s)
        c = kinds.contract(n.type)
        need = (c.timeouts if c else {}).get(op, "")
        if allowed is not None and takes > allowed:
            out[k] = (
                allowed,
                f"{op} timed out: it takes {fmt(takes)} ({d.source}) and the program sets {src}; fix: pass "
                f"ResourceOptions(custom_timeouts=CustomTimeouts({op}={need or fmt(takes)!r})) or longer",
            )
        elif need and (allowed is None or allowed < kinds.minutes(need) * 60):
            out[k] = (
                takes,
                f"{op} may time out: it runs under {src} ({c.timeouts_source if c else ''}); fix: pass "
                f"ResourceOptions(custom_timeouts=CustomTimeouts({op}={need!r}))",
            )
    return out


# ---- up --------------------------------------------------------------------------------------------------------


@dataclass
class UpReport:
    play: Play
    nodes: dict[str, Node]
    cluster_active_s: float | None
    first_step_s: float | None
    first_step_parts: list[tuple[str, int, str]]
    family: str = "gpu"
    steps_taken: list[str] = field(default_factory=list)
    """The runbook's account steps (kinds.STEPS) the contracts asked for, taken as done before the `up`."""

    def lines(self) -> list[str]:
        p = self.play
        out = []
        for k, when, why in p.failed:
            out.append(f"FAILS at {fmt(when)} (step {self.wave(k)}): {k}: {why}")
        if p.cycle:
            out.append(f"FAILS: a dependency cycle among {', '.join(p.cycle[:5])}")
        if p.failed or p.cycle:
            done = sum(1 for s in p.steps.values() if s.end <= max((w for _, w, _ in p.failed), default=0.0))
            out.append(
                f"the engine starts nothing new after the failure: {len(p.steps)} started ({done} done by then), "
                f"{len(p.never_started)} never started"
            )
            return out
        if self.steps_taken:
            out.append("assumes the account steps of docs/delivery.md done first: " + ", ".join(self.steps_taken))
        if self.cluster_active_s is not None:
            out.append(f"EKS control plane ACTIVE at {fmt(self.cluster_active_s)}")
        out.append(
            f"UP completes: {len([n for n in self.nodes.values() if n.custom])} resources in {fmt(p.end)} "
            f"(critical path: {' -> '.join(self.critical_path())})"
        )
        if self.first_step_s is not None:
            parts = ", ".join(f"{what} {fmt(s)} ({src})" for what, s, src in self.first_step_parts)
            out.append(
                f"first training step ({self.family} job) at {fmt(self.first_step_s)}: ready cluster {fmt(p.end)} "
                f"+ {parts}"
            )
        return out

    def wave(self, key: str) -> int:
        """How many resources deep ``key`` sits in the graph (1: waits for nothing)."""
        waits = expanded_waits(self.nodes)
        memo: dict[str, int] = {}

        def depth(k: str, seen: frozenset[str] = frozenset()) -> int:
            if k in memo:
                return memo[k]
            if k in seen:
                return 0
            memo[k] = 1 + max((depth(w, seen | {k}) for w in waits.get(k, ())), default=0)
            return memo[k]

        return depth(key)

    def critical_path(self) -> list[str]:
        """The chain of resources (longer than 1 minute) that ends last."""
        waits = expanded_waits(self.nodes)
        steps = self.play.steps
        k = max(steps, key=lambda k: steps[k].end)
        path = [k]
        while True:
            prior = [w for w in waits.get(k, ()) if w in steps and steps[w].end == steps[k].start]
            if not prior:
                break
            k = prior[0]
            path.append(k)
        slow = [p for p in reversed(path) if steps[p].end - steps[p].start >= 60]
        return [
            f"{self.nodes[p].type.rsplit(':', 1)[-1]} {self.nodes[p].name} {fmt(steps[p].end - steps[p].start)}"
            for p in slow
        ] or ["-"]


def fmt(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def up(
    nodes: dict[str, Node],
    family: str = "gpu",
    gated: bool = True,
    deploy_role_arn: str | None = None,
    extra_check: Check | None = None,
    flags: frozenset[str] = frozenset(),
    crds: Mapping[tuple[str, str], str] | None = None,
) -> UpReport:
    """The first ``up``: each step plays its kind's contract (:func:`contract_check`: preconditions, serial kinds)
    at its start, and its creation time (ekstrain/contracts/timing.py) against the create timeout the program sets
    (:func:`timeout_of`); ``extra_check`` adds a check kept elsewhere, asked after the contract's."""
    waits = expanded_waits(nodes)
    seconds = {k: float(timing.duration(n.type, n.custom).create_s) for k, n in nodes.items()}
    fails = {
        k: f"waits for {', '.join(repr(m) for m in n.missing)}, which the stack does not register"
        for k, n in nodes.items()
        if n.missing
    }
    late = timeout_failures(nodes, "create")
    own, steps_taken = contract_check(nodes, deploy_role_arn, flags, crds)

    def check(key: str, done: set[str]) -> str | None:
        return own(key, done) or (extra_check(key, done) if extra_check else None)

    p = play(waits, seconds, fails, check, late)
    clusters = [p.steps[k].end for k, n in nodes.items() if n.type == "aws:eks/cluster:Cluster" and k in p.steps]
    first, parts = None, []
    if not p.failed and not p.cycle:
        parts = [
            ("node launch", timing.node_launch_seconds(family), "simulator: Mix.launch_minutes"),
            *(
                [("health gate", timing.health_gate_seconds(family), "ekstrain/payloads/health_gate.py gate_seconds")]
                if gated
                else []
            ),
            ("image pull", timing.IMAGE_PULL_SECONDS, "ekstrain/layout/cold_start.py pull rate, TRAINING_IMAGE_GIB"),
        ]
        first = p.end + sum(s for _, s, _ in parts)
    return UpReport(p, nodes, max(clusters) if clusters else None, first, parts, family, steps_taken)


# ---- destroy ---------------------------------------------------------------------------------------------------


@dataclass
class DestroyReport:
    play: Play
    nodes: dict[str, Node]
    prices: Mapping[str, float]

    def left(self) -> list[str]:
        """Resources still in AWS afterwards: never deleted, failed, or retained (forgotten, not deleted)."""
        deleted = {k for k in self.play.steps if k not in {f for f, _, _ in self.play.failed}}
        return sorted(
            k
            for k, n in self.nodes.items()
            if n.custom
            and not n.type.startswith(("kubernetes:", "random:", "pulumi:"))
            and (k not in deleted or n.retain)
        )

    def monthly(self, key: str) -> tuple[float | None, str]:
        n = self.nodes[key]
        if n.type in MONTHLY_USD:
            return MONTHLY_USD[n.type]
        if n.type == "aws:fsx/lustreFileSystem:LustreFileSystem":
            tput = int(n.inputs.get("perUnitStorageThroughput") or 0)
            gib = int(n.inputs.get("storageCapacity") or 0)
            rate = FSX_PERSISTENT2_USD_PER_GB_MONTH.get(tput)
            if rate is not None and gib:
                return rate * gib, f"{gib} GiB x ${rate}/GB-month (aws.amazon.com/fsx/lustre/pricing, PERSISTENT_2)"
        if n.type == "aws:eks/nodeGroup:NodeGroup":
            types = list(n.inputs.get("instanceTypes") or [])
            size = int((n.inputs.get("scalingConfig") or {}).get("desiredSize") or 0)
            price = max((self.prices[t] for t in types if t in self.prices), default=None)
            if price is not None and size:
                return price * size * HOURS_PER_MONTH, f"{size} x {types} on-demand (ekstrain/facts/catalog.py)"
            return None, f"{size} x {', '.join(types)}: not in ekstrain/facts/catalog.py's price table"
        per_use = teardown.billed(n.type)
        return None, "" if per_use == "nothing" else per_use

    def lines(self) -> list[str]:
        p = self.play
        out = []
        for k, when, why in p.failed:
            out.append(f"STOPS at {fmt(when)}: {k}: {why}")
        if any(self.nodes[k].protect for k, _, _ in p.failed):
            out.append(
                "  (the destroy's preview already fails on a protected resource, so nothing is deleted; with "
                "--skip-preview the engine deletes as below and stops there)"
            )
        deleted = len([k for k in p.steps if k not in {f for f, _, _ in p.failed}])
        out.append(
            f"DESTROY {'stops' if p.failed else 'completes'} after {fmt(p.end if not p.failed else p.failed[0][1])}: "
            f"{deleted} deleted or forgotten, {len(p.never_started)} not reached"
        )
        total = 0.0
        billed = []
        for k in self.left():
            usd, src = self.monthly(k)
            n = self.nodes[k]
            failed = {f for f, _, _ in p.failed}
            how = (
                "delete refused"
                if k in failed
                else "retained"
                if n.retain and k in p.steps
                else "protected"
                if n.protect
                else "not reached"
            )
            if usd is not None:
                total += usd
                billed.append(f"  ${usd:,.0f}/month  {k} ({how}; {src})")
            elif src:
                billed.append(f"  per use      {k} ({how}; {src})")
        out.append(f"left in AWS: {len(self.left())} resources; billed afterwards (${total:,.0f}/month at least):")
        out += billed
        return out


def unprotected(nodes: Mapping[str, Node]) -> dict[str, Node]:
    """The graph after ``pulumi state unprotect`` of every protected resource (the runbook's step)."""
    import dataclasses

    return {k: dataclasses.replace(n, protect=False) for k, n in nodes.items()}


def destroy(nodes: dict[str, Node], prices: Mapping[str, float] | None = None) -> DestroyReport:
    waits = expanded_waits(nodes)
    # Reverse: a resource is deleted after everything that waited for it.
    rev: dict[str, set[str]] = {k: set() for k in nodes}
    for k, ws in waits.items():
        for w in ws:
            rev[w].add(k)
    seconds = {}
    fails: dict[str, str] = {}
    for k, n in nodes.items():
        d = timing.duration(n.type, n.custom)
        seconds[k] = 0.0 if n.retain else float(d.delete_s)
        refused = teardown.stops(teardown.kept(n.type, n.name, n.protect, n.retain, n.inputs))
        if refused:
            fails[k] = refused[0][1]
    return DestroyReport(play(rev, seconds, fails, late=timeout_failures(nodes, "delete")), nodes, prices or {})


def bare(rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any dependency or parent is a bare name (resources.yaml before it named them exactly)."""
    return any(
        ref and "::" not in str(ref) for r in rows for ref in [*(r.get("dependsOn") or []), r.get("parent") or ""]
    )


def with_exact_refs(rows: list[dict[str, Any]], recorded: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with each parent and dependency replaced by the URN the recording (``ekstrain diff``'s: the program
    under the offline engine, ``Resource.to_dict`` rows) gives the same type and name; rows it lacks stay."""
    exact = {key_of(str(r["type"]), str(r["name"])): r for r in recorded}
    out = []
    for r in rows:
        e = exact.get(key_of(str(r["type"]), str(r["name"])))
        out.append(
            {**r, "parent": e.get("parent") or "", "dependsOn": list(e.get("dependencies") or [])} if e else dict(r)
        )
    return out


def load_rows(build: pathlib.Path) -> list[dict[str, Any]]:
    # libyaml's safe loader where PyYAML has it (the same rows; prod's 1.6 MB take 0.1 s instead of 1.2 s)
    rows = yaml.load((build / "resources.yaml").read_text(), Loader=SAFE_LOADER)
    if not isinstance(rows, list):
        raise ValueError(f"{build}/resources.yaml is not a list of resources")
    return rows


__all__ = [
    "bare",
    "with_exact_refs",
    "DestroyReport",
    "Node",
    "UpReport",
    "destroy",
    "load_rows",
    "read_graph",
    "resolve",
    "up",
]
