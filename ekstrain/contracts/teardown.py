"""What `pulumi destroy` stops at and what it leaves behind, from the recorded resources: the runbook's teardown
table (docs/delivery.md "Teardown", tested by tests/infra/test_lifecycle_teardown.py).

- ``protect``: the engine refuses to delete the resource ("resource ... cannot be deleted because it is protected");
  `pulumi destroy` fails there unless run with ``--exclude-protected`` (which skips the protected resources and
  everything they depend on), until ``pulumi state unprotect <urn>`` (Pulumi docs, resource option "protect").
- ``retainOnDelete``: the engine forgets the resource without deleting it in AWS (resource option
  "retainOnDelete"): it outlives the stack and keeps costing what :data:`kinds.BILLED_WHILE_KEPT` says.
- EKS ``deletionProtection``: DeleteCluster is refused until UpdateClusterConfig turns it off (the program's
  ``ekstrain:cluster.deletionProtection: false`` and an `up`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ekstrain.contracts import kinds


@dataclass(frozen=True)
class Kept:
    type: str
    name: str
    protect: bool
    retain_on_delete: bool
    deletion_protection: bool = False


CLUSTER = "aws:eks/cluster:Cluster"
PROTECT = "protect"
DELETION_PROTECTION = "EKS deletionProtection"


def kept(type_: str, name: str, protect: bool, retain_on_delete: bool, inputs: Mapping[str, Any]) -> Kept:
    """A recorded resource's teardown facts; deletion protection is the EKS cluster's ``deletionProtection``."""
    return Kept(type_, name, protect, retain_on_delete, type_ == CLUSTER and bool(inputs.get("deletionProtection")))


def stops(k: Kept) -> list[tuple[str, str]]:
    """What refuses the resource's delete step, in the order `pulumi destroy` meets it: (what, why and fix).

    A retained resource is forgotten, not deleted: no DeleteCluster call, so its deletion protection stops
    nothing (its ``protect`` still does: the engine checks it before either)."""
    out = []
    if k.protect:
        out.append(
            (PROTECT, "protected (`protect`): the delete step refuses it; fix: `pulumi state unprotect <urn>` first")
        )
    if k.deletion_protection and not k.retain_on_delete:
        out.append(
            (
                DELETION_PROTECTION,
                "deletionProtection: true, DeleteCluster is refused; fix: set cluster.deletionProtection false and "
                "`pulumi up` first",
            )
        )
    return out


def billed(type_: str) -> str:
    """What a resource of this type left behind keeps costing (:data:`kinds.BILLED_WHILE_KEPT`), or ``nothing``."""
    return kinds.BILLED_WHILE_KEPT.get(type_, "nothing")


def rows(resources: Iterable[Kept]) -> list[dict[str, str]]:
    """One row per type and outcome: what stops the destroy, what stays (and bills) after it."""
    groups: dict[tuple[str, bool, bool, bool], list[str]] = {}
    for r in resources:
        if r.protect or r.retain_on_delete or r.deletion_protection:
            groups.setdefault((r.type, r.protect, r.retain_on_delete, r.deletion_protection), []).append(r.name)
    out = []
    for (type_, protect, retain, deletion), names in sorted(groups.items()):
        stopped_by = [what for what, _ in stops(Kept(type_, "", protect, retain, deletion))]
        if retain:
            after = "left in AWS, forgotten by the state"
        elif deletion:
            after = "deleted once unprotected and deletion protection is off"
        else:
            after = "deleted once unprotected"
        out.append(
            {
                "type": f"`{type_}`",
                "resources": ", ".join(sorted(names)),
                "stops destroy": " + ".join(stopped_by) or "-",
                "then `pulumi destroy`": after,
                "billed while kept": billed(type_),
            }
        )
    return out


def table(resources: Iterable[Kept]) -> str:
    found = rows(resources)
    head = ["type", "resources", "stops destroy", "then `pulumi destroy`", "billed while kept"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h] for h in head) + " |" for r in found]
    return "\n".join(lines)
