"""infra/verify/images.py: every container image has an explicit version, Docker Official Images come from their
Amazon ECR Public mirror, pinned tags are not re-pulled, and SUMMARY.md lists every image with its registry."""

from __future__ import annotations

from typing import Any

import pytest

from ekstrain.infra.verify import images


def _deployment(image: str, policy: str | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": image}
    if policy:
        container["imagePullPolicy"] = policy
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "app", "namespace": "ns"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        ("mpioperator/mpi-operator:0.8.0", "docker.io"),
        ("mariadb:11.4", "docker.io"),
        ("public.ecr.aws/docker/library/mariadb:11.4", "public.ecr.aws"),
        ("localhost:5000/x:1", "localhost:5000"),
        ("602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/p:v1", "602401143452.dkr.ecr.us-west-2.amazonaws.com"),
    ],
)
def test_the_registry_of_an_image_reference(image: str, registry: str) -> None:
    assert images.registry(image) == registry


def test_a_pinned_image_from_a_rate_limit_free_registry_passes() -> None:
    assert images.check([_deployment("public.ecr.aws/docker/library/mariadb:11.4", "IfNotPresent")]).problems == []
    assert images.check([_deployment("public.ecr.aws/karpenter/controller:1.14.1@sha256:" + "a" * 64)]).problems == []


@pytest.mark.parametrize(
    ("image", "policy", "expected"),
    [
        (
            "docker.io/library/mariadb:11.4",
            "IfNotPresent",
            "use its Amazon ECR Public mirror public.ecr.aws/docker/library/mariadb:11.4",
        ),
        ("alpine:3.22", None, "public.ecr.aws/docker/library/alpine:3.22"),
        ("quay.io/x/y", None, "no explicit version (tag absent: latest)"),
        ("quay.io/x/y:latest", None, "no explicit version (tag latest)"),
        ("quay.io/x/y:1.0", "Always", "imagePullPolicy Always on a pinned version"),
    ],
)
def test_each_seeded_defect_is_refused_naming_the_object_and_the_fix(
    image: str, policy: str | None, expected: str
) -> None:
    (problem,) = images.check([_deployment(image, policy)]).problems
    assert problem.startswith("Deployment/ns/app container template.spec.containers.app: ")
    assert expected in problem


def test_slinky_cr_containers_are_read_and_listed() -> None:
    controller = {
        "apiVersion": "slinky.slurm.net/v1beta1",
        "kind": "Controller",
        "metadata": {"name": "slurm", "namespace": "slurm"},
        "spec": {"slurmctld": {"image": "ghcr.io/slinkyproject/slurmctld:26.05"}, "logfile": {"image": "alpine:3.22"}},
    }
    check = images.check([controller])
    assert check.checked == 2
    assert [p.split(":")[0] for p in check.problems] == ["Controller/slurm/slurm container logfile"]
    assert [(r["registry"], r["image"]) for r in check.rows] == [
        ("docker.io", "alpine:3.22"),
        ("ghcr.io", "ghcr.io/slinkyproject/slurmctld:26.05"),
    ]
