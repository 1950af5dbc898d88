"""The training alerts, run through the real Prometheus: ``promtool check rules`` on the groups the observability
component installs, and ``promtool test rules`` per alert with input series: when it fires (and not a minute
before), with which labels and annotations, and a healthy input where it stays silent. The chart renders them as
one PrometheusRule that validates against the CRD the chart installs; every alert has its runbook section."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from conftest import REPO, needs_upstream, stack_config
from support import helm

from ekstrain.agents import efa_exporter
from ekstrain.assembly import alerts
from ekstrain.assembly import observability as obs
from ekstrain.assembly.jobs.resolve import JOB_LABEL
from ekstrain.facts import names, training_metrics
from ekstrain.infra.verify import charts
from ekstrain.tooling import validation

PROD = stack_config("prod")
INSTALL = "apt-get install -y prometheus (Debian's package ships promtool; .ci/run installs it)"


def promtool() -> str:
    """The real Prometheus's rule checker; missing under `make test` (EKSTRAIN_NO_SKIPS=1) is a failure."""
    found = shutil.which("promtool")
    if found:
        return found
    message = f"promtool not found for the alert rule tests: {INSTALL}"
    if os.environ.get("EKSTRAIN_NO_SKIPS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def test_without_promtool_make_test_fails_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setenv("EKSTRAIN_NO_SKIPS", "1")
    with pytest.raises(pytest.fail.Exception, match="promtool not found.*apt-get install -y prometheus"):
        promtool()
    monkeypatch.delenv("EKSTRAIN_NO_SKIPS")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y prometheus"):
        promtool()


# ---- cases: input series per alert ---------------------------------------------------------------------------


def node_labels(node: str, instance_type: str, partition: str = "") -> str:
    """kube_node_labels of a node as kube-state-metrics exports it with the allowlist of the chart values."""
    part = f',label_ekstrain_io_partition="{partition}"' if partition else ""
    return f'kube_node_labels{{node="{node}"{part},label_node_kubernetes_io_instance_type="{instance_type}"}}'


H100 = node_labels("n1", "p5.48xlarge", "gpu-h100")
A100 = node_labels("n3", "p4d.24xlarge", "gpu-a100")
SYSTEM = node_labels("n4", "m6i.2xlarge")
"""A system node group node: no partition label."""
ALWAYS = "1x90"
STEP_THEN_RISE = "0 0 1x90"
"""A counter or gauge that is 0 at minutes 0 and 1 and 1 from minute 2 on."""


@dataclass(frozen=True)
class Case:
    fires: dict[str, str]
    """Input series -> promtool values (one sample a minute) where the alert fires."""
    at: int
    """Minute it fires at (it is not firing a minute before)."""
    labels: dict[str, str]
    """The firing alert's labels besides alertname and severity."""
    silent: dict[str, str]
    """A healthy (or someone else's) input where it never fires."""
    value: str = ""
    """What ``{{ $value }}`` renders as, for the alerts whose annotations show it."""
    silent_at: tuple[int, ...] = field(default=(10, 30, 60))


CASES: dict[str, Case] = {
    "GpuXidFatal": Case(
        fires={'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="3",modelName="NVIDIA H100 80GB HBM3"}': "0 0 79x90"},
        at=2,
        labels={"node": "n1", "gpu": "3"},
        value="79",
        silent={'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="3"}': "0 0 31x90"},  # a page fault of the application
    ),
    "GpuXidError": Case(
        fires={'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="0"}': "0 0 31x90"},
        at=2,
        labels={"node": "n1", "gpu": "0"},
        value="31",
        silent={'DCGM_FI_DEV_XID_ERRORS{node="n1",gpu="0"}': "0 0 79x90"},  # fatal: GpuXidFatal's, not a warning
    ),
    "GpuUncorrectableEccError": Case(
        fires={'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{node="n1",gpu="5"}': STEP_THEN_RISE},
        at=2,
        labels={"node": "n1", "gpu": "5"},
        silent={'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{node="n1",gpu="5"}': "2x90"},  # rows remapped long ago
    ),
    "GpuRowRemapFailure": Case(
        fires={'DCGM_FI_DEV_ROW_REMAP_FAILURE{node="n1",gpu="7"}': STEP_THEN_RISE},
        at=2,
        labels={"node": "n1", "gpu": "7"},
        silent={'DCGM_FI_DEV_ROW_REMAP_FAILURE{node="n1",gpu="7"}': "0x90"},
    ),
    "NeuronUncorrectableEccError": Case(
        fires={
            'hardware_ecc_events_total{node="n2",neuron_device_index="5",event_type="sram_ecc_uncorrected"}': (
                STEP_THEN_RISE
            )
        },
        at=2,
        labels={"node": "n2", "neuron_device_index": "5"},
        silent={
            'hardware_ecc_events_total{node="n2",neuron_device_index="5",event_type="mem_ecc_corrected"}': "0+5x90"
        },
    ),
    "NeuronHardwareError": Case(
        fires={'execution_errors_total{node="n2",error_type="hardware",runtime_tag="367"}': STEP_THEN_RISE},
        at=2,
        labels={"node": "n2"},
        silent={'execution_errors_total{node="n2",error_type="numerical",runtime_tag="367"}': "0+1x90"},
    ),
    "EfaDeviceMissing": Case(
        fires={'efa_devices{node="n1"}': "32 32 31x90", H100: ALWAYS},
        at=2 + alerts.EFA_MISSING_MINUTES,
        labels={"node": "n1"},
        value="31",
        # a p4d.24xlarge has 4 EFA interfaces: 4 is all of them
        silent={'efa_devices{node="n3"}': "4x90", A100: ALWAYS, 'efa_devices{node="n1"}': "32x90", H100: ALWAYS},
    ),
    "EfaErrors": Case(
        fires={
            'efa_hw_counter_total{node="n1",device="rdmap0s31",port="1",counter="unresponsive_remote_events"}': (
                "0 0 3x90"
            )
        },
        at=2,
        labels={"node": "n1", "device": "rdmap0s31", "counter": "unresponsive_remote_events"},
        silent={
            'efa_hw_counter_total{node="n1",device="rdmap0s31",port="1",counter="tx_bytes"}': "0+1000000x90",
            'efa_hw_counter_total{node="n1",device="rdmap0s31",port="1",counter="rdma_read_wr_err"}': "7x90",
        },
    ),
    "TrainingNodeNotReady": Case(
        fires={'kube_node_status_condition{node="n1",condition="Ready",status="true"}': "1 1 0x90", H100: ALWAYS},
        at=2 + alerts.NOT_READY_MINUTES,
        labels={"node": "n1", "partition": "gpu-h100"},
        silent={
            'kube_node_status_condition{node="n1",condition="Ready",status="true"}': "1x90",
            H100: ALWAYS,
            # a system node: kube-prometheus-stack's own KubeNodeNotReady covers it
            'kube_node_status_condition{node="n4",condition="Ready",status="true"}': "0x90",
            SYSTEM: ALWAYS,
        },
    ),
    "NodeAcceleratedHardwareNotReady": Case(
        fires={
            'kube_node_status_condition{node="n3",condition="AcceleratedHardwareReady",status="false"}': STEP_THEN_RISE,
            A100: ALWAYS,
        },
        at=3,
        labels={"node": "n3", "partition": "gpu-a100"},
        silent={
            'kube_node_status_condition{node="n3",condition="AcceleratedHardwareReady",status="false"}': "0x90",
            'kube_node_status_condition{node="n3",condition="AcceleratedHardwareReady",status="true"}': "1x90",
            A100: ALWAYS,
        },
    ),
    "NodeHealthConditionFalse": Case(
        fires={
            'kube_node_status_condition{node="n3",condition="NetworkingReady",status="false"}': STEP_THEN_RISE,
            A100: ALWAYS,
        },
        at=7,
        labels={"node": "n3", "partition": "gpu-a100", "condition": "NetworkingReady"},
        silent={
            # accelerated hardware is the critical alert's
            'kube_node_status_condition{node="n3",condition="AcceleratedHardwareReady",status="false"}': "1x90",
            'kube_node_status_condition{node="n3",condition="KernelReady",status="false"}': "0x90",
            A100: ALWAYS,
        },
    ),
    "NodePoolBreakerOpen": Case(
        fires={
            'kube_node_spec_taint{node="n1",key="ekstrain.io/unhealthy",value="breaker",effect="NoExecute"}': (
                "_ 1x90"
            ),
            H100: ALWAYS,
        },
        at=1,
        labels={"node": "n1", "partition": "gpu-h100"},
        silent={
            # a node that failed its pre-flight and is deleted after its hold (the breaker closed)
            'kube_node_spec_taint{node="n1",key="ekstrain.io/unhealthy",value="true",effect="NoExecute"}': "1x10",
            H100: ALWAYS,
        },
    ),
    "NodePreflightTooLong": Case(
        fires={
            f'kube_node_spec_taint{{node="n1",key="{alerts.PREFLIGHT_TAINT}",value="true",effect="NoSchedule"}}': (
                ALWAYS
            ),
            H100: ALWAYS,
        },
        at=alerts.PREFLIGHT_ALERT_MINUTES,
        labels={"node": "n1", "partition": "gpu-h100"},
        silent={
            # a slow gate (its images pulled first) removes its taint two minutes before the threshold; the
            # accelerator taint stays
            f'kube_node_spec_taint{{node="n1",key="{alerts.PREFLIGHT_TAINT}",value="true",effect="NoSchedule"}}': (
                f"1x{alerts.PREFLIGHT_ALERT_MINUTES - 2}"
            ),
            'kube_node_spec_taint{node="n1",key="nvidia.com/gpu",value="true",effect="NoSchedule"}': ALWAYS,
            H100: ALWAYS,
        },
    ),
    "TrainingPodRestarted": Case(
        fires={
            'kube_pod_container_status_restarts_total{namespace="training",pod="llama-worker-3",container="trainer"}': (
                STEP_THEN_RISE
            )
        },
        at=2,
        labels={"namespace": "training", "pod": "llama-worker-3"},
        silent={
            'kube_pod_container_status_restarts_total{namespace="training",pod="llama-worker-3",container="trainer"}': (
                "0x90"
            ),
            'kube_pod_container_status_restarts_total{namespace="jupyter",pod="hub-0",container="hub"}': "0+1x90",
        },
    ),
    "TrainingJobPodFailed": Case(
        fires={'kube_job_status_failed{namespace="training",job_name="llama-node-0"}': STEP_THEN_RISE},
        at=2,
        labels={"namespace": "training", "job_name": "llama-node-0"},
        silent={
            'kube_job_status_failed{namespace="training",job_name="llama-node-0"}': "0x90",
            'kube_job_status_failed{namespace="kube-system",job_name="hook"}': STEP_THEN_RISE,
        },
    ),
    "TrainingPodRecreated": Case(
        # created at t=0; deleted at minute 5 by a Volcano Job restart and created again at minute 6 (t=360 s)
        fires={'kube_pod_created{namespace="training",pod="llama-worker-0"}': "0x4 _ 360x90"},
        at=6,
        labels={"namespace": "training", "pod": "llama-worker-0"},
        silent={
            'kube_pod_created{namespace="training",pod="llama-worker-0"}': "0x90",
            # a new pod of another job: a first creation is no restart
            'kube_pod_created{namespace="training",pod="bert-worker-0"}': "_x20 1200x70",
        },
    ),
    "TrainingJobRecreated": Case(
        # a JobSet restart recreates its Job llama-node-0 at minute 8
        fires={'kube_job_created{namespace="training",job_name="llama-node-0"}': "60x6 _ 480x90"},
        at=8,
        labels={"namespace": "training", "job_name": "llama-node-0"},
        silent={
            'kube_job_created{namespace="training",job_name="llama-node-0"}': "60x90",
            'kube_job_created{namespace="kube-system",job_name="hook"}': "60x6 _ 480x90",
        },
    ),
    "TrainingJobStuck": Case(
        # a step a minute until minute 10 (t=600 s), then none: stuck once time() - 600 > STUCK_AFTER
        fires={
            f'{training_metrics.LAST_STEP}{{namespace="training",training_job="llama",pod="llama-0"}}': "0+60x10 600x90"
        },
        at=10 + alerts.STUCK_AFTER_MINUTES + 1,
        labels={"namespace": "training", "training_job": "llama"},
        silent={f'{training_metrics.LAST_STEP}{{namespace="training",training_job="llama",pod="llama-0"}}': "0+60x90"},
    ),
    "TrainingCheckpointStale": Case(
        # saved at t=0 with a 600 s interval: stale once time() > 2 x 600
        fires={
            f'{training_metrics.LAST_CHECKPOINT}{{namespace="training",training_job="llama",pod="llama-0"}}': "0x90",
            f'{training_metrics.CHECKPOINT_INTERVAL}{{namespace="training",training_job="llama",pod="llama-0"}}': (
                "600x90"
            ),
        },
        at=alerts.CHECKPOINT_STALE_FACTOR * 10 + 1,
        labels={"namespace": "training", "training_job": "llama"},
        silent={
            # a checkpoint every 10 minutes
            f'{training_metrics.LAST_CHECKPOINT}{{namespace="training",training_job="llama",pod="llama-0"}}': " ".join(
                str(m // 10 * 600) for m in range(91)
            ),
            f'{training_metrics.CHECKPOINT_INTERVAL}{{namespace="training",training_job="llama",pod="llama-0"}}': (
                "600x90"
            ),
        },
    ),
}


# ---- helpers ----------------------------------------------------------------------------------------------

TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")


def expand(template: str, labels: dict[str, str], value: str) -> str:
    """An annotation as Prometheus renders it, for the two forms the rules use."""

    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr == "$value":
            assert value, f"the case must say what {{{{ $value }}}} renders as in {template!r}"
            return value
        assert expr.startswith("$labels."), f"unsupported template {expr!r} in {template!r}"
        return labels[expr.removeprefix("$labels.")]

    return TEMPLATE.sub(one, template)


def rule(name: str) -> dict[str, Any]:
    (found,) = [r for r in alerts.alerts(PROD) if r["alert"] == name]
    return found


def expected(name: str, case: Case) -> dict[str, Any]:
    r = rule(name)
    labels = {**case.labels, **r["labels"]}
    return {
        "exp_labels": labels,
        "exp_annotations": {k: expand(v, labels, case.value) for k, v in r["annotations"].items()},
    }


def promtool_test_file(rules: str, series: dict[str, str], checks: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``promtool test rules`` file: ``series`` as input, ``checks`` as alert rule tests, against ``rules``."""
    return {
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": v} for s, v in series.items()],
                "alert_rule_test": checks,
            }
        ],
    }


def write_rules(tmp_path: pathlib.Path) -> str:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": alerts.rule_groups(PROD)}))
    return rules.name


def run_promtool_test(tmp_path: pathlib.Path, series: dict[str, str], checks: list[dict[str, Any]]) -> None:
    f = tmp_path / "test.yaml"
    f.write_text(yaml.safe_dump(promtool_test_file(write_rules(tmp_path), series, checks), sort_keys=False))
    done = subprocess.run(
        [promtool(), "test", "rules", f.name], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def fires_checks(name: str) -> list[dict[str, Any]]:
    """Not firing at minute ``at - 1`` (pending or false), firing at ``at`` with exactly these labels and
    annotations."""
    case = CASES[name]
    return [
        {"eval_time": f"{case.at - 1}m", "alertname": name, "exp_alerts": []},
        {"eval_time": f"{case.at}m", "alertname": name, "exp_alerts": [expected(name, case)]},
    ]


def silent_checks(name: str) -> list[dict[str, Any]]:
    return [{"eval_time": f"{t}m", "alertname": name, "exp_alerts": []} for t in CASES[name].silent_at]


def promtool_files(root: pathlib.Path, tests: dict[str, dict[str, Any]]) -> tuple[dict[str, bool], str]:
    """Each test file of ``tests`` (name -> promtool_test_file) given to one ``promtool test rules``: one process
    instead of one per file (~0.2 CPU-s each). Each file is its own test group (own input series, own checks);
    promtool 2.42 prints ``Unit Testing:  <file>`` and then ``SUCCESS`` for each file that passed
    (cmd/promtool/unittest.go RulesUnitTest), the failures' details on stderr. -> (passed by file, all it printed)."""
    for name, test in tests.items():
        (root / name).write_text(yaml.safe_dump(test, sort_keys=False))
    done = subprocess.run([promtool(), "test", "rules", *tests], cwd=root, capture_output=True, text=True, timeout=300)
    printed = done.stdout + done.stderr
    blocks = re.split(r"^Unit Testing:\s+", done.stdout, flags=re.M)[1:]
    verdicts = {b.split("\n", 1)[0].strip(): bool(re.search(r"^\s+SUCCESS\s*$", b, re.M)) for b in blocks}
    assert sorted(verdicts) == sorted(tests), printed
    assert done.returncode == (0 if all(verdicts.values()) else 1), printed
    return verdicts, printed


@pytest.fixture(scope="module")
def promtool_verdicts(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bool], str]:
    """Every case's files, ``fires-<alert>.yaml`` (fires_checks) and ``silent-<alert>.yaml`` (silent_checks), in
    one promtool run."""
    root = tmp_path_factory.mktemp("promtool")
    rules = write_rules(root)
    tests = {}
    for name, case in CASES.items():
        tests[f"fires-{name}.yaml"] = promtool_test_file(rules, case.fires, fires_checks(name))
        tests[f"silent-{name}.yaml"] = promtool_test_file(rules, case.silent, silent_checks(name))
    return promtool_files(root, tests)


# ---- the tests ---------------------------------------------------------------------------------------------


def test_promtool_checks_the_rules_the_component_installs(tmp_path: pathlib.Path) -> None:
    """GIVEN prod's chart values WHEN promtool checks the rule groups they carry THEN they parse, 18 alerts."""
    groups = obs.chart_values(PROD)["additionalPrometheusRulesMap"][alerts.RULES_NAME]["groups"]
    assert groups == alerts.rule_groups(PROD)
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump({"groups": groups}))
    done = subprocess.run([promtool(), "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 19 rules found" in done.stdout
    # and promtool is a real check: a broken expression fails it
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [{"alert": "X", "expr": "max by (node ("}]}]}))
    assert subprocess.run([promtool(), "check", "rules", str(bad)], capture_output=True).returncode != 0


