"""Every platform controller requests cpu and memory (BestEffort controllers are evicted first).

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
from conftest import needs_upstream

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


@pytest.fixture(scope="module")
def prod_objects(prod_recording: Any, prod_rendered: charts.Rendered) -> list[dict[str, Any]]:
    """What the render applies for prod (its requests check reads the same list): the program's manifests, then every
    chart object (prod_rendered: the session's `helm template` of every release, tests/conftest.py)."""
    assert prod_rendered.problems == []
    objects = [o for _, o in render.manifests(prod_recording)]
    return objects + [o for objs in prod_rendered.objects.values() for o in objs]


@needs_upstream
@needs_helm
def test_prod_controllers_request_cpu_and_memory(prod_objects: list[dict[str, Any]]) -> None:
    objects = prod_objects
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


def _operator(cpu: str, memory: str) -> dict[str, Any]:
    args = ["--prometheus-config-reloader=quay.io/x:v1", f"--config-reloader-cpu-request={cpu}"]
    args.append(f"--config-reloader-memory-request={memory}")
    return {
        "kind": "Deployment",
        "metadata": {"name": "op", "namespace": "monitoring"},
        "spec": {"template": {"spec": {"containers": [{"name": "op", "image": "x", "args": args, **_SIZED}]}}},
    }


_SIZED = {"resources": {"requests": {"cpu": "10m", "memory": "10Mi"}}}


def test_containers_of_hook_jobs_custom_resources_and_operator_sidecars_are_checked() -> None:
    """A Job, a Slinky CR's container fields, a pod template nested in a CR, a Prometheus CR's
    spec and the operator's config-reloader sidecars are all containers; a zero request is none."""
    job = {"kind": "Job", "metadata": {"name": "hook", "namespace": "ns"}}
    job["spec"] = {"template": {"spec": {"containers": [{"name": "init", "image": "x"}]}}}
    assert requests.missing_requests(job) == [
        "Job/ns/hook container init: no cpu or memory request (BestEffort/evicted first)"
    ]
    controller = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Controller",
        "metadata": {"name": "slurm", "namespace": "slurm"},
        "spec": {
            "slurmctld": {"image": "ctld", "resources": {}},
            "logfile": {"image": "alpine", **_SIZED},
            "template": {"spec": {"initContainers": []}},
        },
    }
    assert requests.missing_requests(controller) == [
        "Controller/slurm/slurm container slurmctld: no cpu or memory request (BestEffort/evicted first)"
    ]
    runtime = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"}}
    runtime["spec"] = {
        "template": {"spec": {"replicatedJobs": [{"template": {"spec": {"template": {"spec": {"containers": [
            {"name": "node", "image": "t", "resources": {"requests": {"cpu": "0", "memory": "1Gi"}}}
        ]}}}}}]}}
    }  # fmt: skip
    assert requests.missing_requests(runtime) == [
        "ClusterTrainingRuntime/-/rt container template.spec.replicatedJobs.template.spec.template.spec node:"
        " no cpu request (BestEffort/evicted first)"
    ]
    prometheus = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {"name": "p", "namespace": "monitoring"},
        "spec": {"image": "prom", **_SIZED},
    }
    # the chart's default: flags "0" -> both reloader containers lack requests
    unset = requests.check([prometheus, _operator("0", "0")])
    assert unset.checked == 4 and [p.split(" container ")[1].split(" ")[0] for p in unset.problems] == [
        "config-reloader",
        "init-config-reloader",
    ]
    assert requests.check([prometheus, _operator("10m", "32Mi")]).problems == []
    assert len(requests.check([prometheus, _operator("10m", "0")]).problems) == 2  # memory still missing
    # no operator in the render: the sidecars' requests are unknown, so missing
    assert len(requests.check([prometheus]).problems) == 2


@needs_upstream
@needs_helm
def test_prod_custom_resources_and_hooks_request_cpu_and_memory(prod_objects: list[dict[str, Any]]) -> None:
    """The containers once found without requests now have them, through chart values and manifests."""
    objects = prod_objects
    names = {
        f"{o['kind']}/{o['metadata']['name']} {c}"
        for o in objects
        for c, _ in requests.containers(o)
        if o["kind"] in ("Controller", "Accounting", "RestApi", "LoginSet", "Prometheus", "Alertmanager", "Job")
    }
    assert {
        "Controller/slurm slurmctld",
        "Controller/slurm reconfigure",
        "Controller/slurm logfile",
        "Accounting/slurm slurmdbd",
        "RestApi/slurm slurmrestd",
        "LoginSet/slurm-login-main login",
        "LoginSet/slurm-login-main initconf",
        "Prometheus/kube-prometheus-stack-prometheus prometheus",
        "Alertmanager/kube-prometheus-stack-alertmanager alertmanager",
        "Job/kube-prometheus-stack-admission-create create",
        "Job/cert-manager-startupapicheck cert-manager-startupapicheck",
        "Job/argo-cd-argocd-redis-secret-init secret-init",
    } <= names
    assert requests.reloader_requests(objects) == {"cpu", "memory"}
    result = requests.check(objects)
    assert result.checked >= 70 and result.problems == []
    runtimes = [o for o in objects if o["kind"] == "ClusterTrainingRuntime"]
    for rt in runtimes:
        ((_, res),) = requests.containers(rt)
        assert res is not None and res["requests"] == res["limits"] and {"cpu", "memory"} <= set(res["requests"])
