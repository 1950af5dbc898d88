"""Observability: kube-prometheus-stack values and scrape targets, the EFA exporter (run for real
against a fake sysfs), dashboards, Prometheus sizing, AMP remote write through Pod Identity."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pulumi
import pytest
from conftest import needs_upstream, run_program, stack_config
from hypothesis import given
from hypothesis import strategies as st
from support.helm import template_objects

from ekstrain.agents import efa_exporter
from ekstrain.assembly import observability as obs
from ekstrain.components.observability import Observability, ObservabilityArgs
from ekstrain.infra.offline import Recording
from ekstrain.tooling import validation

PROD = stack_config("prod")
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def rec() -> Recording:
    def program() -> pulumi.Output[str]:
        o = Observability(
            "observability",
            ObservabilityArgs(
                plan=obs.plan(PROD), chart=PROD.versions.chart("kube-prometheus-stack"), tags={"Team": "ml"}
            ),
        )
        return o.grafana_admin_password

    return run_program(program)


def test_component_children_are_exactly_these(rec: Recording) -> None:
    (comp,) = rec.of_type("ekstrain:observability:Observability")
    assert sorted((c.type, c.name) for c in rec.children_of(comp.urn)) == sorted(
        [
            ("kubernetes:core/v1:Namespace", "observability-ns"),
            ("random:index/randomPassword:RandomPassword", "observability-grafana-admin"),
            ("kubernetes:core/v1:Secret", "observability-grafana-admin"),
            ("aws:amp/workspace:Workspace", "observability-amp"),
            ("aws:iam/role:Role", "observability-amp-writer"),
            ("aws:iam/rolePolicy:RolePolicy", "observability-amp-writer"),
            ("aws:eks/podIdentityAssociation:PodIdentityAssociation", "observability-amp-writer"),
            (RELEASE, "observability"),
            ("kubernetes:core/v1:ConfigMap", "observability-efa-exporter"),
            ("kubernetes:apps/v1:DaemonSet", "observability-efa-exporter"),
            ("kubernetes:core/v1:Service", "observability-efa-exporter"),
            ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "observability-efa-exporter"),
            ("kubernetes:core/v1:Service", "observability-neuron-monitor"),
            *(
                ("kubernetes:core/v1:ConfigMap", f"observability-dashboard-{d}")
                for d in ("gpu-utilisation", "neuron-utilisation", "efa-traffic", "job-health")
            ),
        ]
    )


def test_release_is_the_pinned_chart_with_retention_sized_from_config(rec: Recording) -> None:
    rel = rec.one(RELEASE, "observability").inputs
    assert (rel["name"], rel["chart"], rel["version"], rel["namespace"]) == (
        "kube-prometheus-stack",
        "kube-prometheus-stack",
        "88.5.3",
        "monitoring",
    )
    assert rel["repositoryOpts"] == {"repo": "https://prometheus-community.github.io/helm-charts"}
    spec = rel["values"]["prometheus"]["prometheusSpec"]
    # prod: retentionDays 30, 30 s scrapes, 56 accelerator nodes + 6 system nodes -> 100 GiB
    assert (spec["retention"], spec["retentionSize"], spec["scrapeInterval"]) == ("30d", "85GiB", "30s")
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "100Gi"
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False
    assert rel["values"]["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    secret = rec.one("kubernetes:core/v1:Secret", "observability-grafana-admin")
    assert secret.urn in rec.one(RELEASE, "observability").dependencies


def test_amp_remote_write_uses_pod_identity_scoped_to_the_workspace(rec: Recording) -> None:
    ws = rec.one("aws:amp/workspace:Workspace", "observability-amp")
    assert ws.inputs["alias"] == "ekstrain-prod-metrics"
    role = rec.one("aws:iam/role:Role", "observability-amp-writer")
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "pods.eks.amazonaws.com"
    }
    policy = json.loads(rec.one("aws:iam/rolePolicy:RolePolicy", "observability-amp-writer").inputs["policy"])
    assert policy["Statement"] == [{"Effect": "Allow", "Action": ["aps:RemoteWrite"], "Resource": ws.outputs["arn"]}]
    assoc = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation", "observability-amp-writer").inputs
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("monitoring", "prometheus")
    values = rec.one(RELEASE, "observability").inputs["values"]
    assert values["prometheus"]["serviceAccount"]["name"] == "prometheus"
    (write,) = values["prometheus"]["prometheusSpec"]["remoteWrite"]
    assert (write["url"], write["sigv4"]) == (
        ws.outputs["prometheusEndpoint"] + "api/v1/remote_write",
        {"region": "us-west-2"},
    )
    # only the series the dashboards and rules read (tests/test_remote_write_keep.py)
    assert write["writeRelabelConfigs"][0]["action"] == "keep"


def test_scrape_targets_select_what_the_exporters_run(rec: Recording) -> None:
    monitors = {m["name"]: m for m in obs.service_monitors(PROD)}
    assert sorted(monitors) == ["dcgm-exporter", "efa-exporter", "neuron-monitor"]
    svc = rec.one("kubernetes:core/v1:Service", "observability-efa-exporter").inputs
    ds = rec.one("kubernetes:apps/v1:DaemonSet", "observability-efa-exporter").inputs
    assert monitors["efa-exporter"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert svc["spec"]["selector"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    neuron = rec.one("kubernetes:core/v1:Service", "observability-neuron-monitor").inputs
    from ekstrain.components.device_plugins import neuron_monitor_daemonset

    pod = neuron_monitor_daemonset()["spec"]["template"]
    assert neuron["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert neuron["metadata"]["namespace"] == "kube-system"
    assert pod["spec"]["containers"][0]["ports"][0]["name"] == neuron["spec"]["ports"][0]["targetPort"]


# GIVEN prod WHEN the component registers its release THEN the values carry the training alerts (the groups
# tests/assembly/test_alerts.py runs through promtool), the heartbeat PodMonitor and the node labels the rules join on.
def test_release_installs_the_training_alerts_and_the_heartbeat_monitor(rec: Recording) -> None:
    from ekstrain.assembly import alerts
    from ekstrain.facts import training_metrics

    values = rec.one(RELEASE, "observability").inputs["values"]
    assert values["additionalPrometheusRulesMap"] == {"ekstrain-training": {"groups": alerts.rule_groups(PROD)}}
    assert [m["name"] for m in values["prometheus"]["additionalPodMonitors"]] == [training_metrics.POD_MONITOR]
    (nodes,) = [e for e in values["kube-state-metrics"]["metricLabelsAllowlist"] if e.startswith("nodes=[")]
    assert {"ekstrain.io/partition", "node.kubernetes.io/instance-type"} <= set(nodes[7:-1].split(","))


@needs_upstream
def test_values_use_only_chart_keys_and_manifests_validate(rec: Recording) -> None:
    values = rec.one(RELEASE, "observability").inputs["values"]
    assert validation.unknown_value_keys(values, validation.chart_defaults("kube-prometheus-stack")) == []
    for r in rec.records:
        if r.custom and r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:helm"):
            obj = {k: v for k, v in r.inputs.items() if k != "id"}
            assert validation.validate_object(obj, "1.35") == [], r.name


@needs_upstream
def test_chart_renders_the_service_monitors_and_remote_write(rec: Recording, tmp_path: pathlib.Path) -> None:
    values = rec.one(RELEASE, "observability").inputs["values"]
    objs = template_objects(values, "kube-prometheus-stack-88.5.3.tgz", "kube-prometheus-stack", "monitoring", tmp_path)
    for o in objs:  # built-in kinds strictly; the operator's CRs are checked below by content
        if "/" not in o["apiVersion"] or o["apiVersion"].rsplit("/", 1)[0] in validation.BUILTIN_GROUPS:
            assert validation.validate_object(o, "1.35") == [], (o["kind"], o["metadata"]["name"])
    monitors = {o["metadata"]["name"] for o in objs if o["kind"] == "ServiceMonitor"}
    assert {"dcgm-exporter", "neuron-monitor", "efa-exporter"} <= monitors
    (prom,) = [o for o in objs if o["kind"] == "Prometheus"]
    assert prom["spec"]["serviceAccountName"] == "prometheus" and prom["spec"]["retention"] == "30d"
    assert prom["spec"]["remoteWrite"][0]["sigv4"] == {"region": "us-west-2"}


def test_dashboards_are_labelled_configmaps_of_valid_grafana_json(rec: Recording) -> None:
    for uid in ("gpu-utilisation", "neuron-utilisation", "efa-traffic", "job-health"):
        cm = rec.one("kubernetes:core/v1:ConfigMap", f"observability-dashboard-{uid}").inputs
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1" and cm["metadata"]["namespace"] == "monitoring"
        board = json.loads(cm["data"][f"{uid}.json"])
        assert board["uid"] == f"ekstrain-{uid}" and board["panels"]
        assert all(p["targets"][0]["expr"] for p in board["panels"])
    efa = json.loads(
        rec.one("kubernetes:core/v1:ConfigMap", "observability-dashboard-efa-traffic").inputs["data"][
            "efa-traffic.json"
        ]
    )
    # the EFA panels query the metric the exporter serves
    assert all(
        efa_exporter.METRIC in p["targets"][0]["expr"] or "efa_devices" in p["targets"][0]["expr"]
        for p in efa["panels"]
    )


def test_dev_gpu_only_stack_gets_no_neuron_pieces() -> None:
    dev = stack_config("dev").model_copy(
        update={
            "observability": PROD.observability.model_copy(
                update={"amp": PROD.observability.amp.model_copy(update={"enabled": False})}
            )
        }
    )
    assert sorted(obs.dashboards(dev)) == ["efa-traffic", "gpu-utilisation", "job-health"]
    assert [m["name"] for m in obs.service_monitors(dev)] == ["dcgm-exporter", "efa-exporter"]
    assert "remoteWrite" not in obs.chart_values(dev)["prometheus"]["prometheusSpec"]


def test_prometheus_storage_figures() -> None:
    assert obs.prometheus_storage_gib(30, 30, 56, 6) == 100
    assert obs.prometheus_storage_gib(15, 30, 56, 6) == 50
    assert obs.prometheus_storage_gib(1, 300, 0, 1) == 10


@given(st.integers(1, 365), st.integers(5, 300), st.integers(0, 2000), st.integers(1, 50))
def test_storage_grows_with_retention_and_nodes(days: int, interval: int, accel: int, system: int) -> None:
    base = obs.prometheus_storage_gib(days, interval, accel, system)
    assert base % 10 == 0 and base >= 10
    assert obs.prometheus_storage_gib(days + 1, interval, accel, system) >= base
    assert obs.prometheus_storage_gib(days, interval, accel + 1, system) >= base


# ---- the EFA exporter, run as the DaemonSet runs it -------------------------------------------------


def _fake_sysfs(root: pathlib.Path) -> pathlib.Path:
    """/sys layout: class/infiniband/efa_0 is a symlink into devices/, as on a node."""
    dev = root / "devices" / "pci0000:00" / "efa_0"
    counters = dev / "ports" / "1" / "hw_counters"
    counters.mkdir(parents=True)
    for name, value in (("tx_bytes", "1000"), ("rx_bytes", "2000"), ("rdma_read_bytes", "30"), ("lifespan", "12")):
        (counters / name).write_text(value + "\n")
    (dev / "hw_counters").mkdir()
    (dev / "hw_counters" / "alloc_pd_err").write_text("0\n")
    cls = root / "class" / "infiniband"
    cls.mkdir(parents=True)
    (cls / "efa_0").symlink_to("../../devices/pci0000:00/efa_0")
    return cls


def test_exporter_renders_every_counter_but_settings(tmp_path: pathlib.Path) -> None:
    page = efa_exporter.render(str(_fake_sysfs(tmp_path)))
    assert 'efa_hw_counter_total{device="efa_0",port="1",counter="tx_bytes"} 1000' in page
    assert 'efa_hw_counter_total{device="efa_0",port="",counter="alloc_pd_err"} 0' in page
    assert "lifespan" not in page and "efa_devices 1" in page
    assert efa_exporter.render(str(tmp_path / "absent")).endswith("efa_devices 0\n")


def test_exporter_serves_metrics_over_http_from_its_configmap_copy(tmp_path: pathlib.Path) -> None:
    # GIVEN the script exactly as the ConfigMap carries it
    script = tmp_path / "efa_exporter.py"
    script.write_text(obs.efa_exporter_configmap()["data"]["efa_exporter.py"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "EFA_SYSFS": str(_fake_sysfs(tmp_path)), "PORT": str(port)}
    proc = subprocess.Popen([sys.executable, str(script)], env=env)
    try:
        body = ""
        for _ in range(50):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        assert 'counter="rx_bytes"} 2000' in body
    finally:
        proc.terminate()
        proc.wait(timeout=10)
