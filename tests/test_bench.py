"""`make bench`'s inputs stay valid stacks (a bench that exits 2 measures nothing)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from ekstrain.stacks.loader import load_flat, read_stack_file
from scripts import bench
from scripts.bench import REPO, edited_prod, synthetic_stack


@pytest.mark.parametrize("partitions", [8, 32])
def test_synthetic_stack_is_a_valid_stack(tmp_path: pathlib.Path, partitions: int) -> None:
    # GIVEN the bench's synthetic stack, derived from prod with its partitions replaced
    path = synthetic_stack(partitions, tmp_path)
    # WHEN loaded as the render loads it THEN it is valid (no prod-only partition names left behind)
    flat, _ = read_stack_file(path)
    cfg, _ = load_flat(flat, path.name)
    assert [p.name for p in cfg.partitions] == [f"part-{i:02d}" for i in range(partitions)]


def test_the_edited_prod_is_valid_and_differs_from_prod_by_one_value(tmp_path: pathlib.Path) -> None:
    # GIVEN the stack of the bench's edit ratio and diff rows
    path = edited_prod(tmp_path)
    flat, _ = read_stack_file(path)
    cfg, _ = load_flat(flat, path.name)
    prod, _ = load_flat(read_stack_file(REPO / "Pulumi.prod.yaml")[0], "Pulumi.prod.yaml")
    # THEN it is valid, and only the first partition's maxNodes differs (one more node)
    assert cfg.partitions[0].max_nodes == prod.partitions[0].max_nodes + 1
    restored = cfg.model_copy(update={"partitions": [prod.partitions[0], *cfg.partitions[1:]]})
    assert restored == prod


def test_make_test_is_counted_from_pytests_summary_line() -> None:
    """`make bench --tests` prints how many tests ran beside wall and CPU seconds: every outcome of pytest's last
    summary line counts, warnings and deselected do not; no summary line is 0 (pytest never got to run)."""
    log = "....\n===== 1 failed, 2021 passed, 3 skipped, 2 deselected, 7 warnings in 310.20s (0:05:10) =====\n"
    assert bench.tests_run("6 passed in 1.0s\n" + log) == 2025
    assert bench.tests_run("make: *** [test] Error 2\n") == 0


def test_by_program_is_refused_before_any_work_without_the_make_test_rows_or_the_capability(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make bench BENCH_ARGS=--by-program` splits make test's CPU: alone, or where process accounting cannot be
    switched on, it exits 2 with one line naming the flag, before minutes of renders."""
    from scripts import cpu_by_program

    monkeypatch.setattr(bench, "test_rows", lambda *_: pytest.fail("ran the make test rows"))
    monkeypatch.setattr(bench, "time_make_render", lambda *_: pytest.fail("ran a render"))
    with pytest.raises(SystemExit) as done:
        bench.main(["--by-program"])
    assert done.value.code == 2 and "--by-program splits make test's CPU: add --tests" in capsys.readouterr().err

    def unavailable() -> None:
        raise cpu_by_program.AccountingUnavailable("no CAP_SYS_PACCT: process accounting needs root")

    monkeypatch.setattr(cpu_by_program, "check_available", unavailable)
    with pytest.raises(SystemExit) as done:
        bench.main(["--tests-only", "--by-program"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "--by-program: no CAP_SYS_PACCT" in err and "run without it" in err


def test_the_cpu_profile_plugin_charges_a_tests_child_process_to_it(tmp_path: pathlib.Path) -> None:
    """scripts/pytest_cpuprof.py: one row per test, a waited-for subprocess's CPU on the test that ran it."""
    (tmp_path / "test_two.py").write_text(
        "import subprocess, sys\n"
        "def test_busy_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(3_000_000))'], check=True)\n"
        "def test_idle():\n"
        "    pass\n"
    )
    out = tmp_path / "prof"
    env = {**os.environ, "CPUPROF_DIR": str(out), "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "scripts.pytest_cpuprof", "-p", "no:cacheprovider", "test_two.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    header, *rows = (out / "main.tsv").read_text().splitlines()
    assert header.startswith("#session\t")
    by_test = {row.split("\t")[0]: [float(v) for v in row.split("\t")[1:]] for row in rows}
    assert set(by_test) == {"test_two.py::test_busy_child", "test_two.py::test_idle"}
    assert by_test["test_two.py::test_busy_child"][1] > 0.02  # the child's CPU, charged to its test
    assert by_test["test_two.py::test_idle"][1] == 0.0


def test_the_checkouts_bytecode_is_dropped_and_nothing_a_clean_clone_has_after_make(tmp_path: pathlib.Path) -> None:
    from scripts import bytecode

    # GIVEN a checkout with bytecode beside its sources, a virtualenv (pip compiled its modules), helm's tools,
    # git's directory, an npm tree and a symlink into a folder outside it
    root = tmp_path / "checkout"

    def pyc(folder: str, under: pathlib.Path = root) -> pathlib.Path:
        (under / folder / "__pycache__").mkdir(parents=True)
        (under / folder / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"")
        return under / folder / "__pycache__"

    ours = [pyc("infra"), pyc("tests/cli"), pyc("ekstrain")]
    for venv in (root / ".venv", root / "policy" / "venv"):
        venv.mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    kept = [pyc(".venv/lib/site-packages/pulumi"), pyc("policy/venv/lib/x"), pyc(".git/hooks"), pyc(".tools/t")]
    kept += [pyc("node_modules/n"), pyc("build/lib/ekstrain"), pyc("lib", under=tmp_path / "outside")]
    (root / "ekstrain" / "linked").symlink_to(tmp_path / "outside" / "lib")
    # WHEN listed, then dropped
    assert bytecode.bytecode_dirs(root) == sorted(ours)
    assert bytecode.drop(root) == 3
    # THEN the checkout's are gone and nothing else was touched
    assert not any(path.exists() for path in ours)
    assert all((path / "m.cpython-311.pyc").exists() for path in kept)
    assert (root / "infra").is_dir() and bytecode.bytecode_dirs(root) == []
