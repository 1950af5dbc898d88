"""JupyterHub: profiles that fit their nodes, auth URLs.

A section of :func:`ekstrain.stacks.rules.check` (pure, before any resource exists).
"""

from __future__ import annotations

import ipaddress
import re

from ekstrain.facts import catalog
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.rules.common import _p


def _notebook_fit(cfg: StackConfig, key: str) -> list[ConfigIssue]:
    """Each profile's notebook pod (assembly/jupyterhub.py: its cpu and memory guarantee, one accelerator) fits
    the allocatable of some instance type of its partition, as Karpenter computes it (ekstrain/simulate/nodes.py,
    karpenter-provider-aws types.go); else the server never schedules and the user waits for the spawn timeout."""
    from ekstrain.layout import notebook_size
    from ekstrain.simulate import nodes

    out = []
    offered = set(cfg.jupyterhub.profiles) or {p.name for p in cfg.partitions}
    cpu, memory = float(notebook_size.NOTEBOOK_CPU), float(notebook_size.NOTEBOOK_MEMORY_GIB * 2**30)
    for i, p in enumerate(cfg.partitions):
        if p.name not in offered or not all(t in catalog.known() for t in p.instance_types):
            continue
        room = []
        for name in p.instance_types:
            it = catalog.get(name)
            room.append((name, nodes.allocatable(it, nodes.capacity(it, None))))
        if not any(a["cpu"] >= cpu and a["memory"] >= memory for _, a in room):
            best = max(room, key=lambda r: r[1]["memory"])
            out.append(
                ConfigIssue(
                    f"{_p(i, p, 'instanceTypes')}",
                    f"a notebook of this partition asks {cpu:g} CPUs and {notebook_size.NOTEBOOK_MEMORY_GIB} GiB, but "
                    f"the largest allocatable of its types is {best[1]['cpu']:.2f} CPUs and "
                    f"{best[1]['memory'] / 2**30:.1f} GiB ({best[0]}): the server would never start",
                    f"add a larger instance type to this partition, or leave it out of {key}.profiles",
                )
            )
    return out


def _jupyterhub(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    """No open hub: an authenticator restricted to listed users/organizations, never dummy in prod."""
    j = cfg.jupyterhub
    if not j.enabled:
        return [], []
    key = "ekstrain:jupyterhub"
    a = j.auth
    out = []
    if a.type == "dummy" and cfg.environment == "prod":
        out.append(
            ConfigIssue(
                f"{key}.auth.type",
                "the dummy authenticator lets anyone with the shared password in; it is not allowed in a prod stack",
                "use type: github (clientId, callbackUrl, allowedOrganizations) or generic-oauth",
            )
        )
    warnings: list[str] = []
    if cfg.jupyterhub_client_secret is None:
        if a.type == "dummy":
            out.append(
                ConfigIssue(
                    "ekstrain:jupyterhubClientSecret",
                    "the dummy authenticator needs a password",
                    "pulumi config set --secret ekstrain:jupyterhubClientSecret <password>",
                )
            )
        else:
            # The hub's pod reads it through a non-optional secretKeyRef; a Secret nobody creates in the same
            # `up` leaves the release waiting until Helm's timeout fails the deploy.
            out.append(
                ConfigIssue(
                    "ekstrain:jupyterhubClientSecret",
                    f"the {a.type} authenticator needs the OAuth app's client secret; the program creates the "
                    "Secret jupyterhub/jupyterhub-oauth from it, and without it the hub never starts",
                    "pulumi config set --secret ekstrain:jupyterhubClientSecret <client secret of the OAuth app>",
                )
            )
    if a.type in ("github", "generic-oauth"):
        missing = [f for f, v in (("clientId", a.client_id), ("callbackUrl", a.callback_url)) if not v]
        if a.type == "generic-oauth":
            missing += [
                f
                for f, v in (
                    ("authorizeUrl", a.authorize_url),
                    ("tokenUrl", a.token_url),
                    ("userdataUrl", a.userdata_url),
                )
                if not v
            ]
        if missing:
            out.append(
                ConfigIssue(
                    f"{key}.auth", f"{a.type} needs {', '.join(missing)}", "set them from your OAuth application"
                )
            )
    if not (a.allowed_users or a.allowed_organizations or a.admin_users):
        out.append(
            ConfigIssue(
                f"{key}.auth.allowedUsers",
                "nobody is listed, so the hub would be open to every account of the identity provider",
                "list allowedUsers or (github) allowedOrganizations",
            )
        )
    if a.allowed_organizations and a.type != "github":
        out.append(
            ConfigIssue(
                f"{key}.auth.allowedOrganizations",
                "only the github authenticator has organizations",
                "use allowedUsers",
            )
        )
    if any(ipaddress.IPv4Network(c).prefixlen == 0 for c in j.allowed_cidrs):
        out.append(
            ConfigIssue(
                f"{key}.allowedCidrs",
                "0.0.0.0/0 opens the hub's load balancer to every address that reaches the VPC",
                "list the VPC, VPN or office CIDRs",
            )
        )
    names_ = {p.name for p in cfg.partitions}
    unknown = sorted(set(j.profiles) - names_)
    if unknown:
        out.append(ConfigIssue(f"{key}.profiles", f"{unknown} are not partitions", f"use some of {sorted(names_)}"))
    out += _notebook_fit(cfg, key)
    if not cfg.partitions:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "there are no partitions to offer as profiles",
                "add a partition or disable JupyterHub",
            )
        )
    if not cfg.storage.efs.enabled:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "user homes live on EFS but ekstrain:storage.efs.enabled is false",
                "set ekstrain:storage.efs.enabled: true",
            )
        )
    if not cfg.storage.fsx.enabled:
        out.append(
            ConfigIssue(
                f"{key}.enabled",
                "notebooks mount the training FSx read-only but ekstrain:storage.fsx.enabled is false",
                "set ekstrain:storage.fsx.enabled: true",
            )
        )
    return out, warnings


def _oauth_urls(cfg: StackConfig) -> list[ConfigIssue]:
    """OAuth endpoints and the callback carry codes and tokens: https only, with a host."""
    a = cfg.jupyterhub.auth
    out: list[ConfigIssue] = []
    if not cfg.jupyterhub.enabled:
        return out
    for field, url in (
        ("callbackUrl", a.callback_url),
        ("authorizeUrl", a.authorize_url),
        ("tokenUrl", a.token_url),
        ("userdataUrl", a.userdata_url),
    ):
        if url is not None and not _HTTPS_URL.fullmatch(url):
            out.append(
                ConfigIssue(
                    f"ekstrain:jupyterhub.auth.{field}",
                    f"{url[:80]!r} is not an https:// URL with a host (OAuth codes and tokens would travel in clear "
                    "or to no server)",
                    "write it like https://hub.example.com/hub/oauth_callback",
                )
            )
    return out


_HTTPS_URL = re.compile(r"https://[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(:[0-9]{1,5})?(/[\x21-\x7e]*)?")
