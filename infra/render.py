"""Offline render: run the real program for a stack under the mock engine and write what it would apply.

    ekstrain render --stack prod --out build/prod        (its flags and printing: ekstrain/cli/render.py)

This is NOT a cloud preview: no AWS or Kubernetes API is called, provider-side defaults and
computed values are fakes (see infra/offline.py). It shows exactly what the program asks for:
every Kubernetes manifest (one file per object, grouped by component), every Helm release with
its chart, version and values, every AWS resource, the partitions with their EFA layout and an
on-demand cost range, and whether each manifest validates against the pinned upstream schemas.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import importlib.util
import itertools
import json
import pathlib
import re
import runpy
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import yaml

from ekstrain.assembly import cost
from ekstrain.assembly.schedulers.slurm import standing_nodes
from ekstrain.contracts import kinds
from ekstrain.facts import catalog, compat, names, versions
from ekstrain.files.paths import helm_fix, upstream_fix
from ekstrain.infra import offline, replay, report, summary_md
from ekstrain.infra.verify import (
    Check,
    aws_rules,
    chart_values,
    charts,
    emitted,
    everywhere,
    iam,
    images,
    imports,
    noop_edit,
    order,
    pins,
    policy,
    protected,
    rbac,
    relations,
    requests,
    sdk_schema,
    secrets,
    tfplan,
)
from ekstrain.layout import storage_sizing
from ekstrain.layout.partitions import layout_nodes, shape
from ekstrain.pages import render_page
from ekstrain.payloads import argocd
from ekstrain.stacks import capacity_rules, loop_rules, rules
from ekstrain.stacks.loader import SECRET_PLACEHOLDER
from ekstrain.stacks.models import StackConfig
from ekstrain.tooling import lock, lock_policy, validation

HERE = pathlib.Path(__file__).resolve().parent
BANNER = "OFFLINE RENDER (Pulumi mock engine): not a cloud preview. Nothing was sent to AWS or Kubernetes."
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
NOT_RUN = f"upstream schemas not found ({upstream_fix()}): NOT checked"
NOT_RUN_HELM = f"helm not found ({helm_fix()}): NOT checked"
"""A check that needs helm when there is none: "did not run", as without the upstream files (not a failure, and
not one problem per check that follows from it)."""
NOT_RUN_NOTES = (NOT_RUN, NOT_RUN_HELM)
NOT_MANIFESTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")
RENDER_DEPENDENCIES = {
    "kubernetes_validate": "kubernetes-validate",
    "jsonschema": "jsonschema",
    "policy_sentry": "policy-sentry",
}
"""Import name -> distribution of what only the render's checks need (the ``render`` extra of pyproject.toml)."""


def missing_render_dependencies() -> list[str]:
    return [dist for module, dist in RENDER_DEPENDENCIES.items() if importlib.util.find_spec(module) is None]


def run_program(flat: dict[str, str], secrets: list[str], stack: str, preview: bool = False) -> offline.Recording:
    """Execute infra/__main__.py under fresh offline mocks."""
    main = HERE / "__main__.py"
    return offline.run(
        lambda: runpy.run_path(str(main), run_name="__main__")["OUTPUTS"], flat, secrets, stack=stack, preview=preview
    )


def manifest_of(record: offline.Record) -> dict[str, Any]:
    obj = {k: v for k, v in offline.plain(record.inputs).items() if k not in ("id",)}
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("name", f"{record.name}-<auto>")
    obj["metadata"] = meta
    return obj


def manifests(recording: offline.Recording) -> list[tuple[str, dict[str, Any]]]:
    """(component group, manifest) for every Kubernetes object the program declares, including the objects a
    yaml/v2 ConfigGroup holds inline (``objs``; the provider registers them as its children, which the mock
    engine never sees)."""
    out = []
    for r in recording.records:
        if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith(NOT_MANIFESTS):
            out.append((recording.top_component(r).name, manifest_of(r)))
        elif r.type == "kubernetes:yaml/v2:ConfigGroup":
            for obj in offline.plain(r.inputs).get("objs") or []:
                out.append((recording.top_component(r).name, dict(obj)))
    return out


def helm_releases(recording: offline.Recording) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for r in recording.of_type("kubernetes:helm.sh/v3:Release"):
        keep = (
            "name",
            "chart",
            "version",
            "namespace",
            "repositoryOpts",
            "createNamespace",
            "values",
            "skipCrds",
            "atomic",
            "timeout",
            "waitForJobs",
        )
        out.append((recording.top_component(r).name, {k: offline.plain(r.inputs[k]) for k in keep if k in r.inputs}))
    return out


def _file_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{obj.get('kind', 'Object')}-{ns + '-' if ns else ''}{meta.get('name')}.yaml".replace("/", "_")


