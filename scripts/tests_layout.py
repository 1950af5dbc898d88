"""Put each test module in the folder of tests/ that mirrors the code it tests, and follow every reference to it.

    python -m scripts.tests_layout            # move (git mv) and rewrite references
    python -m scripts.tests_layout --check    # exit 1 naming each module not where LAYOUT puts it

LAYOUT maps test-module name patterns (fnmatch, first match wins) to a folder of tests/; a module no pattern names
stays in tests/ (the package's ground floor: facts, helpers, render tooling). It can be run again at any time: a
module already in its folder stays, a new one matching a pattern moves. After a move, every text file git tracks
that names ``tests/test_<name>.py`` (markers, LONGEST_FIRST, allowed skips, docs, comments) names its new place, and a
moved module's paths built from ``__file__`` gain the level it went down. Test modules still import each other by
module name (``from test_jobs_templates import spec_for``): tests/conftest.py puts every folder on sys.path.
"""

from __future__ import annotations

import argparse
import fnmatch
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"

LAYOUT: tuple[tuple[str, tuple[str, ...]], ...] = (
    # the simulator (ekstrain/simulate/)
    (
        "simulate",
        (
            "test_simulate*.py",
            "test_slurm_gangs.py",
            "test_capacity_windows.py",
            "test_capacity_example.py",
            "test_notebooks_start.py",
            "test_topology.py",
            "test_teams.py",
        ),
    ),
    # the parallelism planner (ekstrain/planner/)
    ("planner", ("test_framework_true_plans.py",)),
    # the command line (cli/)
    ("cli", ("test_cli*.py", "test_subprocess_values.py", "test_write_guard.py", "test_first_contact.py")),
    # the render, its checks and the deploy rehearsals (infra/, infra/verify/)
    (
        "infra",
        (
            "test_render*.py",
            "test_verify_*.py",
            "test_summary_md.py",
            "test_lifecycle_*.py",
            "test_offline_engine.py",
            "test_relations.py",
            "test_gates_*.py",
            "test_deploy_policy.py",
            "test_deployable.py",
            "test_privilege.py",
        ),
    ),
    # stack files, their models and rules (stacks/)
    ("stacks", ("test_stack_*.py", "test_config.py", "test_fuzz_stack*.py", "test_names_validation.py")),
    # the Pulumi components (components/)
    (
        "components",
        (
            "test_component_*.py",
            "test_compute_*.py",
            "test_storage_components.py",
            "test_storage_scratch.py",
            "test_cluster.py",
            "test_network.py",
            "test_existing_vpc.py",
            "test_argocd.py",
            "test_jupyterhub.py",
            "test_health_gate.py",
            "test_node_health.py",
        ),
    ),
    # payloads built from stack config: jobs, schedulers, logs, alerts (assembly/)
    (
        "assembly",
        (
            "test_jobs_*.py",
            "test_schedulers_*.py",
            "test_elastic_slurm.py",
            "test_alerts.py",
            "test_observability.py",
            "test_logs_*.py",
            "test_one_ledger.py",
        ),
    ),
    # the pages (ekstrain/pages/)
    ("pages", ("test_pages*.py", "test_architecture_svg.py")),
    # ekstrain diff and upgrades (ekstrain/diff/)
    ("diff", ("test_diff*.py", "test_upgrade.py")),
)
"""Folder of tests/ -> patterns of the test modules it holds."""

HELPERS = {"test_jobs_support": "support.jobs"}
"""Helper modules moved out of test modules into tests/support/: an import of the old name is rewritten."""

NOT_TESTS = {"support", "data", "library_program", "__pycache__"}
"""Folders of tests/ that hold no test modules of a room."""


def folder_of(name: str) -> str | None:
    """The folder LAYOUT puts a test module named ``name`` in (None: tests/ itself)."""
    return next((folder for folder, patterns in LAYOUT if any(fnmatch.fnmatch(name, p) for p in patterns)), None)


def test_modules() -> list[pathlib.Path]:
    """Every test module of tests/ and its room folders (not support/, data/, ...)."""
    found = sorted(TESTS.glob("test_*.py"))
    for folder in sorted(p for p in TESTS.iterdir() if p.is_dir() and p.name not in NOT_TESTS):
        found += sorted(folder.glob("test_*.py"))
    return found


def moves() -> dict[pathlib.Path, pathlib.Path]:
    """Test module -> where LAYOUT wants it, for every module not there (a module in a folder LAYOUT does not name,
    such as tests/planner's own, stays)."""
    planned = {}
    for path in test_modules():
        folder = folder_of(path.name)
        if folder is None or path.parent.name == folder:
            continue
        if path.parent != TESTS:
            continue  # already in a folder of its own choosing
        planned[path] = TESTS / folder / path.name
    return planned


# A moved module is one level deeper: the repository root and tests/ are one more parent up.
DEEPER = (
    (re.compile(r"Path\(__file__\)\.resolve\(\)\.parent\.parent\b"), "Path(__file__).resolve().parents[2]"),
    (re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[1\]"), "Path(__file__).resolve().parents[2]"),
    (re.compile(r"Path\(__file__\)\.parent /"), "Path(__file__).parents[1] /"),
    (re.compile(r"os\.path\.dirname\(__file__\)"), "os.path.dirname(os.path.dirname(__file__))"),
)


def deeper(text: str) -> str:
    for pattern, replacement in DEEPER:
        text = pattern.sub(replacement, text)
    return text


def tracked_text_files() -> list[pathlib.Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    paths = [REPO / p for p in listed.decode().split("\0") if p]
    out = []
    for path in paths:
        if not path.is_file() or path.is_symlink():
            continue
        try:
            path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        out.append(path)
    return out


def rewrite_references(planned: dict[pathlib.Path, pathlib.Path]) -> list[pathlib.Path]:
    """Every tracked text file naming a moved module by its old path names the new one. Returns the files changed."""
    table = {
        str(old.relative_to(REPO)): str(new.relative_to(REPO)) for old, new in planned.items()
    }  # tests/test_<name>.py -> tests/<room>/test_<name>.py
    if not table:
        return []
    pattern = re.compile(r"(?<![\w/])(" + "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True)) + r")")
    changed = []
    for path in tracked_text_files():
        text = path.read_text()
        new = pattern.sub(lambda m: table[m.group(1)], text)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def rewrite_helper_imports() -> list[pathlib.Path]:
    """``from test_jobs_support import X`` -> ``from support.jobs import X`` in every test module (HELPERS)."""
    changed = []
    for path in test_modules():
        text = path.read_text()
        new = text
        for old, module in HELPERS.items():
            new = re.sub(rf"^from {old} import", f"from {module} import", new, flags=re.M)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list the modules not where LAYOUT puts them")
    args = parser.parse_args(argv)
    planned = moves()
    if args.check:
        for old, new in planned.items():
            print(f"{old.relative_to(REPO)} -> {new.relative_to(REPO)}")
        return 1 if planned else 0
    for old, new in planned.items():
        new.parent.mkdir(exist_ok=True)
        subprocess.run(["git", "mv", str(old), str(new)], cwd=REPO, check=True)
        new.write_text(deeper(new.read_text()))
    changed = rewrite_references(planned) + rewrite_helper_imports()
    print(f"moved {len(planned)} test modules; rewrote references in {len(changed)} files", file=sys.stderr)
    if changed:  # a longer path can push a comment past the line length: ruff names it, a person rewraps it
        print("then: make ruff (a rewritten reference may have made a line too long)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
