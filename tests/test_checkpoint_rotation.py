"""Checkpoint rotation: the script runs as a real process against a stand-in ``lfs`` (archived, not archived, hangs).

GIVEN a job's checkpoint directories on a file system and an ``lfs`` on PATH that answers ``hsm_state`` as FSx would
WHEN ``python3 ekstrain/checkpoint_rotation.py`` runs THEN it keeps the newest N, deletes an older one only when every
file is archived, and keeps one whose ``lfs`` says not archived, fails or hangs (bounded by its timeout).
"""

from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import sys
import time

import pytest

from ekstrain import checkpoint_rotation as rot

SCRIPT = pathlib.Path(rot.__file__)

# The stand-in answers per file from an upper-case marker in its path (pytest's tmp paths are lower case): HANG sleeps,
# FAIL exits 1, DIRTY changed after its export, NEW was never exported, anything else is archived (FSx's output).
LFS = """#!/bin/sh
[ "$1" = hsm_state ] || exit 2
case "$2" in
  *HANG*) sleep 30 ;;
  *FAIL*) echo "lfs hsm_state: $2: Operation not permitted" >&2; exit 1 ;;
  *DIRTY*) echo "$2: (0x0000000b) exists dirty archived, archive_id:1" ;;
  *NEW*) echo "$2: (0x00000000)" ;;
  *) echo "$2: (0x00000009) exists archived, archive_id:1" ;;
esac
"""


def _tree(root: pathlib.Path, job: str, names: list[str]) -> None:
    for i, name in enumerate(names):
        d = root / job / name
        (d / "shards").mkdir(parents=True)
        (d / "shards" / "rank0.pt").write_bytes(b"x")
        (d / "meta.json").write_text("{}")
        past = time.time() - 3600 + i * 60  # in the given order, oldest first
        for p in (d, d / "shards", d / "shards" / "rank0.pt", d / "meta.json"):
            os.utime(p, (past, past))


def _run(root: pathlib.Path, tmp: pathlib.Path, keep: int, timeout: float = 2.0) -> subprocess.CompletedProcess[str]:
    lfs = tmp / "bin" / "lfs"
    lfs.parent.mkdir(exist_ok=True)
    lfs.write_text(LFS)
    lfs.chmod(lfs.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{lfs.parent}:{os.environ['PATH']}"}
    cmd = [sys.executable, str(SCRIPT), "--root", str(root), "--keep", str(keep), "--timeout", str(timeout)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_keeps_the_newest_n_and_deletes_archived_older_ones(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "checkpoints"
    _tree(root, "llama", ["step-100", "step-200", "step-300", "step-400", "step-500"])
    done = _run(root, tmp_path, keep=3)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (root / "llama").iterdir()) == ["step-300", "step-400", "step-500"]
    assert done.stdout.count("deleted ") == 2


@pytest.mark.parametrize(
    ("marker", "reason"),
    [("NEW", "(0x00000000)"), ("DIRTY", "dirty archived"), ("FAIL", "exited 1"), ("HANG", "hung past 1 s")],
)
def test_an_older_checkpoint_not_archived_stays(tmp_path: pathlib.Path, marker: str, reason: str) -> None:
    """GIVEN the oldest checkpoint's files are not (all) archived THEN it stays, with the reason; the other old one
    (archived) goes. A hung lfs is bounded: the run ends within its timeout per file."""
    root = tmp_path / "checkpoints"
    _tree(root, "gpt", [f"step-1-{marker}", "step-2", "step-3", "step-4"])
    started = time.monotonic()
    done = _run(root, tmp_path, keep=2, timeout=1)
    assert time.monotonic() - started < 20
    assert done.returncode == 0, done.stderr
    left = sorted(p.name for p in (root / "gpt").iterdir())
    assert left == [f"step-1-{marker}", "step-3", "step-4"], done.stdout
    assert f"kept {root / 'gpt' / f'step-1-{marker}'}: not archived yet" in done.stdout
    assert reason in done.stdout


def test_jobs_rotate_independently_and_keep_below_one_is_refused(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "checkpoints"
    _tree(root, "a", ["1", "2"])
    _tree(root, "b", ["1", "2", "3"])
    assert _run(root, tmp_path, keep=2).returncode == 0
    assert len(list((root / "a").iterdir())) == 2 and len(list((root / "b").iterdir())) == 2
    bad = _run(root, tmp_path, keep=0)
    assert bad.returncode == 2 and bad.stderr.startswith("error: checkpoint_rotation:") and "fix:" in bad.stderr


def test_hsm_state_parsing() -> None:
    assert rot.archived("/f: (0x00000009) exists archived, archive_id:1")
    assert rot.archived("/f: (0x0000000d) released exists archived, archive_id:1")
    assert not rot.archived("/f: (0x0000000b) exists dirty archived, archive_id:1")
    assert not rot.archived("/f: (0x00000001) exists, archive_id:1")
    assert not rot.archived("")


def test_defaults_follow_fsx_and_checkpoint_size() -> None:
    """prod: 7,200 GiB FSx, 920 GiB checkpoints -> 3 kept (half the file system), rotated saves expire after 1 day:
    the old 30-day noncurrent expiry kept 1,440 saves (~1.3 PB) per saving job."""
    keep = rot.default_keep(7200, 920)
    assert keep == 3
    days = rot.noncurrent_days(keep)
    assert days == 1
    new = rot.steady_state(920, keep, days)
    old = rot.steady_state(920, keep, 30)
    assert new.s3_noncurrent_gib == 48 * 920 and old.s3_noncurrent_gib == 1440 * 920
    assert old.s3_usd_month > 25_000 and new.s3_usd_month < 1_200
    assert rot.default_keep(1200, None) == rot.DEFAULT_KEEP
