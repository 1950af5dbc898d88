"""Least privilege: no component holds a grant it does not use.

GIVEN prod WHEN it is rendered THEN
- Fluent Bit's ClusterRole has no ``nodes/proxy`` (the chart's ``rbac.nodeAccess`` is off) and its init container
  gets exactly ``nodes: get`` from the program's own ClusterRole;
- every ClusterRole/Role (the program's and every chart's) granting ``nodes/proxy``, ``pods/exec`` or a wildcard is
  on security/reviewed-rbac-grants.yaml with a reason (an unlisted grant is a problem), and every entry is used;
- the MPI operator no longer holds ``pods/exec`` (its v2 controller never execs);
- the FSx CSI role cannot tag an existing file system (one carrying a tag its CreateFileSystem never sends), so it
  cannot tag and then delete a file system it did not create, while creating tagged scratch stays allowed;
- every CloudWatch log group (VPC flow logs and FSx logs included) is on a customer managed key, with retention.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

from conftest import stack_config
from support.renders import Renders

from ekstrain.assembly import logs
from ekstrain.assembly.schedulers import mpi_operator
from ekstrain.components import csi, iam
from ekstrain.infra import offline, report
from ekstrain.infra import render as render_mod
from ekstrain.infra.verify import charts, rbac

PROD = stack_config("prod")


# ---- Fluent Bit ---------------------------------------------------------------------------------------------------


def test_fluent_bit_values_leave_node_access_off_and_grant_nodes_get_only() -> None:
    values = logs.chart_values(PROD)
    assert values["rbac"] == {"create": True, "nodeAccess": False}
    role, binding = logs.node_reader_objects()
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": logs.SERVICE_ACCOUNT, "namespace": logs.NAMESPACE}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_the_node_reader_is_registered_before_the_agent(prod_recording: offline.Recording) -> None:
    roles = {
        m["metadata"]["name"]: (c, m) for c, m in render_mod.manifests(prod_recording) if m["kind"] == "ClusterRole"
    }
    component, role = roles[logs.NODE_READER]
    assert component == "logs" and role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert "pods/exec" not in {r for rule in mpi_operator.operator_rules() for r in rule["resources"]}


# ---- the RBAC check -----------------------------------------------------------------------------------------------


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


def test_an_unlisted_grant_is_a_problem_and_a_listed_one_shows_its_reason() -> None:
    proxy = _role("agent", [{"apiGroups": [""], "resources": ["nodes", "nodes/proxy"], "verbs": ["get"]}])
    exec_ = _role("ops", [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}])
    star = _role("admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    plain = _role("reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    accepted = [rbac.Reviewed("logs--*", "ClusterRole", "agent", "nodes/proxy", "reads kubelet stats")]
    out = rbac.check([("ops", exec_), ("ops", plain)], {"logs--fluent-bit": [proxy], "x--y": [star]}, accepted)
    assert out.checked == 4
    assert out.reviewed == ["logs--fluent-bit: ClusterRole agent grants nodes/proxy: reads kubelet stats"]
    assert sorted(p.split(": no reviewed")[0] for p in out.problems) == [
        "ops: ClusterRole ops grants pods/exec",
        "x--y: ClusterRole admin grants apiGroups *",
        "x--y: ClusterRole admin grants resources *",
        "x--y: ClusterRole admin grants verbs *",
    ]


def test_prod_render_has_no_unreviewed_powerful_grant(
    renders: Renders, prod_rendered: charts.Rendered, prod_recording: offline.Recording
) -> None:
    """Every grant in prod's render has a reason, nothing grants nodes/proxy or pods/exec, and every reviewed entry
    still matches a grant (a stale entry would hide a future one). The chart objects are those the render's RBAC check
    reads (``charts.render_all`` of prod's releases, once for the session: tests/conftest.py), not its 19 MB of
    charts/ parsed back (the same objects, Secrets' data masked)."""
    prod_build = renders("prod")
    chart_objects: dict[str, list[dict[str, Any]]] = prod_rendered.objects
    own = render_mod.manifests(prod_recording)
    out = rbac.check(own, chart_objects)
    assert out.problems == []
    found = rbac.grants([*own, *((k, o) for k, objs in chart_objects.items() for o in objs)])
    assert not [g for g in found if g.grant in rbac.SENSITIVE_RESOURCES], found
    for entry in rbac.reviewed():
        assert any(entry.matches(g) for g in found), f"unused entry in security/reviewed-rbac-grants.yaml: {entry}"
    fluent = [o for o in chart_objects["logs--fluent-bit"] if o["kind"] == "ClusterRole"]
    assert fluent and all("nodes/proxy" not in r.get("resources", []) for o in fluent for r in o["rules"])
    assert report.load(prod_build).check(rbac.NAME).ran  # its row in checks.json, and so in SUMMARY.md's table
    assert f"| {rbac.NAME} |" in (prod_build / "SUMMARY.md").read_text()


# ---- FSx CSI: only what it created ---------------------------------------------------------------------------------

SCRATCH = ("ekstrain.io/fsx-scratch", "ekstrain-prod")
PROTECTED = "arn:aws:fsx:us-west-2:111122223333:file-system/fs-0123456789abcdef0"
OTHER = "arn:aws:fsx:us-west-2:111122223333:file-system/fs-0fedcba9876543210"


def _condition_holds(condition: dict[str, Any], context: dict[str, str]) -> bool:
    for op, pairs in condition.items():
        for key, want in pairs.items():
            have = context.get(key)
            if op == "StringEquals" and have != want:
                return False
            if op == "Null" and (have is None) != (want == "true"):
                return False
            if op == "StringLike" and (have is None or not fnmatch.fnmatchcase(have, str(want))):
                return False
    return True


def allowed(statements: list[dict[str, Any]], action: str, resource: str, context: dict[str, str]) -> bool:
    """IAM's evaluation for one identity policy: an explicit Deny wins, else some Allow must match."""

    def applies(s: dict[str, Any]) -> bool:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        return (
            action in actions
            and any(fnmatch.fnmatchcase(resource, r) for r in resources)
            and _condition_holds(s.get("Condition", {}), context)
        )

    if any(s["Effect"] == "Deny" and applies(s) for s in statements):
        return False
    return any(s["Effect"] == "Allow" and applies(s) for s in statements)


def _tags(prefix: str, tags: dict[str, str]) -> dict[str, str]:
    return {f"aws:{prefix}/{k}": v for k, v in tags.items()}


def test_the_fsx_csi_role_cannot_tag_then_delete_a_file_system_it_did_not_create() -> None:
    policy = csi.fsx_controller_policy(PROTECTED, SCRATCH)
    scratch = {SCRATCH[0]: SCRATCH[1]}
    # Creating scratch: CreateFileSystem with the StorageClass's extraTags and the driver's CSIVolumeName; the
    # create-time TagResource authorization sees no resource tags yet.
    request = _tags("RequestTag", {**scratch, "CSIVolumeName": "pvc-1"})
    assert allowed(policy, "fsx:CreateFileSystem", "*", request)
    assert allowed(policy, "fsx:TagResource", OTHER, request)
    # Its own scratch file system: delete and resize.
    assert allowed(policy, "fsx:DeleteFileSystem", OTHER, _tags("ResourceTag", {**scratch, "CSIVolumeName": "pvc-1"}))
    # Another team's file system (named in the console, or another stack's): tagging it with the scratch tag is
    # denied, so it never becomes deletable; deleting it untagged is not allowed either.
    for existing in (
        {"Name": "team-b-data"},
        {"Project": "other", "ManagedBy": "terraform"},
        {"ekstrain.io/stack": "x"},
    ):
        assert not allowed(
            policy, "fsx:TagResource", OTHER, {**_tags("ResourceTag", existing), **_tags("RequestTag", scratch)}
        )
        assert not allowed(policy, "fsx:DeleteFileSystem", OTHER, _tags("ResourceTag", existing))
    # The stack's own persistent file system: never tagged, updated or deleted.
    for action in csi.PROTECTED_FSX_ACTIONS:
        assert not allowed(policy, action, PROTECTED, {**_tags("ResourceTag", scratch), **_tags("RequestTag", scratch)})


# ---- every log group on a customer managed key, with retention ------------------------------------------------------


def test_every_log_group_has_a_customer_key_and_retention(prod_recording: offline.Recording) -> None:
    groups = prod_recording.of_type("aws:cloudwatch/logGroup:LogGroup")
    names = {str(g.inputs.get("name")) for g in groups}
    assert {"/aws/vpc/ekstrain-prod-flow-logs", "/aws/fsx/ekstrain-prod-lustre"} <= names, names
    for g in groups:
        assert g.inputs.get("kmsKeyId"), f"{g.name}: no KMS key"
        assert g.inputs.get("retentionInDays"), f"{g.name}: no retention"


def test_a_log_group_key_lets_cloudwatch_use_it_for_its_group_only() -> None:
    arn = "arn:aws:kms:us-west-2:111122223333:key/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
    policy = iam.log_group_key_policy(arn, "/aws/vpc/ekstrain-prod-flow-logs")
    service = policy["Statement"][1]
    assert service["Principal"] == {"Service": "logs.us-west-2.amazonaws.com"}
    assert service["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"] == (
        "arn:aws:logs:us-west-2:111122223333:log-group:/aws/vpc/ekstrain-prod-flow-logs"
    )
    assert json.loads(json.dumps(policy)) == policy
