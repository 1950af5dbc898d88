"""Job operators: MPI operator (manifest), Kubeflow Trainer (chart + runtimes) or the legacy
training operator (kustomize), and KubeRay (chart).

The MPI operator and the legacy training operator are remote components (yaml/v2 ConfigFile,
kustomize/v2 Directory): the engine fetches the pinned upstream URL at deploy time, and under
mocks they register no children, so tests check their inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from ekstrain import versions
from ekstrain.assembly.schedulers import operators as build
from ekstrain.components.deps import dependencies
from ekstrain.components.helm import release
from ekstrain.components.manifest import resource
from ekstrain.versions import Chart


@dataclass(frozen=True, kw_only=True)
class OperatorsArgs:
    mpi_operator: bool = False
    """@default false."""
    kubeflow_flavor: str = "none"
    """``trainer``, ``training-operator`` or ``none`` (@default)."""
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


class Operators(pulumi.ComponentResource):
    """``opts.depends_on`` (the cluster; Volcano when KubeRay uses it as batch scheduler) reaches every
    install: the manifest, the charts and, through the trainer chart, the runtimes."""

    def __init__(self, name: str, args: OperatorsArgs, opts: pulumi.ResourceOptions | None = None):
        # The gang flags are the component's input: the offline render records them (the manifests' children
        # are registered by the provider, so the simulation reads them here).
        super().__init__("ekstrain:operators:Operators", name, {"gangScheduling": dict(args.gang_args)}, opts)
        deps = dependencies(opts)
        upstream = pulumi.ResourceOptions(parent=self, depends_on=deps, transforms=[manifest_transform(args.gang_args)])
        installed: list[str] = []
        if args.mpi_operator:
            k8s.yaml.v2.ConfigFile(f"{name}-mpi-operator", file=versions.MPI_OPERATOR_MANIFEST, opts=upstream)
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
