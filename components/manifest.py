"""The one manifest-to-resource adapter: a rendered Kubernetes object (a plain dict from ``ekstrain`` or
``assembly``) becomes its typed ``pulumi_kubernetes`` resource, or a ``CustomResource`` for other kinds.

The whole ``metadata`` (labels, annotations, finalizers, ...) and every other top-level field go to the
engine as they are, so what the builders' tests check is what is applied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

BUILTINS: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", "LimitRange"): k8s.core.v1.LimitRange,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("batch/v1", "CronJob"): k8s.batch.v1.CronJob,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
}
"""Built-in kinds get their typed class (schema-checked inputs, the provider's await logic)."""


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource(
    resource_name: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
) -> pulumi.CustomResource:
    body = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    metadata = dict(manifest["metadata"])
    typed = BUILTINS.get((manifest["apiVersion"], manifest["kind"]))
    if typed is not None:
        # Typed classes take the top-level fields as snake_case arguments (stringData -> string_data).
        res: pulumi.CustomResource = typed(
            resource_name, metadata=metadata, opts=opts, **{_snake(k): v for k, v in body.items()}
        )
        return res
    if "/" not in manifest["apiVersion"]:
        # The core group as a CustomResource gets the token kubernetes:v1:<Kind>, which the provider does not
        # have (its core kinds are kubernetes:core/v1:<Kind>).
        raise ValueError(
            f"{resource_name}: {manifest['apiVersion']} {manifest['kind']} is a built-in kind: add its typed class "
            "to components/manifest.py BUILTINS"
        )
    return k8s.apiextensions.CustomResource(
        resource_name, api_version=manifest["apiVersion"], kind=manifest["kind"], metadata=metadata, opts=opts, **body
    )