def partition_rows(cfg: StackConfig) -> list[dict[str, Any]]:
    """One row per partition; accelerators and EFA per instance type, NodePools with their node limits."""
    rows = []
    for p in cfg.partitions:
        s = shape(p.name, p.accelerator, p.instance_types, p.efa)
        lo, hi = catalog.price_range(p.instance_types)
        pools = layout_nodes(s, p.max_nodes)
        standing = standing_nodes(cfg, p.name)
        rows.append(
            {
                "partition": p.name,
                "instanceTypes": ",".join(p.instance_types),
                "capacity": p.capacity_type,
                "nodes": f"{p.min_nodes}-{p.max_nodes}",
                "acceleratorsPerNode": ",".join(
                    f"{t.name.split('.')[0]}:{t.accelerator_count}x{t.accelerator.model}" for t in s.instance_types
                ),
                "maxAccelerators": s.accelerators_per_node * p.max_nodes,
                "efa": ",".join(f"{t.name.split('.')[0]}:{s.efa_for(t.name)}" for t in s.instance_types),
                "nodePools": ",".join(f"{layout.name}({n})" for layout, n in pools),
                "placementGroup": ",".join(
                    names.placement_group_name(cfg.cluster.name, layout.name) for layout, _ in pools
                )
                if p.wants_placement_group
                else "-",
                "usdPerHourAtMax": "n/a"
                if lo is None or hi is None
                else (f"{lo * p.max_nodes:,.0f}" if lo == hi else f"{lo * p.max_nodes:,.0f}-{hi * p.max_nodes:,.0f}"),
                # slurmd pods hold whole nodes whether or not Slurm has work (schedulers.slurm.nodesetReplicas);
                # Karpenter launches the cheapest type that fits, so the low price is the idle cost.
                "slurmAlwaysOn": "-"
                if not standing
                else f"{standing}" + ("" if lo is None else f"(${lo * standing:,.0f}/h)"),
            }
        )
    return rows


def storage_lines(cfg: StackConfig) -> list[str]:
    """FSx/EFS at a glance and the checkpoint save time (ekstrain/layout/storage_sizing.py model)."""
    st = cfg.storage
    fsx = st.fsx
    lines = [f"- protect: {st.protect} (protect + retainOnDelete on buckets, FSx, DRAs, EFS, KMS keys)"]
    if not fsx.enabled:
        lines.append("- FSx for Lustre: disabled")
    else:
        tier = storage_sizing.per_unit_throughput(fsx.deployment_type, fsx.per_unit_storage_throughput)
        mbps = storage_sizing.throughput_mb_s(
            fsx.deployment_type, fsx.storage_capacity_gib, fsx.per_unit_storage_throughput
        )
        lines.append(
            f"- FSx for Lustre: {fsx.deployment_type} {fsx.storage_capacity_gib} GiB @ {tier} MB/s/TiB = "
            f"{mbps:,.0f} MB/s baseline; DRAs {fsx.data_path} <- datasets (import "
            f"{','.join(fsx.auto_import_events) or 'off'}), {fsx.checkpoint_path} -> checkpoints (export "
            f"{','.join(fsx.auto_export_events) or 'off'})"
        )
        ck = st.checkpoint
        if ck.size_gib is None:
            lines.append("- checkpoint save time: no ekstrain:storage.checkpoint.sizeGiB configured")
        else:
            result = storage_sizing.report(
                storage_sizing.gib_to_bytes(ck.size_gib),
                ck.target_save_seconds,
                fsx.deployment_type,
                fsx.storage_capacity_gib,
                fsx.per_unit_storage_throughput,
            )
            lines.append(f"- checkpoint save time: {result.summary()}")
            lines.append("  (baseline throughput, writers not the bottleneck, no burst/cache, MB = 10^6 B)")
    lines += loop_rules.rotation_lines(cfg)
    lines.append(f"- EFS model store: {'enabled, ' + st.efs.throughput_mode if st.efs.enabled else 'disabled'}")
    return lines


def table(rows: list[dict[str, Any]], legend: dict[str, str] | None = None) -> str:
    """A GitHub-flavoured Markdown table, with a legend of its columns (infra/summary_md.py)."""
    return summary_md.table(rows, legend)


def chart_releases(recording: offline.Recording) -> list[charts.Release]:
    return [charts.Release.from_inputs(group, rel) for group, rel in helm_releases(recording)]


_PROGRESS_LOCK = threading.Lock()


