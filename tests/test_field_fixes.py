"""Defects found in the field (each test fails on the code before its fix).

GIVEN the prod stack rendered offline (mock engine) and the job templates
WHEN a platform engineer would deploy and run it
THEN system nodes keep pods away from the node role (IMDS hop limit 1), images are pinned, GPU
Trainer runtimes can use EFA, and no worker env overrides where the image keeps aws-ofi-nccl.
"""

from __future__ import annotations

from typing import Any

from conftest import stack_config
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import env as envtable
from ekstrain.assembly.jobs import nccl, render
from ekstrain.assembly.schedulers import operators
from ekstrain.facts import versions
from ekstrain.infra.offline import Recording

PROD = stack_config("prod")


def _images(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "image" and isinstance(v, str):
                out.append(v)
            else:
                out += _images(v)
    elif isinstance(node, list):
        for v in node:
            out += _images(v)
    return out


def test_system_launch_template_keeps_pods_off_imds(prod_recording: Recording) -> None:
    lt = prod_recording.one("aws:ec2/launchTemplate:LaunchTemplate", "cluster-system")
    assert lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1  # Slurm login pods run here
    karpenter = next(
        r for r in prod_recording.of_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter"
    )
    assert {"name": "AWS_REGION", "value": "us-west-2"} in karpenter.inputs["values"]["controller"]["env"]


def test_no_platform_image_floats(prod_recording: Recording) -> None:
    images = [i for r in prod_recording.records for i in _images(r.inputs)]
    images += _images(nccl.render(PROD, "gpu-h100")) + _images(nccl.render(PROD, "trainium"))
    images += [versions.NCCL_TESTS_IMAGE, versions.GPU_TRAINING_IMAGE, versions.NEURON_TRAINING_IMAGE]
    assert images
    for image in images:
        tag = image.rsplit("/", 1)[-1]
        assert ":" in tag or "@sha256:" in image, image
        assert not tag.endswith(":latest"), image


def test_gpu_trainer_runtime_uses_an_efa_image_and_the_env_table() -> None:
    for runtime in operators.torch_runtimes(PROD):
        (c,) = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
            "containers"
        ]
        env = {e["name"]: e["value"] for e in c["env"]}
        assert "pytorch/pytorch" not in c["image"] and "-runtime" not in c["image"], c["image"]
        assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1"
        if runtime["metadata"]["labels"]["ekstrain.io/partition"].startswith("gpu"):
            assert c["image"] == versions.GPU_TRAINING_IMAGE and env["NCCL_SOCKET_IFNAME"].startswith("^lo")


def test_worker_env_leaves_library_paths_to_the_image() -> None:
    for partition, scheduler in (("gpu-h100", "volcano"), ("trainium", "trainium")):
        objects = render(spec_for(partition), PROD, scheduler, FakePlanner())
        names = {e["name"] for o in objects for e in _envs(o)}
        assert names and not names & envtable.IMAGE_OWNED_ENV, names & envtable.IMAGE_OWNED_ENV


def _envs(node: Any) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "env" and isinstance(v, list):
                out += v
            else:
                out += _envs(v)
    elif isinstance(node, list):
        for v in node:
            out += _envs(v)
    return out


def test_deploy_runner_reaches_the_private_endpoint(prod_recording: Recording) -> None:
    rules = [
        r
        for r in prod_recording.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.name.startswith("cluster-deploy-")
    ]
    assert [(r.inputs["cidrIpv4"], r.inputs["fromPort"], r.inputs["toPort"]) for r in rules] == [
        ("10.40.0.0/16", 443, 443)
    ]
    cluster = prod_recording.one("eks:index:Cluster", "cluster")
    assert rules[0].inputs["securityGroupId"] == cluster.outputs["clusterSecurityGroupId"]
    provider = prod_recording.one("pulumi:providers:kubernetes", "cluster-k8s")
    assert rules[0].urn in provider.dependencies  # no Kubernetes call before the runner may connect


