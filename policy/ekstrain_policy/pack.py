"""pulumi-policy objects for the rules in ``rules.py``: thin adapters, no logic of their own.

Importing this module starts nothing (``PolicyPack(...)`` in ``__main__.py`` is what serves and
blocks), so tests import it to run the real policy objects over synthetic and recorded resources.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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


def resource_from_args(args: ResourceValidationArgs) -> rules.Resource:
    return rules.Resource(
        type=args.resource_type, name=args.name, urn=args.urn, props=args.props, protect=bool(args.opts.protect)
    )


def resource_from_policy_resource(r: PolicyResource) -> rules.Resource:
    return rules.Resource(
        type=r.resource_type,
        name=r.name,
        urn=r.urn,
        props=r.props,
        protect=bool(r.opts.protect),
        dependencies=frozenset(d.urn for d in r.dependencies),
        property_dependencies={k: frozenset(d.urn for d in v) for k, v in r.property_dependencies.items()},
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