def test_every_alert_has_a_case_a_severity_a_summary_and_a_runbook_section() -> None:
    rules = alerts.alerts(PROD)
    assert sorted(r["alert"] for r in rules) == sorted(CASES)
    doc = (REPO / alerts.RUNBOOK_DOC).read_text()
    anchors = {h.strip().lower() for h in re.findall(r"^### (\S+)\s*$", doc, re.M)}
    for r in rules:
        assert r["labels"]["severity"] in (alerts.CRITICAL, alerts.WARNING), r["alert"]
        assert r["annotations"]["summary"] and r["annotations"]["description"], r["alert"]
        path, anchor = r["annotations"]["runbook"].split("#")
        assert path == alerts.RUNBOOK_DOC and anchor in anchors, r["alert"]
        section = doc.split(f"### {r['alert']}\n", 1)[1].split("\n### ", 1)[0]
        assert f"Severity: {r['labels']['severity']}" in section, r["alert"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_alert_fires_on_its_signal_and_not_a_minute_before(
    name: str, promtool_verdicts: tuple[dict[str, bool], str]
) -> None:
    """GIVEN the signal's input series WHEN promtool evaluates the rules THEN the alert is not firing at minute
    ``at - 1`` (pending or false) and fires at ``at`` with exactly these labels and annotations (fires_checks)."""
    verdicts, printed = promtool_verdicts
    assert verdicts[f"fires-{name}.yaml"], printed


@pytest.mark.parametrize("name", sorted(CASES))
def test_alert_stays_silent_on_healthy_input(name: str, promtool_verdicts: tuple[dict[str, bool], str]) -> None:
    verdicts, printed = promtool_verdicts
    assert verdicts[f"silent-{name}.yaml"], printed


def test_a_silent_case_is_not_silent_by_accident(tmp_path: pathlib.Path) -> None:
    """The silent test can fail: the firing input evaluated as a silent case makes promtool fail."""
    case = CASES["GpuXidFatal"]
    with pytest.raises(AssertionError, match="FAILED"):
        run_promtool_test(tmp_path, case.fires, [{"eval_time": "10m", "alertname": "GpuXidFatal", "exp_alerts": []}])


def test_one_promtool_run_tells_its_files_apart(tmp_path: pathlib.Path) -> None:
    """The batched run (promtool_verdicts) fails exactly the file whose checks fail, between two that pass."""
    case = CASES["GpuXidFatal"]
    rules = write_rules(tmp_path)
    silent = silent_checks("GpuXidFatal")
    verdicts, printed = promtool_files(
        tmp_path,
        {
            "a.yaml": promtool_test_file(rules, case.silent, silent),
            "b.yaml": promtool_test_file(rules, case.fires, [{**silent[0], "eval_time": "10m"}]),
            "c.yaml": promtool_test_file(rules, case.fires, fires_checks("GpuXidFatal")),
        },
    )
    assert verdicts == {"a.yaml": True, "b.yaml": False, "c.yaml": True}
    assert "FAILED" in printed and "GpuXidFatal" in printed


def test_groups_follow_the_stack_hardware() -> None:
    """GIVEN a GPU-only stack THEN no Neuron rules; prod has every family; EFA counts come from the layouts."""
    assert [g["name"] for g in alerts.rule_groups(PROD)] == [
        "ekstrain-gpu",
        "ekstrain-neuron",
        "ekstrain-efa",
        "ekstrain-nodes",
        "ekstrain-jobs",
    ]
    dev = stack_config("dev")
    assert "ekstrain-neuron" not in [g["name"] for g in alerts.rule_groups(dev)]
    assert alerts.efa_expected(PROD) == {
        "p4d.24xlarge": 4,
        "p4de.24xlarge": 4,
        "p5.48xlarge": 32,
        "trn1.32xlarge": 8,
        "trn1n.32xlarge": 16,
    }


def test_the_heartbeat_contract_matches_the_job_templates_and_chart_values() -> None:
    """The PodMonitor selects the label every job template sets, and the chart values carry it, the rules map
    and the node labels the rules join on."""
    assert training_metrics.JOB_LABEL == JOB_LABEL
    values = obs.chart_values(PROD)
    (monitor,) = values["prometheus"]["additionalPodMonitors"]
    assert monitor["namespaceSelector"] == {"matchNames": [names.TRAINING_NAMESPACE]}
    assert monitor["podMetricsEndpoints"][0]["port"] == training_metrics.container_port()["name"]
    (nodes,) = [e for e in values["kube-state-metrics"]["metricLabelsAllowlist"] if e.startswith("nodes=[")]
    assert {"ekstrain.io/partition", "node.kubernetes.io/instance-type"} <= set(nodes[7:-1].split(","))
    assert alerts.node_label(names.PARTITION_LABEL) == "label_ekstrain_io_partition"
    relabel = monitor["podMetricsEndpoints"][0]["relabelings"][1]
    assert relabel == {"sourceLabels": ["__meta_kubernetes_pod_label_ekstrain_io_job"], "targetLabel": "training_job"}
    # the EFA rules read what ekstrain/agents/efa_exporter.py serves
    efa = {r["alert"]: r["expr"] for r in alerts.alerts(PROD) if r["alert"].startswith("Efa")}
    assert efa_exporter.METRIC in efa["EfaErrors"] and "efa_devices" in efa["EfaDeviceMissing"]
    assert not set(alerts.EFA_ERROR_COUNTERS) & efa_exporter.NOT_COUNTERS


@needs_upstream
def test_the_chart_renders_one_prometheus_rule_valid_against_its_crd(tmp_path: pathlib.Path) -> None:
    """GIVEN prod's values WHEN helm renders kube-prometheus-stack (CRDs included) THEN the PrometheusRule carries
    exactly rule_groups(prod) and validates against the chart's monitoring.coreos.com/v1 CRD."""
    archive = "kube-prometheus-stack-88.5.3.tgz"
    out = helm.template(obs.chart_values(PROD), archive, obs.RELEASE, obs.NAMESPACE, tmp_path, "--include-crds")
    parsed = [d for _, d in charts.parse_documents(out) if isinstance(d, dict)]
    docs = [i for d in parsed for i in (d["items"] if d["kind"] == "List" else [d])]  # helm applies a List's items
    crds = validation.schemas_of([d for d in docs if d["kind"] == "CustomResourceDefinition"])
    (rule_obj,) = [d for d in docs if d["kind"] == "PrometheusRule" and alerts.RULES_NAME in d["metadata"]["name"]]
    assert rule_obj["metadata"]["name"] == f"{obs.RELEASE}-{alerts.RULES_NAME}"
    assert rule_obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule_obj["spec"]["groups"] == alerts.rule_groups(PROD)
    assert validation.validate_object(rule_obj, "1.35", crds) == []
    broken = {**rule_obj, "spec": {"groups": [{"name": "x", "rules": [{"alert": "X"}]}]}}  # no expr
    assert validation.validate_object(broken, "1.35", crds) != []
    (monitor,) = [d for d in docs if d["kind"] == "PodMonitor" and d["metadata"]["name"] == "ekstrain-training"]
    assert validation.validate_object(monitor, "1.35", crds) == []
    (ksm,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"].endswith("kube-state-metrics")]
    args = ksm["spec"]["template"]["spec"]["containers"][0]["args"]
    (flag,) = [a for a in args if a.startswith("--metric-labels-allowlist=")]
    (nodes,) = [e for e in flag.split("=", 1)[1].split("],") if e.startswith("nodes=[")]
    assert {"ekstrain.io/partition", "node.kubernetes.io/instance-type"} <= set(nodes[7:].rstrip("]").split(","))


@needs_upstream
def test_the_gpu_rules_read_only_counters_the_pinned_dcgm_exporter_exports() -> None:
    """The DCGM fields the rules query are uncommented in the pinned dcgm-exporter chart's default counters (the
    stack sets no customMetrics, so that list is what the exporter serves); the ECC volatile counters are not."""
    import tarfile

    from ekstrain.components.device_plugins import dcgm_values

    assert "customMetrics" not in dcgm_values()
    version = PROD.versions.chart("dcgm-exporter").version
    archive = validation.upstream_dir() / "chart-src" / f"dcgm-exporter-{version}.tgz"  # type: ignore[operator]
    with tarfile.open(archive) as tar:
        member = tar.extractfile("dcgm-exporter/templates/metrics-configmap.yaml")
        assert member is not None
        template = member.read().decode()
    default = template.split("{{- else }}", 1)[1]
    exported = set(re.findall(r"^\s*(DCGM_FI_\w+)\s*,", default, re.M))
    used = {m for r in alerts.alerts(PROD) for m in re.findall(r"DCGM_FI_\w+", r["expr"])}
    assert used == {
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    }
    assert used <= exported
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in exported
