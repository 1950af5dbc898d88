"""Versions and releases: the compatibility window, offerings in the region, the AMI against the launch template,
pinned versions.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

import datetime as dt

from ekstrain.facts import compat, offerings, versions
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.rules.common import _p


def compat_pins(cfg: StackConfig) -> compat.Pins:
    """The versions this stack applies, for the compatibility table (ekstrain/facts/compat.py)."""
    k8s = cfg.cluster.kubernetes_version
    return compat.Pins(
        k8s,
        {name: cfg.versions.chart(name).version for name in versions.DEFAULT_CHARTS},
        {name: cfg.versions.addon(name, k8s) for name in versions.DEFAULT_ADDON_VERSIONS},
    )


def _compat(cfg: StackConfig) -> list[ConfigIssue]:
    """Every pinned component supports what it runs on (ekstrain/facts/compat.py: each bound with its source)."""
    return [ConfigIssue(key, problem, fix) for key, problem, fix in compat.problems(compat_pins(cfg))]


def _kubernetes_window(cfg: StackConfig, today: dt.date) -> list[ConfigIssue]:
    """The version must be on EKS's calendar today; a pinned AMI must be newer than the version."""
    out = []
    k8s = cfg.cluster.kubernetes_version
    standard, extended = versions.window(today)
    reason = versions.unsupported_reason(k8s, today)
    if reason:
        out.append(
            ConfigIssue(
                "ekstrain:cluster.kubernetesVersion",
                f"{reason} (as of {today})",
                f"use {versions.newest_standard(today)}; in standard support: "
                f"{', '.join(standard) or 'none'}; in extended support (extra cost): "
                f"{', '.join(extended) or 'none'}",
            )
        )
    ami = cfg.versions.ami_alias_version
    released = versions.ami_release_date(ami)
    if ami != "latest" and released is None:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"{ami!r} is not an AMI release version",
                f"use latest or a release such as {versions.AMI_ALIAS_VERSIONS[k8s]}",
            )
        )
    elif released is not None and released < versions.KUBERNETES_RELEASES[k8s].released:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami} predates Kubernetes {k8s} on EKS "
                f"({versions.KUBERNETES_RELEASES[k8s].released}): al2023@{ami} has no {k8s} image",
                f"use amiAliasVersion: {versions.AMI_ALIAS_VERSIONS[k8s]} (or a later release)",
            )
        )
    elif ami in versions.AMI_RELEASES_WITH_KNOWN_DEFECTS:
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami}: {versions.AMI_RELEASES_WITH_KNOWN_DEFECTS[ami]}",
                f"use amiAliasVersion: {versions.AMI_ALIAS_VERSIONS[k8s]}",
            )
        )
    return out


def _offerings(cfg: StackConfig, today: dt.date) -> tuple[list[ConfigIssue], list[str]]:
    """Every partition type is offered in the stack's region (ekstrain/facts/offerings.py: a dated table of EC2
    on-demand offerings by region, extended by ``ekstrain:instanceTypes.<type>.regions``); Karpenter would
    otherwise find no offering and the partition never gets a node. Where the table cannot know (a region
    newer than it, a Capacity-Blocks-only type, a table older than ``STALE_AFTER_DAYS``) a warning, never a refusal."""
    extra = {name: frozenset(f.regions) for name, f in cfg.instance_types.items() if f.regions}
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    for i, p in enumerate(cfg.partitions):
        for name in p.instance_types:
            found = offerings.offering_problem(name, cfg.region, extra, today)
            if found is None:
                continue
            level, problem, fix = found
            key = _p(i, p, "instanceTypes")
            if level == "error":
                errors.append(ConfigIssue(key, problem, fix))
            else:
                warnings.append(f"{key}: {problem}; {fix}")
    return errors, warnings


def _ami_against_launch(cfg: StackConfig) -> list[ConfigIssue]:
    """A pinned AMI release (``al2023@vYYYYMMDD``) dated before a partition type's launch was never built or
    tested for it (its NVIDIA/Neuron driver predates the generation): the dates and their AWS announcements are
    ``ekstrain/facts/offerings.py`` ``LAUNCHED``."""
    ami = cfg.versions.ami_alias_version
    released = versions.ami_release_date(ami)
    if released is None:
        return []
    out = []
    for i, p in enumerate(cfg.partitions):
        launches = [(n, offerings.launched(n)) for n in p.instance_types]
        late = [(n, launch) for n, launch in launches if launch is not None and released < launch.date]
        if not late:
            continue
        newest = max(launch.date for _, launch in late)
        recommended = versions.AMI_ALIAS_VERSIONS.get(cfg.cluster.kubernetes_version, "latest")
        named = "; ".join(f"{n} launched {launch.date} ({launch.source})" for n, launch in late)
        out.append(
            ConfigIssue(
                "ekstrain:versions.amiAliasVersion",
                f"AMI release {ami} ({released}) predates an instance type of {_p(i, p, 'instanceTypes')}: {named}; "
                "no AMI of that release was built or tested for it (its GPU/Neuron driver predates the type)",
                f"pin a release dated on or after {newest}, e.g. amiAliasVersion: {recommended}, or remove the "
                "type from the partition",
            )
        )
    return out


def _versions(cfg: StackConfig) -> list[ConfigIssue]:
    out = []
    # Pinned add-ons against the cluster's Kubernetes version (ekstrain/facts/versions.py ADDON_COMPATIBILITY and the
    # source of each bound in ADDON_SOURCES; add-ons without a citable table are left to EKS).
    for name, pin in sorted(cfg.versions.addons.items()):
        problem = versions.addon_problem(name, pin, cfg.cluster.kubernetes_version)
        if problem:
            out.append(ConfigIssue(f"ekstrain:versions.addons.{name}", *problem))
    cni = cfg.versions.addon("vpc-cni")
    if cni and any(p.efa for p in cfg.partitions):
        try:
            parsed = versions.parse_semver(cni)
        except ValueError:
            parsed = None
        if parsed is None or parsed < versions.MIN_VPC_CNI_FOR_EFA_ONLY:
            out.append(
                ConfigIssue(
                    "ekstrain:versions.addons.vpc-cni",
                    f"{cni} cannot attach efa-only interfaces (needs v1.18.4 or later)",
                    f"use {versions.DEFAULT_ADDON_VERSIONS['vpc-cni']}",
                )
            )
    return out
