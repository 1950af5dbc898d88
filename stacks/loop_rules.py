"""Cross-field rules for the platform's own loops: TLS for the hub's OAuth callback, checkpoint rotation.

Pure, run by :func:`ekstrain.stacks.rules.check` before any resource exists; each issue names the key and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ekstrain.agents import checkpoint_rotation as rotation
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig

_ACM_ARN = re.compile(r"arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]{36}")
"""ACM certificate ARN (ACM API reference, CertificateArn: arn:aws:acm:region:account:certificate/<uuid>)."""


def hub_tls(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    """An https OAuth callback needs something terminating TLS in front of the hub: the NLB with an ACM certificate.
    (errors, warnings): a certificate of another region is a warning, since an NLB uses certificates of its own region
    only (ACM user guide, "Services integrated with ACM") and the load balancer would get no TLS listener."""
    j = cfg.jupyterhub
    if not j.enabled:
        return [], []
    key = "ekstrain:jupyterhub.tls.certificateArn"
    arn = j.tls.certificate_arn
    callback = j.auth.callback_url
    if arn is None:
        if callback and callback.startswith("https://"):
            host = urlsplit(callback).hostname or "<hub host>"
            issue = ConfigIssue(
                key,
                f"the OAuth callback {callback[:80]!r} is https, but the hub's internal NLB serves plain HTTP on "
                "port 80: nothing terminates TLS, so the provider's redirect never reaches the hub",
                f"aws acm request-certificate --domain-name {host} --validation-method DNS, then set "
                "jupyterhub.tls.certificateArn to its ARN (docs/platform.md, TLS)",
            )
            return [issue], []
        return [], []
    m = _ACM_ARN.fullmatch(arn)
    if m is None:
        issue = ConfigIssue(
            key, f"{arn[:100]!r} is not an ACM certificate ARN", "arn:aws:acm:<region>:<account>:certificate/<id>"
        )
        return [issue], []
    region = cfg.region
    if region and m.group(1) != region:
        return [], [
            f"{key}: the certificate is in {m.group(1)}, the stack's load balancer in {region} (an NLB takes "
            f"certificates of its own region only): request or import it in {region} and use that ARN"
        ]
    return [], []


# ---- checkpoint rotation ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RotationPlan:
    keep: int
    """Checkpoints kept per job on FSx."""
    noncurrent_days: int
    """The checkpoints bucket's noncurrent-version expiry."""
    root: str
    """The checkpoint path as pods mount it (``fsx.mountPath`` + ``fsx.checkpointPath``)."""


def rotation_plan(cfg: StackConfig) -> RotationPlan | None:
    """What the rotation CronJob and the bucket lifecycle use; None without FSx or with ``rotation: false``."""
    st = cfg.storage
    if not (st.fsx.enabled and st.checkpoint.rotation):
        return None
    keep = st.checkpoint.keep_last or rotation.default_keep(st.fsx.storage_capacity_gib, st.checkpoint.size_gib)
    days = st.buckets.noncurrent_version_days or rotation.noncurrent_days(keep)
    root = st.fsx.mount_path.rstrip("/") + "/" + st.fsx.checkpoint_path.strip("/")
    return RotationPlan(keep, days, root)


def noncurrent_days(cfg: StackConfig) -> int:
    """The checkpoints bucket's noncurrent expiry: the key, else the rotation's window, else 30 (no rotation)."""
    plan = rotation_plan(cfg)
    return plan.noncurrent_days if plan else (cfg.storage.buckets.noncurrent_version_days or 30)


def rotation_lines(cfg: StackConfig) -> list[str]:
    """SUMMARY.md's steady state of one saving job's checkpoints on FSx and in S3."""
    plan = rotation_plan(cfg)
    size = cfg.storage.checkpoint.size_gib
    if plan is None:
        return ["- checkpoint rotation: off (storage.checkpoint.rotation or FSx disabled)"]
    head = (
        f"- checkpoint rotation: keep the last {plan.keep} per job under {plan.root}, delete older ones once "
        f"`lfs hsm_state` shows them archived; rotated S3 versions expire after {plan.noncurrent_days} d"
    )
    if not size:
        return [head, "  (no storage.checkpoint.sizeGiB: no steady-state estimate)"]
    state = rotation.steady_state(size, plan.keep, plan.noncurrent_days)
    return [head, f"  steady state, {state.line(plan.keep, plan.noncurrent_days)}"]


def checkpoints(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    """The kept checkpoints must fit FSx; a noncurrent expiry far beyond the rotation window is a cost warning."""
    plan = rotation_plan(cfg)
    size = cfg.storage.checkpoint.size_gib
    warnings: list[str] = []
    if plan is not None and "DELETED" not in cfg.storage.fsx.auto_export_events:
        # Without DELETED the export never removes a rotated checkpoint's S3 objects: current objects never expire.
        warnings.append(
            "ekstrain:storage.fsx.autoExportEvents: no DELETED: checkpoints the rotation deletes on FSx stay current "
            "objects in the checkpoints bucket for ever (add DELETED, or expire them with your own lifecycle rule)"
        )
    if plan is None or not size:
        return [], warnings
    fsx = cfg.storage.fsx.storage_capacity_gib
    errors = []
    if plan.keep * size > fsx:
        errors.append(
            ConfigIssue(
                "ekstrain:storage.checkpoint.keepLast",
                f"{plan.keep} checkpoints of {size:g} GiB ({plan.keep * size:,.0f} GiB) do not fit the "
                f"{fsx:,} GiB FSx file system: saves would fail with ENOSPC",
                f"keep at most {max(1, int(fsx // size))} (or grow storage.fsx.storageCapacityGiB)",
            )
        )
    window = rotation.noncurrent_days(plan.keep)
    if plan.noncurrent_days > window:
        state = rotation.steady_state(size, plan.keep, plan.noncurrent_days)
        warnings.append(
            f"ekstrain:storage.buckets.noncurrentVersionDays: {plan.noncurrent_days} d keeps every rotated checkpoint "
            f"that long: {state.s3_noncurrent_gib:,.0f} GiB of noncurrent versions per job saving every "
            f"{rotation.CHECKPOINT_EVERY_MINUTES} min (${state.s3_usd_month:,.0f}/month); the rotation's window is "
            f"{window} d"
        )
    return errors, warnings
