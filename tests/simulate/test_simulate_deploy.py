"""`ekstrain simulate --deploy/--destroy`: the resource graph played as the Pulumi engine plays it."""

from __future__ import annotations

import pathlib

import pytest
from conftest import needs_upstream

from ekstrain.contracts import timing
from ekstrain.diff.sides import REPO, record
from ekstrain.simulate import deploy

URN = "urn:pulumi:prod::ekstrain::"


def row(t: str, name: str, deps=(), parent: str = "", provider: str = "", **kw) -> dict:
    return {"type": t, "name": name, "parent": parent, "dependsOn": list(deps), "provider": provider, **kw}


VPC = "aws:ec2/vpc:Vpc"
CLUSTER = "aws:eks/cluster:Cluster"
NG = "aws:eks/nodeGroup:NodeGroup"
FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
CM = "kubernetes:core/v1:ConfigMap"


def small() -> list[dict]:
    return [
        row("ekstrain:cluster:Cluster", "cluster"),
        row(VPC, "net"),
        row(CLUSTER, "cluster", ["net"], parent="cluster"),
        row("pulumi:providers:kubernetes", "k8s", ["cluster"], parent="cluster"),
        row(NG, "system", ["cluster"], parent="cluster"),
        row(FSX, "fsx", ["net"]),
        row(CM, "dash", [], provider="k8s"),
    ]


@pytest.mark.parametrize("form", ["bare", "type::name", "urn"])
def test_references_read_in_every_form(form: str) -> None:
    rows = small()

    def ref(t: str, n: str) -> str:
        return {"bare": n, "type::name": f"{t}::{n}", "urn": f"{URN}{t}::{n}"}[form]

    rows[2]["dependsOn"] = [ref(VPC, "net")]
    rows[4]["dependsOn"] = [ref(CLUSTER, "cluster")]
    rows[6]["provider"] = ref("pulumi:providers:kubernetes", "k8s")
    g = deploy.read_graph(rows)
    assert deploy.key_of(VPC, "net") in g[deploy.key_of(CLUSTER, "cluster")].waits
    assert deploy.key_of(CLUSTER, "cluster") in g[deploy.key_of(NG, "system")].waits
    assert not any(n.missing for n in g.values())


