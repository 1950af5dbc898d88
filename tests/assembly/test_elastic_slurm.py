"""Elastic Slurm: KEDA scales every Slinky NodeSet from Slurm's queue (assembly/schedulers/autoscaling.py).

GIVEN/WHEN/THEN per test; the recorded program, the real chart renders and the real Prometheus's parser (promtool).
"""

from __future__ import annotations

import math
import pathlib
import shutil
import subprocess

import pytest
import yaml
from conftest import cfg_with, releases, run_stack, stack_config

from ekstrain.assembly.schedulers import autoscaling
from ekstrain.assembly.schedulers import slurm as slurm_values
from ekstrain.infra import offline
from ekstrain.infra.verify import charts
from ekstrain.stacks.errors import ConfigError

PROD = stack_config("prod")
SCALED = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def _objects(rec: offline.Recording, release: str) -> list[dict]:
    rel = charts.Release.from_inputs("x", releases(rec)[release].inputs)
    return [d for d in charts.parse(charts.template(rel, "1.35")) if isinstance(d, dict)]


# GIVEN prod WHEN recorded THEN one ScaledObject per NodeSet of the real slurm chart render, after KEDA and Slurm.
def test_one_scaled_object_per_nodeset_of_the_chart(prod_recording: offline.Recording) -> None:
    scaled = prod_recording.of_type(SCALED)
    nodesets = {d["metadata"]["name"] for d in _objects(prod_recording, "slurm") if d["kind"] == "NodeSet"}
    assert {s.inputs["spec"]["scaleTargetRef"]["name"] for s in scaled} == nodesets
    keda = releases(prod_recording)["keda"]
    cluster = releases(prod_recording)["slurm"]
    for s in scaled:
        spec = s.inputs["spec"]
        p = PROD.partition(spec["scaleTargetRef"]["name"].removeprefix("slurm-worker-"))
        assert spec["scaleTargetRef"]["apiVersion"] == "slinky.slurm.net/v1beta1"
        assert (spec["idleReplicaCount"], spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 1, p.max_nodes)
        (trigger,) = spec["triggers"]
        assert (trigger["type"], trigger["metricType"], trigger["metadata"]["threshold"]) == (
            "prometheus",
            "AverageValue",
            "1",
        )
        assert f'partition="{p.name}"' in trigger["metadata"]["query"]
        assert s.inputs["metadata"]["namespace"] == slurm_values.NAMESPACE
        assert {keda.urn, cluster.urn} <= set(s.dependencies)
    assert keda.inputs["namespace"] == "keda" and keda.inputs["version"] == "2.20.2"


# GIVEN prod THEN the trigger's Prometheus is a Service the kube-prometheus-stack render has, on its port.
def test_the_trigger_reaches_the_stacks_prometheus(prod_recording: offline.Recording) -> None:
    url = autoscaling.prometheus_url()
    host, port = url.removeprefix("http://").split(":")
    name, namespace = host.split(".")[:2]
    services = [d for d in _objects(prod_recording, "kube-prometheus-stack") if d["kind"] == "Service"]
    (svc,) = [s for s in services if s["metadata"]["name"] == name]
    assert releases(prod_recording)["kube-prometheus-stack"].inputs["namespace"] == namespace
    assert int(port) in [p["port"] for p in svc["spec"]["ports"]]


# GIVEN prod THEN slurmctld exports its metrics (the operator adds MetricsType) and a ServiceMonitor for them.
def test_slurmctld_exports_metrics_for_prometheus(prod_recording: offline.Recording) -> None:
    (controller,) = [d for d in _objects(prod_recording, "slurm") if d["kind"] == "Controller"]
    metrics = controller["spec"]["metrics"]
    assert metrics["enabled"] is True and metrics["serviceMonitor"]["enabled"] is True
    assert {"/metrics/partitions", "/metrics/nodes"} <= {e["path"] for e in metrics["serviceMonitor"]["endpoints"]}


# The query is PromQL the real Prometheus parses (promtool check rules on it as a recording rule).
def test_the_query_is_promql_prometheus_parses(tmp_path: pathlib.Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: apt-get install -y prometheus (.ci/run installs it)"
    record = "ekstrain:slurm_nodes_needed"
    queries = [{"record": record, "expr": autoscaling.nodes_needed_query(p.name)} for p in PROD.partitions]
    rules = {"groups": [{"name": "q", "rules": queries}]}
    f = tmp_path / "rules.yaml"
    f.write_text(yaml.safe_dump(rules))
    done = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"groups": [{"name": "q", "rules": [{"record": "x", "expr": "max(("}]}]}))
    assert subprocess.run([promtool, "check", "rules", str(bad)], capture_output=True).returncode != 0


@pytest.mark.parametrize(("busy", "pending", "want"), [(0, 0, 0), (0, 8, 8), (4, 4, 8), (6, 1, 7), (16, 16, 32)])
def test_the_hpa_asks_for_the_nodes_busy_plus_the_largest_pending_job(busy: int, pending: int, want: int) -> None:
    """HPA AverageValue arithmetic (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale, algorithm):
    desired = ceil(metric / threshold), clamped to [minReplicaCount, maxReplicaCount] by KEDA; inactive at 0."""
    so = autoscaling.scaled_object(PROD, next(p for p in _facts() if p.name == "gpu-a100"), "slurm")
    spec = so["spec"]
    metric = busy + pending
    threshold = float(spec["triggers"][0]["metadata"]["threshold"])
    active = metric > float(spec["triggers"][0]["metadata"]["activationThreshold"])
    desired = (
        min(spec["maxReplicaCount"], max(spec["minReplicaCount"], math.ceil(metric / threshold)))
        if active
        else spec["idleReplicaCount"]
    )
    assert desired == min(want, spec["maxReplicaCount"])


def _facts() -> list:
    from ekstrain.assembly.schedulers.common import partition_facts

    return partition_facts(PROD)


# GIVEN a floor of 2 slurmd pods THEN minReplicaCount 2 and no idleReplicaCount (KEDA needs idle < min).
def test_nodeset_replicas_become_the_floor() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(nodesetReplicas={"gpu-a100": 2}))
    (so,) = [o for o in autoscaling.scaled_objects(cfg, "slurm") if o["metadata"]["name"] == "slurm-worker-gpu-a100"]
    assert so["spec"]["minReplicaCount"] == 2 and "idleReplicaCount" not in so["spec"]


# GIVEN autoscale off THEN no KEDA release, no ScaledObject and no controller metrics.
def test_autoscale_off_renders_no_keda() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(autoscale=False))
    rec = run_stack(cfg)
    assert rec.of_type(SCALED) == [] and "keda" not in releases(rec)
    assert "metrics" not in releases(rec)["slurm"].inputs["values"]["controller"]


# GIVEN autoscale with no Prometheus THEN one refusal naming the key and both fixes.
def test_autoscale_needs_prometheus() -> None:
    with pytest.raises(ConfigError) as refused:
        cfg_with(lambda s: s["observability"].update(enabled=False))
    text = str(refused.value)
    assert "ekstrain:schedulers.slurm.autoscale: elastic Slurm reads" in text
    assert "ekstrain:observability.enabled: true" in text and "ekstrain:schedulers.slurm.autoscale: false" in text
    cfg_with(
        lambda s: (
            s["observability"].update(enabled=False),
            s["schedulers"]["slurm"].update(autoscale=False),
            # OpenCost reads the same Prometheus (tests/assembly/test_logs_and_spend.py)
            s["cost"].update(opencost=False),
        )
    )
