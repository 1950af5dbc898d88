"""pulumi-policy objects for the rules in ``rules.py``: thin adapters, no logic of their own.

Importing this module starts nothing (``PolicyPack(...)`` in ``__main__.py`` is what serves and
blocks), so tests import it to run the real policy objects over synthetic and recorded resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi_policy.policy as _sdk_policy
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from ekstrain_policy import rules

_STRINGS = {"type": "array", "items": {"type": "string"}}
CONFIG_SCHEMAS: dict[str, PolicyConfigSchema] = {
    "stateful-protected-in-prod": PolicyConfigSchema(
        properties={
            "environment": {
                "type": "string",
                "description": "environment of the stack being previewed "
                "(policy/config/<stack>.json); default: the resource's Environment tag",
            },
            "prodEnvironments": {**_STRINGS, "default": list(rules.DEFAULT_PROD_ENVIRONMENTS)},
        }
    ),
    "containers-unprivileged": PolicyConfigSchema(
        properties={
            "privilegedAllowList": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"match": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["match", "reason"],
                },
            },
        }
    ),
    "credentials-from-secret-sources": PolicyConfigSchema(
        properties={
            "secretSourceTypes": _STRINGS,
            "literalSecretAllowList": _STRINGS,
        }
    ),
    "eks-control-plane-logs": PolicyConfigSchema(properties={"requiredLogTypes": _STRINGS}),
}


# The analyzer request carries the engine's secret marking (``{<sig>: <secret sig>, value: ...}``), but
# pulumi-policy 1.21's Analyze/AnalyzeStack unwrap it in ``deserialize_properties`` before any validator
# runs (policy.py: ``deserialize_properties(json_format.MessageToDict(request.properties))``). The rules
# judge a credential held as a Pulumi secret as coming from a secret source, so the paths are kept under
# one reserved key, which ``_props`` hides from the rules again.
SECRET_PATHS_KEY = "__ekstrainSecretPaths"
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"


def secret_paths(raw: Any, path: str = "") -> list[str]:
    """Dotted paths of the secret-wrapped values in a wire (protobuf-JSON) property map."""
    if isinstance(raw, Mapping):
        if raw.get(_SIG_KEY) == _SECRET_SIG:
            return [path]
        return [p for k, v in raw.items() for p in secret_paths(v, f"{path}.{k}" if path else str(k))]
    if isinstance(raw, list):
        return [p for i, v in enumerate(raw) for p in secret_paths(v, f"{path}[{i}]")]
    return []


_sdk_deserialize = _sdk_policy.deserialize_properties


def _deserialize_keeping_secret_paths(props: dict[str, Any], proxy_secrets: bool = False) -> dict[str, Any]:
    out = _sdk_deserialize(props, proxy_secrets)
    if not proxy_secrets:  # validation, not remediation (which keeps secrets itself)
        out[SECRET_PATHS_KEY] = secret_paths(props)
    return out


_sdk_policy.deserialize_properties = _deserialize_keeping_secret_paths


class _Props(Mapping[str, Any]):
    """The resource's properties without the reserved key (reads stay lazy: unknowns raise only when read)."""

    def __init__(self, target: Mapping[str, Any]):
        self._target = target

    def __getitem__(self, key: str) -> Any:
        if key == SECRET_PATHS_KEY:
            raise KeyError(key)
        return self._target[key]

    def __iter__(self) -> Any:
        return (k for k in self._target if k != SECRET_PATHS_KEY)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _props(props: Mapping[str, Any]) -> tuple[Mapping[str, Any], frozenset[str]]:
    if SECRET_PATHS_KEY not in props:
        return props, frozenset()
    return _Props(props), frozenset(str(p) for p in props[SECRET_PATHS_KEY])


def resource_from_args(args: ResourceValidationArgs) -> rules.Resource:
    props, secret = _props(args.props)
    return rules.Resource(
        type=args.resource_type,
        name=args.name,
        urn=args.urn,
        props=props,
        protect=bool(args.opts.protect),
        secret_paths=secret,
    )


def resource_from_policy_resource(r: PolicyResource) -> rules.Resource:
    props, secret = _props(r.props)
    return rules.Resource(
        type=r.resource_type,
        name=r.name,
        urn=r.urn,
        props=props,
        protect=bool(r.opts.protect),
        dependencies=frozenset(d.urn for d in r.dependencies),
        property_dependencies={k: frozenset(d.urn for d in v) for k, v in r.property_dependencies.items()},
        secret_paths=secret,
    )


def _resource_validator(rule: rules.Rule) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    check = rule.resource
    assert check is not None

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in check(resource_from_args(args), _config(args.get_config())):
            report_violation(message, None)

    return validate


def _stack_validator(rule: rules.Rule) -> Callable[[StackValidationArgs, ReportViolation], None]:
    check = rule.stack
    assert check is not None

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [resource_from_policy_resource(r) for r in args.resources]
        for urn, message in check(resources, _config(args.get_config())):
            report_violation(message, urn or None)

    return validate


def _config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in dict(cfg).items() if k != "enforcementLevel"}


def level(rule: rules.Rule) -> EnforcementLevel:
    return EnforcementLevel.MANDATORY if rule.mandatory else EnforcementLevel.ADVISORY


def build_policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    out: list[ResourceValidationPolicy | StackValidationPolicy] = []
    for rule in rules.RULES:
        if rule.resource is not None:
            out.append(
                ResourceValidationPolicy(
                    name=rule.name,
                    description=rule.description,
                    enforcement_level=level(rule),
                    validate=_resource_validator(rule),
                    config_schema=CONFIG_SCHEMAS.get(rule.name),
                )
            )
        else:
            out.append(
                StackValidationPolicy(
                    name=rule.name,
                    description=rule.description,
                    enforcement_level=level(rule),
                    validate=_stack_validator(rule),
                    config_schema=CONFIG_SCHEMAS.get(rule.name),
                )
            )
    return out


POLICIES = build_policies()
