"""Read a stack's rendered build directory into a :class:`Cluster` (plain YAML, no Pulumi)."""

from __future__ import annotations

import pathlib
import re
from typing import Any

import yaml

from ekstrain.facts import names
from ekstrain.simulate import volcano
from ekstrain.simulate.engine import Cluster
from ekstrain.simulate.nodes import Node, allocatable, capacity, general_purpose, nodes_of
from ekstrain.simulate.quantity import parse
from ekstrain.tooling.validation import KubeYamlLoader
from ekstrain.workloads import registry

KINDS_READ = frozenset(
    {
        "EC2NodeClass",
        "NodePool",
        "DaemonSet",
        "ConfigMap",
        "Queue",
        "ScaledObject",
        "NodeSet",
        "ClusterTrainingRuntime",
        "Deployment",
        "StatefulSet",
    }
)
"""The kinds :func:`load` uses. The render names files ``<Kind>-<ns>-<name>.yaml``, so the rest (17 of prod's
18 MB are CRDs) is never parsed."""


def read_objects(paths: list[pathlib.Path]) -> list[dict[str, Any]]:
    """The objects of rendered files, read as Kubernetes reads YAML (a chart CRD's file is helm's own text, where
    a bare ``=`` is a string: PyYAML's safe loader alone refuses it)."""
    out = []
    for path in paths:
        for doc in yaml.load_all(path.read_text(), Loader=KubeYamlLoader):
            if isinstance(doc, dict) and doc.get("kind"):
                out.append(doc)
    return out


CONTROLLER_SOURCES = {
    # Operators applied from upstream manifests rather than charts. The MPI operator's CRD is a rendered manifest
    # (manifests/operators/CustomResourceDefinition-mpijobs.kubeflow.org.yaml); the legacy training operator's
    # kustomization is recorded by its source in resources.yaml (kustomize/v2:Directory), with no CRD object.
    "mpi-operator": ("mpijobs.kubeflow.org",),
    "training-operator": ("pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org"),
}


def installed_crds(build: pathlib.Path) -> set[str]:
    """``<plural>.<group>`` of every CRD the stack installs: chart and manifest files named
    ``CustomResourceDefinition-*`` (not parsed) and the operators applied from upstream manifests."""
    crds = {
        f.name.removesuffix(".yaml").removeprefix("CustomResourceDefinition-").removeprefix("_-")
        for f in [
            *(build / "manifests").rglob("CustomResourceDefinition-*"),
            *(build / "charts").rglob("CustomResourceDefinition-*"),
        ]
    }
    resources = build / "resources.yaml"
    text = resources.read_text() if resources.exists() else ""
    for operator, names_ in CONTROLLER_SOURCES.items():
        if re.search(rf"^\s+(?:file|directory): \S*{operator}", text, re.MULTILINE):
            crds.update(names_)
    return crds


def gang_kinds(build: pathlib.Path) -> frozenset[str]:
    """Kinds whose operator the stack runs with Volcano gang scheduling (components/operators.py patches the
    upstream manifests' Deployments; the render records the flags as the component's input)."""
    resources = build / "resources.yaml"
    text = resources.read_text() if resources.exists() else ""
    # each kind's operator flag (in resources.yaml: the Operators component's gangScheduling input)
    return frozenset(kind for flag, kind in registry.gang_flags().items() if flag in text)


def build_objects(build: pathlib.Path) -> list[dict[str, Any]]:
    files = sorted((build / "manifests").rglob("*.yaml")) + sorted((build / "charts").rglob("*.yaml"))
    return read_objects([f for f in files if f.name.split("-", 1)[0] in KINDS_READ])


def system_nodes(instance_types: list[str]) -> list[Node]:
    out = []
    for name in instance_types:
        it = general_purpose(name)
        if it is None:
            continue
        cap = capacity(it, None)
        labels = {
            names.SYSTEM_NODE_LABEL: {"system"},
            "node.kubernetes.io/instance-type": {name},
            "kubernetes.io/os": {"linux"},
            "kubernetes.io/arch": {"amd64"},
            "eks.amazonaws.com/capacityType": {"ON_DEMAND"},
        }
        out.append(
            Node(pool="system", instance=it, labels=labels, taints=[], capacity=cap, allocatable=allocatable(it, cap))
        )
    return out


def _scheduler_config(objects: list[dict[str, Any]], build: pathlib.Path) -> dict[str, Any] | None:
    for o in objects:
        if o["kind"] == "ConfigMap" and "volcano-scheduler.conf" in (o.get("data") or {}):
            return volcano.parse_config(o["data"]["volcano-scheduler.conf"])
    release = build / "helm" / "volcano--volcano.yaml"
    if not release.exists():
        return None
    values = (yaml.safe_load(release.read_text()) or {}).get("values") or {}
    return volcano.parse_config((values.get("custom") or {}).get("scheduler_config_override"))


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def load(build: pathlib.Path, system_instance_types: list[str]) -> Cluster:
    objects = build_objects(build)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    classes = {o["metadata"]["name"]: o for o in by_kind.get("EC2NodeClass", [])}
    nodes = system_nodes(system_instance_types)
    for pool in by_kind.get("NodePool", []):
        nodes += nodes_of(pool, classes)
    daemonsets = [
        (o["metadata"]["name"], o["spec"]["template"].get("spec") or {}) for o in by_kind.get("DaemonSet", [])
    ]
    config = _scheduler_config(objects, build)
    queues = {
        o["metadata"]["name"]: {k: parse(v) for k, v in ((o.get("spec") or {}).get("capability") or {}).items()}
        for o in by_kind.get("Queue", [])
    }
    guarantees = {
        o["metadata"]["name"]: {
            k: parse(v) for k, v in (((o.get("spec") or {}).get("guarantee") or {}).get("resource") or {}).items()
        }
        for o in by_kind.get("Queue", [])
    }
    parents = {
        o["metadata"]["name"]: str((o.get("spec") or {}).get("parent"))
        for o in by_kind.get("Queue", [])
        if (o.get("spec") or {}).get("parent")
    }
    if config is not None:
        queues.setdefault("default", {})  # the volcano chart creates it
    nodesets = {re.sub(r"^.*?-worker-", "", o["metadata"]["name"]): o for o in by_kind.get("NodeSet", [])}
    return Cluster(
        nodes=nodes,
        daemonsets=daemonsets,
        scheduler_config=config or {},
        queues=queues,
        guarantees=guarantees,
        parents=parents,
        crds=installed_crds(build),
        gang_kinds=gang_kinds(build),
        runtimes={o["metadata"]["name"]: o for o in by_kind.get("ClusterTrainingRuntime", [])},
        controllers=[
            (f"{o['kind']}/{o['metadata']['name']}", int(o["spec"].get("replicas", 1) or 0), _pod_spec(o))
            for kind in ("Deployment", "StatefulSet")
            for o in by_kind.get(kind, [])
        ],
        nodesets=nodesets,
        # NodeSets a KEDA ScaledObject scales (assembly/schedulers/autoscaling.py): no manual scaling before a job
        autoscaled=frozenset(
            part
            for part, ns in nodesets.items()
            for so in by_kind.get("ScaledObject", [])
            if (so.get("spec") or {}).get("scaleTargetRef", {}).get("name") == ns["metadata"]["name"]
        ),
    )
