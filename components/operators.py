"""Job operators: MPI operator (upstream v0.8.0 objects), Kubeflow Trainer (chart + runtimes) or the legacy
training operator (kustomize), and KubeRay (chart).

The MPI operator's install objects (``ekstrain.assembly.schedulers.mpi_operator``: our own dicts with upstream
v0.8.0's content, the CRD read from the pinned upstream directory before anything registers) are each registered
as their own resource (``ekstrain.assembly.schedulers.operators.mpi_operator_objects``, the Volcano gang flag
applied there): the render writes and validates exactly what ``pulumi up`` applies. The legacy
training operator is still a remote kustomize/v2 Directory on a pinned tag, fetched at deploy time (neither
prod nor dev uses it; under mocks it registers no children, so tests check its inputs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain.assembly.schedulers import operators as build
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.facts import versions
from ekstrain.facts.versions import Chart

KUBEFLOW_FLAVORS = ("trainer", "training-operator", "none")
"""``OperatorsArgs.kubeflow_flavor``'s values."""


@dataclass(frozen=True, kw_only=True)
class OperatorsArgs:
    mpi_operator: bool = False
    """@default false."""
    mpijob_crd: Mapping[str, Any] | None = None
    """@default None; required with ``mpi_operator``. The MPIJob CRD
    (``ekstrain.assembly.schedulers.mpi_operator.mpijob_crd``, from the pinned upstream directory)."""
    kubeflow_flavor: str = "none"
    """``trainer``, ``training-operator`` or ``none``; @default ``none``."""
    trainer_chart: Chart | None = None
    """@default None; required for flavor trainer."""
    trainer_values: Mapping[str, Any] = field(default_factory=dict)
    """@default none. Helm values of the trainer chart."""
    training_runtimes: Sequence[Mapping[str, Any]] = ()
    """@default none. ClusterTrainingRuntime manifests, applied after the trainer chart."""
    kuberay_chart: Chart | None = None
    """@default None: no KubeRay."""
    kuberay_values: Mapping[str, Any] = field(default_factory=dict)
    """@default none. Helm values of the KubeRay chart."""
    gang_args: Mapping[str, list[str]] = field(default_factory=dict)
    """Upstream operator Deployment -> flags that make it gang-schedule through Volcano
    (``ekstrain.assembly.schedulers.operators.gang_args``); @default none."""


def manifest_transform(gang_args: Mapping[str, list[str]]) -> pulumi.ResourceTransform:
    """Patches the operator Deployment of an upstream manifest as the provider registers it (transforms reach
    the children of remote components such as yaml/v2 ConfigFile and kustomize/v2 Directory): the gang
    flags and requests (``ekstrain.assembly.schedulers.operators.patch_operator``)."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != "kubernetes:apps/v1:Deployment":
            return None
        patched = build.patch_operator(dict(args.props), dict(gang_args))
        return None if patched is None else pulumi.ResourceTransformResult(props=patched, opts=args.opts)

    return transform


def _mpi_operator(
    name: str, objects: Sequence[Mapping[str, Any]], parent: pulumi.Resource, deps: Sequence[pulumi.Resource]
) -> None:
    """One resource per object of the manifest: the Namespace and the CRD first, the namespaced objects and
    the RBAC after the Namespace, the Deployment after everything else (its ServiceAccount and binding).

    The CRD goes through a yaml/v2 ConfigGroup holding it inline (``objs``, nothing fetched): the provider
    applies it as the plain object, while the typed CustomResourceDefinition class names the schema's
    ``x-kubernetes-*`` keys ``x_kubernetes_*`` (pulumi-kubernetes JSONSchemaPropsArgs). The render reads a
    ConfigGroup's ``objs`` as manifests (infra/render.py ``manifests``) and validates them like the others."""
    first = pulumi.ResourceOptions(parent=parent, depends_on=list(deps))
    created: list[pulumi.Resource] = []
    namespaces = []
    for obj in objects:
        res_name = f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}"
        if obj["kind"] == "CustomResourceDefinition":
            created.append(k8s.yaml.v2.ConfigGroup(res_name, objs=[dict(obj)], opts=first))
        elif obj["kind"] == "Namespace":
            namespaces.append(resource(res_name, obj, opts=first))
    created += namespaces
    after_ns = pulumi.ResourceOptions(parent=parent, depends_on=[*deps, *namespaces])
    for obj in objects:
        if obj["kind"] in ("Namespace", "CustomResourceDefinition", "Deployment"):
            continue
        created.append(resource(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj, opts=after_ns))
    last = pulumi.ResourceOptions(parent=parent, depends_on=[*deps, *created])
    for obj in objects:
        if obj["kind"] == "Deployment":
            resource(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj, opts=last)


class Operators(pulumi.ComponentResource):
    """``opts.depends_on`` (the cluster; Volcano when KubeRay uses it as batch scheduler) reaches every
    install: the MPI operator's objects, the charts and, through the trainer chart, the runtimes."""

    def __init__(self, name: str, args: OperatorsArgs, opts: pulumi.ResourceOptions | None = None):
        if args.kubeflow_flavor not in KUBEFLOW_FLAVORS:  # a typo would otherwise install nothing, silently
            raise ValueError(
                f"OperatorsArgs.kubeflow_flavor {args.kubeflow_flavor!r}: use one of {', '.join(KUBEFLOW_FLAVORS)}"
            )
        # The gang flags are the component's input: the offline render records them (the manifests' children
        # are registered by the provider, so the simulation reads them here).
        super().__init__("ekstrain:operators:Operators", name, {"gangScheduling": dict(args.gang_args)}, opts)
        deps = dependencies(opts)
        upstream = pulumi.ResourceOptions(parent=self, depends_on=deps, transforms=[manifest_transform(args.gang_args)])
        installed: list[str] = []
        if args.mpi_operator:
            if args.mpijob_crd is None:
                raise ValueError("mpi_operator needs mpijob_crd")
            objects = build.mpi_operator_objects(dict(args.gang_args), dict(args.mpijob_crd))
            _mpi_operator(f"{name}-mpi-operator", objects, self, deps)
            installed.append("mpi-operator")
        if args.kubeflow_flavor == "trainer":
            if args.trainer_chart is None:
                raise ValueError("kubeflow flavor trainer needs trainer_chart")
            trainer = release(
                f"{name}-kubeflow-trainer",
                release_name="kubeflow-trainer",
                chart=args.trainer_chart,
                namespace=build.TRAINER_NAMESPACE,
                values=args.trainer_values,
                parent=self,
                depends_on=deps,
                create_namespace=True,
            )
            after = pulumi.ResourceOptions(parent=self, depends_on=[trainer])
            for rt in args.training_runtimes:
                resource(f"{name}-runtime-{rt['metadata']['name']}", rt, opts=after)
            installed.append("kubeflow-trainer")
        elif args.kubeflow_flavor == "training-operator":
            k8s.kustomize.v2.Directory(
                f"{name}-training-operator", directory=versions.TRAINING_OPERATOR_KUSTOMIZE, opts=upstream
            )
            installed.append("training-operator")
        if args.kuberay_chart is not None:
            release(
                f"{name}-kuberay",
                release_name="kuberay-operator",
                chart=args.kuberay_chart,
                namespace=build.KUBERAY_NAMESPACE,
                values=args.kuberay_values,
                parent=self,
                depends_on=deps,
                create_namespace=True,
            )
            installed.append("kuberay-operator")
        self.register_outputs({"installed": installed})