def test_bare_names_shared_by_two_resources_resolve_to_the_earlier_custom_one() -> None:
    """`cluster` is both the component and pulumi-eks's Cluster: a dependency means the custom one, a parent the
    component; a bucket policy named like its bucket cannot wait for a resource registered after it."""
    rows = [
        row("aws:s3/bucket:Bucket", "b"),
        row("aws:s3/bucketPolicy:BucketPolicy", "b", ["b"]),
        row("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "b", ["b"]),
    ]
    g = deploy.read_graph(rows)
    assert g["aws:s3/bucketPolicy:BucketPolicy::b"].waits == {"aws:s3/bucket:Bucket::b"}
    report = deploy.up(g)
    assert not report.play.cycle and not report.play.failed
    g = deploy.read_graph(small())
    assert g[deploy.key_of(NG, "system")].parent == "ekstrain:cluster:Cluster::cluster"
    assert deploy.key_of(CLUSTER, "cluster") in g[deploy.key_of(NG, "system")].waits


def test_up_is_parallel_where_the_graph_allows() -> None:
    report = deploy.up(deploy.read_graph(small()))
    steps = report.play.steps
    cluster = timing.duration(CLUSTER).create_s
    nodegroup = timing.duration(NG).create_s
    # FSx and the cluster both wait only for the VPC: they run side by side.
    assert steps[deploy.key_of(FSX, "fsx")].start == steps[deploy.key_of(CLUSTER, "cluster")].start
    assert report.play.end == pytest.approx(timing.duration(VPC).create_s + cluster + nodegroup)
    assert report.cluster_active_s == pytest.approx(timing.duration(VPC).create_s + cluster)
    # first step = ready + launch + gate + pull, each from its source
    assert report.first_step_s == pytest.approx(
        report.play.end
        + timing.node_launch_seconds("gpu")
        + timing.health_gate_seconds("gpu")
        + timing.IMAGE_PULL_SECONDS
    )


def test_seeded_missing_dependency_fails_at_its_stage_and_nothing_new_starts() -> None:
    rows = small()
    rows[4]["dependsOn"] = ["cluster", "no-such-access-association"]
    report = deploy.up(deploy.read_graph(rows))
    assert [k for k, _, _ in report.play.failed] == [deploy.key_of(NG, "system")]
    when = report.play.failed[0][1]
    assert when == pytest.approx(report.cluster_active_s)  # it fails when its last real dependency is done
    assert "no-such-access-association" in report.lines()[0]
    assert report.lines()[0].startswith("FAILS at ")
    assert report.first_step_s is None


def test_destroy_stops_at_protect_then_at_deletion_protection_and_prices_what_is_left() -> None:
    rows = small()
    rows[2]["protect"] = True
    rows[2]["inputs"] = {"deletionProtection": True}
    rows[5].update(protect=True, retainOnDelete=True, inputs={"storageCapacity": 1200, "perUnitStorageThroughput": 125})
    g = deploy.read_graph(rows)
    report = deploy.destroy(g)
    failed = [k for k, _, _ in report.play.failed]
    assert failed and all(g[k].protect for k in failed)
    after = deploy.destroy(deploy.unprotected(g))
    assert [k for k, _, _ in after.play.failed] == [deploy.key_of(CLUSTER, "cluster")]
    assert "deletionProtection" in after.play.failed[0][2]
    # The VPC waits for the cluster's deletion: never reached. The retained FSx is forgotten and stays billed.
    left = after.left()
    assert deploy.key_of(VPC, "net") in left and deploy.key_of(FSX, "fsx") in left
    usd, source = after.monthly(deploy.key_of(FSX, "fsx"))
    assert usd == pytest.approx(1200 * 0.145) and "fsx/lustre/pricing" in source
    text = "\n".join(after.lines())
    assert "retained" in text and "delete refused" in text


DEPLOYER = "arn:aws:iam::111122223333:role/deploy"
NS = "kubernetes:core/v1:Namespace"
APA = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


def access_rows() -> list[dict]:
    """A cluster without the creator's bootstrap admin, the deploy role's association behind the provider, the
    `monitoring` Namespace, and a ConfigMap in it that waits for nothing but its provider."""
    return [
        row("ekstrain:cluster:Cluster", "cluster"),
        row(VPC, "net"),
        row(
            CLUSTER,
            "cluster",
            ["net"],
            parent="cluster",
            inputs={"accessConfig": {"bootstrapClusterCreatorAdminPermissions": False}},
        ),
        row(APA, "deployer", ["cluster"], inputs={"principalArn": DEPLOYER}),
        row("pulumi:providers:kubernetes", "k8s", ["cluster", "deployer"], parent="cluster"),
        row(NG, "system", ["cluster"], parent="cluster"),
        row(NS, "monitoring-ns", ["system"], provider="k8s", inputs={"metadata": {"name": "monitoring"}}),
        row(CM, "dash", [], provider="k8s", inputs={"metadata": {"namespace": "monitoring"}}),
    ]


def test_seeded_configmap_in_a_namespace_created_later_fails_at_its_start() -> None:
    rows = access_rows()
    report = deploy.up(deploy.read_graph(rows), deploy_role_arn=DEPLOYER)
    (key, when, why), *_ = report.play.failed
    assert key == deploy.key_of(CM, "dash") and 'namespaces "monitoring" not found' in why
    assert when == report.play.steps[deploy.key_of("pulumi:providers:kubernetes", "k8s")].end
    rows[7]["dependsOn"] = ["monitoring-ns"]
    assert not deploy.up(deploy.read_graph(rows), deploy_role_arn=DEPLOYER).play.failed


def test_seeded_object_bypassing_the_access_association_fails_even_when_it_happens_to_run_later() -> None:
    rows = access_rows()
    rows[7]["dependsOn"] = ["monitoring-ns"]
    # A second provider that waits for the cluster only, and an object through it that runs after everything.
    # The provider's contract asks for the access too: it is the first step that fails (it starts after the node
    # group, long after the association, but nothing orders it after the association).
    rows.insert(6, row("pulumi:providers:kubernetes", "k8s-direct", ["cluster", "system"]))
    rows.append(row(CM, "late", ["system"], provider="k8s-direct", inputs={}))
    report = deploy.up(deploy.read_graph(rows), deploy_role_arn=DEPLOYER)
    (key, _, why), *_ = report.play.failed
    assert key == "pulumi:providers:kubernetes::k8s-direct"
    assert "Unauthorized" in why and "only by chance (a race)" in why and "deployer" in why
    # without the deploy role named, the access rule is not checked
    assert not deploy.up(deploy.read_graph(rows)).play.failed


@needs_upstream
def test_prod_first_up_and_teardown(prod_build: pathlib.Path) -> None:
    """On the session's render of prod (tests/support/simulate.py). With exact references in resources.yaml the
    first up must complete with its times; with bare names (before they were exact) the rehearsal names the race of the
    StorageClass gp3 with the deploy role's access association (it waited for neither through the graph)."""
    build = prod_build
    rows = deploy.load_rows(build)
    bare = deploy.bare(rows)  # of resources.yaml as written (its 1.6 MB are read once)
    if bare:
        recorded = [r.to_dict() for r in record(REPO, "prod", REPO / "Pulumi.prod.yaml", "--stack-file")]
        rows = deploy.with_exact_refs(rows, recorded)
    g = deploy.read_graph(rows)
    role = "arn:aws:iam::111122223333:role/ekstrain-prod-deploy"
    up = deploy.up(g, deploy_role_arn=role, crds=deploy.crd_installers(build))
    if bare:
        assert up.play.failed and all("Unauthorized" in why or "not found" in why for _, _, why in up.play.failed), (
            up.lines()
        )
    else:
        assert not up.play.failed and not up.play.cycle, up.lines()
        assert 15 * 60 < up.play.end < 3 * 3600
        assert up.first_step_s is not None and up.first_step_s > up.play.end
    assert deploy.up(g).play.end > 15 * 60  # the cluster alone takes its 15 minutes
    assert deploy.destroy(g).play.failed
    after = deploy.destroy(deploy.unprotected(g))
    assert any("deletionProtection" in why for _, _, why in after.play.failed)


def test_cli_bad_input_is_one_clean_line(capsys, tmp_path: pathlib.Path) -> None:
    from ekstrain.cli.main import main

    code = main(["simulate", "--stack", "prod", "--build", str(tmp_path / "none"), "--deploy"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines()[0].startswith("error: simulate: --deploy: ") and err.splitlines()[1].startswith("fix: ")
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    code = main(["simulate", "--stack", "prod", "--deploy", "--timeline", "x.yaml"])
    err = capsys.readouterr().err
    assert code == 2 and "--deploy" in err.splitlines()[0]


def test_timing_reads_the_simulators_figures_and_every_figure_has_a_source(monkeypatch) -> None:
    from ekstrain.payloads import health_gate
    from ekstrain.simulate.timeline import Mix

    assert timing.node_launch_seconds("gpu") == 60 * Mix(arrivals=[]).launch_minutes["gpu"]
    monkeypatch.setattr(health_gate, "gate_seconds", lambda family: 42)
    assert timing.health_gate_seconds("gpu") == 42  # read at call time, not copied
    for type_token, d in timing.DURATIONS.items():
        assert d.source and d.create_s >= 0 and d.delete_s >= 0, type_token
    assert timing.duration("ekstrain:cost:Cost", custom=False).create_s == 0


def test_a_precondition_kept_elsewhere_fails_its_step_at_the_right_stage() -> None:
    """A cost-allocation tag in the first up: Cost Explorer refuses a key not yet billed (the kind's contract says
    so; here a stand-in check): the tag fails at its start, 0 s, and nothing new starts."""
    rows = [*small(), row("aws:costexplorer/costAllocationTag:CostAllocationTag", "tag-stack")]
    tag = "aws:costexplorer/costAllocationTag:CostAllocationTag::tag-stack"
    report = deploy.up(deploy.read_graph(rows), extra_check=lambda k, done: "key not billed yet" if k == tag else None)
    assert [(k, w) for k, w, _ in report.play.failed] == [(tag, 0.0)]
    assert deploy.key_of(CLUSTER, "cluster") in report.play.never_started


# ---- seeded variants of prod: each reported failing at its stage with type, key and fix ---------------------------

PROD_ROLE = "arn:aws:iam::111122223333:role/ekstrain-prod-deploy"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
TAG = "aws:costexplorer/costAllocationTag:CostAllocationTag"
PROVIDER = "pulumi:providers:kubernetes"


@pytest.fixture(scope="session")
def prod_rows(prod_recording) -> list[dict]:
    """prod's resources.yaml rows as the render writes them (ekstrain/infra/render.py), from the session's one
    offline run of prod (no charts: the CRD rule is played by the CLI on a render's charts)."""
    from ekstrain.infra import offline
    from ekstrain.infra.verify import order

    return [
        {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent or "",
            "protect": r.protect,
            "retainOnDelete": r.retain_on_delete,
            "dependsOn": sorted(set(r.dependencies)),
            "provider": order.provider_urn(r.provider),
            **({"customTimeouts": dict(r.custom_timeouts)} if r.custom_timeouts else {}),
            "inputs": offline.plain(r.inputs),
        }
        for r in prod_recording.records
    ]


def variant(prod_rows: list[dict]) -> list[dict]:
    import copy

    return copy.deepcopy(prod_rows)


def find(rows: list[dict], type_token: str, name: str) -> dict:
    return next(r for r in rows if r["type"] == type_token and r["name"] == name)


def rehearse(rows: list[dict], **kw) -> deploy.UpReport:
    return deploy.up(deploy.read_graph(rows), deploy_role_arn=PROD_ROLE, **kw)


def started_at(report: deploy.UpReport, key: str) -> float:
    """When everything ``key`` waits for is done: the stage the engine starts it at."""
    waits = deploy.expanded_waits(report.nodes)[key]
    return max((report.play.steps[w].end for w in waits), default=0.0)


def only_failure(report: deploy.UpReport) -> tuple[str, float, str]:
    assert report.play.failed, report.lines()
    assert report.first_step_s is None
    assert report.lines()[0].startswith(f"FAILS at {deploy.fmt(report.play.failed[0][1])} (step ")
    return report.play.failed[0]


def test_prod_rows_rehearse_clean(prod_rows) -> None:
    report = rehearse(variant(prod_rows))
    assert not report.play.failed and not report.play.cycle, report.lines()
    assert "service-linked-roles" in report.steps_taken  # the runbook's account steps, taken as done


def test_prod_variant_configmap_in_a_namespace_created_later(prod_rows) -> None:
    rows = variant(prod_rows)
    cm = find(rows, CM, "cost-node-prices")
    cm["dependsOn"] = []  # only its provider left: the `opencost` Namespace is created later
    report = rehearse(rows)
    key, when, why = only_failure(report)
    assert key == deploy.key_of(CM, "cost-node-prices")
    assert 'namespaces "opencost" not found' in why and "fix: depend on it" in why
    assert "kubernetes:core/v1:Namespace::cost-ns" in why
    assert when == started_at(report, key)  # its stage: when all it waits for is done
    assert report.play.steps[deploy.key_of(PROVIDER, "cluster-k8s")].end <= when
    assert f"{CM}::cost-node-prices" in report.lines()[0]


def test_prod_variant_object_that_bypasses_the_access_association(prod_rows) -> None:
    rows = variant(prod_rows)
    provider = dict(find(rows, PROVIDER, "cluster-k8s"))
    provider["name"] = "cluster-k8s-direct"
    provider["urn"] = provider["urn"].replace("::cluster-k8s", "::cluster-k8s-direct")
    # It waits for the cluster only, not for the deploy role's access association.
    provider["dependsOn"] = [d for d in provider["dependsOn"] if "accessPolicyAssociation" not in d]
    rows.append(provider)
    find(rows, "kubernetes:storage.k8s.io/v1:StorageClass", "cluster-gp3")["provider"] = provider["urn"]
    key, _, why = only_failure(rehearse(rows))
    assert key == deploy.key_of(PROVIDER, "cluster-k8s-direct")
    assert why.startswith("Unauthorized") and "AccessPolicyAssociation::cluster-deployer" in why and "fix:" in why
    # an unused provider asks nothing: only one an object goes through must reach the association
    find(rows, "kubernetes:storage.k8s.io/v1:StorageClass", "cluster-gp3")["provider"] = find(
        rows, PROVIDER, "cluster-k8s"
    )["urn"]
    assert not rehearse(rows).play.failed


def test_prod_variant_two_data_repository_associations_in_parallel(prod_rows) -> None:
    rows = variant(prod_rows)
    second = find(rows, DRA, "fsx-checkpoints")
    second["dependsOn"] = [d for d in second["dependsOn"] if not d.endswith("::fsx-data")]
    report = rehearse(rows)
    key, when, why = only_failure(report)
    assert {key} < {deploy.key_of(DRA, "fsx-data"), deploy.key_of(DRA, "fsx-checkpoints")}
    assert "is being created now" in why and "terraform-provider-aws/issues/24678" in why
    assert "fix: chain them with depends_on" in why
    # both start when the file system is done: the second fails then
    assert when == report.play.steps[deploy.key_of(FSX, "fsx")].end


def test_prod_variant_cost_allocation_tag_in_the_first_up(prod_rows) -> None:
    from ekstrain.contracts import kinds

    rows = variant(prod_rows)
    rows.append(row(TAG, "cost-tag-stack", inputs={"tagKey": "ekstrain.io/stack", "status": "Active"}))
    report = rehearse(rows)
    key, when, why = only_failure(report)
    assert (key, when) == (deploy.key_of(TAG, "cost-tag-stack"), 0.0)  # the very first stage
    assert "cannot hold on a first `up`" in why and f"set `{kinds.COST_TAGS_FLAG}: true`" in why
    assert "29068" in why  # the contract's source
    assert deploy.key_of(CLUSTER, "cluster-eksCluster") in report.play.never_started
    # a stack that declares the billed-key step done (a later `up`) passes the tag
    assert not rehearse(rows, flags=frozenset({kinds.COST_TAGS_FLAG})).play.failed


def test_prod_variant_resource_type_without_a_contract(prod_rows) -> None:
    rows = variant(prod_rows)
    vpc = next(r for r in rows if r["type"] == VPC)
    rows.append(row("aws:sagemaker/domain:Domain", "studio", [vpc["urn"]]))
    report = rehearse(rows)
    key, when, why = only_failure(report)
    assert key == "aws:sagemaker/domain:Domain::studio"
    assert "has no deploy contract" in why and "ekstrain/contracts/kinds.py" in why
    assert when == report.play.steps[deploy.key_of(VPC, vpc["name"])].end


@pytest.mark.parametrize("timeouts", [None, {"create": "5m"}])
def test_prod_variant_association_without_the_contracts_timeout(prod_rows, timeouts) -> None:
    """No customTimeouts: the provider's default, which the contract says is too short, is reported at the end of
    the create; a 5m one is outlasted by the 8 minutes timing.py gives it, and fails when it runs out."""
    rows = variant(prod_rows)
    dra = find(rows, DRA, "fsx-data")
    dra.pop("customTimeouts", None)
    if timeouts:
        dra["customTimeouts"] = timeouts
    report = rehearse(rows)
    key, when, why = only_failure(report)
    assert key == deploy.key_of(DRA, "fsx-data")
    start = report.play.steps[key].start
    if timeouts:
        assert when == start + 5 * 60 and "create timed out" in why and "customTimeouts.create 5m" in why
    else:
        assert when == start + timing.duration(DRA).create_s and "the provider default" in why
    assert "CustomTimeouts(create='30m')" in why


def test_crd_rule_reads_the_release_that_installs_it() -> None:
    """A NodePool waits for the release whose chart brings its CRD; without that dependency it is refused."""
    rows = [
        *small(),
        row("kubernetes:helm.sh/v3:Release", "karpenter-crd", ["system"], provider="k8s", inputs={"name": "kcrd"}),
        row("kubernetes:karpenter.sh/v1:NodePool", "gpu", ["system"], provider="k8s"),
    ]
    crds = {("karpenter.sh", "NodePool"): "kcrd"}
    report = deploy.up(deploy.read_graph(rows), crds=crds)
    key, _, why = only_failure(report)
    assert key == "kubernetes:karpenter.sh/v1:NodePool::gpu" and 'no matches for kind "NodePool"' in why
    rows[-1]["dependsOn"] = ["karpenter-crd"]
    assert not deploy.up(deploy.read_graph(rows), crds=crds).play.failed
    assert only_failure(deploy.up(deploy.read_graph(rows), crds={}))[2].startswith("no matches for kind")


def test_destroy_and_the_runbook_table_read_the_same_teardown_facts(monkeypatch) -> None:
    """The rehearsal's refusals and what it prices per use come from ekstrain/contracts/teardown.py, as the runbook's
    table does: a retained cluster with deletion protection is forgotten (no DeleteCluster) in both."""
    from ekstrain.contracts import teardown

    rows = small()
    rows[2].update(retainOnDelete=True, inputs={"deletionProtection": True})
    g = deploy.read_graph(rows)
    assert not deploy.destroy(g).play.failed
    table = teardown.rows([teardown.kept(CLUSTER, "cluster", False, True, {"deletionProtection": True})])
    assert table[0]["stops destroy"] == "-"
    rows[2]["retainOnDelete"] = False
    g = deploy.read_graph(rows)
    (_, _, why), *_ = deploy.destroy(g).play.failed
    assert (teardown.DELETION_PROTECTION, why) in teardown.stops(
        teardown.kept(CLUSTER, "cluster", False, False, {"deletionProtection": True})
    )
    monkeypatch.setattr(
        teardown, "stops", lambda k: [("x", "refused by the teardown contract")] if k.name == "net" else []
    )
    assert [why for _, _, why in deploy.destroy(g).play.failed] == ["refused by the teardown contract"]
    usd, per_use = deploy.destroy(g).monthly(deploy.key_of(VPC, "net"))
    assert usd is None and per_use == ""  # a VPC costs nothing while kept
    rows.append(row("aws:cloudwatch/logGroup:LogGroup", "logs"))
    assert (
        "per GB-month" in deploy.destroy(deploy.read_graph(rows)).monthly("aws:cloudwatch/logGroup:LogGroup::logs")[1]
    )


def test_cli_plays_the_contracts_on_a_seeded_build(prod_rows, tmp_path: pathlib.Path, capsys) -> None:
    """`ekstrain simulate --deploy` on a build whose resources.yaml holds a cost-allocation tag: prod's stack file
    does not declare the billed-key step, so the rehearsal stops at 0 s with the tag's key and fix (exit 1)."""
    import yaml

    from ekstrain.cli.main import main
    from ekstrain.contracts import kinds

    def write(rows: list[dict]) -> None:
        """resources.yaml as the render writes it (infra/render.py: libyaml's dumper, block style)."""
        text = yaml.dump(rows, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
        (tmp_path / "resources.yaml").write_text(text)

    rows = variant(prod_rows)
    rows.append(row(TAG, "cost-tag-stack", inputs={"tagKey": "ekstrain.io/stack", "status": "Active"}))
    write(rows)
    code = main(["simulate", "--stack", "prod", "--build", str(tmp_path), "--deploy"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0].startswith(f"FAILS at 0m00s (step 1): {TAG}::cost-tag-stack: its precondition cannot hold")
    assert kinds.COST_TAGS_FLAG in out[0] and "appeared on a bill" in out[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resources.yaml"]  # nothing written
    rows.pop()
    write(rows)
    assert main(["simulate", "--stack", "prod", "--build", str(tmp_path), "--deploy"]) == 0
    assert any(line.startswith("UP completes: ") for line in capsys.readouterr().out.splitlines())


def test_a_component_whose_objects_are_not_recorded_plays_its_own_contract() -> None:
    """A yaml/v2 ConfigGroup's objects are not recorded as its children: its contract (access) is played on it;
    pulumi-eks's components with recorded children are not (the children play theirs: the add-on waits for the
    cluster, the component itself does not)."""
    rows = access_rows()
    rows[7]["dependsOn"] = ["monitoring-ns"]
    rows.append(row("kubernetes:yaml/v2:ConfigGroup", "crds", ["cluster"]))
    rows.append(row("eks:index:VpcCniAddon", "cni", [], parent="cluster"))
    rows.append(row("aws:eks/addon:Addon", "cni-addon", ["cluster"], parent="cni"))
    key, _, why = only_failure(deploy.up(deploy.read_graph(rows), deploy_role_arn=DEPLOYER))
    assert key == "kubernetes:yaml/v2:ConfigGroup::crds" and why.startswith("Unauthorized")
    rows[-3]["dependsOn"] = ["deployer"]
    assert not deploy.up(deploy.read_graph(rows), deploy_role_arn=DEPLOYER).play.failed


def test_destroy_plays_the_delete_timeout_the_program_sets() -> None:
    rows = [*small(), row(DRA, "data", ["fsx"], customTimeouts={"create": "30m", "delete": "2m"})]
    report = deploy.destroy(deploy.read_graph(rows))
    (key, when, why), *_ = report.play.failed
    assert key == deploy.key_of(DRA, "data") and when == 2 * 60
    assert why.startswith("delete timed out") and "customTimeouts.delete 2m" in why and "delete='30m'" in why
    assert deploy.key_of(FSX, "fsx") in report.play.never_started  # the file system waits for its association
    rows[-1]["customTimeouts"] = {"create": "30m", "delete": "30m"}
    assert not deploy.destroy(deploy.read_graph(rows)).play.failed


def test_the_rows_are_read_with_libyaml_and_are_what_the_render_wrote(tmp_path: pathlib.Path, monkeypatch) -> None:
    """resources.yaml (1.6 MB for prod) is parsed by libyaml's safe loader where PyYAML has it: the same rows the
    pure-Python safe loader reads, never the slow one."""
    import yaml

    rows = [
        {"type": "aws:s3/bucket:Bucket", "name": "b", "inputs": {"n": 1, "on": True, "when": "2026-12-03", "x": None}},
        {"type": "kubernetes:core/v1:Namespace", "name": "ns", "dependsOn": ["urn:a"], "inputs": {"v": 1.5}},
    ]
    text = yaml.dump(rows, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    (tmp_path / "resources.yaml").write_text(text)
    expected = yaml.safe_load(text)
    if hasattr(yaml, "CSafeLoader"):
        monkeypatch.setattr(yaml, "safe_load", lambda *_: pytest.fail("the pure-Python loader read resources.yaml"))
    assert deploy.load_rows(tmp_path) == expected == rows