def stderr_progress(line: str) -> None:
    """The default ``progress`` of write(): one line per render stage on stderr (stdout stays the summary). One
    write per line under a lock: the helm renders report from worker threads, and ``print`` writes the text and
    its newline apart, so two threads' lines could glue together."""
    with _PROGRESS_LOCK:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class Stages:
    """Times the stages of the checks and reports each through ``progress`` as ``[3/3] checks: <stage>: 1.23s``."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - started
            self.progress(f"[3/3] checks: {name}: {self.seconds[name]:.2f}s")


NOOP_CHECK = "helm values: keys that change the output"
LOCK_STALE = f"{lock.LOCK_NAME} is not current"


class NoopLock:
    """The no-op check's side of ekstrain.lock.json for one render: which releases the lock answered, and at the
    end what ``check``/``write``/``use`` do with the answers (ekstrain/tooling/lock.py)."""

    def __init__(self, the_lock: lock.Lock | None, mode: str) -> None:
        self.lock, self.mode = the_lock, mode
        self.keys: dict[str, tuple[str, lock.Entry]] = {}  # release key -> (answer key, entry without its answer)
        self.answered = 0
        self.edited: list[str] = []  # releases answered from a recorded answer for other sizes (noop_edit.py)
        self.whole: list[str] = []  # of those, the ones whose changed keys answered otherwise: computed whole

    def start(self, release: charts.Release, kube_version: str, apis: set[str]) -> tuple[str, ...] | None:
        """The lock's answer for ``release`` when the mode takes answers from it; None: compute it."""
        key = charts.noop_key(release, kube_version, apis)
        made_of = noop_edit.made_of(release, kube_version, apis)
        self.keys[release.key] = (
            key,
            lock.Entry(release.key, f"{release.chart_name} {release.version}", (), **made_of),
        )
        answer = self.lock.answer(key) if self.lock is not None and self.mode == "use" else None
        self.answered += answer is not None
        return answer

    def edit_of(self, release: charts.Release) -> Callable[[charts.Release, str, set[str]], list[str]] | None:
        """After :meth:`start` found no answer: how to answer ``release`` from a recorded answer for values that
        differ only in sizes or counts (``--lock use`` only; infra/verify/noop_edit.py); None: no such answer."""
        if self.lock is None or self.mode != "use":
            return None
        found = self.lock.derivable(self.keys[release.key][1])
        if found is None:
            return None
        old, changed = found
        self.edited.append(f"{release.key} ({', '.join(changed)})")

        def answer(r: charts.Release, kv: str, apis: set[str]) -> list[str]:
            kept = noop_edit.kept_answer(r, kv, apis, old.noop, changed, dict(old.sizes))
            if kept is not None:
                return kept
            self.whole.append(r.key)  # a changed key answered otherwise: the whole check
            return charts.noop_leaves(r, kv, apis)

        return answer

    def finish(
        self, stack: str, checks: list[Check], results: dict[str, list[str]], progress: Callable[[str], None]
    ) -> None:
        noop_check = next((c for c in checks if c.name == NOOP_CHECK), None)
        if self.lock is None or noop_check is None or not self.keys:
            return
        if set(self.keys) - set(results):  # a release did not render: its answer is unknown, the lock is left alone
            return
        answers = {key: dataclasses.replace(entry, noop=tuple(results[rel])) for rel, (key, entry) in self.keys.items()}
        name = self.lock.path.name
        computed = len(answers) - self.answered - len(self.edited)
        if self.mode == "check":
            # what fails CI: a contradicted answer, a chart or helm change, not a values edit
            # (ekstrain/tooling/lock_policy.py)
            stale, notes = lock_policy.check(self.lock.stacks.get(stack, {}), answers)
            if notes:
                progress(lock_policy.note_line(notes))
            noop_check.problems += [
                f"{LOCK_STALE} for stack {stack}: {d}; run {lock.write_command(stack)} and commit it" for d in stale
            ]
            if not stale:
                progress(f"[3/3] {name}: current for stack {stack} (every answer computed and compared)")
        elif self.mode == "write":
            if self.lock.differences(stack, answers) or not self.lock.path.exists():
                self.lock.with_stack(stack, answers).save()
                progress(f"[3/3] {name}: recorded {len(answers)} answers for stack {stack} in {self.lock.path}")
            else:
                progress(f"[3/3] {name}: already current for stack {stack}")
        # On stderr, not in SUMMARY.md: the files of a --lock use and a --lock check render are the same (they share
        # a replay entry, infra/replay.py).
        if self.answered:
            progress(f"[3/3] {NOOP_CHECK}: {self.answered} of {len(answers)} releases answered by {name}")
        if self.edited:
            whole = f"; computed whole: {', '.join(sorted(self.whole))}" if self.whole else ""
            progress(
                f"[3/3] {NOOP_CHECK}: {len(self.edited)} release(s) whose sizes or counts changed: the changed keys "
                f"checked again, the rest of {name}'s answer kept when they answer as before "
                f"({'; '.join(self.edited)}){whole}; --lock check computes them whole"
            )
        if self.mode == "use" and computed > 0 and answers:
            progress(
                f"[3/3] {name}: {computed} of {len(answers)} releases were checked now (not recorded for these "
                f"values); {lock.write_command(stack)} records them, so that the next fresh clone skips their renders"
            )


