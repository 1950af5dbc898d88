"""Credentials are stored as Pulumi secrets: no Kubernetes Secret data and no credential-looking Helm
value reaches the state file in plaintext (the engine records which inputs the SDK sent as secrets)."""

from __future__ import annotations

from collections.abc import Iterable

from ekstrain.infra import offline
from ekstrain.infra.verify import Check
from ekstrain.infra.verify.policy import rules


def plaintext_credentials(records: Iterable[offline.Record]) -> list[str]:
    """``<resource>.<input path>`` of each credential-bearing input that would sit in the state in plaintext."""
    out = []
    for r in records:
        secret = r.secret_inputs
        if r.type == rules.K8S_SECRET:
            for prop in ("data", "stringData"):
                if prop in secret:
                    continue
                out += [
                    f"{r.name}.{prop}.{k}"
                    for k, v in (r.inputs.get(prop) or {}).items()
                    if v and f"{prop}.{k}" not in secret
                ]
        elif r.type == rules.HELM_RELEASE and "values" not in secret:
            out += [
                f"{r.name}.values.{p}"
                for p in rules.sensitive_values(r.inputs.get("values"))
                if f"values.{p}" not in secret
            ]
    return out


def check_recording(rec: offline.Recording) -> Check:
    records = [r for r in rec.records if r.type in (rules.K8S_SECRET, rules.HELM_RELEASE)]
    check = Check("credentials: Pulumi secrets in the state", len(records), what="secrets and releases")
    check.problems += [
        f"{p}: plaintext in the state; pass it as a Pulumi secret (pulumi.Output.secret, config --secret)"
        for p in plaintext_credentials(records)
    ]
    return check
