"""Logs and spend: the log agent on every node kind, its log groups, key and identity; each job's logs found
by its query; cost allocation, the budget, OpenCost's prices and the spend dashboard.

GIVEN/WHEN/THEN per test; the recorded prod program, the real chart renders (helm template of the pinned charts),
the same kube-scheduler rules the simulator applies, and the real Prometheus's parser (promtool).
"""

from __future__ import annotations

import copy
import importlib
import json
import pathlib
import re
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import REPO, cfg_with, releases, stack_config
from support.jobs import FakePlanner
from test_jobs_templates import pod_specs, spec_for

from ekstrain.assembly import cost, logs
from ekstrain.assembly import observability as obs
from ekstrain.assembly.jobs import logs as joblogs
from ekstrain.assembly.schedulers import slurm as slurm_values
from ekstrain.cli import job as job_cli
from ekstrain.facts import catalog, names, spend
from ekstrain.infra import offline
from ekstrain.infra.render import partition_rows
from ekstrain.infra.verify import charts, everywhere
from ekstrain.simulate import match
from ekstrain.simulate.nodes import nodes_of
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import load_flat, read_stack_file

render = importlib.import_module("ekstrain.assembly.jobs.render")

PROD = stack_config("prod")
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def _objects(rec: offline.Recording, release: str) -> list[dict[str, Any]]:
    rel = charts.Release.from_inputs("x", releases(rec)[release].inputs)
    return [d for d in charts.parse(charts.template(rel, PROD.cluster.kubernetes_version)) if isinstance(d, dict)]


def _agent_pod(rec: offline.Recording) -> dict[str, Any]:
    (ds,) = [d for d in _objects(rec, logs.RELEASE) if d["kind"] == "DaemonSet"]
    return ds["spec"]["template"]["spec"]


def _pools(rec: offline.Recording) -> list[dict[str, Any]]:
    return [
        {"metadata": {"name": r.inputs["metadata"]["name"]}, "spec": r.inputs["spec"]} for r in rec.of_type(NODEPOOL)
    ]


def _node_kinds(rec: offline.Recording) -> list[tuple[str, dict[str, set[str]], list[dict[str, Any]]]]:
    """(node kind, labels, taints incl. startupTaints) of every node Karpenter can launch, plus the system nodes."""
    classes = {r.inputs["metadata"]["name"]: {"spec": r.inputs["spec"]} for r in rec.of_type(NODECLASS)}
    kinds = []
    for pool in _pools(rec):
        startup = pool["spec"]["template"]["spec"].get("startupTaints") or []
        for node in nodes_of(pool, classes):
            kinds.append((f"{node.pool}/{node.instance.name}", node.labels, [*node.taints, *startup]))
    for group in rec.of_type("aws:eks/nodeGroup:NodeGroup"):
        labels = {k: {v} for k, v in (group.inputs.get("labels") or {}).items()}
        taints = [
            {"key": t["key"], "value": t.get("value"), "effect": "NoSchedule"} for t in group.inputs.get("taints") or []
        ]
        kinds.append((f"nodegroup/{group.name}", labels, taints))
    return kinds


# ---- 1. logs off every node -----------------------------------------------------------------------------------


# GIVEN prod WHEN the fluent-bit chart renders THEN its DaemonSet's pod lands on every node kind of every NodePool
# (accelerator taints, any startup taint) and on the system node group, by the simulator's kube-scheduler rules.
def test_the_log_agent_has_a_pod_on_every_node_kind(prod_recording: offline.Recording) -> None:
    pod = _agent_pod(prod_recording)
    kinds = _node_kinds(prod_recording)
    pools = {k.split("/")[0] for k, _, _ in kinds}
    assert {"gpu-a100", "gpu-h100", "trainium-trn1", "trainium-trn1n", "cpu-helpers"} <= pools
    assert any(k.startswith("nodegroup/") for k, _, _ in kinds)
    assert {t["key"] for _, _, taints in kinds for t in taints} >= {"nvidia.com/gpu", "aws.amazon.com/neuron"}
    missed = [kind for kind, labels, taints in kinds if not match.lands(pod, labels, taints)]
    assert missed == []
    # and any taint another change adds (the pre-flight startup taint, EFA/partition taints): tolerated too
    for taint in (
        {"key": "ekstrain.io/preflight", "value": "pending", "effect": "NoExecute"},
        {"key": "vpc.amazonaws.com/efa", "value": "true", "effect": "NoSchedule"},
        {"key": "ekstrain.io/partition", "value": "gpu-h100", "effect": "NoSchedule"},
    ):
        assert match.untolerated(pod["tolerations"], [taint]) == []