def run_checks(
    out: pathlib.Path,
    objs: list[tuple[str, dict[str, Any]]],
    rec: offline.Recording,
    cfg: StackConfig,
    stack: str,
    order_rows: list[dict[str, Any]] | None = None,
    progress: Callable[[str], None] = stderr_progress,
    lock_mode: str = lock.DEFAULT_MODE,
) -> tuple[list[Check], int]:
    """Every check of the render, and the number of chart-rendered objects written under out/charts.
    ``order_rows`` receives the creation stages (infra/verify/order.py) when the charts were rendered;
    ``progress`` a line per stage with its seconds; ``lock_mode`` how ekstrain.lock.json answers the no-op
    values check (ekstrain/tooling/lock.py).

    The no-op values check is mostly helm processes: it runs in threads beside every other check (helm takes a
    core of its own while Python checks on the other)."""
    releases = chart_releases(rec)
    kv = cfg.cluster.kubernetes_version
    started = time.perf_counter()
    finished = itertools.count(1)
    noop: dict[str, concurrent.futures.Future[list[str]]] = {}
    locked = NoopLock(lock.load() if lock_mode != "ignore" else None, lock_mode)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(releases))) as pool:

        def start_noop(r: charts.Release, apis: set[str]) -> None:
            answer = locked.start(r, kv, apis)
            if answer is not None:
                noop[r.key] = concurrent.futures.Future()
                noop[r.key].set_result(list(answer))
            else:
                noop[r.key] = pool.submit(locked.edit_of(r) or charts.noop_leaves, r, kv, apis)
            noop[r.key].add_done_callback(
                lambda _f: progress(
                    f"[3/3] checks: {NOOP_CHECK}: {next(finished)}/{len(releases)} releases "
                    f"({time.perf_counter() - started:.1f}s)"
                )
            )

        try:
            checks, written = _run_checks(
                out, objs, rec, cfg, stack, order_rows, Stages(progress), releases, noop, start_noop
            )
            answered = {k: f.result() for k, f in noop.items() if f.done() and not f.exception()}
            locked.finish(stack, checks, answered, progress)
            return checks, written
        finally:
            for fut in noop.values():
                fut.cancel()


# The checks that read only the program's recording (no upstream files, no helm): they always run. Adding one is
# a row here (CONTRIBUTING.md, "add a render check"); its Check lands in SUMMARY.md and checks.json.
RECORDING_CHECKS: tuple[tuple[str, Callable[[offline.Recording, str], Check]], ...] = (
    ("pulumi-eks children", lambda rec, stack: relations.eks_children(rec)),
    ("SDK input types", lambda rec, stack: sdk_schema.check_recording(rec)),
    ("IAM lint", lambda rec, stack: iam.check_recording(rec)),
    ("AWS create-time rules", lambda rec, stack: aws_rules.check_recording(rec)),
    ("policy pack", policy.check_recording),
    ("credentials", lambda rec, stack: secrets.check_recording(rec)),
    ("imports", lambda rec, stack: imports.check_recording(rec)),
    ("protected data", lambda rec, stack: protected.check_recording(rec)),
    ("pins", lambda rec, stack: pins.check_recording(rec)),
)


