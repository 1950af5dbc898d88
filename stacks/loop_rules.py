"""Cross-field rules for the platform's own loops: TLS for the hub's OAuth callback, checkpoint rotation.

Pure, run by :func:`ekstrain.stacks.rules.check` before any resource exists; each issue names the key and the fix.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig

_ACM_ARN = re.compile(r"arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]{36}")
"""ACM certificate ARN (ACM API reference, CertificateArn: arn:aws:acm:region:account:certificate/<uuid>)."""


def hub_tls(cfg: StackConfig) -> list[ConfigIssue]:
    """An https OAuth callback needs something terminating TLS in front of the hub: the NLB with an ACM certificate
    in the stack's region (an NLB uses certificates of its own region only; ACM user guide, "Services integrated with
    ACM")."""
    j = cfg.jupyterhub
    if not j.enabled:
        return []
    key = "ekstrain:jupyterhub.tls.certificateArn"
    arn = j.tls.certificate_arn
    callback = j.auth.callback_url
    if arn is None:
        if callback and callback.startswith("https://"):
            host = urlsplit(callback).hostname or "<hub host>"
            return [
                ConfigIssue(
                    key,
                    f"the OAuth callback {callback[:80]!r} is https, but the hub's internal NLB serves plain HTTP on "
                    "port 80: nothing terminates TLS, so the provider's redirect never reaches the hub",
                    f"aws acm request-certificate --domain-name {host} --validation-method DNS, then set "
                    "jupyterhub.tls.certificateArn to its ARN (docs/platform.md, TLS)",
                )
            ]
        return []
    m = _ACM_ARN.fullmatch(arn)
    if m is None:
        return [
            ConfigIssue(
                key, f"{arn[:100]!r} is not an ACM certificate ARN", "arn:aws:acm:<region>:<account>:certificate/<id>"
            )
        ]
    region = cfg.region
    if region and m.group(1) != region:
        return [
            ConfigIssue(
                key,
                f"the certificate is in {m.group(1)}, the stack's load balancer in {region} (an NLB takes "
                "certificates of its own region only)",
                f"request or import the certificate in {region} and use that ARN",
            )
        ]
    return []
