"""Every platform controller requests cpu and memory (issue 22: BestEffort controllers are evicted first).

GIVEN prod run offline and every Helm release rendered with the real helm
WHEN the render's requests check reads each Deployment, StatefulSet and DaemonSet container
THEN none lacks a cpu or memory request: Argo CD (5), the hub and proxy, kube-prometheus-stack, Kubeflow
Trainer, cert-manager (3), the Slurm operator (2), the EFS CSI controller and node, the NVIDIA device plugin
and the Neuron custom scheduler get them through their charts' values; the two Neuron containers whose
chart has no values key get them from kube-system's LimitRange defaults.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import needs_upstream, stack_config

from ekstrain.infra import render
from ekstrain.infra.verify import charts, requests

needs_helm = pytest.mark.skipif(charts.helm_binary() is None, reason="no helm: run `make .tools/helm`")


def _deployment(resources: dict[str, Any] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "x"}
    if resources is not None:
        container["resources"] = resources
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def test_a_container_without_requests_is_named() -> None:
    assert requests.missing_requests(_deployment(None)) == [
        "Deployment/ns/d container c: no cpu or memory request (BestEffort/evicted first)"
    ]
    assert requests.missing_requests(_deployment({"requests": {"cpu": "10m"}})) == [
        "Deployment/ns/d container c: no memory request (BestEffort/evicted first)"
    ]
    # a limit alone: the API server defaults the request to it
    assert requests.missing_requests(_deployment({"limits": {"cpu": "1", "memory": "1Gi"}})) == []
    assert requests.missing_requests({"kind": "Job", "spec": {}}) == []
    result = requests.check([_deployment(None), _deployment({"requests": {"cpu": "1", "memory": "1Gi"}})])
    assert (result.checked, len(result.problems)) == (2, 1)


@needs_upstream
@needs_helm
def test_prod_controllers_request_cpu_and_memory(prod_recording: Any) -> None:
    rendered = charts.render_all(render.chart_releases(prod_recording), stack_config("prod").cluster.kubernetes_version)
    assert rendered.problems == []
    objects = [o for _, o in render.manifests(prod_recording)]
    objects += [o for objs in rendered.objects.values() for o in objs]
    result = requests.check(objects)
    assert result.checked >= 30
    assert result.problems == []
    assert result.warnings == []
    # WHEN kube-system's LimitRange is left out THEN exactly the Neuron chart's two containers lack requests
    without = requests.check(o for o in objects if o.get("kind") != "LimitRange")
    assert sorted(p.split(" container ")[0] for p in without.problems) == [
        "DaemonSet/kube-system/neuron-device-plugin",
        "Deployment/kube-system/k8s-neuron-scheduler",
    ]


def test_a_namespace_limit_range_default_counts_as_a_request() -> None:
    limit_range = {
        "kind": "LimitRange",
        "metadata": {"namespace": "ns"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "50m", "memory": "128Mi"}}]},
    }
    assert requests.check([_deployment(None), limit_range]).problems == []
    other_ns = {**limit_range, "metadata": {"namespace": "other"}}
    assert len(requests.check([_deployment(None), other_ns]).problems) == 1
    pod_kind = {**limit_range, "spec": {"limits": [{"type": "Pod", "max": {"cpu": "1"}}]}}
    assert len(requests.check([_deployment(None), pod_kind]).problems) == 1
