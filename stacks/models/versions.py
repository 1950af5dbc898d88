"""``ekstrain:versions``: per-stack overrides of the pinned versions in :mod:`ekstrain.facts.versions`."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from ekstrain.facts import versions
from ekstrain.stacks.models.base import Model

CHART_VERSION = re.compile(r"v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?")
ADDON_VERSION = re.compile(r"v\d+\.\d+\.\d+-eksbuild\.\d+")
AMI_ALIAS_VERSION = re.compile(r"latest|v\d{8}")
"""Karpenter's al2023@<version>: ``latest`` or a release date tag such as v20251120."""
CRD_CHARTS = {"karpenter-crd": "karpenter", "slurm-operator-crds": "slurm-operator"}
"""CRD chart -> the chart whose controller serves those CRDs: their versions must be equal."""


class VersionsConfig(Model):
    charts: dict[str, str] = Field(default_factory=dict)
    """Chart name -> version, e.g. ``karpenter: 1.14.1``."""
    addons: dict[str, str] = Field(default_factory=dict)
    """EKS add-on name -> version, e.g. ``vpc-cni: v1.20.1-eksbuild.3``."""
    ami_alias_version: str = versions.DEFAULT_AMI_ALIAS_VERSION
    """AL2023 AMI alias version for Karpenter (``al2023@<this>``); @default latest."""
    ami_alias_max_age_days: int = Field(default=versions.DEFAULT_AMI_ALIAS_MAX_AGE_DAYS, ge=1)
    """Bump cadence of a pinned amiAliasVersion (vYYYYMMDD): older than this many days is a render warning
    pointing at docs/runbook-ami.md; @default 60."""

    @field_validator("charts")
    @classmethod
    def _known_charts(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(versions.DEFAULT_CHARTS))
        if unknown:
            raise ValueError(f"unknown chart(s) {unknown}; known: {', '.join(sorted(versions.DEFAULT_CHARTS))}")
        for name, version in value.items():
            pinned = versions.DEFAULT_CHARTS[name].version
            if not CHART_VERSION.fullmatch(version):
                raise ValueError(f"{name}: {version!r} is not a chart version; write it like {pinned}")
            if version.startswith("v") != pinned.startswith("v"):
                raise ValueError(
                    f"{name}: {version!r} — this chart's versions are written like {pinned}; write it like {pinned}"
                )
            if versions.parse_semver(version)[0] != versions.parse_semver(pinned)[0]:
                raise ValueError(
                    f"{name} {version} is another major version than the {pinned} the program's values "
                    f"and schemas are written for; stay on {versions.parse_semver(pinned)[0]}.x or "
                    "update ekstrain/facts/versions.py and the upstream files together"
                )
        return value

    @field_validator("addons")
    @classmethod
    def _known_addons(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(versions.DEFAULT_ADDON_VERSIONS))
        if unknown:
            raise ValueError(
                f"unknown add-on(s) {unknown}; known: {', '.join(sorted(versions.DEFAULT_ADDON_VERSIONS))}"
            )
        for name, version in value.items():
            if not ADDON_VERSION.fullmatch(version):
                raise ValueError(
                    f"{name}: {version!r} is not an EKS add-on version; write it like "
                    "v1.20.1-eksbuild.3 (aws eks describe-addon-versions lists them)"
                )
        return value

    @field_validator("ami_alias_version")
    @classmethod
    def _ami_alias(cls, value: str) -> str:
        if not AMI_ALIAS_VERSION.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an AL2023 AMI alias version; use latest or a release tag such as v20251120"
            )
        return value

    @model_validator(mode="after")
    def _crds_match(self) -> VersionsConfig:
        for crds, chart in CRD_CHARTS.items():
            if self.chart(crds).version != self.chart(chart).version:
                raise ValueError(
                    f"{crds} {self.chart(crds).version} differs from {chart} {self.chart(chart).version}; "
                    f"override both charts.{crds} and charts.{chart} to the same version"
                )
        return self

    def chart(self, name: str) -> versions.Chart:
        base = versions.DEFAULT_CHARTS[name]
        return versions.Chart(base.chart, self.charts.get(name, base.version), base.repo, base.upstream_dir)

    def addon(self, name: str, kubernetes_version: str | None = None) -> str | None:
        """The stack's pin, else the default for ``kubernetes_version`` (ekstrain/facts/versions.py)."""
        if name in self.addons:
            return self.addons[name]
        if kubernetes_version is None:
            return versions.DEFAULT_ADDON_VERSIONS[name]
        return versions.addon_version(name, kubernetes_version)
