"""Checkpoint rotation: the script runs as a real process against a stand-in ``lfs`` (archived, not archived, hangs).

GIVEN a job's checkpoint directories on a file system and an ``lfs`` on PATH that answers ``hsm_state`` as FSx would
WHEN ``python3 ekstrain/agents/checkpoint_rotation.py`` runs THEN it keeps the newest N, deletes an older one only when
every
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

from ekstrain.agents import checkpoint_rotation as rot

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


# ---- the stack keys, the rules, the objects ------------------------------------------------------------------------

from conftest import cfg_with, stack_config  # noqa: E402

from ekstrain.stacks import loop_rules  # noqa: E402
from ekstrain.stacks.errors import ConfigError  # noqa: E402
from ekstrain.stacks.rules import check  # noqa: E402

PROD = stack_config("prod")


def test_prod_rotates_and_the_bucket_expires_rotated_versions_after_the_window() -> None:
    """GIVEN prod (no keepLast, no noncurrentVersionDays) THEN 3 kept, a 1-day noncurrent expiry (was 30), and the
    SUMMARY lines say the steady state on FSx and in S3."""
    plan = loop_rules.rotation_plan(PROD)
    assert plan == loop_rules.RotationPlan(keep=3, noncurrent_days=1, root="/fsx/checkpoints")
    assert loop_rules.noncurrent_days(PROD) == 1
    lines = loop_rules.rotation_lines(PROD)
    assert "keep 3 on FSx = 2,760 GiB" in lines[1] and "44,160 GiB noncurrent (1 d)" in lines[1]
    assert "/month" in lines[1]


def test_rotation_off_keeps_the_old_30_days() -> None:
    cfg = cfg_with(lambda s: s["storage"]["checkpoint"].update(rotation=False))
    assert loop_rules.rotation_plan(cfg) is None and loop_rules.noncurrent_days(cfg) == 30


def test_keeping_more_than_fsx_holds_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        cfg_with(lambda s: s["storage"]["checkpoint"].update(keepLast=8))
    (issue,) = [i for i in err.value.issues if i.key == "ekstrain:storage.checkpoint.keepLast"]
    assert "do not fit the 7,200 GiB FSx" in issue.problem and "keep at most 7" in issue.fix


def test_a_long_noncurrent_expiry_warns_with_its_cost() -> None:
    cfg = cfg_with(lambda s: s["storage"].setdefault("buckets", {}).update(noncurrentVersionDays=30))
    _, warnings = check(cfg)
    (w,) = [w for w in warnings if w.startswith("ekstrain:storage.buckets.noncurrentVersionDays")]
    assert "1,324,800 GiB of noncurrent versions" in w and "the rotation's window is 1 d" in w


def test_no_deleted_export_warns() -> None:
    cfg = cfg_with(lambda s: s["storage"]["fsx"].update(autoExportEvents=["NEW", "CHANGED"]))
    assert any("no DELETED" in w for w in check(cfg)[1])


def test_the_cronjob_runs_the_shipped_script_on_the_fsx_claim() -> None:
    cm = rot.configmap("training")
    assert cm["data"]["checkpoint_rotation.py"] == SCRIPT.read_text()
    job = rot.cronjob("training", "fsx-lustre", "/fsx", "/fsx/checkpoints", 3, {"ekstrain.io/node-role": "system"})
    spec = job["spec"]
    assert spec["concurrencyPolicy"] == "Forbid" and spec["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 1800
    pod = spec["jobTemplate"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    repo, _, tag = c["image"].rpartition(":")
    assert repo == "public.ecr.aws/amazonlinux/amazonlinux" and tag.count(".") == 3  # a versioned tag, not 2023
    assert {e["name"]: e["value"] for e in c["env"]} == {
        "CHECKPOINT_ROOT": "/fsx/checkpoints",
        "KEEP": "3",
        "LFS_TIMEOUT": "30",
    }
    assert "lustre-client" in c["command"][-1]
    assert {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre"}} in pod["volumes"]
