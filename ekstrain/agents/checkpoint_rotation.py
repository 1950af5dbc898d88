"""Checkpoint rotation on FSx for Lustre: keep each job's last N checkpoints, delete an older one only once archived.

The platform ships this file in a ConfigMap and runs ``python3 checkpoint_rotation.py`` from a CronJob that mounts
the FSx file system (components/checkpoints.py). Layout it expects (the job templates' ``CHECKPOINT_DIR``):
``<root>/<job>/<checkpoint>/...``, one directory per save; the newest ``KEEP`` (by modification time, then name) of
each job stay. An older one is deleted only when every file in it is archived to S3: the checkpoints path is linked to
the checkpoints bucket by a data repository association with auto-export, and ``lfs hsm_state <file>`` prints the
file's HSM flags, ``archived`` once its current content is in the repository (Lustre Operations Manual, "Hierarchical
Storage Management", ``lfs hsm_state``; FSx for Lustre user guide, "Exporting changes to the data repository": export
state of files is shown by ``lfs hsm_state``, "exists archived" when exported). A file that is ``dirty``, not
``archived``, or whose ``lfs`` call fails or hangs past ``LFS_TIMEOUT`` keeps its checkpoint (retried at the next run).

Deleting it on FSx makes auto-export (event ``DELETED``) delete the S3 object; the bucket is versioned, so the data
stays as a noncurrent version until the lifecycle rule expires it (``storage.buckets.noncurrentVersionDays``; the
stack's default follows this rotation: :func:`noncurrent_days`).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

DEFAULT_KEEP = 3
"""Without ``storage.checkpoint.sizeGiB``: the last three saves per job (the current one being written, the last
complete one, one before it in case the last is corrupt)."""
FSX_SHARE = 0.5
"""Share of the FSx file system checkpoints may fill when sizing the default N (the rest: datasets, scratch, the
save in progress)."""
CHECKPOINT_EVERY_MINUTES = 30
"""The save interval the estimates assume (the job templates' and the simulator's checkpoint interval)."""
S3_STANDARD_USD_PER_GB_MONTH = 0.023
"""S3 Standard, first 50 TB/month, us-east-1 list price (aws.amazon.com/s3/pricing, 2025); noncurrent versions are
billed like current ones."""
LFS_TIMEOUT = 30
"""Seconds one ``lfs hsm_state`` may take; a hung call counts as not archived."""
NAME = "ekstrain-checkpoint-rotation"
SCHEDULE = "*/10 * * * *"
"""Every 10 minutes: well inside the 30-minute save interval, so at most one extra save sits on FSx."""
DEADLINE_SECONDS = 1800
"""A run is stopped after 30 minutes (the CronJob's ``activeDeadlineSeconds``); the next one starts over."""
IMAGE = "public.ecr.aws/amazonlinux/amazonlinux:2023.9.20250929.0"
"""Amazon Linux 2023 (python3 in the image; ``lfs`` from its ``lustre-client`` package, the FSx user guide's client
for AL2023), a versioned tag on ECR Public (no anonymous pull-rate limit). The image's release also pins the package:
AL2023 locks its repositories to the release the image was built from (deterministic upgrades, the AL2023 user guide's
``releasever``), so every run installs the same ``lustre-client`` build."""
LUSTRE_CLIENT = "lustre-client"


# ---- sizing (stack defaults, SUMMARY) -------------------------------------------------------------------------


def default_keep(fsx_gib: int, checkpoint_gib: float | None) -> int:
    """N checkpoints per job that fit ``FSX_SHARE`` of the file system (at least 2), or ``DEFAULT_KEEP``."""
    if not checkpoint_gib:
        return DEFAULT_KEEP
    return max(2, math.floor(fsx_gib * FSX_SHARE / checkpoint_gib))


def noncurrent_days(keep: int, every_minutes: int = CHECKPOINT_EVERY_MINUTES) -> int:
    """Days a rotated checkpoint stays in S3 as a noncurrent version: as long as FSx's own window of N saves, at
    least a day (S3 lifecycle counts whole days)."""
    return max(1, math.ceil(keep * every_minutes / 1440))


@dataclass(frozen=True)
class SteadyState:
    fsx_gib: float
    """Checkpoints on FSx per job: N saves."""
    s3_current_gib: float
    """Current S3 objects: the N saves still on FSx (exported)."""
    s3_noncurrent_gib: float
    """Noncurrent versions: the saves rotated within the expiry window."""
    s3_usd_month: float

    def line(self, keep: int, days: int) -> str:
        return (
            f"checkpoints per job (one save every {CHECKPOINT_EVERY_MINUTES} min): keep {keep} on FSx = "
            f"{self.fsx_gib:,.0f} GiB; S3 {self.s3_current_gib:,.0f} GiB current + {self.s3_noncurrent_gib:,.0f} GiB "
            f"noncurrent ({days} d) = ${self.s3_usd_month:,.0f}/month at S3 Standard list price"
        )


def steady_state(
    checkpoint_gib: float, keep: int, days: int, every_minutes: int = CHECKPOINT_EVERY_MINUTES
) -> SteadyState:
    """Per job saving every ``every_minutes``: what FSx and the versioned bucket hold once rotation runs."""
    fsx = keep * checkpoint_gib
    rotated = days * 1440 / every_minutes * checkpoint_gib
    gb = (fsx + rotated) * 2**30 / 1e9
    return SteadyState(fsx, fsx, rotated, gb * S3_STANDARD_USD_PER_GB_MONTH)


# ---- pure decisions -------------------------------------------------------------------------------------------


def archived(hsm_state_output: str) -> bool:
    """``lfs hsm_state`` output of one file, e.g. ``/fsx/c/f: (0x00000009) exists archived, archive_id:1``: archived
    and not dirty (a dirty file changed after its export)."""
    flags = hsm_state_output.split(":", 1)[-1].replace(",", " ").split()
    return "archived" in flags and "dirty" not in flags and "lost" not in flags


def to_delete(checkpoints: list[tuple[str, float]], keep: int) -> list[str]:
    """Of one job's checkpoints (name, mtime), those older than the newest ``keep``, oldest first."""
    ordered = sorted(checkpoints, key=lambda c: (c[1], c[0]), reverse=True)
    return [name for name, _ in sorted(ordered[keep:], key=lambda c: (c[1], c[0]))]


# ---- the Kubernetes objects -------------------------------------------------------------------------------------


def configmap(namespace: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": namespace, "labels": {"app.kubernetes.io/name": NAME}},
        "data": {"checkpoint_rotation.py": open(__file__, encoding="utf-8").read()},
    }


def cronjob(
    namespace: str, claim: str, mount_path: str, root: str, keep: int, node_selector: dict[str, str]
) -> dict[str, object]:
    """The rotation CronJob: the FSx claim at ``mount_path``, the script from the ConfigMap, one run at a time (this
    module stays standard-library only: it is the script)."""
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "ekstrain"}
    run = f"dnf install -y -q {LUSTRE_CLIENT} >/dev/null && exec python3 /opt/rotation/checkpoint_rotation.py"
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": NAME, "namespace": namespace, "labels": labels},
        "spec": {
            "schedule": SCHEDULE,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 300,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {
                "spec": {
                    "backoffLimit": 0,
                    "activeDeadlineSeconds": DEADLINE_SECONDS,
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "restartPolicy": "Never",
                            "automountServiceAccountToken": False,
                            "nodeSelector": dict(node_selector),
                            "containers": [
                                {
                                    "name": "rotate",
                                    "image": IMAGE,
                                    "imagePullPolicy": "IfNotPresent",
                                    "command": ["bash", "-c", run],
                                    "env": [
                                        {"name": "CHECKPOINT_ROOT", "value": root},
                                        {"name": "KEEP", "value": str(keep)},
                                        {"name": "LFS_TIMEOUT", "value": str(LFS_TIMEOUT)},
                                    ],
                                    "resources": {
                                        "requests": {"cpu": "100m", "memory": "256Mi"},
                                        "limits": {"memory": "512Mi"},
                                    },
                                    "securityContext": {"allowPrivilegeEscalation": False},
                                    "volumeMounts": [
                                        {"name": "fsx", "mountPath": mount_path},
                                        {"name": "script", "mountPath": "/opt/rotation", "readOnly": True},
                                    ],
                                }
                            ],
                            "volumes": [
                                {"name": "fsx", "persistentVolumeClaim": {"claimName": claim}},
                                {"name": "script", "configMap": {"name": NAME}},
                            ],
                        },
                    },
                }
            },
        },
    }


