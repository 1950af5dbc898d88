"""``ekstrain:observability``, ``ekstrain:jupyterhub``, ``ekstrain:delivery``: the platform pieces around
training (metrics and dashboards, interactive notebooks, GitOps delivery). All off by default."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ekstrain.stacks.models.base import IPv4Cidr, Model


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
    partitions' maxNodes (``ekstrain/prometheus_sizing.py``); beyond 16 TiB (the gp3 maximum) is refused."""
    amp: AmpConfig = Field(default_factory=AmpConfig)
    """Optional remote write to Amazon Managed Prometheus."""


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


class DeliveryConfig(Model):
    argocd: bool = False
    """@default false. Install Argo CD (chart argo-cd, on system nodes, server behind an internal
    ClusterIP) with an AppProject ``ekstrain``, and emit one Argo CD Application per platform Helm
    release into ``build/<stack>/argocd/`` (chart, version, repository, namespace and the exact
    values Pulumi renders) for a GitOps repository. Pulumi keeps delivering the releases; apply an
    Application only for a chart you remove from Pulumi, never both."""
