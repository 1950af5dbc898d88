"""scripts/cpu_by_program.py: the kernel's accounting records read back, summed by program over one command's tree.

The records are built here as the kernel writes them (struct acct_v3); accounting itself is never switched on by a
test: it is machine-wide, and would cut off a bench that is using it."""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator

import pytest

from scripts import cpu_by_program
from scripts.cpu_by_program import RECORD, TICKS, Record, by_program, comp_t, parse, tree


def packed(pid: int, ppid: int, name: str, ticks: int = 0, version: int = 3) -> bytes:
    """One acct_v3 record; ``ticks`` of user time (comp_t: exact below 8192)."""
    return RECORD.pack(
        b"\0", bytes([version]), 0, 0, 0, 0, pid, ppid, 1_796_000_000, 0.0, ticks, 0, 0, 0, 0, 0, 0, 0, name.encode()
    )


def test_comp_t_is_a_13_bit_mantissa_and_a_base_8_exponent() -> None:
    assert comp_t(100) == 100
    assert comp_t(0x1FFF) == 8191
    assert comp_t((1 << 13) | 1500) == 12_000  # 1500 * 8: 120 s at 100 ticks a second
    assert comp_t((2 << 13) | 1) == 64


def test_records_are_read_back_with_their_cpu_in_seconds_and_another_version_is_refused() -> None:
    data = packed(10, 1, "helm", ticks=250) + packed(11, 10, "python3.11", ticks=TICKS)
    assert parse(data) == [Record(10, 1, 250 / TICKS, "helm"), Record(11, 10, 1.0, "python3.11")]
    with pytest.raises(ValueError, match="version 2, not 3"):
        parse(data + packed(12, 1, "x", version=2))


def test_the_tree_follows_each_pid_to_the_parent_alive_at_its_exit_and_adds_the_adopted_orphans() -> None:
    # exit order: a child of the first process 20 (outside), then 20 itself; then 20 is reused under the root
    # 30, exits with a child of its own; an orphan of the tree reparented to the subreaper 99; the root last
    records = parse(
        packed(21, 20, "helm", 100)  # under the first 20: outside
        + packed(20, 5, "python", 100)  # outside
        + packed(22, 20, "helm", 300)  # under the second 20: inside
        + packed(20, 30, "python", 500)
        + packed(40, 99, "chromium", 7)  # orphaned into the subreaper: inside
        + packed(41, 98, "chromium", 7)  # another machine's orphan: outside
        + packed(30, 99, "make", 1)
    )
    assert tree(records, 30) == [2, 3, 6]
    assert tree(records, 30, adopter=99) == [2, 3, 4, 6]
    assert tree(records, 31) == []


def test_the_runners_own_record_written_at_switch_off_does_not_hide_the_orphans_it_adopted() -> None:
    # GIVEN an orphan of the command (40) with a child of its own, adopted by the runner 99, and the record the
    # kernel writes for the runner when it switches accounting off (the last one)
    data = (
        packed(41, 40, "chromium", 30)
        + packed(40, 99, "HangWatcher", 20)
        + packed(30, 99, "make", 1)
        + packed(99, 98, "python3", 0)
    )
    # THEN the orphan and its child are the command's; the runner is not
    assert cpu_by_program.command_rows(data, 30, 99) == {"chromium": (2, 50 / TICKS), "make": (1, 1 / TICKS)}


def test_unnamed_processes_take_a_named_child_or_a_named_ancestor_and_what_tests_ran_is_other() -> None:
    records = parse(
        packed(3, 2, "ThreadPoolForeg", 40)  # a renderer under Chromium's zygote
        + packed(2, 1, "chromium", 10)  # the zygote
        + packed(1, 9, "HangWatcher", 50)  # Chromium's first process, named after its last thread
        + packed(4, 9, "mkdir", 1)  # a tool a test ran
        + packed(5, 9, "checkov", 200)
        + packed(9, 8, "python3", 1000)
        + packed(8, 7, "make", 0)
    )
    rows = by_program(records, tree(records, 8))
    assert rows == {
        "chromium": (3, 100 / TICKS),
        "other": (1, 1 / TICKS),
        "checkov": (1, 200 / TICKS),
        "python": (1, 1000 / TICKS),
        "make": (1, 0.0),
    }
    table = cpu_by_program.table(rows).splitlines()
    assert table[2] == f"| python | 1 | {1000 / TICKS:.1f} | {100 * 1000 / 1301:.0f} % |"
    assert table[-1] == f"| all | 7 | {1301 / TICKS:.1f} | |"


def test_without_the_capability_nothing_runs_and_one_error_names_the_fix(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nCapEff:\t0000000000000000\n")
    with pytest.raises(cpu_by_program.AccountingUnavailable, match="CAP_SYS_PACCT"):
        cpu_by_program.check_available(status)
    status.write_text(f"CapEff:\t{1 << cpu_by_program.CAP_SYS_PACCT:016x}\n")
    cpu_by_program.check_available(status)

    def refuse(_status: pathlib.Path = status) -> None:
        raise cpu_by_program.AccountingUnavailable("no CAP_SYS_PACCT: process accounting needs root")

    marker = tmp_path / "ran"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpu_by_program, "check_available", refuse)
        assert cpu_by_program.main(["--", "touch", str(marker)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err] == ["error", "fix"] and "root" in err[0]
    assert not marker.exists()


def test_the_runner_is_a_subreaper_for_the_run_only_and_counts_the_commands_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN a command whose process 30 runs a helm (31) and leaves an orphan (40), and the record the kernel writes
    # for the runner at switch-off (the test stands in for the kernel and the process)
    subreaper: list[bool] = []

    @contextlib.contextmanager
    def accounting(path: pathlib.Path) -> Iterator[pathlib.Path]:
        yield path
        path.write_bytes(
            packed(31, 30, "helm", 10)
            + packed(30, os.getpid(), "make", 1)
            + packed(40, os.getpid(), "chromium", 5)
            + packed(os.getpid(), 1, "python3", 0)
        )

    class Command:
        pid = 30

        def __init__(self, argv: list[str], **_: object) -> None:
            assert argv == ["make", "test"]

        def wait(self) -> int:
            assert subreaper == [True]  # orphans of the command come to the runner
            return 3

    monkeypatch.setattr(cpu_by_program, "check_available", lambda: None)
    monkeypatch.setattr(cpu_by_program, "_set_subreaper", subreaper.append)
    monkeypatch.setattr(cpu_by_program, "accounting", accounting)
    monkeypatch.setattr(cpu_by_program, "_reap_orphans", lambda seconds: None)
    monkeypatch.setattr(cpu_by_program.subprocess, "Popen", Command)
    # WHEN it runs
    code, rows = cpu_by_program.run(["make", "test"])
    # THEN the command's exit code and its tree by program; and the runner is no subreaper after
    assert code == 3
    assert rows == {"helm": (1, 10 / TICKS), "make": (1, 1 / TICKS), "chromium": (1, 5 / TICKS)}
    assert subreaper == [True, False]