def _run_checks(
    out: pathlib.Path,
    objs: list[tuple[str, dict[str, Any]]],
    rec: offline.Recording,
    cfg: StackConfig,
    stack: str,
    order_rows: list[dict[str, Any]] | None,
    stages: Stages,
    releases: list[charts.Release],
    noop: dict[str, concurrent.futures.Future[list[str]]],
    start_noop: Callable[[charts.Release, set[str]], None],
) -> tuple[list[Check], int]:
    noop_started = time.perf_counter()
    kv = cfg.cluster.kubernetes_version
    manifests_check = Check("kubernetes manifests: upstream schemas", len(objs))
    values_check = Check("helm values: keys in the chart's values.yaml", what="releases")
    render_check = Check("helm template: every release renders", what="releases")
    chart_check = Check("chart objects: upstream schemas + chart CRDs")
    noop_check = Check(NOOP_CHECK, what="releases")
    entries_check = Check("helm values: templated entries (slurm nodesets/loginsets), strict", what="entries")
    checks = [manifests_check, values_check, entries_check, render_check, chart_check, noop_check]
    if validation.upstream_dir() is not None and charts.helm_binary() is not None:
        # A chart that never asks .Capabilities.APIVersions renders the same whatever CRDs the stack installs:
        # its check starts now, beside the AWS checks and the charts' first render.
        for r in releases:
            if charts.asks_capabilities(r) is False:
                start_noop(r, set())
    aws_checks = []
    for name, check_of in RECORDING_CHECKS:
        with stages.stage(name):
            aws_checks.append(check_of(rec, stack))
    root = validation.upstream_dir()
    missing = validation.upstream_missing(root) if root is not None else []
    no_helm = charts.helm_binary() is None
    if root is None or missing or no_helm:
        checks += [Check(name) for name in relations.CHECK_NAMES]
        for c in checks:
            c.note = NOT_RUN if root is None or missing else NOT_RUN_HELM
        if missing:
            # A partial directory (a fetch that failed midway) and no complete one: name what it lacks.
            files = Check("upstream files: every pinned file present", len(validation.required_upstream_files()))
            shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            files.problems.append(f"{root} lacks {len(missing)} pinned file(s): {shown}; fix: {upstream_fix()}")
            aws_checks.append(files)
        return checks + aws_checks, 0
    render_check.checked = values_check.checked = noop_check.checked = len(releases)
    with stages.stage(f"helm template of {len(releases)} releases"):
        crd_manifests = [o for _, o in objs if o.get("kind") == "CustomResourceDefinition"]
        rendered = charts.render_all(
            releases,
            kv,
            crd_manifests,
            lambda done, total: stages.progress(f"[3/3] checks: helm template {done}/{total} releases"),
        )
        render_check.problems += rendered.problems
    for r in releases:
        if r.key in rendered.objects and r.key not in noop:
            start_noop(r, charts.apis_for(r, rendered.api_versions))
    with stages.stage("write charts/"):
        written = charts.write(out, rendered)
    manifests = [o for _, o in objs]
    with stages.stage(manifests_check.name):
        manifests_check.problems += cached_problems(
            "manifest-validation",
            [kv, sorted(rendered.digests.items()), canonical(manifests)],
            lambda: [p for o in manifests for p in validation.validate_object(o, kv, rendered.crds)],
            cacheable=set(rendered.digests) == set(rendered.objects),
        )
    by_chart = {c.chart: c for c in (cfg.versions.chart(n) for n in versions.DEFAULT_CHARTS)}
    with stages.stage("helm values: keys and templated entries"):
        for _, rel in helm_releases(rec):
            chart = by_chart.get(str(rel.get("chart")))
            if chart and chart.upstream_dir:
                for key in validation.unknown_value_keys(
                    rel.get("values") or {}, validation.chart_defaults(chart.upstream_dir)
                ):
                    values_check.problems.append(
                        f"helm release {rel.get('name')}: values key {key!r} is not in {chart.upstream_dir}/values.yaml"
                    )
                # Below a map that is empty upstream the key check sees nothing: each entry against its template.
                values = rel.get("values") or {}
                entries_check.checked += len(chart_values.templated_entries(chart.upstream_dir, values))
                entries_check.problems += [
                    f"helm release {rel.get('name')}: {p}"
                    for p in cached_problems(
                        "values-entries",
                        [chart.upstream_dir, kv, values],
                        functools.partial(chart_values.entry_problems, chart.upstream_dir, values, kv),
                    )
                ]
    with stages.stage("references, admission, creation order"):
        relation_checks, graph = relations.run(rec, rendered, manifest_of)
    checks += relation_checks
    # Every recorded kind against its deploy contract (ekstrain/contracts/kinds.py); the flags a stack sets to
    # declare a later step done.
    checks.append(order.contracts_check(rec, graph, contract_flags(cfg)))
    if order_rows is not None:
        order_rows.extend(order.stage_rows(graph))
    applied = [*manifests, *(o for objects in rendered.objects.values() for o in objects)]
    checks.append(requests.check(applied))
    checks.append(images.check(applied))
    checks.append(rbac.check(objs, rendered.objects))
    if cfg.logging.enabled:
        checks.append(everywhere.check(rec, [o for objects in rendered.objects.values() for o in objects]))
    chart_check.checked = sum(len(o) for o in rendered.objects.values())
    with stages.stage(chart_check.name):
        chart_check.problems += validate_chart_objects(rendered, kv)
    for r in releases:
        if r.key in rendered.objects:
            for key in noop[r.key].result():
                noop_check.warnings.append(
                    f"helm release {r.key}: values key {key!r} changes nothing in the "
                    "rendered objects (misplaced, or the chart's default anyway)"
                )
    stages.seconds[noop_check.name] = time.perf_counter() - noop_started
    stages.progress(
        f"[3/3] checks: {noop_check.name} (beside the checks above): {stages.seconds[noop_check.name]:.2f}s"
    )
    return checks + aws_checks, written


def contract_flags(cfg: StackConfig) -> frozenset[str]:
    """Stack keys set true that declare an out-of-stack step done (``kinds.flag`` preconditions)."""
    return frozenset({kinds.COST_TAGS_FLAG} if cfg.cost.activate_cost_allocation_tags else ())


def canonical(objects: list[dict[str, Any]]) -> list[str]:
    """Objects as cache-key material: registration order varies between runs (the engine is asynchronous)."""
    return sorted(json.dumps(o, sort_keys=True, default=str) for o in objects)


def cached_problems(name: str, inputs: Any, compute: Callable[[], list[str]], cacheable: bool = True) -> list[str]:
    """``compute()``, cached on disk on everything its answer depends on: ``inputs`` (JSON), the upstream
    schemas and the checkers' code (cache_dir). A warm render then needs no JSON-schema validator at all."""
    if not cacheable:
        return compute()
    key = hashlib.sha256(json.dumps([name, validation.schemas_digest(), inputs], sort_keys=True, default=str).encode())
    return validation.cached(  # a cache entry of another shape is recomputed (ekstrain/tooling/validation.py)
        f"{name}-{key.hexdigest()[:40]}",
        compute,
        valid=lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v),
    )