def test_private_endpoint_without_deploy_access_and_documentation_cidrs_are_refused() -> None:
    import pytest
    from conftest import cfg_with

    from ekstrain.stacks.errors import ConfigError

    with pytest.raises(ConfigError, match="ekstrain:cluster.deployCidrs"):
        cfg_with(lambda s: s["cluster"].pop("deployCidrs"))
    with pytest.raises(ConfigError, match="documentation ranges"):
        cfg_with(
            lambda s: s["cluster"].update(endpointPublicAccess=True, publicAccessCidrs=["203.0.113.0/24"]), stack="dev"
        )
    sg = cfg_with(lambda s: s["cluster"].update(deployCidrs=[], deploySecurityGroupIds=["sg-0123456789abcdef0"]))
    assert sg.cluster.deploy_security_group_ids == ["sg-0123456789abcdef0"]


def test_prod_login_keys_come_from_the_key_file(tmp_path: Any) -> None:
    import pytest
    from conftest import cfg_with

    from ekstrain.assembly.schedulers import slurm
    from ekstrain.stacks import rules, slurm_login
    from ekstrain.stacks.errors import ConfigError

    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAABAgMEBQYHCAkKCwwNDg8QERITFBUWFxgZGhscHR4f ops@example"
    (tmp_path / "login.pub").write_text(f"# team keys\n\n{key}\n")
    with pytest.MonkeyPatch.context() as mp:  # key files are read only inside the project directory
        mp.setattr(slurm_login, "PROJECT_DIR", tmp_path)
        cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(loginSsh=True, loginSshAuthorizedKeysFile="login.pub"))
        assert slurm.slurm_values(cfg)["loginsets"]["main"]["rootSshAuthorizedKeys"] == key
    # prod keeps SSH off until a key is in security/slurm-login.pub; with SSH on and the file empty, the render warns.
    assert not PROD.schedulers.slurm.login_ssh
    assert (slurm_login.project_root() / "security" / "slurm-login.pub").is_file()
    ssh = cfg_with(
        lambda s: s["schedulers"]["slurm"].update(loginSsh=True, loginSshAuthorizedKeysFile="security/slurm-login.pub")
    )
    _, warnings = rules.check(ssh)
    assert any("loginSshAuthorizedKeys: the login node has no SSH key" in w for w in warnings)  # file still empty
    with pytest.raises(ConfigError, match="loginSshAuthorizedKeysFile"):
        cfg_with(
            lambda s: s["schedulers"]["slurm"].update(loginSsh=True, loginSshAuthorizedKeysFile="security/missing.pub")
        )


def test_ami_alias_age_warns_at_the_configured_cadence() -> None:
    import datetime as dt

    from conftest import cfg_with

    from ekstrain.stacks import rules

    def ami(w: list[str]) -> list[str]:
        return [x for x in w if x.startswith("ekstrain:versions.amiAliasVersion")]

    today = dt.date(2026, 12, 3)
    pinned = PROD.versions.ami_alias_version
    released = versions.ami_release_date(pinned)
    assert released is not None, "prod pins an AMI release"
    age = (today - released).days
    stale = cfg_with(lambda s: s["versions"].update(amiAliasMaxAgeDays=age - 1))
    (warning,) = ami(rules.check(stale, today)[1])
    assert f"{age} days old, over amiAliasMaxAgeDays {age - 1}" in warning and "docs/runbook-ami.md" in warning
    relaxed = cfg_with(lambda s: s["versions"].update(amiAliasMaxAgeDays=age))
    assert ami(rules.check(relaxed, today)[1]) == []
    assert ami(rules.check(stack_config("dev"), today)[1]) == []  # latest: nothing to age
    assert versions.ami_release_date("v20251120") == dt.date(2025, 11, 20)
    assert versions.ami_release_date("latest") is None
