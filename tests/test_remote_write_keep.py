"""Remote write to Amazon Managed Prometheus keeps only the series the dashboards and alert rules read: names taken
from the PromQL itself (ekstrain/facts/promql_names.py), so a dashboard or rule added later is kept with no second
list."""

from __future__ import annotations

import re

import pytest
from conftest import stack_config

from ekstrain.assembly import cost
from ekstrain.assembly import observability as obs
from ekstrain.facts import promql_names
from ekstrain.layout import prometheus_sizing


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ("avg by (node) (DCGM_FI_DEV_GPU_UTIL)", {"DCGM_FI_DEV_GPU_UTIL"}),
        ('sum by (node) (rate(efa_hw_counter_total{counter="tx_bytes"}[1m]))', {"efa_hw_counter_total"}),
        ('sum(kube_pod_status_phase{namespace="training",phase="Pending"}) or vector(0)', {"kube_pod_status_phase"}),
        (
            "max by (node) (kube_node_labels) * on (node) group_left(label_x) sum by (node) (up offset 5m)",
            {"kube_node_labels", "up"},
        ),
        ('label_replace(a_metric, "dst", "$1", "src", "(.*)") unless b:recorded', {"a_metric", "b:recorded"}),
        ('{__name__="by_name_only", job="x"}', {"by_name_only"}),
        ("rate(x_total[5m:30s]) > bool 0 and on (pod) y", {"x_total", "y"}),
        ("histogram_quantile(0.9, sum by (le) (rate(h_bucket[5m]))) > Inf", {"h_bucket"}),
    ],
)
def test_metric_names_follow_the_promql_lexer(expr: str, names: set[str]) -> None:
    assert promql_names.metric_names(expr) == names


def test_queries_are_found_in_dashboards_and_rules_at_any_depth() -> None:
    rules = {
        "additionalPrometheusRulesMap": {"x": {"groups": [{"rules": [{"alert": "A", "expr": "rule_metric > 0"}]}]}}
    }
    board = {"panels": [{"targets": [{"expr": "panel_metric"}]}]}
    assert list(promql_names.queries([rules, board])) == ["rule_metric > 0", "panel_metric"]


def test_prod_keeps_exactly_what_its_dashboards_and_rules_read() -> None:
    cfg = stack_config("prod")
    values = obs.chart_values(cfg, remote_write="https://aps.example/api/v1/remote_write")
    (write,) = values["prometheus"]["prometheusSpec"]["remoteWrite"]
    (keep,) = write["writeRelabelConfigs"]
    assert keep["action"] == "keep" and keep["sourceLabels"] == ["__name__"]
    boards = promql_names.keep_list(e for b in obs.dashboards(cfg).values() for e in promql_names.queries(b))
    rules = promql_names.keep_list(promql_names.queries(values["additionalPrometheusRulesMap"]))
    spend = promql_names.keep_list(cost.promql(cfg))
    expected = sorted(set(boards) | set(rules) | set(spend))
    assert obs.remote_write_keep_list(cfg, values) == expected
    assert {"DCGM_FI_DEV_GPU_UTIL", "neuroncore_utilization_ratio", "efa_hw_counter_total"} <= set(boards)
    assert {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "ekstrain_training_last_step_timestamp_seconds"} <= set(rules)
    assert "node_total_hourly_cost" in spend
    # Prometheus anchors a relabel regex: each kept name matches whole, a longer name does not
    pattern = re.compile(keep["regex"])
    assert all(pattern.fullmatch(n) for n in expected)
    assert not pattern.fullmatch("DCGM_FI_DEV_GPU_UTIL_extra") and not pattern.fullmatch("node_cpu_seconds_total")


def test_a_rule_in_the_chart_values_is_kept_without_another_list() -> None:
    # GIVEN a rule another module adds to the chart values (additionalPrometheusRulesMap)
    cfg = stack_config("prod")
    values = {"additionalPrometheusRulesMap": {"r": {"groups": [{"rules": [{"expr": "new_alert_metric > 1"}]}]}}}
    # THEN its metric is kept
    assert "new_alert_metric" in obs.remote_write_keep_list(cfg, values)


def test_without_amp_no_remote_write() -> None:
    values = obs.chart_values(stack_config("dev"))
    assert "remoteWrite" not in values["prometheus"]["prometheusSpec"]


def test_amp_ingestion_tiers() -> None:
    assert prometheus_sizing.amp_ingestion_usd(1e9) == pytest.approx(90.0)
    assert prometheus_sizing.amp_ingestion_usd(3e9) == pytest.approx(180.0 + 35.0)
    assert prometheus_sizing.samples_per_month(1000, 30) == pytest.approx(1000 * 86400)
