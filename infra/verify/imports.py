"""No ``import`` of something this stack creates.

``pulumi preview`` of a resource with the ``import`` option reads the existing cloud resource; on a stack's
first deploy anything the same stack creates does not exist yet, so the preview (and the up) fails: the
deploy role's EKS access entry imported with ``cluster:principal`` while the cluster itself is created in the
same run was such a case. A resource whose import id names a resource this stack creates (its physical name:
``name``, ``bucket``, ``clusterName``, ``roleName``...), or that depends on one, is refused; create it instead.
Every resource's import id is written to resources.yaml (``import``), so a reviewer sees each adoption.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ekstrain.infra import offline
from ekstrain.infra.verify import Check

CHECK_NAME = "imports: no import of a resource this stack creates"
PHYSICAL_NAME_INPUTS = ("name", "bucket", "clusterName", "roleName", "functionName", "fileSystemId")
"""Inputs that carry a resource's physical name (what another resource's import id would name)."""


def created_names(records: Iterable[offline.Record]) -> dict[str, offline.Record]:
    """Physical name -> the record that creates it, for every custom resource registered without ``import``."""
    out: dict[str, offline.Record] = {}
    for r in records:
        if not r.custom or r.import_id or r.type.startswith(("pulumi:", "kubernetes:")):
            continue
        for key in PHYSICAL_NAME_INPUTS:
            value = r.inputs.get(key)
            if isinstance(value, str) and value and not value.startswith("<"):
                out.setdefault(value, r)
    return out


def problems(records: list[offline.Record]) -> list[str]:
    created = created_names(records)
    by_urn = {r.urn: r for r in records}
    out = []
    for r in records:
        if not r.import_id:
            continue
        named = [created[t] for t in re.split(r"[:#/,|]", r.import_id) if t in created and created[t] is not r]
        waits = [by_urn[d] for d in r.dependencies if d in by_urn and by_urn[d].custom and not by_urn[d].import_id]
        for other, why in [*((o, "its import id names") for o in named), *((o, "it depends on") for o in waits)]:
            out.append(
                f"{r.type} {r.name}: imported ({r.import_id!r}) but {why} {other.type} {other.name}, which this stack "
                "creates: on the first deploy it does not exist yet and the preview fails reading the import; "
                "fix: create the resource (drop `import_`)"
            )
            break
    return out


def check_recording(rec: offline.Recording) -> Check:
    check = Check(CHECK_NAME, sum(1 for r in rec.records if r.import_id), what="imports")
    check.problems += problems(rec.records)
    return check
