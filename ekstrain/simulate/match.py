"""kube-scheduler filters the simulation applies, one function each (upstream file cited per rule)."""

from __future__ import annotations

from typing import Any

from ekstrain.simulate.quantity import parse


def selector_matches(selector: dict[str, str], labels: dict[str, set[str]]) -> bool:
    """NodeSelector (pkg/scheduler/framework/plugins/nodeaffinity): every key=value on the node."""
    return all(str(v) in labels.get(k, set()) for k, v in (selector or {}).items())


def _expression(expr: dict[str, Any], labels: dict[str, set[str]]) -> bool:
    # k8s.io/component-helpers/scheduling/corev1/nodeaffinity: In, NotIn, Exists, DoesNotExist, Gt, Lt.
    # Label sets hold every value Karpenter may still choose, so In needs one common value.
    key, op, values = expr["key"], expr["operator"], {str(v) for v in expr.get("values", [])}
    have = labels.get(key)
    if op == "In":
        return bool(have and have & values)
    if op == "NotIn":
        return have is None or bool(have - values)
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have:
        bound = int(next(iter(values)))
        return any((int(v) > bound) if op == "Gt" else (int(v) < bound) for v in have if v.lstrip("-").isdigit())
    return False


def affinity_matches(affinity: dict[str, Any] | None, labels: dict[str, set[str]]) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: terms are ORed, expressions within a term ANDed."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(all(_expression(e, labels) for e in t.get("matchExpressions") or []) for t in terms)


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """k8s.io/api/core/v1 toleration.go ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    op = toleration.get("operator", "Equal")
    if op == "Exists":
        return True
    return bool(toleration.get("key")) and str(toleration.get("value", "")) == str(taint.get("value", ""))


def untolerated(tolerations: list[dict[str, Any]], taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Taints no toleration matches; only NoSchedule/NoExecute filter (plugins/tainttoleration)."""
    return [
        t
        for t in taints
        if t.get("effect") in ("NoSchedule", "NoExecute") and not any(tolerates(tol, t) for tol in tolerations or [])
    ]


def pod_requests(spec: dict[str, Any]) -> dict[str, float]:
    """Effective requests (k8s.io/component-helpers/resource PodRequests): sum of containers, at least the
    largest init container, plus overhead; a container's limit stands in for a missing request."""

    def one(c: dict[str, Any]) -> dict[str, float]:
        res = c.get("resources") or {}
        merged = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        return {k: parse(v) for k, v in merged.items()}

    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        for k, v in one(c).items():
            total[k] = total.get(k, 0.0) + v
    for c in spec.get("initContainers") or []:
        for k, v in one(c).items():
            total[k] = max(total.get(k, 0.0), v)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0.0) + parse(v)
    return total


def lands(spec: dict[str, Any], labels: dict[str, set[str]], taints: list[dict[str, Any]]) -> bool:
    """A pod spec (or DaemonSet template) can run on a node with these labels and taints."""
    return (
        selector_matches(spec.get("nodeSelector") or {}, labels)
        and affinity_matches(spec.get("affinity"), labels)
        and not untolerated(spec.get("tolerations") or [], taints)
    )
