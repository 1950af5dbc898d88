"""``ekstrain:versions``: per-stack overrides of the pinned versions in :mod:`ekstrain.versions`."""

from __future__ import annotations

from pydantic import Field, field_validator

from ekstrain import versions
from stacks.models.base import Model


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
        return value

    @field_validator("addons")
    @classmethod
    def _known_addons(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(versions.DEFAULT_ADDON_VERSIONS))
        if unknown:
            raise ValueError(
                f"unknown add-on(s) {unknown}; known: {', '.join(sorted(versions.DEFAULT_ADDON_VERSIONS))}"
            )
        return value

    def chart(self, name: str) -> versions.Chart:
        base = versions.DEFAULT_CHARTS[name]
        return versions.Chart(base.chart, self.charts.get(name, base.version), base.repo, base.upstream_dir)

    def addon(self, name: str) -> str | None:
        return self.addons.get(name, versions.DEFAULT_ADDON_VERSIONS[name])
