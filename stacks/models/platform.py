"""``ekstrain:observability``, ``ekstrain:jupyterhub``, ``ekstrain:delivery``: the platform pieces around
training (metrics and dashboards, interactive notebooks, GitOps delivery). All off by default."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from ekstrain.facts.cloudwatch import RETENTION_DAYS as CLOUDWATCH_RETENTION_DAYS
from ekstrain.stacks.models.base import DNS_LABEL, IPv4Cidr, Model


class AmpConfig(Model):
    """Remote write to Amazon Managed Service for Prometheus."""

    enabled: bool = False
    """@default false. Creates an AMP workspace and lets Prometheus write to it (EKS Pod Identity,
    ``aps:RemoteWrite`` on that workspace only)."""
    workspace_alias: str | None = Field(default=None, max_length=100)
    """@default ``<cluster>-metrics``."""


class ObservabilityConfig(Model):
    enabled: bool = False
    """@default false. kube-prometheus-stack (Prometheus, Grafana, node-exporter, kube-state-metrics)
    with GPU (DCGM), Neuron and EFA metrics scraped and the training dashboards."""
    retention_days: int = Field(default=15, ge=1, le=3650)
    """@default 15: how long Prometheus keeps samples locally."""
    scrape_interval_seconds: int = Field(default=30, ge=5, le=300)
    """@default 30."""
    storage_gib: int | None = Field(default=None, ge=10, le=16384, alias="storageGiB")
    """Prometheus volume (gp3). @default sized from retentionDays, the scrape interval and the
    partitions' maxNodes (``ekstrain/layout/prometheus_sizing.py``); beyond 16 TiB (the gp3 maximum) is refused."""
    amp: AmpConfig = Field(default_factory=AmpConfig)
    """Optional remote write to Amazon Managed Prometheus."""


class LoggingConfig(Model):
    enabled: bool = False
    """@default false. Fluent Bit on every node (every taint tolerated) ships container stdout/stderr, the kernel's
    messages (XID lines) and the kubelet's journal into KMS-encrypted CloudWatch log groups (docs/observability.md)."""
    retention_days: int = 90
    """@default 90: how long CloudWatch keeps the log groups' events; one of CloudWatch's values (1, 3, 5, 7, 14,
    30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)."""

    @field_validator("retention_days")
    @classmethod
    def _retention(cls, value: int) -> int:
        if value not in CLOUDWATCH_RETENTION_DAYS:
            nearest = min(CLOUDWATCH_RETENTION_DAYS, key=lambda d: (abs(d - value), d))
            raise ValueError(
                f"CloudWatch Logs keeps events for one of {list(CLOUDWATCH_RETENTION_DAYS)} days, not {value}; "
                f"use {nearest}"
            )
        return value


_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*")
_EMAIL_DOMAIN = re.compile(r"([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}")


def email_address(value: str) -> bool:
    """An RFC 5322 addr-spec of the common subset: a dot-atom local part (section 3.2.3: atext, no quoted strings
    or comments), ``@``, a DNS host name with a letter TLD; at most 64 + 255 octets (RFC 5321 section 4.5.3.1).
    The SNS email subscription (Budgets' notification target) takes the address as the endpoint as is, so a
    newline, a display name (``Team <a@b>``) or markup never reaches a mailbox."""
    local, at, domain = value.rpartition("@")
    return bool(
        at
        and value.isascii()
        and len(local) <= 64
        and len(domain) <= 255
        and _EMAIL_LOCAL.fullmatch(local)
        and _EMAIL_DOMAIN.fullmatch(domain)
    )


class BudgetConfig(Model):
    """The AWS Budget of the stack (monthly cost, filtered by the ``ekstrain.io/stack`` cost-allocation tag)."""

    monthly_limit_usd: float | None = Field(default=None, gt=0, le=1e9, alias="monthlyLimitUsd")
    """@default what every partition costs at maxNodes for a month (730 h at the catalog's on-demand prices)."""
    thresholds_percent: list[int] = Field(default_factory=lambda: [50, 80, 100], min_length=1, max_length=5)
    """@default [50, 80, 100]: actual spend past each percentage of the limit notifies the topic (AWS allows 5
    notifications per budget, forecasted included)."""
    forecast_percent: int | None = Field(default=100, ge=1, le=1000)
    """@default 100: a forecast past this percentage notifies too; null for none."""
    notify_emails: list[str] = Field(default_factory=list, max_length=10)
    """@default none: email addresses subscribed to the budget's SNS topic (each confirms by mail)."""

    @field_validator("thresholds_percent")
    @classmethod
    def _thresholds(cls, value: list[int]) -> list[int]:
        if any(not 1 <= v <= 1000 for v in value) or len(set(value)) != len(value):
            raise ValueError(f"thresholds {value} must be distinct percentages between 1 and 1000, e.g. [50, 80, 100]")
        return value

    @field_validator("notify_emails")
    @classmethod
    def _emails(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not email_address(v)]
        if bad:
            raise ValueError(
                f"{bad[0][:80]!r} is not a plain email address (local@domain, no display name, markup, quotes or "
                "spaces); write it like team@example.com"
            )
        return value