def validate_chart_objects(rendered: charts.Rendered, kv: str) -> list[str]:
    """Problems of every chart-rendered object. The objects are a function of the render digests, so the
    answer is cached on them and on the schemas (a warm render skips re-validating unchanged charts)."""

    def validate() -> list[str]:
        return [
            f"{key}: {p}"
            for key, objs in sorted(rendered.objects.items())
            for obj in objs
            for p in validation.validate_object(obj, kv, rendered.crds)
        ]

    return cached_problems(
        "chart-validation",
        [kv, sorted(rendered.digests.items())],
        validate,
        cacheable=set(rendered.digests) == set(rendered.objects),
    )


def checks_table(checks: list[Check]) -> str:
    return table(
        [
            {
                "check": c.name,
                "checked": f"{c.checked} {c.what}",
                "problems": len(c.problems),
                "warnings": len(c.warnings),
                "note": "did not run: no upstream files (see NOT VALIDATED)"
                if c.note == NOT_RUN
                else "did not run: no helm (see NOT VALIDATED)"
                if c.note == NOT_RUN_HELM
                else c.note or "-",
            }
            for c in checks
        ],
        summary_md.CHECKS_LEGEND,
    )


def write(
    out: pathlib.Path,
    stack: str,
    cfg: StackConfig,
    warnings: list[str],
    rec: offline.Recording,
    seconds: float,
    progress: Callable[[str], None] = stderr_progress,
    lock_mode: str = lock.DEFAULT_MODE,
) -> tuple[str, list[str]]:
    """Write the render into ``out`` and run every check; ``progress`` gets a line per stage (default: stderr);
    ``lock_mode`` says how ekstrain.lock.json is used (ekstrain/tooling/lock.py)."""
    started = time.perf_counter()
    (out / "manifests").mkdir(parents=True)  # out: a new, empty directory (ekstrain/files/outputs.py replace_dir)
    (out / "helm").mkdir()
    objs = manifests(rec)
    for group, obj in objs:
        d = out / "manifests" / group
        d.mkdir(exist_ok=True)
        # Secret data is written redacted (infra/verify/emitted.py): the render's files are artifacts.
        (d / _file_name(obj)).write_text(yaml.dump(emitted.redact_secret_object(obj), Dumper=_DUMPER, sort_keys=False))
    releases = helm_releases(rec)
    # What the program passed as Pulumi secrets: redacted in the files, left out of the Argo CD Applications.
    release_secrets = [
        [p.removeprefix("values.") for p in r.secret_inputs if p.startswith("values.")]
        for r in rec.of_type("kubernetes:helm.sh/v3:Release")
    ]
    for (group, rel), secret_paths in zip(releases, release_secrets, strict=True):
        written = {**rel, "values": emitted.redact(rel.get("values") or {}, secret_paths)} if secret_paths else rel
        (out / "helm" / f"{group}--{rel.get('name', 'release')}.yaml").write_text(
            yaml.dump(written, Dumper=_DUMPER, sort_keys=False)
        )
    resources = [
        {
            # Every reference is a URN (type chain + name): 51 names of prod are registered more than once (the
            # Cluster component and pulumi-eks's Cluster are both ``cluster``), so a bare name says nothing exact.
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent or "",
            "protect": r.protect,
            "retainOnDelete": r.retain_on_delete,
            # The `import` option's id (None: created): adopting a resource this stack creates is refused
            # (infra/verify/imports.py).
            "import": r.import_id or None,
            # What the engine orders creation by (infra/verify/order.py): dependsOn + input dependencies, provider.
            "dependsOn": sorted(set(r.dependencies)),
            "provider": order.provider_urn(r.provider),
            **({"customTimeouts": dict(r.custom_timeouts)} if r.custom_timeouts else {}),
            **({"registeredBy": "offline engine, as pulumi-eks would"} if r.synthetic else {}),
            "inputs": emitted.redact_secret_object(emitted.redact(offline.plain(r.inputs), r.secret_inputs))
            if r.type == "kubernetes:core/v1:Secret"
            else emitted.redact(offline.plain(r.inputs), r.secret_inputs),
        }
        for r in rec.records
    ]
    (out / "resources.yaml").write_text(yaml.dump(resources, Dumper=_DUMPER, sort_keys=False, default_flow_style=False))
    # The AWS resources as a Terraform plan, for `checkov --framework terraform_plan`
    # (tests/infra/test_gates_checkov.py).
    (out / "aws-plan.json").write_text(json.dumps(tfplan.plan(rec), indent=1, default=str))

    counts = collections.Counter(r.type for r in rec.records if r.custom)
    aws_rows = [{"type": t, "count": n} for t, n in sorted(counts.items()) if not t.startswith("kubernetes:")]
    comp_rows = [
        {"type": t, "count": n}
        for t, n in sorted(collections.Counter(r.type for r in rec.records if not r.custom).items())
    ]
    progress(
        f"[3/3] wrote {len(objs)} manifests, {len(releases)} Helm releases and {len(resources)} resources: "
        f"{time.perf_counter() - started:.2f}s"
    )
    order_rows: list[dict[str, Any]] = []
    checks, chart_objects = run_checks(out, objs, rec, cfg, stack, order_rows, progress, lock_mode)
    # Applications carry no secret value: the release's secret values are left out (the chart references a Secret
    # the program creates instead, e.g. JupyterHub's hub.existingSecret; docs/platform.md).
    unsecret = [
        {**rel, "values": emitted.redact(rel.get("values") or {}, paths, remove=True)} if paths else rel
        for (_, rel), paths in zip(releases, release_secrets, strict=True)
    ]
    apps = argocd.applications(unsecret) if cfg.delivery.argocd else []
    if apps:
        # ekstrain:delivery.argocd: one Application per Helm release, for a GitOps repository.
        apps_check = Check("argo cd applications: upstream schemas", len(apps))
        (out / "argocd").mkdir()
        for app in apps:
            (out / "argocd" / _file_name(app)).write_text(yaml.safe_dump(app, sort_keys=False))
        if validation.upstream_dir() is not None:
            kv = cfg.cluster.kubernetes_version
            apps_check.problems += cached_problems(
                "argocd-validation", [kv, apps], lambda: [p for a in apps for p in validation.validate_object(a, kv)]
            )
        checks.append(apps_check)
    # Every file written so far, scanned for secret values (the stack's secure: values as the program saw them,
    # everything it marked secret, literal credentials).
    secret_values = {SECRET_PLACEHOLDER} | {
        str(v) for r in rec.records for v in _values_at(offline.plain(r.inputs), r.secret_inputs) if isinstance(v, str)
    }
    checks.append(emitted.scan(out, secret_values))
    problems = [p for c in checks for p in c.problems]
    unchecked = [c.name for c in checks if c.note in NOT_RUN_NOTES]
    not_run_why = next((c.note for c in checks if c.note in NOT_RUN_NOTES), NOT_RUN).removesuffix(": NOT checked")
    # Masked: what the program marked secret, and any output named as a credential (offline fakes included).
    exported = summary_md.mask(dict(rec.outputs or {}), secret_values)
    budget = cost.monthly_limit_usd(cfg) if cfg.cost.enabled else None
    kms_keys = sum(1 for r in rec.records if r.type == "aws:kms/key:Key")
    standing = [(p.name, standing_nodes(cfg, p.name), catalog.price_range(p.instance_types)[0]) for p in cfg.partitions]
    kube_line = f"{len(objs)} manifests, {len(releases)} Helm releases rendering {chart_objects} objects"
    summary = "\n".join(
        [
            f"# {BANNER}",
            "",
            f"stack: {stack} · cluster: {cfg.cluster.name} · region: {cfg.region} · "
            f"kubernetes: {cfg.cluster.kubernetes_version} · rendered in {seconds:.2f}s",
            "",
            *(
                [
                    f"## NOT VALIDATED: {len(unchecked)} of {len(checks)} checks did not run",
                    "",
                    f"Why: {not_run_why}.",
                    "",
                    *(f"- {name}" for name in unchecked),
                    "",
                ]
                if unchecked
                else []
            ),
            "## Warnings",
            "",
            *(f"- {w}" for w in warnings or ["none"]),
            "",
            "## Support calendar",
            *compat.calendar_lines(cfg.cluster.kubernetes_version, dt.date.today(), rules.compat_pins(cfg)),
            "",
            "## Partitions",
            "",
            f"On-demand list prices as of {catalog.PRICES_AS_OF}; {catalog.PRICES_SOURCE}",
            "",
            table(partition_rows(cfg), summary_md.PARTITION_LEGEND),
            *summary_md.cost_lines(cfg, budget, standing, kms_keys),
            "## Storage",
            "",
            *storage_lines(cfg),
            *capacity_rules.summary_lines(cfg),
            "",
            "## Components",
            "",
            table(comp_rows, summary_md.COUNT_LEGEND),
            "## Cloud resources by type (custom resources)",
            "",
            table(aws_rows, summary_md.COUNT_LEGEND),
            f"## Kubernetes: {kube_line} (charts/<component>--<release>/)"
            + (f", {len(apps)} Argo CD Applications in argocd/" if apps else ""),
            "",
            *(
                f"- helm {rel.get('name')}: {rel.get('chart')} {rel.get('version')} (ns {rel.get('namespace')})"
                for _, rel in releases
            ),
            "",
            *image_lines(checks),
            "## Creation order (first `pulumi up`: what the dependency graph lets the engine create in each stage)",
            "",
            table(order_rows, summary_md.ORDER_LEGEND)
            if order_rows
            else "(not computed: the charts were not rendered)\n",
            "## Compatibility of the pinned components (ekstrain/facts/compat.py: each bound with its source)",
            "",
            table(compat.summary_rows(rules.compat_pins(cfg)), summary_md.COMPAT_LEGEND),
            "",
            "## Checks",
            "",
            checks_table(checks),
            (
                f"{len(problems)} problem(s)"
                if problems
                else f"{len(unchecked)} check(s) did not run: nothing is claimed valid against the upstream schemas"
                if unchecked
                else f"all {len(objs)} manifests, {chart_objects} chart-rendered objects and {len(releases)} "
                "Helm values documents valid against the pinned upstream schemas (CRDs; kubernetes-validate "
                "strict; chart values)"
            ),
            *(f"- {c.name}: {p}" for c in checks for p in c.problems),
            *(f"- warning: {w}" for c in checks for w in c.warnings),
            *(f"- reviewed: {w}" for c in checks for w in c.reviewed),
            "",
            "## Stack outputs (offline fakes for computed values)",
            "```",
            json.dumps(exported, indent=2, default=str),
            "```",
            "",
        ]
    )
    (out / "SUMMARY.md").write_text(summary)
    report.write(
        out,
        stack,
        len(rec.records),
        kube_line,
        [c.as_json(ran=c.note not in NOT_RUN_NOTES) for c in checks],
    )
    render_page.write(out, stack, cfg, rec, checks, order_rows, partition_rows(cfg))  # index.html (ekstrain/pages)
    notes = {c.name: c.note for c in checks}
    return summary, problems + [f"{name}: {notes[name]}" for name in unchecked]


