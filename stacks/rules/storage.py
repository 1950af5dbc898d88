"""Storage: FSx, EFS, buckets, scratch, and the KMS keys they name.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

from ekstrain.facts import names
from ekstrain.layout import storage_sizing
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.base import kms_key_region

FSX_PERSISTENT_2_THROUGHPUTS = storage_sizing.PERSISTENT_2_TIERS
"""The tiers the program sizes with (ekstrain/layout/storage_sizing.py): validation offers no other."""


def _storage(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    st = cfg.storage
    fsx = st.fsx
    out: list[ConfigIssue] = []
    warnings: list[str] = []
    b = st.buckets
    if b.datasets_bucket and b.datasets_bucket == b.checkpoints_bucket:
        out.append(
            ConfigIssue(
                "ekstrain:storage.buckets.checkpointsBucket",
                "datasetsBucket and checkpointsBucket are the same bucket; one bucket cannot be "
                "linked twice to a file system and the lifecycles differ",
                "name two different buckets (or leave both unset for generated names)",
            )
        )
    if cfg.environment == "prod" and not st.protect:
        warnings.append(
            "ekstrain:storage.protect: false in a prod stack: a destroy or replacement deletes "
            "buckets, FSx and EFS with their data"
        )
    if not fsx.enabled:
        if fsx.scratch.enabled:
            out.append(
                ConfigIssue(
                    "ekstrain:storage.fsx.scratch.enabled",
                    "dynamic FSx scratch needs the FSx CSI driver, installed with the FSx file system",
                    "set ekstrain:storage.fsx.enabled: true or scratch.enabled: false",
                )
            )
        return out, warnings
    key = "ekstrain:storage.fsx"
    cap = fsx.storage_capacity_gib
    if not storage_sizing.valid_capacity(cap):
        lower = max(1200, cap // 2400 * 2400)
        out.append(
            ConfigIssue(
                f"{key}.storageCapacityGiB",
                f"{cap} GiB is not a valid Lustre SSD capacity",
                f"use 1200 or a multiple of 2400 (nearest: {lower} or {(cap // 2400 + 1) * 2400})",
            )
        )
    if fsx.deployment_type == "PERSISTENT_2":
        if fsx.per_unit_storage_throughput not in FSX_PERSISTENT_2_THROUGHPUTS:
            out.append(
                ConfigIssue(
                    f"{key}.perUnitStorageThroughput",
                    f"{fsx.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                    f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}",
                )
            )
    else:
        if fsx.per_unit_storage_throughput is not None:
            out.append(
                ConfigIssue(
                    f"{key}.perUnitStorageThroughput",
                    f"{fsx.deployment_type} has a fixed throughput (200 MB/s/TiB)",
                    "remove perUnitStorageThroughput (set it to null)",
                )
            )
        if fsx.kms_key_arn is not None:
            out.append(
                ConfigIssue(
                    f"{key}.kmsKeyArn",
                    f"{fsx.deployment_type} file systems are always encrypted with an FSx-managed "
                    "key and do not accept a customer KMS key",
                    "remove kmsKeyArn, or use deploymentType: PERSISTENT_2",
                )
            )
        if not fsx.auto_export_events:
            # DRAs (import and export) work on SCRATCH_2 with Lustre 2.12+; only SCRATCH_1/2.10 lack them.
            warnings.append(
                f"{key}.autoExportEvents: empty on {fsx.deployment_type}: scratch data is not "
                "replicated, so checkpoints are lost on a file-server failure unless exported to S3"
            )
    paths = {"dataPath": fsx.data_path, "checkpointPath": fsx.checkpoint_path}
    for field, path in paths.items():
        if not path.startswith("/") or path == "/" or path.endswith("/") or "//" in path:
            out.append(
                ConfigIssue(
                    f"{key}.{field}",
                    f"{path!r} is not an absolute sub-directory",
                    "use a path like /data (leading slash, no trailing slash)",
                )
            )
    if fsx.data_path == fsx.checkpoint_path:
        out.append(
            ConfigIssue(
                f"{key}.checkpointPath",
                "dataPath and checkpointPath are the same",
                "use separate paths such as /data and /checkpoints",
            )
        )
    elif (fsx.checkpoint_path + "/").startswith(fsx.data_path + "/") or (fsx.data_path + "/").startswith(
        fsx.checkpoint_path + "/"
    ):
        out.append(
            ConfigIssue(
                f"{key}.checkpointPath",
                f"{fsx.checkpoint_path!r} and {fsx.data_path!r} overlap; two data repository "
                "associations cannot have nested file-system paths",
                "use sibling paths such as /data and /checkpoints",
            )
        )
    for field, events in (("autoImportEvents", fsx.auto_import_events), ("autoExportEvents", fsx.auto_export_events)):
        if len(set(events)) != len(events):
            out.append(
                ConfigIssue(
                    f"{key}.{field}",
                    f"{events} lists an event twice",
                    "list each of NEW, CHANGED, DELETED at most once",
                )
            )
    sc = fsx.scratch
    if (
        sc.enabled
        and sc.deployment_type == "PERSISTENT_2"
        and sc.per_unit_storage_throughput not in (FSX_PERSISTENT_2_THROUGHPUTS)
    ):
        out.append(
            ConfigIssue(
                f"{key}.scratch.perUnitStorageThroughput",
                f"{sc.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}",
            )
        )
    if sc.enabled and sc.deployment_type == "SCRATCH_2" and sc.per_unit_storage_throughput is not None:
        out.append(
            ConfigIssue(
                f"{key}.scratch.perUnitStorageThroughput",
                "SCRATCH_2 has a fixed throughput (200 MB/s/TiB)",
                "remove perUnitStorageThroughput",
            )
        )
    if sc.enabled and sc.storage_class_name in ("gp3", names.EFS_STORAGE_CLASS):
        out.append(
            ConfigIssue(
                f"{key}.scratch.storageClassName",
                f"{sc.storage_class_name!r} is already a StorageClass of the platform",
                "use another name, e.g. fsx-scratch",
            )
        )
    ck = st.checkpoint
    if ck.size_gib is not None and not out:
        result = storage_sizing.report(
            storage_sizing.gib_to_bytes(ck.size_gib),
            ck.target_save_seconds,
            fsx.deployment_type,
            cap,
            fsx.per_unit_storage_throughput,
        )
        if not result.meets_target:
            r = result.recommended
            fix = (
                f"set storageCapacityGiB: {r.capacity_gib} and perUnitStorageThroughput: "
                f"{r.per_unit_throughput} ({r.save_seconds:,.0f} s)"
                if r and fsx.deployment_type == "PERSISTENT_2"
                else f"set storageCapacityGiB: {r.capacity_gib} ({r.save_seconds:,.0f} s)"
                if r
                else "use PERSISTENT_2 with a higher tier, or save sharded/asynchronously"
            )
            warnings.append(
                f"ekstrain:storage.checkpoint: a {ck.size_gib:,.0f} GiB checkpoint takes "
                f"{result.configured.save_seconds:,.0f} s on the configured FSx "
                f"({result.configured.throughput_mb_s:,.0f} MB/s baseline), over targetSaveSeconds "
                f"{ck.target_save_seconds}; {fix}"
            )
    return out, warnings


def _kms_keys(cfg: StackConfig) -> list[ConfigIssue]:
    """KMS keys are regional and partitioned: a key elsewhere fails at create time."""
    st = cfg.storage
    out = []
    for key, arn in (
        ("buckets.kmsKeyArn", st.buckets.kms_key_arn),
        ("fsx.kmsKeyArn", st.fsx.kms_key_arn),
        ("efs.kmsKeyArn", st.efs.kms_key_arn),
    ):
        if arn is None:
            continue
        if not arn.startswith("arn:aws:"):
            out.append(
                ConfigIssue(
                    f"ekstrain:storage.{key}",
                    f"{arn} is not in the aws partition",
                    "use a key of the aws partition (arn:aws:kms:...)",
                )
            )
        elif kms_key_region(arn) != cfg.region:
            out.append(
                ConfigIssue(
                    f"ekstrain:storage.{key}",
                    f"the key is in {kms_key_region(arn)}, the stack in {cfg.region}",
                    f"use a KMS key created in {cfg.region}",
                )
            )
    return out