# GIVEN the same check WHEN the agent tolerated only the GPU taint THEN the Trainium node kinds are reported.
def test_the_node_kind_check_fails_for_an_agent_missing_a_toleration(prod_recording: offline.Recording) -> None:
    gpu_only = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    gated = [*gpu_only, {"key": names.STARTUP_TAINT_KEY, "operator": "Exists"}]
    for tolerations, want in (
        # the health gate's startup taint is on every accelerator node while it checks it
        (gpu_only, {"gpu-a100", "gpu-h100", "trainium-trn1", "trainium-trn1n"}),
        (gated, {"trainium-trn1", "trainium-trn1n"}),
    ):
        pod = {**_agent_pod(prod_recording), "tolerations": tolerations}
        missed = {
            k.split("/")[0] for k, labels, taints in _node_kinds(prod_recording) if not match.lands(pod, labels, taints)
        }
        assert missed == want


# GIVEN prod WHEN the render's check reads the chart's DaemonSet THEN it passes; an agent without the Neuron toleration
# is reported on the Trainium kinds by name.
def test_the_render_check_reports_node_kinds_without_the_agent(prod_recording: offline.Recording) -> None:
    objects = _objects(prod_recording, logs.RELEASE)
    ok = everywhere.check(prod_recording, objects)
    assert (ok.checked, ok.problems) == (1, [])
    assert len(everywhere.node_kinds(prod_recording)) == len(_node_kinds(prod_recording))
    (ds,) = [d for d in objects if d["kind"] == "DaemonSet"]
    narrow = copy.deepcopy(ds)
    narrow["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": names.STARTUP_TAINT_KEY, "operator": "Exists"},
    ]
    (problem,) = everywhere.check(prod_recording, [narrow]).problems
    assert "logging/fluent-bit has no pod on trainium-trn1/trn1.32xlarge, trainium-trn1n/trn1n.32xlarge" in problem


