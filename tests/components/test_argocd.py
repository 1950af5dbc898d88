"""Argo CD delivery: the chart, the ekstrain AppProject, and one Application per platform Helm
release, valid against the pinned Argo CD CRDs and identical in chart/version/values to the release."""

from __future__ import annotations

import pathlib

import pulumi
import pytest
from conftest import needs_upstream, run_program, stack_config
from support.helm import template_objects

from ekstrain.components.argocd import ArgoCd, ArgoCdArgs
from ekstrain.facts import versions
from ekstrain.infra import render
from ekstrain.infra.offline import Recording
from ekstrain.payloads import argocd
from ekstrain.tooling import validation

PROD = stack_config("prod")
RELEASE = "kubernetes:helm.sh/v3:Release"
PLATFORM = [PROD.versions.chart(n) for n in versions.DEFAULT_CHARTS if n != "argo-cd"]


@pytest.fixture(scope="module")
def rec() -> Recording:
    def program() -> pulumi.Output[str]:
        a = ArgoCd("argocd", ArgoCdArgs(chart=PROD.versions.chart("argo-cd"), platform_charts=PLATFORM))
        return a.release.name

    return run_program(program)


def test_component_installs_the_chart_then_the_project(rec: Recording) -> None:
    (comp,) = rec.of_type("ekstrain:delivery:ArgoCd")
    assert sorted((c.type, c.name) for c in rec.children_of(comp.urn)) == [
        ("kubernetes:argoproj.io/v1alpha1:AppProject", "argocd-project"),
        (RELEASE, "argocd"),
    ]
    rel = rec.one(RELEASE, "argocd")
    assert (rel.inputs["name"], rel.inputs["chart"], rel.inputs["version"], rel.inputs["namespace"]) == (
        "argo-cd",
        "argo-cd",
        "10.1.1",
        "argocd",
    )
    assert rel.inputs["repositoryOpts"] == {"repo": "https://argoproj.github.io/argo-helm"}
    project = rec.one("kubernetes:argoproj.io/v1alpha1:AppProject", "argocd-project")
    assert rel.urn in project.dependencies
    assert "ghcr.io/slinkyproject/charts" in project.inputs["spec"]["sourceRepos"]
    assert "https://prometheus-community.github.io/helm-charts" in project.inputs["spec"]["sourceRepos"]


def test_oci_registries_become_helm_oci_repositories(rec: Recording) -> None:
    repos = rec.one(RELEASE, "argocd").inputs["values"]["configs"]["repositories"]
    assert repos["ghcr-io-slinkyproject-charts"] == {
        "url": "ghcr.io/slinkyproject/charts",
        "name": "ghcr-io-slinkyproject-charts",
        "type": "helm",
        "enableOCI": "true",
    }
    assert sorted(r["url"] for r in repos.values()) == [
        "ghcr.io/kubeflow/charts",
        "ghcr.io/slinkyproject/charts",
        "public.ecr.aws/karpenter",
        "public.ecr.aws/neuron",
        "quay.io/jetstack/charts",
    ]


def test_every_prod_release_gets_an_application_that_matches_it(prod_recording: Recording) -> None:
    releases = [rel for _, rel in render.helm_releases(prod_recording)]
    apps = {a["metadata"]["name"]: a for a in argocd.applications(releases)}
    assert sorted(apps) == sorted(r["name"] for r in releases if r["name"] != "argo-cd")
    project = argocd.app_project(argocd.chart_repo(c.chart, c.repo) for c in PLATFORM)
    for rel in releases:
        if rel["name"] == "argo-cd":
            continue
        app = apps[rel["name"]]
        src = app["spec"]["source"]
        assert src["targetRevision"] == rel["version"] and src["helm"]["releaseName"] == rel["name"]
        assert src["helm"].get("valuesObject") == (rel.get("values") or None)
        assert app["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": rel["namespace"]}
        assert src["repoURL"] in project["spec"]["sourceRepos"], rel["name"]
        assert "automated" not in app["spec"]["syncPolicy"], "Pulumi delivers the release too: manual sync only"
    slurm = apps["slurm"]["spec"]["source"]
    assert (slurm["repoURL"], slurm["chart"]) == ("ghcr.io/slinkyproject/charts", "slurm")
    assert apps["karpenter"]["spec"]["source"]["helm"]["skipCrds"] is True


@needs_upstream
def test_applications_and_project_validate_against_the_argo_cd_crds(prod_recording: Recording, rec: Recording) -> None:
    for app in argocd.applications(rel for _, rel in render.helm_releases(prod_recording)):
        assert validation.validate_object(app, "1.35") == [], app["metadata"]["name"]
    project = rec.one("kubernetes:argoproj.io/v1alpha1:AppProject", "argocd-project").inputs
    assert validation.validate_object({k: v for k, v in project.items() if k != "id"}, "1.35") == []
    bad = argocd.application({"name": "x", "chart": "c", "version": "1", "namespace": "n"})
    bad["spec"]["source"]["helm"]["releaseNmae"] = "typo"
    assert validation.validate_object(bad, "1.35") != []


@needs_upstream
def test_values_use_only_chart_keys(rec: Recording) -> None:
    values = rec.one(RELEASE, "argocd").inputs["values"]
    assert validation.unknown_value_keys(values, validation.chart_defaults("argo-cd")) == []


@needs_upstream
def test_chart_renders_one_repository_secret_per_registry(rec: Recording, tmp_path: pathlib.Path) -> None:
    objs = template_objects(
        rec.one(RELEASE, "argocd").inputs["values"], "argo-cd-10.1.1.tgz", "argo-cd", "argocd", tmp_path
    )
    for o in objs:
        if o["kind"] != "CustomResourceDefinition":
            assert validation.validate_object(o, "1.35") == [], (o["kind"], o["metadata"]["name"])
    repo_secrets = [
        o
        for o in objs
        if o["kind"] == "Secret"
        and o["metadata"].get("labels", {}).get("argocd.argoproj.io/secret-type") == "repository"
    ]
    assert len(repo_secrets) == 5
    assert not [o for o in objs if o["kind"] == "Deployment" and "dex" in o["metadata"]["name"]]
