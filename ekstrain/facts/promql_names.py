"""Metric names a PromQL expression reads, and the remote-write keep-list built from them (pure).

Amazon Managed Service for Prometheus bills every sample it ingests; Prometheus's ``remote_write`` sends every
series it scrapes unless ``write_relabel_configs`` drop them (prometheus.io/docs/prometheus/latest/configuration/
configuration/#remote_write). The platform sends only the series its dashboards and alert rules read: the names
are collected from the PromQL itself (:func:`metric_names`), so a dashboard or rule added later is kept without a
second list to maintain.

The scanner follows the PromQL grammar's lexical rules (prometheus/promql/parser lex.go): identifiers are
``[a-zA-Z_:][a-zA-Z0-9_:]*``; one followed by ``(`` is a function or an aggregation; ``by``/``without``/``on``/
``ignoring``/``group_left``/``group_right`` take a label list in parentheses; ``{...}`` holds label matchers,
``[...]`` a range or subquery duration, quotes a string; ``offset``/``@`` take a duration or timestamp; the binary
keywords ``and``/``or``/``unless``/``bool`` and ``inf``/``nan`` are no metric.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
"""Lower-case PromQL keywords (lex.go ``key``), never metric names; plus ``inf``/``nan`` numbers."""
LABEL_LIST = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", re.I)
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHERS = re.compile(r"\{[^}]*\}")
DURATION = re.compile(r"\[[^\]]*\]")
OFFSET = re.compile(r"\b(offset)\s+-?[0-9a-zA-Z]+|@\s*[\w.()]+", re.I)
IDENT = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (``{__name__="x"}`` selectors included)."""
    names = set(re.findall(r'__name__\s*=\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"', expr))
    text = STRING.sub('""', expr)
    text = MATCHERS.sub("", text)
    text = DURATION.sub("", text)
    text = OFFSET.sub("", text)
    text = LABEL_LIST.sub("", text)
    for match in IDENT.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in KEYWORDS or name.lower() in ("inf", "nan"):
            continue
        names.add(name)
    return names


def queries(obj: Any) -> Iterator[str]:
    """Every PromQL string in ``obj``: the ``expr`` of Grafana panel targets and of Prometheus rules, at any depth
    (a dashboard, a PrometheusRule, kube-prometheus-stack values with ``additionalPrometheusRulesMap``)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "expr" and isinstance(value, str):
                yield value
            else:
                yield from queries(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from queries(value)


def keep_list(exprs: Iterable[str]) -> list[str]:
    """Sorted metric names every expression reads."""
    return sorted(set().union(*(metric_names(e) for e in exprs)))


def keep_relabel(names: Iterable[str]) -> list[dict[str, Any]]:
    """Prometheus Operator ``RemoteWriteSpec.writeRelabelConfigs``: keep only the series named (the regex is
    anchored by Prometheus: relabel_config ``regex`` is fully anchored)."""
    names = sorted(set(names))
    return [{"sourceLabels": ["__name__"], "regex": "|".join(re.escape(n) for n in names), "action": "keep"}]