# GIVEN prod THEN the agent has requests, buffers every input on the node's disk (a hostPath) and keeps its read
# offsets there, reads the container logs, the kubelet's journal and the kernel's, and writes only CloudWatch.
def test_the_agent_buffers_to_disk_and_reads_containers_kernel_and_kubelet(prod_recording: offline.Recording) -> None:
    objects = _objects(prod_recording, logs.RELEASE)
    pod = _agent_pod(prod_recording)
    (agent,) = pod["containers"]
    assert agent["resources"]["requests"] == {"cpu": "100m", "memory": "128Mi"}
    assert all(c["resources"]["requests"] for c in pod["initContainers"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    (state,) = [m for m in agent["volumeMounts"] if m["mountPath"] == logs.STATE_DIR]
    assert volumes[state["name"]]["hostPath"] == {"path": logs.STATE_DIR, "type": "DirectoryOrCreate"}
    (cm,) = [d for d in objects if d["kind"] == "ConfigMap" and "fluent-bit.conf" in d.get("data", {})]
    conf = cm["data"]["fluent-bit.conf"]
    sections = re.split(r"\n(?=\[)", conf)
    inputs = [s for s in sections if s.startswith("[INPUT]")]
    assert len(inputs) == 4
    for section in inputs:
        assert re.search(r"storage\.type\s+filesystem", section)
        assert re.search(rf"DB\s+{logs.STATE_DIR}/\S+\.db", section)
    assert re.search(rf"storage\.path\s+{logs.STATE_DIR}/", conf)
    assert "Systemd_Filter    _SYSTEMD_UNIT=kubelet.service" in conf and "Systemd_Filter    _TRANSPORT=kernel" in conf
    assert "Path             /var/log/containers/*.log" in conf
    outputs = [s for s in sections if s.startswith("[OUTPUT]")]
    groups = logs.log_group_names(PROD.cluster.name)
    assert [re.search(r"log_group_name\s+(\S+)", s).group(1) for s in outputs] == [groups["workloads"], groups["node"]]  # type: ignore[union-attr]
    assert all(re.search(r"Name\s+cloudwatch_logs", s) for s in outputs)
    (sa,) = [d for d in objects if d["kind"] == "ServiceAccount"]
    assert sa["metadata"]["name"] == logs.SERVICE_ACCOUNT  # the Pod Identity association's


# GIVEN prod THEN two log groups encrypted by a key whose policy lets CloudWatch Logs of the region use it for this
# cluster's groups, kept ekstrain:logging.retentionDays; the agent's role may write only those groups, through a
# Pod Identity association for its ServiceAccount.
def test_log_groups_are_kms_encrypted_with_retention_and_only_the_agent_writes_them(
    prod_recording: offline.Recording,
) -> None:
    groups = {
        r.name: r for r in prod_recording.of_type("aws:cloudwatch/logGroup:LogGroup") if r.name.startswith("logs-")
    }
    assert {r.inputs["name"] for r in groups.values()} == set(logs.log_group_names(PROD.cluster.name).values())
    (key,) = [r for r in prod_recording.of_type("aws:kms/key:Key") if r.name == "logs-key"]
    for g in groups.values():
        assert g.inputs["retentionInDays"] == PROD.logging.retention_days == 90
        assert g.inputs["kmsKeyId"] == key.outputs["arn"]
    (policy,) = [r for r in prod_recording.of_type("aws:kms/keyPolicy:KeyPolicy") if r.name == "logs-key"]
    statements = {s["Sid"]: s for s in json.loads(policy.inputs["policy"])["Statement"]}
    logs_use = statements["CloudWatchLogsUsesKey"]
    assert logs_use["Principal"] == {"Service": "logs.us-west-2.amazonaws.com"}
    assert logs_use["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"].endswith(
        f":log-group:/ekstrain/{PROD.cluster.name}/*"
    )
    (role_policy,) = [r for r in prod_recording.of_type("aws:iam/rolePolicy:RolePolicy") if r.name == "logs-writer"]
    (statement,) = json.loads(role_policy.inputs["policy"])["Statement"]
    arns = sorted(g.outputs["arn"] for g in groups.values())
    assert sorted(statement["Resource"]) == sorted([*arns, *(a + ":*" for a in arns)])
    assert set(statement["Action"]) == {"logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"}
    (assoc,) = [
        r
        for r in prod_recording.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r.name == "logs-writer"
    ]
    assert (assoc.inputs["namespace"], assoc.inputs["serviceAccount"]) == (logs.NAMESPACE, logs.SERVICE_ACCOUNT)


# GIVEN a retention CloudWatch does not offer WHEN the stack loads THEN one error naming the key and the nearest value.
def test_a_retention_cloudwatch_does_not_offer_is_refused_by_key() -> None:
    with pytest.raises(ConfigError) as err:
        cfg_with(lambda s: s["logging"].update(retentionDays=100))
    assert "ekstrain:logging.retentionDays" in str(err.value) and "use 90" in str(err.value)


# ---- 2. found by job ------------------------------------------------------------------------------------------

KINDS = {
    "mpijob": "gpu-h100",
    "trainjob": "gpu-h100",
    "pytorchjob": "gpu-h100",
    "volcano": "gpu-a100",
    "rayjob": "gpu-h100",
    "trainium": "trainium",
}


def _pod_records(objects: list[dict[str, Any]], namespace: str, log: str = "step 1") -> list[dict[str, Any]]:
    """The records the agent makes of every pod the job's templates create (template labels and annotations, a
    controller-style pod name ending in the replica index)."""
    out = []
    for i, spec in enumerate(pod_specs(objects)):
        # the template is the dict holding this spec: find its metadata
        holder = _holder(objects, spec)
        meta = (holder or {}).get("metadata") or {}
        for c in spec["containers"]:
            out.append(
                logs.record_fields(
                    tag="kube.var.log.containers.x",
                    namespace=namespace,
                    pod=f"pod{i}-worker-{i}",
                    container=c["name"],
                    labels=meta.get("labels") or {},
                    annotations=meta.get("annotations") or {},
                    node_partition="gpu-h100",
                    log=log,
                )
            )
    return out


def _holder(node: Any, spec: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(node, dict):
        if node.get("spec") is spec:
            return node
        for v in node.values():
            found = _holder(v, spec)
            if found is not None:
                return found
    elif isinstance(node, list):
        for v in node:
            found = _holder(v, spec)
            if found is not None:
                return found
    return None


def _selects(query: str, record: dict[str, Any]) -> bool:
    """Evaluate the query's ``filter`` lines (``field = "value"`` joined by ``and``) on a record."""
    filters = [line.removeprefix("| filter ") for line in query.splitlines() if line.startswith("| filter ")]
    assert filters
    for f in filters:
        for clause in f.split(" and "):
            m = re.fullmatch(r'(\w+) = "((?:[^"\\]|\\.)*)"', clause.strip())
            assert m, clause
            if record.get(m.group(1)) != m.group(2):
                return False
    return True


# GIVEN a job of each kind, a second job of the same kind, a job of the same name in another namespace and a
# platform pod WHEN the agent makes their records THEN the job's query selects exactly that job's pods' records.
@pytest.mark.parametrize("scheduler", sorted(KINDS))
def test_the_job_query_selects_exactly_that_jobs_pods(scheduler: str) -> None:
    partition = KINDS[scheduler]
    mine = render.render(spec_for(partition, name="run"), PROD, scheduler, FakePlanner())
    other = render.render(spec_for(partition, name="other"), PROD, scheduler, FakePlanner())
    ns = "training"
    query = joblogs.insights_query(scheduler, "run", ns)
    own = _pod_records(mine, ns)
    assert own and all(r["job_kind"] == joblogs.JOB_KINDS[scheduler] and r["queue"] == partition for r in own)
    if scheduler == "rayjob":  # the driver's output (every Ray Train worker's lines) comes through the submitter
        assert "ray-job-submitter" in {r["container"] for r in own}
    if scheduler == "mpijob":  # every rank's output comes through mpirun in the launcher
        assert "launcher" in {r["container"] for r in own}
    foreign = [
        *_pod_records(other, ns),
        *_pod_records(mine, "team-b"),
        logs.record_fields(tag="kube.x", namespace="kube-system", pod="aws-node-1", container="aws-node", log="ok"),
        logs.record_fields(tag="node.kernel", node_partition=partition, log="NVRM: Xid (PCI:0000:10:1c): 79"),
    ]
    assert [r for r in own if _selects(query, r)] == own
    assert [r for r in foreign if _selects(query, r)] == []
    assert "| sort @timestamp asc" in query and query.startswith("fields @timestamp, rank,")


# GIVEN two sbatch jobs, and an MPIJob of the same name WHEN the agent tails the sbatch output on the node THEN the
# sbatch's query selects exactly its own lines (every run of it: the Slurm job id is a field), with the srun rank.
def test_the_sbatch_query_selects_exactly_that_jobs_output() -> None:
    query = joblogs.insights_query("slurm", "run", "training")
    own = [
        logs.record_fields(
            tag="slurm.x", file=f"{logs.SLURM_LOG_DIR}/41/run.out", node_partition="gpu-a100", log="0: a"
        ),
        logs.record_fields(
            tag="slurm.x", file=f"{logs.SLURM_LOG_DIR}/57/run.out", node_partition="gpu-a100", log="3: b"
        ),
    ]
    foreign = [
        logs.record_fields(tag="slurm.x", file=f"{logs.SLURM_LOG_DIR}/42/other.out", node_partition="gpu-a100"),
        *_pod_records(render.render(spec_for("gpu-h100", name="run"), PROD, "mpijob", FakePlanner()), "training"),
    ]
    assert [r for r in own if _selects(query, r)] == own
    assert [r["rank"] for r in own] == ["0", "3"] and [r["slurm_job_id"] for r in own] == ["41", "57"]
    assert [r for r in foreign if _selects(query, r)] == []


# GIVEN the templates THEN the rank comes with every line: mpirun tags its lines with the rank, srun labels its
# tasks, and each pod of the other kinds has its replica or completion index (labels its controller sets).
def test_each_line_carries_its_rank() -> None:
    (job,) = [o for o in render.render(spec_for("gpu-h100"), PROD, "mpijob", FakePlanner()) if o["kind"] == "MPIJob"]
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
    assert "--tag-output" in launcher
    line = logs.record_fields(tag="kube.x", namespace="training", pod="run-launcher-x7k2p", log="[1,13]<stderr>:Boom")
    assert line["rank"] == "13"
    sbatch = render.render_sbatch(spec_for("gpu-h100"), PROD, FakePlanner())
    assert "srun --kill-on-bad-exit=1 --label" in sbatch
    for label in ("training.kubeflow.org/replica-index", "batch.kubernetes.io/job-completion-index"):
        rec = logs.record_fields(tag="kube.x", namespace="training", pod="run-node-0-1-abcde", labels={label: "5"})
        assert rec["rank"] == "5"
    volcano = logs.record_fields(tag="kube.x", namespace="training", pod="run-worker-7", labels={})
    assert volcano["rank"] == "7"


# GIVEN logging WHEN an sbatch script renders THEN its output goes to the node directory the agent tails (made by
# the Slurm Prolog, owned by the job's user) and is copied to the checkpoint root; the slurmd pods mount it.
def test_sbatch_output_goes_where_the_agent_reads_it() -> None:
    script = render.render_sbatch(spec_for("gpu-a100"), PROD, FakePlanner())
    assert f"#SBATCH --output={logs.SLURM_LOG_DIR}/%j/%x.out" in script
    root = render.resolve_for(spec_for("gpu-a100"), PROD, "slurm", FakePlanner()).checkpoint_root
    assert root.startswith(PROD.schedulers.slurm.shared_mount_path)  # FSx, as the slurmd pods mount it
    assert f'exec > >(tee -a {root}/run-"${{SLURM_JOB_ID}}.out") 2>&1' in script
    values = slurm_values.slurm_values(PROD)
    prolog = values["prologScripts"][slurm_values.LOG_PROLOG]
    assert prolog.startswith("#!/usr/bin/env bash") and f'"{logs.SLURM_LOG_DIR}/$SLURM_JOB_ID"' in prolog
    for nodeset in values["nodesets"].values():
        (vol,) = [v for v in nodeset["podSpec"]["volumes"] if v["name"] == slurm_values.LOG_VOLUME]
        assert vol["hostPath"]["path"] == logs.SLURM_LOG_DIR
        assert {"name": slurm_values.LOG_VOLUME, "mountPath": logs.SLURM_LOG_DIR} in nodeset["slurmd"]["volumeMounts"]
    off = cfg_with(lambda s: s.pop("logging"))
    assert f"#SBATCH --output={logs.SLURM_LOG_DIR}" not in render.render_sbatch(
        spec_for("gpu-a100"), off, FakePlanner()
    )
    assert "prologScripts" not in slurm_values.slurm_values(off)


# GIVEN `ekstrain job render --out FILE` WHEN it writes a job THEN FILE.logs.query and FILE.logs.sh are beside it,
# the script's start-query line names the workloads log group and the query; nothing for the NCCL health check.
def test_job_render_writes_the_query_and_start_query_line_beside_the_job(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        job_cli, "render", lambda spec, cfg, scheduler: render.render(spec, cfg, scheduler, FakePlanner())
    )
    out = tmp_path / "job.yaml"
    argv = ["job", "render", "--stack-file", str(REPO / "Pulumi.prod.yaml"), "--partition", "gpu-h100"]
    argv += ["--scheduler", "mpijob", "--nodes", "2", "--image", "img:1", "--model", "llama3-8b", "--global-batch"]
    argv += ["256", "--seq-len", "4096", "--name", "llama", "--out", str(out)]
    from ekstrain.cli import main as cli

    assert cli.main(argv) == 0
    query = (tmp_path / "job.yaml.logs.query").read_text()
    assert joblogs.insights_query("mpijob", "llama", "training") in query
    script = (tmp_path / "job.yaml.logs.sh").read_text()
    group = logs.log_group_names(PROD.cluster.name)["workloads"]
    assert (
        f"aws logs start-query --region us-west-2 --log-group-name {group} --start-time $(date -d '-7 days' +%s)"
        in script
    )
    assert 'filter namespace = "training" and job = "llama" and job_kind = "MPIJob"' in script
    assert subprocess.run(["sh", "-n", str(tmp_path / "job.yaml.logs.sh")], capture_output=True).returncode == 0
    assert joblogs.files_beside(out, "nccl-test", "x", None, PROD) == {}


# ---- 3. spend by team, queue and job ---------------------------------------------------------------------------


# GIVEN prod THEN its first `up` activates no cost-allocation tag (Cost Explorer refuses keys not yet billed, and
# member accounts), a later `up` with ekstrain:cost.activateCostAllocationTags activates the three; every partition's
# EC2NodeClass tags its instances with the stack, partition and team, and the file systems with the stack and team.
def test_cost_allocation_tags_are_on_nodes_and_file_systems_and_active(prod_recording: offline.Recording) -> None:
    assert prod_recording.of_type("aws:costexplorer/costAllocationTag:CostAllocationTag") == []
    later = cfg_with(lambda s: s["cost"].update(activateCostAllocationTags=True))
    assert cost.plan(later, "prod").tag_keys == spend.COST_ALLOCATION_TAGS
    for r in prod_recording.of_type(NODECLASS):
        part = (
            r.inputs["metadata"]["labels"].get("ekstrain.io/partition") if r.inputs["metadata"].get("labels") else None
        )
        if part is None:
            continue  # the CPU helper pool
        tags = r.inputs["spec"]["tags"]
        assert {k: tags[k] for k in spend.COST_ALLOCATION_TAGS} == {
            spend.STACK_TAG: "offline",
            spend.PARTITION_TAG: part,
            spend.TEAM_TAG: "ml-platform",
        }
    for t in ("aws:fsx/lustreFileSystem:LustreFileSystem", "aws:efs/fileSystem:FileSystem"):
        (fs,) = prod_recording.of_type(t)
        assert (fs.inputs["tags"][spend.STACK_TAG], fs.inputs["tags"][spend.TEAM_TAG]) == ("offline", "ml-platform")


# GIVEN prod THEN one monthly budget filtered to the stack's tag, limited to every partition at maxNodes for a month,
# notifying a KMS-encrypted topic at the configured thresholds and the forecast; Budgets may publish to it.
def test_one_budget_per_stack_notifies_an_encrypted_topic(prod_recording: offline.Recording) -> None:
    (budget,) = prod_recording.of_type("aws:budgets/budget:Budget")
    want = sum(max(spend.price_table(p.instance_types).values()) * p.max_nodes * 730 for p in PROD.partitions)
    assert float(budget.inputs["limitAmount"]) == pytest.approx(want, abs=100)
    assert budget.inputs["costFilters"] == [{"name": "TagKeyValue", "values": ["user:ekstrain.io/stack$offline"]}]
    (topic,) = prod_recording.of_type("aws:sns/topic:Topic")
    got = sorted((n["notificationType"], n["threshold"]) for n in budget.inputs["notifications"])
    assert got == [("ACTUAL", 50), ("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 100)]
    assert all(n["subscriberSnsTopicArns"] == [topic.outputs["arn"]] for n in budget.inputs["notifications"])
    assert topic.inputs["kmsMasterKeyId"].startswith("arn:aws:kms:")
    (policy,) = prod_recording.of_type("aws:sns/topicPolicy:TopicPolicy")
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    assert statement["Principal"] == {"Service": "budgets.amazonaws.com"} and statement["Action"] == "SNS:Publish"
    (sub,) = prod_recording.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert (sub.inputs["protocol"], sub.inputs["endpoint"]) == ("email", "ml-platform-costs@example.com")


# GIVEN cost without the stack's Prometheus WHEN the stack loads THEN one error naming ekstrain:cost.opencost.
def test_opencost_without_observability_is_refused() -> None:
    with pytest.raises(ConfigError) as err:
        cfg_with(lambda s: s["observability"].update(enabled=False))
    assert "ekstrain:cost.opencost" in str(err.value)


# GIVEN prod THEN OpenCost reads the stack's Prometheus Service (a Service of the kube-prometheus-stack render, on its
# port), mounts the price file its CSV provider reads, and Prometheus scrapes it (ServiceMonitor).
def test_opencost_reads_the_stacks_prometheus_and_the_catalog_prices(prod_recording: offline.Recording) -> None:
    objects = _objects(prod_recording, cost.RELEASE)
    (deploy,) = [d for d in objects if d["kind"] == "Deployment"]
    (exporter,) = [c for c in deploy["spec"]["template"]["spec"]["containers"] if c["name"] == "opencost"]
    env = {e["name"]: e.get("value") for e in exporter["env"]}
    assert env["USE_CSV_PROVIDER"] == "true" and env["CSV_PATH"] == f"{cost.PRICES_DIR}/{cost.PRICES_FILE}"
    host = env["PROMETHEUS_SERVER_ENDPOINT"].removeprefix("http://")
    name, namespace = host.split(".")[:2]
    services = [d for d in _objects(prod_recording, obs.RELEASE) if d["kind"] == "Service"]
    (svc,) = [s for s in services if s["metadata"]["name"] == name]
    assert namespace == obs.NAMESPACE and int(host.rsplit(":", 1)[1]) in [p["port"] for p in svc["spec"]["ports"]]
    volumes = {v["name"]: v for v in deploy["spec"]["template"]["spec"]["volumes"]}
    (mount,) = [m for m in exporter["volumeMounts"] if m["mountPath"] == cost.PRICES_DIR]
    assert volumes[mount["name"]]["configMap"]["name"] == cost.PRICES_CONFIGMAP
    assert any(d["kind"] == "ServiceMonitor" for d in objects)


# ---- 4. one price table ----------------------------------------------------------------------------------------


def _opencost_prices(rec: offline.Recording) -> dict[str, float]:
    (cm,) = [
        r for r in rec.of_type("kubernetes:core/v1:ConfigMap") if r.inputs["metadata"]["name"] == cost.PRICES_CONFIGMAP
    ]
    return spend.read_opencost_pricing_csv(cm.inputs["data"][cost.PRICES_FILE])


# GIVEN prod THEN OpenCost's node prices, SUMMARY.md's partition prices and the simulator's node prices are the
# catalog's, for every instance type the stack can launch.
def test_summary_simulator_and_opencost_read_one_price_table(prod_recording: offline.Recording) -> None:
    prices = _opencost_prices(prod_recording)
    types = {t for p in PROD.partitions for t in p.instance_types}
    assert types <= set(prices) and all(prices[t] == catalog.get(t).price_per_hour_usd for t in prices)
    for p, row in zip(PROD.partitions, partition_rows(PROD), strict=True):
        lo, hi = min(prices[t] for t in p.instance_types), max(prices[t] for t in p.instance_types)
        want = f"{lo * p.max_nodes:,.0f}" if lo == hi else f"{lo * p.max_nodes:,.0f}-{hi * p.max_nodes:,.0f}"
        assert row["usdPerHourAtMax"] == want
    classes = {r.inputs["metadata"]["name"]: {"spec": r.inputs["spec"]} for r in prod_recording.of_type(NODECLASS)}
    simulated = [n for pool in _pools(prod_recording) for n in nodes_of(pool, classes) if n.instance.name in types]
    assert {n.instance.name for n in simulated} == types
    assert all(n.instance.price_per_hour_usd == prices[n.instance.name] for n in simulated)


# GIVEN a changed catalog price WHEN OpenCost's file is made THEN it follows (it is not a copy).
def test_the_price_file_follows_the_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    changed = dataclasses.replace(catalog.get("p5.48xlarge"), price_per_hour_usd=12.5)
    monkeypatch.setitem(catalog._STACK_TYPES, "p5.48xlarge", changed)  # a stack's override of the type
    assert spend.read_opencost_pricing_csv(spend.opencost_pricing_csv("us-west-2", ["p5.48xlarge"])) == {
        "p5.48xlarge": 12.5
    }


# ---- the spend dashboard ----------------------------------------------------------------------------------------


# GIVEN prod THEN the spend dashboard is a Grafana ConfigMap like the others, with a panel per simulator category the
# cluster can measure, and spend by queue, team and job.
def test_the_spend_dashboard_shows_queue_team_job_and_idle_categories(prod_recording: offline.Recording) -> None:
    (cm,) = [
        r
        for r in prod_recording.of_type("kubernetes:core/v1:ConfigMap")
        if r.inputs["metadata"]["name"] == "dashboard-spend"
    ]
    assert cm.inputs["metadata"]["labels"][next(iter(obs.DASHBOARD_LABEL))] == "1"
    board = json.loads(cm.inputs["data"]["spend.json"])
    titles = [p["title"] for p in board["panels"]]
    assert {
        "Spend by queue ($/h, whole nodes: idle included)",
        "Spend by team ($/h)",
        "Accelerator spend by job ($/h)",
    } <= set(titles)
    timeline = (REPO / "ekstrain" / "simulate" / "idle_accounting.py").read_text()
    simulator = set(re.findall(r'cat = "([^"]+)"', timeline))
    drawn = {t.removeprefix("Idle accelerators: ") for t in titles if t.startswith("Idle accelerators: ")}
    assert drawn <= simulator and len(drawn) == 8
    # Not drawn: why a job cannot start, or that EC2 refused the rest of its nodes, is the simulator's knowledge;
    # the cluster sees those nodes' pods Pending ("held ..."). prod's gpu-h100 is a Capacity Block
    # (consolidateAfter: Never), so its empty nodes are drawn as "kept empty".
    assert "kept empty (consolidateAfter: Never, a reservation paid anyway)" in drawn
    assert simulator - drawn == {
        "stranded (held by a job that cannot start)",
        "stranded (launched for a job that cannot start)",
        "held while EC2 has no capacity for the rest (insufficient-capacity)",
    }


# GIVEN a stack with reserved partitions (consolidateAfter: Never) THEN their empty nodes are "kept empty", apart
# from the consolidateAfter window of the partitions that consolidate, as the simulator counts them.
def test_the_spend_dashboard_counts_empty_reserved_nodes_apart(tmp_path: pathlib.Path) -> None:
    flat, _ = read_stack_file(REPO / "examples" / "stacks" / "Pulumi.reserved.yaml")
    reserved = load_flat(flat, "reserved")[0]
    never = {p.name for p in reserved.partitions if p.effective_consolidate_after == "Never"}
    assert never and never != {p.name for p in reserved.partitions}
    idle = cost.idle_queries(reserved)
    kept = idle["kept empty (consolidateAfter: Never, a reservation paid anyway)"]
    window = idle["consolidateAfter window"]
    for name in never:
        assert name in kept and name in window
    assert " and on (node) " in kept and " unless on (node) (max by (node) (kube_node_labels" in window
    # a stack reserving nothing has no such panel; prod's is its Capacity Block partition alone
    assert "kept empty (consolidateAfter: Never, a reservation paid anyway)" not in cost.idle_queries(
        stack_config("dev")
    )
    prod_kept = cost.idle_queries(PROD)["kept empty (consolidateAfter: Never, a reservation paid anyway)"]
    assert re.findall(r'label_ekstrain_io_partition=~"([^"]*)"', prod_kept) == ["gpu-h100"]
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: apt-get install -y prometheus (.ci/run installs it)"
    rules = {
        "groups": [
            {
                "name": "idle",
                "rules": [{"record": f"ekstrain:idle_{i}", "expr": e} for i, e in enumerate(idle.values())],
            }
        ]
    }
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump(rules))
    done = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


# The dashboard's PromQL is PromQL the real Prometheus parses (promtool check rules, as the alerts and KEDA's query).
def test_the_spend_dashboard_promql_parses(tmp_path: pathlib.Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: apt-get install -y prometheus (.ci/run installs it)"
    exprs = cost.promql(PROD)
    assert len(exprs) == 13  # with the "kept empty" panel of prod's Capacity Block partition
    rules = {
        "groups": [
            {"name": "spend", "rules": [{"record": f"ekstrain:spend_{i}", "expr": e} for i, e in enumerate(exprs)]}
        ]
    }
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump(rules))
    done = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": [{"record": "x", "expr": exprs[0] + ")"}]}]}))
    assert subprocess.run([promtool, "check", "rules", str(bad)], capture_output=True).returncode != 0


# GIVEN cost on THEN kube-state-metrics exports the pod and node labels the dashboard groups by.
def test_kube_state_metrics_exports_the_labels_the_dashboard_groups_by(prod_recording: offline.Recording) -> None:
    values = releases(prod_recording)[obs.RELEASE].inputs["values"]
    allow = values["kube-state-metrics"]["metricLabelsAllowlist"]
    used = set(re.findall(r"label_[a-z_]+", " ".join(cost.promql(PROD))))
    exported = {cost.ksm_label(k) for entry in allow for k in entry.split("=[", 1)[1].rstrip("]").split(",")}
    assert used <= exported
