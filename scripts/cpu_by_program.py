"""Where a command's CPU seconds go, by program (helm, mypy, node, Chromium, checkov, promtool, Python ...).

    python -m scripts.cpu_by_program -- make test        (Linux, as root: it switches process accounting on)

The kernel's process accounting (acct(2)) writes one record per process as it exits, with its parent's pid, its
name and its user and system time; this runs the command with accounting on into a temporary file, switches it
off after, and sums the records of the command's process tree by program. `/usr/bin/time` gives one figure for
the whole tree; this says how much of it is which program, so that a CPU target can be weighed against what the
external programs alone take. `make bench BENCH_ARGS="--tests-only --by-program"` prints it for `make test`.

Accounting is machine-wide: a psacct/acct service that had it on loses the records of the run's minutes (it is
switched off after, not back to the service's file). Without the capability (CAP_SYS_PACCT) the command is not run
and the reason is printed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import dataclasses
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import IO

# struct acct_v3 of include/uapi/linux/acct.h: flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime
# (float), then eight comp_t (utime, stime, mem, io, rw, minflt, majflt, swaps) and the 16-byte command name.
RECORD = struct.Struct("<ccHIIIIIIf8H16s")
ACCT_VERSION = 3
# The kernel encodes times in AHZ ticks, which is USER_HZ (kernel/acct.c: nsec_to_AHZ; AHZ = USER_HZ).
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# Program names as the kernel records them (the executable's or script's file name, 15 characters at most) ->
# the row they are summed in. Processes named otherwise (Chromium names each process after its last thread:
# "HangWatcher", "ThreadPoolForeg"...) take the row of a named child, else of their nearest named ancestor
# (else "other").
PROGRAMS = {
    "python": "python",
    "python3": "python",
    "python3.11": "python",
    "python3.12": "python",
    "python3.13": "python",
    "ekstrain": "python",
    "pytest": "python",
    "pip": "python",
    "mypy": "mypy",
    "ruff": "ruff",
    "helm": "helm",
    "node": "node",
    "npm": "node",
    "checkov": "checkov",
    "promtool": "promtool",
    "chromium": "chromium",
    "chrome": "chromium",
    "git": "git",
    "make": "make",
    "bash": "shell",
    "sh": "shell",
    "dash": "shell",
}
LAUNCHERS = {"python", "shell", "make"}
"""Rows whose unnamed children are the small tools they ran, summed as "other", not as the launcher's own CPU."""


@dataclasses.dataclass(frozen=True)
class Record:
    pid: int
    ppid: int
    cpu: float  # user + system seconds
    name: str