def _values_at(value: Any, paths: Iterable[str]) -> Iterator[Any]:
    """The values at dotted paths (``values.hub.cookieSecret``, ``keys[0]``) of ``value``."""
    for path in paths:
        node: Any = value
        for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
            try:
                node = node[int(index)] if index else node[name]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if node is not None:
            yield from (node.values() if isinstance(node, dict) else [node])


def image_lines(checks: list[Check]) -> list[str]:
    """SUMMARY.md's "Images" section: every image the stack runs, by registry (infra/verify/images.py)."""
    rows = next((c.rows for c in checks if isinstance(c, images.ImagesCheck)), None)
    if rows is None:
        return []
    registries = sorted({r["registry"] for r in rows})
    return [
        f"## Images: {len(rows)} images from {len(registries)} registries ({', '.join(registries)})",
        "",
        table(
            [{k: r[k] for k in ("registry", "image", "pull policy", "objects", "first")} for r in rows],
            summary_md.IMAGES_LEGEND,
        ),
    ]


def reads_crd_schemas(cfg: StackConfig) -> bool:
    """Whether the render's checks read the upstream CRD schemas: those that need helm and every pinned file
    (manifests and chart objects, :func:`_run_checks`) and the Argo CD Applications' (:func:`write`). Without
    either none runs, so no process parses the CRDs (a render before `ekstrain upstream helm` spared ~2 CPU-s)."""
    root = validation.upstream_dir()
    complete = root is not None and not validation.upstream_missing(root)
    return (complete and charts.helm_binary() is not None) or cfg.delivery.argocd