# ---- the run --------------------------------------------------------------------------------------------------


def _files(path: str) -> list[str]:
    out = []
    for top, _, files in os.walk(path):
        out += [os.path.join(top, f) for f in files]
    return sorted(out)


def file_archived(lfs: str, path: str, timeout: float) -> tuple[bool, str]:
    path = os.path.abspath(path)  # a file named "-v" must reach lfs as a path, not an option
    try:
        done = subprocess.run([lfs, "hsm_state", path], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False, f"lfs hsm_state hung past {timeout:g} s"
    except OSError as exc:
        return False, f"lfs hsm_state failed: {exc}"
    if done.returncode != 0:
        return False, f"lfs hsm_state exited {done.returncode}: {done.stderr.strip()[:200]}"
    return archived(done.stdout), done.stdout.strip()


def rotate(root: str, keep: int, lfs: str, timeout: float, dry_run: bool = False) -> tuple[list[str], list[str]]:
    """(deleted, kept-with-reason) checkpoint directories under ``root``."""
    deleted, kept = [], []
    for job in sorted(os.listdir(root)):
        job_dir = os.path.join(root, job)
        if not os.path.isdir(job_dir):
            continue
        entries = [
            (name, os.path.getmtime(os.path.join(job_dir, name)))
            for name in os.listdir(job_dir)
            if os.path.isdir(os.path.join(job_dir, name))
        ]
        for name in to_delete(entries, keep):
            path = os.path.join(job_dir, name)
            why = ""
            for f in _files(path):
                ok, detail = file_archived(lfs, f, timeout)
                if not ok:
                    why = f"{f}: {detail}"
                    break
            if why:
                kept.append(f"{path}: not archived yet ({why})")
                continue
            if not dry_run:
                shutil.rmtree(path)
            deleted.append(path)
    return deleted, kept


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.environ.get("CHECKPOINT_ROOT", "/fsx/checkpoints"))
    ap.add_argument("--keep", type=int, default=int(os.environ.get("KEEP", DEFAULT_KEEP)))
    ap.add_argument("--lfs", default=os.environ.get("LFS", "lfs"))
    ap.add_argument("--timeout", type=float, default=float(os.environ.get("LFS_TIMEOUT", LFS_TIMEOUT)))
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.keep < 1:
        print("error: checkpoint_rotation: --keep must be at least 1\nfix: give --keep 1 or more", file=sys.stderr)
        return 2
    if not os.path.isdir(args.root):
        print(f"nothing to rotate: {args.root} does not exist", flush=True)
        return 0
    deleted, kept = rotate(args.root, args.keep, args.lfs, args.timeout, args.dry_run)
    for path in deleted:
        print(f"{'would delete' if args.dry_run else 'deleted'} {path}", flush=True)
    for line in kept:
        print(f"kept {line}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
