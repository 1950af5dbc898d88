"""JupyterHub: profiles per partition, EFS homes, read-only FSx, culling, no open hub, internal NLB."""

from __future__ import annotations

import datetime as dt
import pathlib
from typing import Any

import pulumi
import pytest
from conftest import needs_upstream, run_program, stack_config, stack_sections
from support.helm import template_objects

from ekstrain.assembly import jupyterhub as hub
from ekstrain.components.jupyterhub import JupyterHub, JupyterHubArgs
from ekstrain.infra.offline import Recording
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.tooling import validation

PROD = stack_config("prod")
RELEASE = "kubernetes:helm.sh/v3:Release"


def _run(cfg: Any, secret: str | None) -> Recording:
    def program() -> pulumi.Output[str]:
        h = JupyterHub(
            "jupyterhub",
            JupyterHubArgs(
                plan=hub.plan(cfg),
                chart=cfg.versions.chart("jupyterhub"),
                client_secret=secret,
                fsx_file_system_id="fs-0abc",
                fsx_dns_name="fs-0abc.fsx.us-west-2.amazonaws.com",
                fsx_mount_name="abcdef12",
            ),
        )
        return h.release.name

    return run_program(program)


@pytest.fixture(scope="module")
def rec() -> Recording:
    return _run(PROD, "s3cret")


def test_component_children(rec: Recording) -> None:
    (comp,) = rec.of_type("ekstrain:jupyterhub:JupyterHub")
    assert sorted((c.type, c.name) for c in rec.children_of(comp.urn)) == sorted(
        [
            ("kubernetes:core/v1:Namespace", "jupyterhub-ns"),
            ("kubernetes:core/v1:PersistentVolume", "jupyterhub-fsx-pv"),
            ("kubernetes:core/v1:PersistentVolumeClaim", "jupyterhub-fsx-pvc"),
            ("kubernetes:core/v1:Secret", "jupyterhub-oauth"),
            ("kubernetes:core/v1:Secret", "jupyterhub-keys"),
            (RELEASE, "jupyterhub"),
            *(("random:index/randomPassword:RandomPassword", f"jupyterhub-{k}") for k in hub.GENERATED_SECRETS),
        ]
    )
    rel = rec.one(RELEASE, "jupyterhub")
    assert (rel.inputs["chart"], rel.inputs["version"], rel.inputs["namespace"]) == (
        "jupyterhub",
        "4.4.0",
        "jupyterhub",
    )
    assert rel.inputs["repositoryOpts"] == {"repo": "https://hub.jupyter.org/helm-chart/"}
    assert rec.one("kubernetes:core/v1:Secret", "jupyterhub-oauth").urn in rel.dependencies


