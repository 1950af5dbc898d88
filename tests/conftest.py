"""Shared test harness: every Pulumi test runs on fresh strict offline mocks (infra/offline.py).

- ``run_program(fn)`` runs ``fn`` (which registers resources and returns outputs) under new
  mocks and returns the Recording: exact types, names, inputs, parents, protect flags.
- ``stack_sections(name)`` gives a stack file's config as StackConfig sections, to mutate
  into the bad configs that config tests need.
"""

from __future__ import annotations

import ast
import copy
import datetime as dt
import fnmatch
import functools
import gc
import importlib.util
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from support import shared
from support.renders import Renders, serialise_renders

from ekstrain.infra import offline
from ekstrain.infra.program import build
from ekstrain.stacks.loader import load_flat, parse, read_stack_file, sections_from_flat
from ekstrain.stacks.models import StackConfig
from ekstrain.tooling import validation

REPO = pathlib.Path(__file__).resolve().parent.parent
# Test modules live in folders mirroring the code (scripts/tests_layout.py) and import each other's helpers by module
# name (`from test_jobs_templates import spec_for`): every folder is on sys.path, whichever module is collected first.
for _folder in sorted(REPO.joinpath("tests").iterdir()):
    if (
        _folder.is_dir()
        and _folder.name not in ("support", "data", "library_program", "__pycache__")
        and (str(_folder) not in sys.path)
    ):
        sys.path.append(str(_folder))