class CostConfig(Model):
    enabled: bool = False
    """@default false. Spend by team, queue and job: OpenCost on the stack's Prometheus priced from the catalog,
    cost-allocation tags (``ekstrain.io/stack``, ``ekstrain.io/partition``, ``ekstrain.io/team``) on the nodes
    and file systems (activated in Cost Explorer by a later step: ``activateCostAllocationTags``), an AWS Budget
    with an SNS topic, the spend dashboard."""
    team: str = Field(default="platform", pattern=DNS_LABEL, max_length=63)
    """@default platform: the team the stack's shared resources (file systems) and partitions without their own
    ``team`` are charged to (the ``ekstrain.io/team`` tag)."""
    opencost: bool = True
    """@default true (needs ``observability.enabled``): OpenCost allocates node cost to namespace, pod and label."""
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    """The stack's monthly budget and who hears about it."""
    activate_cost_allocation_tags: bool = False
    """@default false: the stack does not activate its tag keys in Cost Explorer. Cost Explorer refuses a key it
    has not seen on a bill yet (up to 24 h after the first tagged resource) and refuses member accounts of an
    Organization, so the first `up` never does it: set true in a later `up`, from the payer account, once the keys
    are billed, or run the payer-account command of docs/delivery.md ("First deploy") instead."""


class JupyterHubAuth(Model):
    type: Literal["github", "generic-oauth", "dummy"] = "github"
    """@default github. ``dummy`` (listed users, one shared password) is refused in prod. The OAuth
    client secret (or the dummy password) is the stack secret ``ekstrain:jupyterhubClientSecret``."""
    client_id: str | None = None
    """OAuth client id (github, generic-oauth)."""
    allowed_organizations: list[str] = Field(default_factory=list)
    """github: members of these organizations may log in."""
    allowed_users: list[str] = Field(default_factory=list)
    admin_users: list[str] = Field(default_factory=list)
    authorize_url: str | None = None
    """generic-oauth: the provider's endpoints and the claim holding the user name."""
    token_url: str | None = None
    userdata_url: str | None = None
    username_claim: str = "preferred_username"
    callback_url: str | None = None
    """OAuth callback, ``https://<hub host>/hub/oauth_callback``; required for github and generic-oauth."""


class JupyterHubTls(Model):
    """TLS for the hub: the internal NLB terminates it with an ACM certificate (the OAuth callback is https)."""

    certificate_arn: str | None = None
    """ACM certificate (``arn:aws:acm:<region>:<account>:certificate/<id>``, in the stack's region) for the callback
    URL's host; the NLB listens on 443 with it and forwards plain HTTP to the proxy (z2jh ``proxy.https.type:
    offload``). Required with github or generic-oauth (their callback is https); @default none."""


class JupyterHubConfig(Model):
    enabled: bool = False
    """@default false. JupyterHub (zero-to-jupyterhub) with one GPU or Trainium profile per partition."""
    auth: JupyterHubAuth = Field(default_factory=JupyterHubAuth)
    """Who may log in; an open hub is never configured."""
    allowed_cidrs: list[IPv4Cidr] = Field(default_factory=list)
    """Who may reach the internal load balancer; @default the VPC CIDR (required with ``network.existingVpc``).
    0.0.0.0/0 is refused."""
    cull_idle_minutes: int = Field(default=60, ge=5)
    """@default 60: idle servers are stopped (and their accelerator nodes freed) after this long."""
    user_storage_gib: int = Field(default=50, ge=1, alias="userStorageGiB")
    """@default 50: per-user home on EFS (nominal: EFS is elastic)."""
    profiles: list[str] = Field(default_factory=list)
    """Partitions offered as profiles; @default every partition."""
    tls: JupyterHubTls = Field(default_factory=JupyterHubTls)
    """TLS on the hub's load balancer (``tls.certificateArn``); then point the callback URL's host at the NLB
    (docs/platform.md, one command)."""


class DeliveryConfig(Model):
    argocd: bool = False
    """@default false. Install Argo CD (chart argo-cd, on system nodes, server behind an internal
    ClusterIP) with an AppProject ``ekstrain``, and emit one Argo CD Application per platform Helm
    release into ``build/<stack>/argocd/`` (chart, version, repository, namespace and the exact
    values Pulumi renders) for a GitOps repository. Pulumi keeps delivering the releases; apply an
    Application only for a chart you remove from Pulumi, never both."""