def test_one_profile_per_partition_on_its_nodes(rec: Recording) -> None:
    profiles = rec.one(RELEASE, "jupyterhub").inputs["values"]["singleuser"]["profileList"]
    assert [p["slug"] for p in profiles] == ["gpu-a100", "gpu-h100", "trainium"]
    assert [p["default"] for p in profiles] == [True, False, False]
    h100 = profiles[1]["kubespawner_override"]
    assert h100["node_selector"] == {"ekstrain.io/partition": "gpu-h100"}
    assert h100["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert sorted(profiles[1]["profile_options"]["devices"]["choices"]) == ["1", "2", "4", "8"]
    eight = profiles[1]["profile_options"]["devices"]["choices"]["8"]["kubespawner_override"]
    assert eight == {
        "extra_resource_limits": {"nvidia.com/gpu": "8"},
        "extra_resource_guarantees": {"nvidia.com/gpu": "8"},
    }
    trn = profiles[2]
    assert sorted(trn["profile_options"]["devices"]["choices"]) == ["1", "16"]
    assert trn["kubespawner_override"]["cmd"][-1].endswith("exec jupyterhub-singleuser")
    assert trn["kubespawner_override"]["image"].startswith("public.ecr.aws/neuron/")


def test_storage_culling_and_load_balancer(rec: Recording) -> None:
    v = rec.one(RELEASE, "jupyterhub").inputs["values"]
    storage = v["singleuser"]["storage"]
    assert storage["dynamic"] == {"storageClass": "efs-ap", "storageAccessModes": ["ReadWriteMany"]}
    assert storage["capacity"] == "50Gi"
    assert storage["extraVolumes"] == [
        {"name": "fsx", "persistentVolumeClaim": {"claimName": "fsx-lustre", "readOnly": True}}
    ]
    assert storage["extraVolumeMounts"] == [{"name": "fsx", "mountPath": "/fsx", "readOnly": True}]
    assert v["cull"] == {"enabled": True, "timeout": 3600, "every": 300, "users": False}
    svc = v["proxy"]["service"]
    assert svc["type"] == "LoadBalancer" and svc["loadBalancerSourceRanges"] == ["10.40.0.0/16"]
    assert svc["annotations"]["service.beta.kubernetes.io/aws-load-balancer-internal"] == "true"
    pv = rec.one("kubernetes:core/v1:PersistentVolume", "jupyterhub-fsx-pv").inputs["spec"]
    assert pv["accessModes"] == ["ReadOnlyMany"] and pv["csi"]["readOnly"] is True
    assert pv["csi"]["volumeHandle"] == "fs-0abc" and pv["claimRef"] == {
        "namespace": "jupyterhub",
        "name": "fsx-lustre",
    }


def test_auth_is_github_restricted_and_secret_comes_from_env(rec: Recording) -> None:
    hub_values = rec.one(RELEASE, "jupyterhub").inputs["values"]["hub"]
    cfg = hub_values["config"]
    assert cfg["JupyterHub"] == {"authenticator_class": "github", "admin_access": False}
    assert cfg["GitHubOAuthenticator"]["allowed_organizations"] == ["example-ml"]
    assert "client_secret" not in cfg["GitHubOAuthenticator"], "the secret is never in the values"
    assert hub_values["extraEnv"]["OAUTH_CLIENT_SECRET"] == {
        "valueFrom": {"secretKeyRef": {"name": "jupyterhub-oauth", "key": "client-secret"}}
    }


def test_without_the_client_secret_the_stack_and_the_component_refuse() -> None:
    # GIVEN GitHub OAuth and no ekstrain:jupyterhubClientSecret THEN a config error with the command (the hub's
    # non-optional secretKeyRef would leave the release waiting until Helm's timeout fails the `up`)
    issues = _issues(lambda s: s.pop("jupyterhubClientSecret", None))
    assert any(i.startswith("ekstrain:jupyterhubClientSecret: the github authenticator needs") for i in issues)
    # AND the component refuses it too, naming its argument
    with pytest.raises(ValueError, match="JupyterHubArgs.client_secret"):
        _run(PROD, None)


def test_user_pods_pass_the_namespace_pod_security_level(rec: Recording) -> None:
    # GIVEN the hub's values as the program sets them, WHEN KubeSpawner's pods are built from them (the chart's
    # default would add a privileged NET_ADMIN init container) THEN the namespace's `baseline` admits each one
    from ekstrain.infra.verify import admission
    from ekstrain.infra.verify.pods import kubespawner_pods

    values = rec.one(RELEASE, "jupyterhub").inputs["values"]
    (ns,) = [r for r in rec.of_type("kubernetes:core/v1:Namespace")]
    level = ns.inputs["metadata"]["labels"][admission.ENFORCE]
    pods = kubespawner_pods(values)
    assert level == "baseline" and len(pods) >= len(PROD.partitions)
    assert [admission.violations(p, level) for p in pods] == [[] for _ in pods]
    chart_default = {**values, "singleuser": {**values["singleuser"], "cloudMetadata": {"blockWithIptables": True}}}
    assert any("privileged" in v for v in admission.violations(kubespawner_pods(chart_default)[0], level))


@needs_upstream
def test_values_keys_and_manifests_validate(rec: Recording) -> None:
    values = rec.one(RELEASE, "jupyterhub").inputs["values"]
    assert validation.unknown_value_keys(values, validation.chart_defaults("jupyterhub")) == []
    assert validation.unknown_value_keys({"hubb": {}}, validation.chart_defaults("jupyterhub")) == ["hubb"]
    for r in rec.records:
        if r.custom and r.type.startswith("kubernetes:core"):
            assert validation.validate_object({k: v for k, v in r.inputs.items() if k != "id"}, "1.35") == [], r.name


@needs_upstream
def test_chart_accepts_the_values_and_renders_valid_objects(rec: Recording, tmp_path: pathlib.Path) -> None:
    # helm checks the values against the chart's values.schema.json, then renders
    objs = template_objects(
        rec.one(RELEASE, "jupyterhub").inputs["values"], "jupyterhub-4.4.0.tgz", "jupyterhub", "jupyterhub", tmp_path
    )
    for o in objs:
        assert validation.validate_object(o, "1.35") == [], (o["kind"], o["metadata"]["name"])
    (proxy,) = [o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == "proxy-public"]
    assert proxy["spec"]["type"] == "LoadBalancer"


def _issues(change: Any, env: str = "prod") -> list[str]:
    sections = stack_sections("prod")
    sections["environment"] = env
    change(sections)
    with pytest.raises(ConfigError) as caught:
        parse(sections, "Pulumi.prod.yaml", today=dt.date(2026, 12, 3))
    return [f"{i.key}: {i.problem}" for i in caught.value.issues]


def test_no_open_hub() -> None:
    # GIVEN the dummy authenticator in prod THEN refused
    assert any(
        i.startswith("ekstrain:jupyterhub.auth.type: the dummy authenticator")
        for i in _issues(lambda s: s["jupyterhub"]["auth"].update(type="dummy"))
    )
    # GIVEN nobody listed THEN refused (the hub would let every GitHub account in)
    assert any(
        i.startswith("ekstrain:jupyterhub.auth.allowedUsers: nobody is listed")
        for i in _issues(lambda s: s["jupyterhub"]["auth"].update(allowedOrganizations=[], adminUsers=[]))
    )
    # GIVEN 0.0.0.0/0 THEN refused
    assert any(
        i.startswith("ekstrain:jupyterhub.allowedCidrs: 0.0.0.0/0")
        for i in _issues(lambda s: s["jupyterhub"].update(allowedCidrs=["0.0.0.0/0"]))
    )
    # GIVEN dummy outside prod without a password THEN refused
    assert "ekstrain:jupyterhubClientSecret: the dummy authenticator needs a password" in _issues(
        lambda s: (s["jupyterhub"]["auth"].update(type="dummy"), s.pop("jupyterhubClientSecret")), env="dev"
    )
    assert any(
        i.startswith("ekstrain:jupyterhub.profiles: ['gpu-b200'] are not partitions")
        for i in _issues(lambda s: s["jupyterhub"].update(profiles=["gpu-b200"]))
    )


def test_dummy_outside_prod_passes_the_password_in_hub_config() -> None:
    sections = stack_sections("prod")
    sections.update(environment="dev", jupyterhubClientSecret="pw")
    sections["jupyterhub"]["auth"].update(type="dummy", allowedUsers=["alice"], allowedOrganizations=[])
    cfg, _ = parse(sections, "Pulumi.dev.yaml", today=dt.date(2026, 12, 3))
    values = hub.chart_values(cfg, "pw")
    assert values["hub"]["config"]["DummyAuthenticator"] == {"password": "pw"}
    assert values["hub"]["config"]["Authenticator"]["allowed_users"] == ["alice"]
    assert "extraEnv" not in values["hub"]