def render_or_replay(
    stack_file: pathlib.Path,
    stack: str,
    preview: bool,
    flat: dict[str, str],
    secrets: list[str],
    cfg: StackConfig,
    warnings: list[str],
    out: pathlib.Path,
    progress: Callable[[str], None] = stderr_progress,
    lock_mode: str = lock.DEFAULT_MODE,
    final: pathlib.Path | None = None,
) -> tuple[str, list[str], int]:
    """Run the program and write(); or, when nothing the render reads has changed since a render stored in the
    cache, write that render's files again (infra/replay.py). Returns (summary, problems, resources registered)
    either way. ``final``: where ``out`` (a staging directory) will be, for the progress lines."""
    shown = final or out
    key = replay.key(stack, stack_file, preview, lock_mode) if replay.enabled() else None
    started = time.perf_counter()
    if key is not None:
        replayed = replay.load(key, out, checked=lock_mode == "check")
        if replayed is not None:
            for warning in warnings:  # what the program logs as it starts (infra/__main__.py)
                progress(warning)
            progress(
                f"[2/3] nothing the render reads has changed: replayed the stored render ({replayed.resources} "
                f"resources; program ran in {replayed.seconds:.2f}s then) from the cache (EKSTRAIN_REPLAY=0: run it)"
            )
            progress(f"[3/3] wrote {shown} in {time.perf_counter() - started:.2f}s")
            return replayed.summary, replayed.problems, replayed.resources
        reads = replay.start(out)
    if reads_crd_schemas(cfg):
        validation.prewarm_crd_schemas()  # on the other core while the program runs
    rec = run_program(flat, secrets, stack, preview=preview)
    seconds = time.perf_counter() - started
    progress(f"[2/3] program ran offline: {len(rec.records)} resources registered in {seconds:.2f}s")
    summary, problems = write(out, stack, cfg, warnings, rec, seconds, progress, lock_mode)
    progress(f"[3/3] wrote and checked {shown} in {time.perf_counter() - started - seconds:.2f}s")
    if key is not None and not (lock_mode == "check" and any(p.startswith(LOCK_STALE) for p in problems)):
        # A failed lock check is not stored: a --lock use render of the same inputs would not fail.
        replay.save(key, reads, out, summary, problems, len(rec.records), seconds, checked=lock_mode == "check")
    return summary, problems, len(rec.records)
