"""The render's relation checks: references resolve, Pod Security admission, creation order (infra/verify/).

Each defect the day-1 review found on a real first `pulumi up` is seeded into the prod recording (or its chart
objects) and must be reported; the shipped stack must be clean.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import needs_upstream

from ekstrain.infra import offline, render
from ekstrain.infra.verify import admission, charts, order, references, relations
from ekstrain.infra.verify.pods import Inventory, PodTemplate, inventory, pod_templates, reviewed

# prod_rendered (tests/conftest.py): every prod release rendered by the real `helm template` as the render does,
# once for the session (cached by content under build/.cache)


def _run(rec: offline.Recording, rendered: charts.Rendered) -> dict[str, Any]:
    checks, graph = relations.run(rec, rendered, render.manifest_of)
    return {c.name.split(":")[0]: c for c in checks} | {"graph": graph}


def _without(rec: offline.Recording, drop: Any = None, edit: Any = None) -> offline.Recording:
    records = [copy.deepcopy(r) for r in rec.records if drop is None or not drop(r)]
    for r in records:
        if edit is not None:
            edit(r)
    return offline.Recording(records, rec.outputs, rec.invokes)


@needs_upstream
def test_prod_is_clean_and_every_check_looked(prod_recording: offline.Recording, prod_rendered: Any) -> None:
    found = _run(prod_recording, prod_rendered)
    for name in ("references", "admission", "creation order"):
        assert found[name].problems == [], name
    assert found["references"].checked > 400 and found["admission"].checked > 50
    assert found["creation order"].checked == sum(1 for r in prod_recording.records if r.custom or r.remote)
    stages = found["graph"].stages()
    # The engine's first stages are the IAM roles and the launch template; Helm releases only after the cluster.
    first = {prod_recording.by_urn(u).type for u in stages[0]}  # type: ignore[union-attr]
    assert "aws:iam/role:Role" in first and "kubernetes:helm.sh/v3:Release" not in first


@needs_upstream
def test_a_secret_nobody_creates_is_reported(prod_recording: offline.Recording, prod_rendered: Any) -> None:
    # GIVEN prod without the jupyterhub-oauth Secret (as prod deployed before: the hub's secretKeyRef waited 300 s)
    rec = _without(prod_recording, drop=lambda r: r.name == "jupyterhub-oauth")
    problems = _run(rec, prod_rendered)["references"].problems
    # THEN the hub Deployment's reference is a problem naming the Secret and the fix
    assert [p for p in problems if "Secret jupyterhub/jupyterhub-oauth" in p and "Deployment/jupyterhub/hub" in p]


@needs_upstream
def test_privileged_notebook_pods_are_refused_by_the_namespace(
    prod_recording: offline.Recording, prod_rendered: Any
) -> None:
    # GIVEN the chart's default blockWithIptables (a privileged NET_ADMIN init container in every user pod)
    def chart_default(r: offline.Record) -> None:
        if r.type == order.RELEASE and r.inputs.get("name") == "jupyterhub":
            r.inputs["values"]["singleuser"]["cloudMetadata"] = {"blockWithIptables": True}

    problems = _run(_without(prod_recording, edit=chart_default), prod_rendered)["admission"].problems
    # THEN each profile's pod is refused by the `baseline` namespace, before a user clicks Start
    assert problems and all("enforces Pod Security 'baseline'" in p and "privileged" in p for p in problems)
    assert any("KubeSpawner/jupyterhub/jupyter-<user> (gpu-h100" in p for p in problems)


@needs_upstream
def test_a_release_that_races_the_node_group_is_reported(prod_recording: offline.Recording, prod_rendered: Any) -> None:
    # GIVEN the device plugins without the cluster dependency (infra/program.py before day 1)
    cluster_children = {r.urn for r in prod_recording.records if "ekstrain:cluster:Cluster" in r.urn}

    def race(r: offline.Record) -> None:
        if "DevicePlugins" in r.urn:
            r.dependencies = [d for d in r.dependencies if d not in cluster_children]
            r.provider = ""  # the cluster's Kubernetes provider waits for the system nodes: bypass it too

    problems = _run(_without(prod_recording, edit=race), prod_rendered)["creation order"].problems
    # THEN the neuron release (its scheduler Deployment needs system nodes for Helm's wait) is reported
    assert any(p.startswith("Release device-plugins-neuron waits for Deployment") for p in problems)


@needs_upstream
def test_a_custom_resource_before_its_crd_is_reported(prod_recording: offline.Recording, prod_rendered: Any) -> None:
    # GIVEN a NodePool that no longer waits for the Karpenter releases (karpenter-crd brings its CRD)
    def detach(r: offline.Record) -> None:
        if r.type == "kubernetes:karpenter.sh/v1:NodePool" and r.name.startswith("gpu-h100"):
            r.dependencies = []

    problems = _run(_without(prod_recording, edit=detach), prod_rendered)["creation order"].problems
    assert any("NodePool gpu-h100" in p and "before its CRD (Release karpenter-crd)" in p for p in problems)


def test_webhook_rules_order_the_custom_resources_they_serve() -> None:
    # GIVEN a release bringing a CRD and a Fail-closed webhook for it, and a CR depending only on the CRD's release
    crd = {
        "kind": "CustomResourceDefinition",
        "spec": {"group": "example.io", "names": {"kind": "Widget", "plural": "widgets"}},
    }
    hook = {
        "kind": "ValidatingWebhookConfiguration",
        "webhooks": [{"rules": [{"apiGroups": ["example.io"], "resources": ["widgets"], "operations": ["CREATE"]}]}],
    }
    urn = "urn:pulumi:s::p::{}::{}".format
    recs = [
        offline.Record(
            urn("kubernetes:helm.sh/v3:Release", "crds"), "kubernetes:helm.sh/v3:Release", "crds", True, False, "", {}
        ),
        offline.Record(
            urn("kubernetes:helm.sh/v3:Release", "hook"), "kubernetes:helm.sh/v3:Release", "hook", True, False, "", {}
        ),
        offline.Record(
            urn("kubernetes:example.io/v1:Widget", "w"),
            "kubernetes:example.io/v1:Widget",
            "w",
            True,
            False,
            "",
            {},
            dependencies=[urn("kubernetes:helm.sh/v3:Release", "crds")],
        ),
    ]
    rec = offline.Recording(recs, {}, [])
    applied = [order.Applied(recs[0].urn, [crd], [], False), order.Applied(recs[1].urn, [hook], [], False)]
    result, _ = order.check(rec, applied, Inventory(), {})
    # THEN the CR is reported as racing the webhook; depending on it too clears it
    assert [p for p in result.problems if "admission webhook that serves example.io/widgets (Release hook)" in p]
    recs[2].dependencies.append(recs[1].urn)
    assert order.check(rec, applied, Inventory(), {})[0].problems == []


def _pod(spec: dict[str, Any], ns: str = "training", metadata: dict[str, Any] | None = None) -> PodTemplate:
    obj = {"kind": "Pod", "metadata": {"name": "p", "namespace": ns, **(metadata or {})}, "spec": spec}
    (t,) = pod_templates(obj, "test")
    return t


def test_reference_kinds_optional_and_reviewed() -> None:
    spec = {
        "serviceAccountName": "runner",
        "priorityClassName": "training-high",
        "schedulerName": "volcano",
        "containers": [
            {
                "name": "c",
                "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "opt", "key": "k", "optional": True}}},
                ],
            }
        ],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "fsx-lustre"}}],
    }
    t = _pod(spec, metadata={"annotations": {"scheduling.volcano.sh/queue-name": "gpu-h100"}})
    named = {r for r, _ in references.pod_references(t)}
    # GIVEN nothing exists THEN each required reference is named; the optional one is not
    assert named == {
        ("ServiceAccount", "training", "runner"),
        ("PriorityClass", "", "training-high"),
        ("Scheduler", "", "volcano"),
        ("Secret", "training", "creds"),
        ("PersistentVolumeClaim", "training", "fsx-lustre"),
        ("Queue", "", "gpu-h100"),
    }
    empty = inventory([])
    assert len(references.check([], [t], empty, set()).problems) == 6
    # GIVEN the objects exist (the volcano scheduler from its --scheduler-name) THEN nothing is reported
    objs = [
        {"kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": "training"}},
        {"kind": "PriorityClass", "metadata": {"name": "training-high"}},
        {"kind": "Secret", "metadata": {"name": "creds", "namespace": "training"}},
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "fsx-lustre", "namespace": "training"}},
        {"kind": "Queue", "metadata": {"name": "gpu-h100"}},
    ]
    full = inventory([("x", o) for o in objs])
    assert references.check([], [t], full, {"volcano"}).problems == []


@needs_upstream
def test_reviewed_entries_match_prod_references(prod_recording: offline.Recording, prod_rendered: Any) -> None:
    # A reviewed exception nothing uses hides the next real finding: each entry must match a reference of prod.
    applied, _, _ = relations.applied_resources(prod_recording, prod_rendered, render.manifest_of)
    named = {r for a in applied for t in a.templates for r, _ in references.pod_references(t)}
    assert reviewed()
    for entry in reviewed():
        assert any(entry.matches(entry.check, r) for r in named), f"unused reviewed entry {entry}"


def test_pod_security_levels_follow_the_upstream_rules() -> None:
    # baseline: privileged, host namespaces, hostPath, extra capabilities, unsafe sysctls are refused
    bad = {
        "hostNetwork": True,
        "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
        "containers": [{"name": "c", "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}}}],
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
    }
    found = admission.violations(_pod(bad), "baseline")
    assert len(found) == 5 and admission.violations(_pod(bad), "privileged") == []
    # restricted: a plain container misses allowPrivilegeEscalation, runAsNonRoot, seccomp and drop ALL
    plain = {"containers": [{"name": "c"}]}
    assert admission.violations(_pod(plain), "baseline") == []
    assert len(admission.violations(_pod(plain), "restricted")) == 4
    hardened = {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {"name": "c", "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}
        ],
    }
    assert admission.violations(_pod(hardened), "restricted") == []


@needs_upstream
def test_example_jobs_name_only_what_prod_creates(
    prod_recording: offline.Recording, prod_rendered: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN every example job template (examples/render-all.sh) rendered for prod
    import pathlib

    import yaml
    from conftest import REPO
    from test_jobs_examples import _commands

    from ekstrain.cli import main as cli

    jobs: list[dict[str, Any]] = []
    for argv in _commands(tmp_path):
        argv = [*argv, "--stack-file", str(REPO / "Pulumi.prod.yaml")]
        assert cli.main(argv) == 0, capsys.readouterr().err
        out = pathlib.Path(argv[argv.index("--out") + 1])
        if out.suffix != ".sbatch":
            jobs += [d for d in yaml.safe_load_all(out.read_text()) if d]
    # WHEN their pods are checked against what the prod stack creates and the training namespace's level
    applied, _, _ = relations.applied_resources(prod_recording, prod_rendered, render.manifest_of)
    everything = [(a.urn, o) for a in applied for o in a.objects]
    inv = inventory([*everything, *(("examples", j) for j in jobs)])  # a job's own ConfigMaps come with it
    objects = [o for _, o in everything]
    templates = [t for j in jobs for t in pod_templates(j, "examples")]
    assert len(templates) >= len(jobs)
    refs = references.check([("examples", j) for j in jobs], templates, inv, references.schedulers(objects))
    pss = admission.check(templates, admission.namespace_levels(objects), inv)
    # THEN every Secret, claim, queue and scheduler they name exists, and the namespace admits every pod
    assert refs.problems == [] and refs.checked > 3 * len(jobs)
    assert pss.problems == []
