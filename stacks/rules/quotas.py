"""AWS limits and API shapes: quotas, IAM principals, the tag budget.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

import datetime as dt
import re

from ekstrain.facts import regions, versions
from ekstrain.layout import prometheus_sizing
from ekstrain.stacks import limits
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.tags import PROGRAM_TAG_KEYS, program_tag_count
from ekstrain.stacks.rules.cluster import _cluster_sg_rules
from ekstrain.stacks.rules.common import _p
from ekstrain.stacks.rules.jupyterhub import _oauth_urls


def _limits(cfg: StackConfig, today: dt.date) -> list[ConfigIssue]:
    """Service limits across sections (stacks/limits.py names the source of each number)."""
    out: list[ConfigIssue] = []
    c = cfg.cluster
    partition = regions.partition(cfg.region)
    if "_" in c.name and not (cfg.storage.buckets.datasets_bucket and cfg.storage.buckets.checkpoints_bucket):
        out.append(
            ConfigIssue(
                "ekstrain:cluster.name",
                f"{c.name!r} has an underscore: EKS accepts it, but the generated S3 bucket names start with the "
                "cluster name and S3 refuses underscores",
                "use hyphens, or set both storage.buckets.datasetsBucket and checkpointsBucket",
            )
        )
    bad_sg = [g for g in c.deploy_security_group_ids if not limits.SECURITY_GROUP_ID.fullmatch(g)]
    if bad_sg:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.deploySecurityGroupIds",
                f"{[g[:40] for g in bad_sg]} are not security group ids (sg- and 8 or 17 lowercase hex digits)",
                "use ids of the form sg-0123456789abcdef0",
            )
        )
    for i, access in enumerate(c.admin_access):
        arn = access.principal_arn
        key = f"ekstrain:cluster.adminAccess[{i}].principalArn"
        if arn.split(":")[1] != partition:
            out.append(
                ConfigIssue(
                    key,
                    f"the principal is in the {arn.split(':')[1]} partition, the stack's region "
                    f"{cfg.region} in {partition}",
                    f"use an IAM role or user of the {partition} partition (arn:{partition}:iam::...)",
                )
            )
        elif not _IAM_PRINCIPAL.fullmatch(arn):
            out.append(
                ConfigIssue(
                    key,
                    f"{arn[:80]!r} is not an IAM role or user ARN (EKS access entries refuse STS session ARNs; IAM "
                    "names are 1-64 of letters, digits and +=,.@_-, under an optional /path/)",
                    "use the role's ARN: arn:aws:iam::<account>:role/<name>",
                )
            )
    if len(c.public_access_cidrs) > limits.EKS_PUBLIC_ACCESS_CIDRS_MAX:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.publicAccessCidrs",
                f"{len(c.public_access_cidrs)} CIDRs are more than EKS's "
                f"{limits.EKS_PUBLIC_ACCESS_CIDRS_MAX} per cluster",
                "merge them into fewer, larger ranges",
            )
        )
    out += _cluster_sg_rules(cfg)
    for i, part in enumerate(cfg.partitions):
        seconds = limits.duration_seconds(part.effective_consolidate_after)
        if seconds is not None and seconds > limits.GO_DURATION_MAX_SECONDS:
            out.append(
                ConfigIssue(
                    _p(i, part, "consolidateAfter"),
                    f"{part.effective_consolidate_after[:40]!r} is longer than a Go time.Duration holds "
                    "(about 292 years), so Karpenter cannot parse it",
                    "use a duration such as 720h, or Never",
                )
            )
        cr = part.capacity_reservation
        if cr is not None:
            terms = len(cr.ids) + (1 if cr.tags else 0)
            if terms > limits.CAPACITY_RESERVATION_TERMS_MAX:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.ids"),
                        f"{terms} capacity reservation selector terms are more than Karpenter's EC2NodeClass "
                        f"accepts ({limits.CAPACITY_RESERVATION_TERMS_MAX}: one per id, one for the tags)",
                        "select the reservations by tags instead of listing ids",
                    )
                )
            if len(cr.tags) > limits.CAPACITY_RESERVATION_TAGS_MAX:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.tags"),
                        f"{len(cr.tags)} tags are more than a Karpenter capacity reservation selector term holds "
                        f"({limits.CAPACITY_RESERVATION_TAGS_MAX})",
                        f"select with at most {limits.CAPACITY_RESERVATION_TAGS_MAX} tags",
                    )
                )
            empty = [k for k, v in cr.tags.items() if not k or not v]
            if empty:
                out.append(
                    ConfigIssue(
                        _p(i, part, "capacityReservation.tags"),
                        f"{empty} have an empty key or value, which Karpenter's selector refuses",
                        "give every selector tag a key and a value",
                    )
                )
    for name, weight in sorted(cfg.schedulers.volcano.queue_weights.items()):
        if weight > limits.VOLCANO_QUEUE_WEIGHT_MAX:
            out.append(
                ConfigIssue(
                    f"ekstrain:schedulers.volcano.queueWeights.{name}",
                    f"{weight} is above the Volcano Queue's maximum weight {limits.VOLCANO_QUEUE_WEIGHT_MAX}",
                    f"use 1..{limits.VOLCANO_QUEUE_WEIGHT_MAX} (weights are relative)",
                )
            )
    obs = cfg.observability
    if obs.enabled and obs.storage_gib is None:
        gib = prometheus_sizing.prometheus_storage_gib(
            obs.retention_days,
            obs.scrape_interval_seconds,
            sum(p.max_nodes for p in cfg.partitions),
            c.system_node_group.max_size,
        )
        if gib > limits.EBS_GP3_MAX_GIB:
            out.append(
                ConfigIssue(
                    "ekstrain:observability.retentionDays",
                    f"{obs.retention_days} days of samples every {obs.scrape_interval_seconds} s from every node at "
                    f"maxNodes need a {gib:,} GiB Prometheus volume, beyond the largest gp3 volume "
                    f"({limits.EBS_GP3_MAX_GIB:,} GiB)",
                    "lower retentionDays (keep history in AMP: observability.amp.enabled) or raise "
                    "scrapeIntervalSeconds",
                )
            )
    out += _oauth_urls(cfg)
    out += _tag_budget(cfg)
    released = versions.ami_release_date(cfg.versions.ami_alias_version)
    if released is not None and released > today:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {cfg.versions.ami_alias_version} is dated after today ({today}): no such release exists",
                f"use a published release such as {versions.AMI_ALIAS_VERSIONS[cfg.cluster.kubernetes_version]}",
            )
        )
    return out


# IAM CreateRole/CreateUser: Path "(/)|(/[!-~]+/)" up to 512, RoleName/UserName "[\\w+=,.@-]+" of 1-64.
_IAM_PRINCIPAL = re.compile(r"arn:aws:iam::[0-9]{12}:(role|user)(/|/[!-~]{1,510}/)[\w+=,.@-]{1,64}", re.ASCII)


def _tag_budget(cfg: StackConfig) -> list[ConfigIssue]:
    """User tags plus aws:defaultTags within AWS's 50 with the program's, and no key equal to another but for case
    (IAM tag keys are case-insensitive: CreateRole refuses the pair)."""
    own = dict(cfg.tags)
    default = dict(cfg.default_tags.tags) if cfg.default_tags else {}
    out = []
    reserved = {k.lower(): k for k in (*PROGRAM_TAG_KEYS, "Name")}
    for where, tags in (("ekstrain:tags", own), ("aws:defaultTags.tags", default)):
        for key in tags:
            if key.lower() in reserved and key != reserved[key.lower()]:
                out.append(
                    ConfigIssue(
                        f"{where}.{key}",
                        f"{key!r} differs from the program's tag {reserved[key.lower()]!r} only in case; IAM treats "
                        "tag keys case-insensitively and refuses the pair",
                        "use another key such as team:owner",
                    )
                )
    for key in default:
        if key.lower().startswith("aws:"):
            out.append(
                ConfigIssue(
                    f"aws:defaultTags.tags.{key}",
                    f"tag key {key!r} uses the aws: prefix that AWS reserves",
                    "drop the prefix",
                )
            )
    lowered: dict[str, str] = {}
    for key in [*own, *default]:
        if key.lower() in lowered and lowered[key.lower()] != key:
            out.append(
                ConfigIssue(
                    f"aws:defaultTags.tags.{key}",
                    f"{key!r} and {lowered[key.lower()]!r} differ only in case; IAM refuses the pair",
                    "keep one spelling",
                )
            )
        lowered.setdefault(key.lower(), key)
    # The program's own tags on this stack's most-tagged resource (an instance: fewer without cost tags).
    program = program_tag_count(cfg.cost.enabled, bool(cfg.partitions))
    total = len(set(own) | set(default)) + program
    if total > limits.AWS_MAX_TAGS:
        out.append(
            ConfigIssue(
                "aws:defaultTags.tags" if default else "ekstrain:tags",
                f"ekstrain:tags ({len(own)}) and aws:defaultTags ({len(default)}) with the program's "
                f"{program} make {total} tags per resource, more than AWS's {limits.AWS_MAX_TAGS}",
                f"keep at most {limits.AWS_MAX_TAGS - program} distinct user and default tags",
            )
        )
    return out
