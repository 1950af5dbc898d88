"""The policy pack's rules over the recording, as ``pulumi preview --policy-pack policy`` runs them in CI.

The rules are plain functions (policy/ekstrain_policy/rules.py, shared with the pack); mandatory
violations are problems (they would block the preview), advisory ones warnings. The per-stack pack
config is ``policy/config/<stack>.json``, the file CI passes as ``policyPackConfigs``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ekstrain.files.paths import POLICY_PACK as POLICY_DIR
from ekstrain.files.paths import project_dir
from ekstrain.infra import offline
from ekstrain.infra.verify import Check

if str(POLICY_DIR) not in sys.path:  # the pack is package data (a directory), not a package of this program
    sys.path.append(str(POLICY_DIR))

from ekstrain_policy import rules  # noqa: E402


def pack_config(stack: str) -> dict[str, Any]:
    """The project's ``policy/config/<stack>.json`` (what its CI passes as policyPackConfigs), else the
    packaged one of the same name, else none."""
    for root in (project_dir() / "policy", POLICY_DIR):
        path = root / "config" / f"{stack}.json"
        if path.exists():
            return dict(json.loads(path.read_text()))
    return {}


def check_recording(rec: offline.Recording, stack: str) -> Check:
    check = Check("policy pack: CrossGuard rules (policy/ekstrain_policy)", len(rec.records), what="resources")
    resources = [
        rules.Resource(
            type=r.type,
            name=r.name,
            urn=r.urn,
            props=r.outputs or r.inputs,
            protect=r.protect,
            dependencies=frozenset(r.dependencies),
            secret_paths=frozenset(r.secret_inputs),
        )
        for r in rec.records
    ]
    mandatory = {rule.name: rule.mandatory for rule in rules.RULES}
    for name, urn, message in rules.evaluate(resources, pack_config(stack)):
        line = f"{name} ({urn.rsplit('::', 1)[-1] or 'stack'}): {message}"
        (check.problems if mandatory[name] else check.warnings).append(line)
    return check