def comp_t(value: int) -> int:
    """A comp_t: 13-bit mantissa, 3-bit base-8 exponent (kernel/acct.c encode_comp_t)."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def parse(data: bytes) -> list[Record]:
    """The version-3 records of an accounting file, in the order the processes exited."""
    records = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        if fields[1][0] != ACCT_VERSION:
            raise ValueError(f"accounting record at byte {offset}: version {fields[1][0]}, not {ACCT_VERSION}")
        pid, ppid, utime, stime = fields[6], fields[7], fields[10], fields[11]
        name = fields[-1].split(b"\0", 1)[0].decode("utf-8", "replace")
        records.append(Record(pid, ppid, (comp_t(utime) + comp_t(stime)) / TICKS, name))
    return records


def _parents(records: Sequence[Record]) -> dict[int, int | None]:
    """Index of each record -> index of its parent's record. A process is recorded when it exits, and its parent
    is alive then (the pid it names at exit is its parent's, or a subreaper's or init's once orphaned), so the
    parent's record is the
    first one of that pid after it: a pid is reused only after its process is gone. (Start times cannot decide:
    the kernel derives them at exit in whole seconds, and a child can come out a second before its parent.)"""
    later: dict[int, int] = {}
    parents: dict[int, int | None] = {}
    for i in range(len(records) - 1, -1, -1):
        parents[i] = later.get(records[i].ppid)
        later[records[i].pid] = i
    return parents


def tree(records: Sequence[Record], root_pid: int, adopter: int | None = None) -> list[int]:
    """Indexes of the records of ``root_pid``'s process (its last one) and every process under it, with the
    orphans ``adopter`` (a subreaper, :func:`run`) took in: a process whose parent exited first names the
    subreaper as its parent at its own exit."""
    parents = _parents(records)
    roots = [i for i, r in enumerate(records) if r.pid == root_pid]
    if not roots:
        return []
    root = roots[-1]
    inside: dict[int, bool] = {root: True}

    def under(i: int) -> bool:
        chain = []
        while i not in inside:
            chain.append(i)
            parent = parents[i]
            if parent is None:
                adopted = adopter is not None and records[i].ppid == adopter
                inside.update(dict.fromkeys(chain, adopted))
                return adopted
            i = parent
        answer = inside[i]
        inside.update(dict.fromkeys(chain, answer))
        return answer

    return [i for i in range(len(records)) if under(i)]


def by_program(records: Sequence[Record], indexes: Sequence[int]) -> dict[str, tuple[int, float]]:
    """Program row -> (processes, CPU seconds) over ``indexes`` (see PROGRAMS for the rows of unnamed ones)."""
    parents = _parents(records)
    children: dict[int, list[int]] = collections.defaultdict(list)
    chosen = set(indexes)
    for i in indexes:
        parent = parents[i]
        if parent is not None and parent in chosen:
            children[parent].append(i)

    def row(i: int) -> str:
        if records[i].name in PROGRAMS:
            return PROGRAMS[records[i].name]
        queue = list(children[i])
        while queue:  # a named child, breadth first
            j = queue.pop(0)
            if records[j].name in PROGRAMS:
                return PROGRAMS[records[j].name]
            queue += children[j]
        parent = parents[i]
        while parent is not None and parent in chosen:
            if records[parent].name in PROGRAMS:
                inherited = PROGRAMS[records[parent].name]
                # a program's own helper processes, not what a script or a test ran (mkdir, env, grep ...)
                return "other" if inherited in LAUNCHERS else inherited
            parent = parents[parent]
        return "other"

    rows: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for i in indexes:
        cell = rows[row(i)]
        cell[0] += 1
        cell[1] += records[i].cpu
    return {name: (int(n), cpu) for name, (n, cpu) in rows.items()}


def table(rows: dict[str, tuple[int, float]]) -> str:
    total = sum(cpu for _, cpu in rows.values()) or 1.0
    lines = ["| program | processes | CPU-s | share |", "|---|---:|---:|---:|"]
    for name, (n, cpu) in sorted(rows.items(), key=lambda item: -item[1][1]):
        lines.append(f"| {name} | {n} | {cpu:.1f} | {100 * cpu / total:.0f} % |")
    lines.append(f"| all | {sum(n for n, _ in rows.values())} | {total:.1f} | |")
    return "\n".join(lines)


class AccountingUnavailable(RuntimeError):
    """Process accounting cannot be switched on here (not Linux, or no CAP_SYS_PACCT)."""


def _acct(path: pathlib.Path | None) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(os.fsencode(path) if path is not None else None) != 0:
        errno = ctypes.get_errno()
        raise AccountingUnavailable(f"acct({path}): {os.strerror(errno)} (needs Linux and CAP_SYS_PACCT: root)")


CAP_SYS_PACCT = 20  # include/uapi/linux/capability.h


def check_available(status: pathlib.Path = pathlib.Path("/proc/self/status")) -> None:
    """Raise AccountingUnavailable unless this is Linux and the process holds CAP_SYS_PACCT (its effective
    capabilities, the CapEff line of /proc/self/status): asked before minutes of work, not after."""
    if not sys.platform.startswith("linux"):
        raise AccountingUnavailable(f"process accounting is Linux's (acct(2)); this is {sys.platform}")
    try:
        effective = next(line for line in status.read_text().splitlines() if line.startswith("CapEff:"))
    except (OSError, StopIteration):
        raise AccountingUnavailable(f"{status}: no CapEff line to read the capabilities from") from None
    if not int(effective.split()[1], 16) >> CAP_SYS_PACCT & 1:
        raise AccountingUnavailable("no CAP_SYS_PACCT: process accounting needs root")


@contextlib.contextmanager
def accounting(path: pathlib.Path) -> Iterator[pathlib.Path]:
    """Process accounting into ``path`` for the block; switched off after, whatever happens."""
    check_available()
    path.touch()
    _acct(path)
    try:
        yield path
    finally:
        _acct(None)


PR_SET_CHILD_SUBREAPER = 36  # include/uapi/linux/prctl.h


ORPHAN_WAIT = 10.0
"""Seconds to wait, after the command, for the processes it left running (they are recorded when they exit)."""


def _reap_orphans(seconds: float) -> None:
    """Reap this process's children until none is left or ``seconds`` have passed (one left running longer is
    not counted: its record is not written while accounting is on)."""
    deadline = time.monotonic() + seconds
    with contextlib.suppress(ChildProcessError):  # no child left
        while time.monotonic() < deadline:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:  # children, none exited yet
                time.sleep(0.05)


def _set_subreaper(on: bool) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def run(
    argv: Sequence[str],
    cwd: pathlib.Path | None = None,
    env: dict[str, str] | None = None,
    stdout: IO[str] | None = None,
) -> tuple[int, dict[str, tuple[int, float]]]:
    """Run ``argv`` (in ``cwd``, with ``env``, its output and errors into ``stdout`` when given) with accounting on:
    its exit code and its tree's CPU seconds by program. For the run this process is a subreaper (prctl(2)
    PR_SET_CHILD_SUBREAPER) so that processes the command leaves running (Chromium's) are counted as its own
    rather than init's, and reaped here."""
    with tempfile.TemporaryDirectory(prefix="cpu-by-program-") as tmp:
        path = pathlib.Path(tmp) / "acct"
        with accounting(path):
            _set_subreaper(True)
            try:
                proc = subprocess.Popen(  # noqa: S603  # the command the user gave
                    list(argv), cwd=cwd, env=env, stdout=stdout, stderr=subprocess.STDOUT if stdout else None
                )
                code = proc.wait()
                _reap_orphans(ORPHAN_WAIT)
            finally:
                _set_subreaper(False)  # what the caller runs next leaves its orphans to init again
        data = path.read_bytes()
    return code, command_rows(data, proc.pid, os.getpid())


def command_rows(data: bytes, command: int, runner: int) -> dict[str, tuple[int, float]]:
    """By program, the records in ``data`` of the process ``command`` and its tree, with the orphans the
    ``runner`` (a subreaper) adopted. Switching accounting off writes a record for the process that does it
    (kernel/acct.c acct_pin_kill): the runner, still alive; it is no parent of the orphans that name it."""
    records = [r for r in parse(data) if r.pid != runner]
    return by_program(records, tree(records, command, adopter=runner))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.cpu_by_program", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run (after --)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("the command to run: python -m scripts.cpu_by_program -- make test")
    try:
        code, rows = run(command)
    except AccountingUnavailable as exc:
        print(f"error: cpu_by_program: {exc}", file=sys.stderr)
        print(
            "fix: run it as root on Linux, or time the command with /usr/bin/time for the total alone", file=sys.stderr
        )
        return 2
    except OSError as exc:  # the command cannot start: no such program, not executable
        print(f"error: cpu_by_program: {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        print("fix: give a program on PATH or its path after --, as in: -- make test", file=sys.stderr)
        return 2
    print(table(rows))
    return code


if __name__ == "__main__":
    sys.exit(main())
