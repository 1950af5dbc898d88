"""The policy pack's rules over the recording, as ``pulumi preview --policy-pack policy`` runs them in CI.

The rules are plain functions (policy/ekstrain_policy/rules.py, shared with the pack); mandatory
violations are problems (they would block the preview), advisory ones warnings. The per-stack pack
config is ``policy/config/<stack>.json``, the file CI passes as ``policyPackConfigs``.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

from ekstrain.infra import offline
from ekstrain.infra.verify import Check

POLICY_DIR = pathlib.Path(__file__).resolve().parents[2] / "policy"
if str(POLICY_DIR) not in sys.path:  # the pack ships as a directory, not as a package of this program
    sys.path.append(str(POLICY_DIR))

from ekstrain_policy import rules  # noqa: E402


def pack_config(stack: str) -> dict[str, Any]:
    path = POLICY_DIR / "config" / f"{stack}.json"
    return json.loads(path.read_text()) if path.exists() else {}


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
