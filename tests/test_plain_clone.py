"""A plain clone (nothing beside it, no upstream files, no helm) renders the shipped stacks, headed NOT VALIDATED,
and `make test` there says in one line what it needs; the vendored MPIJob CRD is the pinned upstream file."""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

from ekstrain.assembly.schedulers import mpi_operator
from ekstrain.facts import versions
from ekstrain.tooling import validation


def _upstream() -> pathlib.Path | None:
    for candidate in (REPO.parent / "shared" / "upstream", validation.upstream_dir()):
        if candidate is not None and (candidate / versions.MPIJOB_CRD).is_file():
            return candidate
    return None


def test_the_vendored_mpijob_crd_is_the_pinned_upstream_file() -> None:
    vendored = mpi_operator.VENDORED.read_bytes()
    # its pin: the sha256 the program checks, the row of the upstream pins, the provenance file
    assert hashlib.sha256(vendored).hexdigest() == versions.MPIJOB_CRD_SHA256
    pins = (REPO / "ekstrain" / "pins" / "upstream-pins.tsv").read_text().splitlines()
    (row,) = [line.split("\t") for line in pins if line.startswith(versions.MPIJOB_CRD + "\t")]
    assert row[1:5] == [
        "kubeflow/mpi-operator",
        versions.MPI_OPERATOR_COMMIT,
        "manifests/base/kubeflow.org_mpijobs.yaml",
        versions.MPIJOB_CRD_SHA256,
    ]
    provenance = (REPO / "ekstrain" / "vendor" / "SOURCES.md").read_text()
    assert versions.MPIJOB_CRD_SHA256 in provenance and versions.MPI_OPERATOR_COMMIT in provenance
    upstream = _upstream()
    if upstream is None:
        pytest.skip("no upstream directory to compare with: run `ekstrain upstream fetch`")
    assert (upstream / versions.MPIJOB_CRD).read_bytes() == vendored


def _plain_clone(tmp: pathlib.Path) -> pathlib.Path:
    """The checkout's tracked files (as they are now) in ``tmp/repo``, nothing beside it."""
    clone = tmp / "repo"
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout.split(
        b"\0"
    )
    for name in filter(None, files):
        src = REPO / os.fsdecode(name)
        dst = clone / os.fsdecode(name)
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, dst)
    return clone


def _env(clone: pathlib.Path, tmp: pathlib.Path) -> dict[str, str]:
    # nor the make that runs this test (`make test`): its MAKEFLAGS/MAKELEVEL make the child print "make[1]: ..."
    drop = ("EKSTRAIN_", "UPSTREAM_", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    # the clone's own code, its own cache; no helm on PATH (a plain machine): only the interpreter's directory
    env.update(
        PYTHONPATH=str(clone),
        EKSTRAIN_CACHE_DIR=str(tmp / "cache"),
        PATH=f"{pathlib.Path(sys.executable).parent}:/usr/bin:/bin",
    )
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    clone = _plain_clone(tmp_path_factory.mktemp("plain"))
    # the commands below run the clone's code, which finds no upstream files (once for the module: every test here
    # starts from this clone)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ekstrain.files import paths; from ekstrain.tooling import validation; print(paths.CHECKOUT, "
            "validation.upstream_dir())",
        ],
        cwd=clone,
        env=_env(clone, clone.parent),
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.split() == [str(clone), "None"], probe.stdout  # the clone's code, no upstream files
    return clone


@pytest.mark.parametrize("stack", ["prod", "dev"])
def test_a_plain_clone_renders_the_shipped_stack_not_validated(stack: str, clone: pathlib.Path) -> None:
    # GIVEN a plain clone (no ../shared, no .upstream, no helm) WHEN `ekstrain render --allow-unchecked`
    env = _env(clone, clone.parent)  # the clone's code, no upstream files (``clone``)
    argv = [sys.executable, "-m", "ekstrain", "render", "--stack", stack, "--allow-unchecked"]
    proc = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    # THEN exit 0; a note (not an error) naming the checks that did not run and the command that fetches the files
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "error:" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    (note,) = [line for line in proc.stderr.splitlines() if line.startswith("note: NOT VALIDATED")]
    assert "kubernetes manifests: upstream schemas" in note and "`ekstrain upstream fetch`" in note
    # AND the render is written, headed NOT VALIDATED
    summary = (clone / "build" / stack / "SUMMARY.md").read_text()
    head = summary.split("## Warnings")[0]
    assert "## NOT VALIDATED:" in head and "ekstrain upstream fetch" in head
    assert (clone / "build" / stack / "manifests").is_dir()
    # AND without the flag: exit 1, `error: ekstrain render: ...` then `fix: ...`
    proc = subprocess.run(argv[:-1], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(("error:", "fix:"))]
    assert [ln.split(":")[0] for ln in lines] == ["error", "fix"], proc.stderr[-2000:]
    assert lines[0].startswith("error: ekstrain render: ") and "--allow-unchecked" in lines[1]


def test_make_test_in_a_plain_clone_says_what_it_needs_before_running_anything(clone: pathlib.Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make")
    env = _env(clone, clone.parent)
    proc = subprocess.run(["make", "test"], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    said = [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if line.strip() and "make:" not in line and not line.startswith("make[")
    ]
    assert len(said) == 1 and "make fetch-upstream" in said[0], said
    assert not (clone / ".venv").exists(), "nothing ran before the line"


def test_without_helm_the_chart_checks_did_not_run_and_nothing_else_fails(clone: pathlib.Path) -> None:
    # GIVEN the pinned upstream files but no helm anywhere
    upstream = _upstream()
    if upstream is None or validation.upstream_missing(upstream):
        pytest.skip("no complete upstream directory: run `ekstrain upstream fetch`")
    # The session's render cache (not the clone's): what it holds is keyed by the content it was computed from (the
    # parsed CRD schemas, the IAM table, each object's schema answer), so this render checks what it would with an
    # empty one, without parsing the CRDs again (~3 CPU-s); a check that needs helm stops before any cache lookup.
    env = {**_env(clone, clone.parent), "EKSTRAIN_UPSTREAM_DIR": str(upstream)}
    env["EKSTRAIN_CACHE_DIR"] = str(validation.cache_root().absolute())
    argv = [sys.executable, "-m", "ekstrain", "render", "--stack", "prod", "--out", "build/nohelm"]
    # WHEN prod renders
    proc = subprocess.run(argv, cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    # THEN the checks that need helm did not run (one reason, one fix naming `ekstrain upstream helm`), no problem
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert " 0 failed, " in proc.stdout and " 0 problem(s)" in proc.stdout, proc.stdout
    error, fix = [ln for ln in proc.stderr.splitlines() if ln.startswith(("error:", "fix:"))]
    assert error.startswith("error: ekstrain render: ") and "helm template: every release renders" in error
    assert fix.startswith("fix: helm not found (run `ekstrain upstream helm`")
    summary = (clone / "build" / "nohelm" / "SUMMARY.md").read_text()
    assert "did not run: no helm (see NOT VALIDATED)" in summary
    # AND --allow-unchecked accepts it with a note
    proc = subprocess.run([*argv, "--allow-unchecked"], cwd=clone, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "note: NOT VALIDATED" in proc.stderr, proc.stderr[-2000:]