# render_cli.main() (ekstrain/cli/render.py) replays a stored render when nothing it reads has changed
# (infra/replay.py): the many tests that render prod or dev with the same inputs share one render. A test that
# patches the program or a check (Python objects, which the replay key cannot see) and then calls render_cli.main()
# sets EKSTRAIN_REPLAY=0 first.
# Property tests without settings of their own run 50 examples (hypothesis' default is 100) and no deadline (a loaded
# machine misses any); a test's own @settings still wins, and HYPOTHESIS_PROFILE=deep runs each without the bound.
settings.register_profile("suite", max_examples=50, deadline=None)
settings.register_profile("deep", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

# The cyclic garbage collector took ~40 % of the CPU of a program run under the mocks (two prod runs: 1.7 of 4.1 s,
# perf: gc_collect_main): with the default thresholds (700, 10, 10) it walks the ~350k objects of the SDK modules
# imported above again and again. Those live for the whole session, so they are frozen out of its walks
# (gc.freeze, https://docs.python.org/3/library/gc.html#gc.freeze), and it collects after 50k allocations instead of
# 700: two prod runs take 2.5 s, the process ~10 MB more. Cycles are still collected; no test depends on when.
gc.freeze()
gc.set_threshold(50_000, 20, 20)


def _parse_without_finalizers(real: Callable[..., Any]) -> Callable[..., Any]:
    """``ast.parse`` with the cyclic collector paused. CPython 3.11 keeps the AST constructor's recursion count per
    interpreter, so a parse that runs inside another (a finalizer run by a collection while a big tree is built:
    asyncio's "Future exception was never retrieved" log of a failed mock run formats a traceback, and 3.11's
    traceback module parses the source line for its carets) fails the outer one with ``SystemError: AST constructor
    recursion depth mismatch`` (python/cpython#106905, pytest-dev/pytest#10763). The tests parse every module."""

    @functools.wraps(real)
    def parse(*args: Any, **kwargs: Any) -> Any:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return real(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return parse


ast.parse = _parse_without_finalizers(ast.parse)

# the simulator's fixtures (prod_build, cluster), shared by every module that simulates against prod; the planner's
# leave-one-source-out validation (left_out)
pytest_plugins = ["support.simulate", "support.planner"]
STACK_FILES = sorted(p for p in REPO.glob("Pulumi.*.yaml"))
STACK_NAMES = [p.name.split(".")[1] for p in STACK_FILES]


def run_program(program: Callable[[], Any], region: str = "us-west-2", preview: bool = False) -> offline.Recording:
    return offline.run(program, {"aws:region": region}, preview=preview)


@functools.cache
def _shipped_stack_file(name: str, stamp: tuple[int, int]) -> tuple[dict[str, str], list[str]]:
    return read_stack_file(REPO / f"Pulumi.{name}.yaml")


def shipped_stack_file(name: str) -> tuple[dict[str, str], list[str]]:
    """``read_stack_file`` of a shipped stack file, read once per process while the file is unchanged (~15 ms of YAML
    a read; the config helpers below are called a few hundred times a run). A fresh copy each call: values are str."""
    stat = (REPO / f"Pulumi.{name}.yaml").stat()
    flat, secrets = _shipped_stack_file(name, (stat.st_mtime_ns, stat.st_size))
    return dict(flat), list(secrets)


def stack_sections(name: str) -> dict[str, Any]:
    """A shipped stack file's sections, a fresh copy to change."""
    return copy.deepcopy(_shipped_sections(name))


@functools.cache
def _shipped_sections(name: str) -> dict[str, Any]:
    """Read once per process: the corpora and the edit tests start hundreds of cases from the same file (reading and
    checking its YAML each time was most of their time); every caller gets a deep copy."""
    flat, _ = shipped_stack_file(name)
    sections, unknown = sections_from_flat(flat)
    assert not unknown
    return sections


def stack_config(name: str) -> StackConfig:
    flat, _ = shipped_stack_file(name)
    return load_flat(flat, name)[0]


def cfg_with(change: Callable[[dict[str, Any]], None], stack: str = "prod") -> StackConfig:
    """A stack file's config with ``change`` applied to its sections (validated as of 2026-12-03)."""
    sections = stack_sections(stack)
    change(sections)
    return parse(sections, "test", today=dt.date(2026, 12, 3))[0]


def releases(rec: offline.Recording) -> dict[str, Any]:
    """Helm releases of a recording by release name."""
    return {r.inputs["name"]: r for r in rec.of_type("kubernetes:helm.sh/v3:Release")}


needs_upstream = pytest.mark.skipif(
    validation.upstream_dir() is None, reason="upstream schemas absent: run `make fetch-upstream`"
)


def run_stack(cfg: StackConfig, preview: bool = False) -> offline.Recording:
    return run_program(lambda: build(cfg), cfg.region, preview)


@pytest.fixture
def prod_sections() -> dict[str, Any]:
    return stack_sections("prod")


@pytest.fixture
def dev_sections() -> dict[str, Any]:
    return stack_sections("dev")


@pytest.fixture(scope="session")
def prod_recording(tmp_path_factory: pytest.TempPathFactory) -> offline.Recording:
    """The prod stack run once offline (once per session, its workers share it); tests read it, never mutate it."""
    return shared.once(tmp_path_factory, "recording-prod", lambda: run_stack(stack_config("prod")))


@pytest.fixture(scope="session")
def dev_recording(tmp_path_factory: pytest.TempPathFactory) -> offline.Recording:
    return shared.once(tmp_path_factory, "recording-dev", lambda: run_stack(stack_config("dev")))


serialise_renders()  # two workers rendering the same inputs: the second replays the first's render


@pytest.fixture(scope="session")
def renders(tmp_path_factory: pytest.TempPathFactory) -> Renders:
    """The session's renders of the shipped stacks (tests/support/renders.py): ``renders("prod")`` is the
    directory of one `ekstrain render --stack prod`, shared by every test that reads it."""
    return Renders(tmp_path_factory.mktemp)


@pytest.fixture(scope="session")
def prod_rendered(prod_recording: offline.Recording) -> Any:
    """Every prod release rendered by the real `helm template` as the render renders them (its Kubernetes version,
    the program's CRDs beside the charts': ekstrain/infra/render.py), so the render's cache entries serve it; built
    once for the session. Read it, never mutate it."""
    from ekstrain.infra import render
    from ekstrain.infra.verify import charts

    crds = [o for _, o in render.manifests(prod_recording) if o.get("kind") == "CustomResourceDefinition"]
    kube_version = stack_config("prod").cluster.kubernetes_version
    return charts.render_all(render.chart_releases(prod_recording), kube_version, crds)


def shipped_recording(request: pytest.FixtureRequest, stack: str) -> offline.Recording:
    """A shipped stack's recording, read-only: the session's for prod and dev, else run now."""
    if stack in ("prod", "dev"):
        recording: offline.Recording = request.getfixturevalue(f"{stack}_recording")
        return recording
    return run_stack(stack_config(stack))


__all__ = [
    "cfg_with",
    "needs_upstream",
    "parse",
    "releases",
    "run_program",
    "run_stack",
    "stack_config",
    "shipped_recording",
    "stack_sections",
    "STACK_NAMES",
    "REPO",
]


# ---- no silent skips ------------------------------------------------------------------------------
ALLOWED_SKIPS = REPO / "tests" / "allowed-skips.txt"


MISSING = "only while missing: "


def allowed_skips(text: str | None = None) -> list[str]:
    """Patterns of tests/allowed-skips.txt (``pattern -- why [-- only while missing: PATH]``). A line with a
    condition allows the skip only while PATH (relative to the checkout) does not exist: a clone without
    ../shared beside it may skip what needs ../shared/tools, CI (which has it) may not."""
    patterns = []
    for line in (ALLOWED_SKIPS.read_text() if text is None else text).splitlines():
        fields = [f.strip() for f in line.split(" -- ")]
        if not fields[0] or fields[0].startswith("#"):
            continue
        conditions = [f.removeprefix(MISSING) for f in fields[2:] if f.startswith(MISSING)]
        if all(not (REPO / c).exists() for c in conditions):
            patterns.append(fields[0])
    return patterns


def unexpected_skips(nodeids: list[str], allowed: list[str]) -> list[str]:
    return [n for n in nodeids if not any(fnmatch.fnmatchcase(n, pattern) for pattern in allowed)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under `make test` (EKSTRAIN_NO_SKIPS=1, as CI runs it) a skipped test fails the run unless it is in
    tests/allowed-skips.txt: a skip there means a missing install step, and CI would stay green without it."""
    if os.environ.get("EKSTRAIN_NO_SKIPS") != "1":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = [r.nodeid for r in (reporter.stats.get("skipped", []) if reporter else [])]
    bad = unexpected_skips(skipped, allowed_skips())
    if bad:
        lines = "\n".join(f"  {n}" for n in bad)
        print(
            f"\nerror: {len(bad)} test(s) skipped that CI must run (fix the install step, or list them with a "
            f"reason in tests/allowed-skips.txt):\n{lines}"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


LONGEST_FIRST = (
    # Tests that take 5 s or more from a clean clone (pytest --durations=0, 2 workers), started first: a long test
    # that starts last leaves the other worker idle for its length. Order only; every test still runs.
    "tests/infra/test_render.py::test_stack_renders_and_validates",
    "tests/infra/test_lifecycle_first_up.py",
    "tests/infra/test_gates_checkov.py",
    "tests/infra/test_render_lock.py",
    "tests/infra/test_render.py::test_a_finding_of_any_check_fails_the_render",
    "tests/test_wheel_flow.py",
    "tests/test_real_eks.py",
    "tests/test_plain_clone.py",
    "tests/test_fetch_upstream.py",
    "tests/test_upstream_lookup.py",
    "tests/test_bad_input_corpus.py",
    "tests/cli/test_cli.py::test_GIVEN_a_render",
    "tests/infra/test_verify_charts.py",
    "tests/test_library_wheel.py",
    "tests/stacks/test_fuzz_stack.py",
    "tests/planner/test_bands.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the LONGEST_FIRST tests first, in that order (a stable sort keeps every other test where it was)."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)), len(LONGEST_FIRST))

    items.sort(key=rank)
    _apply_markers(items)


def _apply_markers(items: list[pytest.Item]) -> None:
    """slow, needs_helm and browser from tests/support/markers.py: what `make unit` leaves out."""
    markers = _markers_module()
    table = {"browser": markers.BROWSER, "needs_helm": markers.NEEDS_HELM, "slow": markers.SLOW}
    for item in items:
        module = item.nodeid.split("::")[0]
        for name, entries in table.items():
            if module in entries or any(item.nodeid.startswith(e) for e in entries if "::" in e):
                item.add_marker(getattr(pytest.mark, name))
        # a test that reads a render (or the simulator's prod build) renders with helm, wherever it lives
        if set(getattr(item, "fixturenames", ())) & markers.RENDER_FIXTURES:
            item.add_marker(pytest.mark.needs_helm)


@functools.cache
def _markers_module() -> Any:
    """tests/support/markers.py, loaded by path (once: collection asks for every module): a pytest started elsewhere
    with this conftest as a plugin has no `tests` package."""
    spec = importlib.util.spec_from_file_location("ekstrain_test_markers", REPO / "tests" / "support" / "markers.py")
    assert spec is not None and spec.loader is not None
    markers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(markers)
    return markers


def pytest_ignore_collect(collection_path: pathlib.Path, config: pytest.Config) -> bool | None:
    """Under a -m that leaves out a whole module's marker (`make unit`: not slow, needs_helm, browser), the module is
    not imported at all: every test of it would be deselected after collection, and importing the heavy modules is
    most of what such a run would spend. Decided only when the expression is false whatever any other marker is."""
    expression = config.getoption("markexpr", "")
    if not expression or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    from _pytest.mark.expression import Expression

    markers = _markers_module()
    module = collection_path.resolve().relative_to(REPO).as_posix()
    table = {"browser": markers.BROWSER, "needs_helm": markers.NEEDS_HELM, "slow": markers.SLOW}
    own = {name for name, entries in table.items() if module in entries}
    if not own:
        return None
    compiled = Expression.compile(expression)
    if any(
        compiled.evaluate(lambda name, d=default: name in own or (name not in table and d)) for default in (True, False)
    ):
        return None
    return True
