"""Slinky: partition -> NodeSet -> Slurm partition for prod; login NLB; accounting; release order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from conftest import cfg_with, needs_upstream, releases, run_program, run_stack, stack_config

from ekstrain.assembly.schedulers import slurm
from ekstrain.components.slurm import Slurm, SlurmArgs
from ekstrain.facts.versions import DEFAULT_CHARTS
from ekstrain.infra.offline import Recording
from ekstrain.infra.verify import chart_values
from ekstrain.layout import topology
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.models import StackConfig
from ekstrain.tooling import validation

RELEASE = "kubernetes:helm.sh/v3:Release"


# GIVEN prod's three partitions, THEN each becomes a NodeSet of whole nodes and a Slurm partition.
# cpu/memory: Karpenter allocatable (vCPU - kube-reserved; RAM - 7.5 % - 11 MiB x pods - 355 MiB) - 2 vCPU/8 GiB
# DaemonSet reserve - the logfile sidecar, e.g. p4d: 96 - 0.335 - 2.1 -> 93; 1152 GiB -> 1049 GiB.
EXPECTED = {
    "gpu-a100": (
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 4, "cpu": "93", "memory": "1049Gi"},
        "nvidia.com/gpu",
        "gpu:8",
        "16",
    ),
    "gpu-h100": (
        {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32, "cpu": "189", "memory": "1884Gi"},
        "nvidia.com/gpu",
        "gpu:8",
        "8",
    ),
    "trainium": (
        {"aws.amazon.com/neuron": 16, "vpc.amazonaws.com/efa": 8, "cpu": "125", "memory": "462Gi"},
        "aws.amazon.com/neuron",
        "neuron:16",
        "32",
    ),
}


@pytest.mark.parametrize("part", sorted(EXPECTED))
def test_prod_partition_becomes_nodeset_and_slurm_partition(part: str) -> None:
    resources, taint, gres, max_nodes = EXPECTED[part]
    ns = slurm.slurm_values(stack_config("prod"))["nodesets"][part]
    # The partition label: every NodePool of a mixed-layout partition (trainium-trn1, -trn1n) sets it.
    # (kubernetes.io/os: linux is the chart's own selector)
    assert ns["podSpec"]["nodeSelector"] == {"ekstrain.io/partition": part}
    assert ns["podSpec"]["tolerations"] == [
        {"key": taint, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert ns["slurmd"]["resources"] == {"requests": resources, "limits": resources}
    assert ns["extraConfMap"]["Gres"] == [gres]
    assert ns["partition"]["enabled"] is True
    assert ns["partition"]["configMap"]["MaxNodes"] == max_nodes
    assert ns["partition"]["configMap"]["OverSubscribe"] == "EXCLUSIVE"
    assert ns["slurmd"]["volumeMounts"] == [
        {"name": "shared", "mountPath": "/shared"},
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "job-logs", "mountPath": "/var/log/ekstrain-slurm"},  # sbatch output the log agent tails
    ]
    shm = f"{int(int(resources['memory'][:-2]) / 8)}Gi"  # memory-backed, not the runtime's 64 MiB
    assert ns["podSpec"]["volumes"] == [
        {"name": "shared", "persistentVolumeClaim": {"claimName": "fsx-lustre"}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm}},
        {"name": "job-logs", "hostPath": {"path": "/var/log/ekstrain-slurm", "type": "DirectoryOrCreate"}},
    ]
    assert ns["slurmd"]["image"]["repository"] == "ghcr.io/slinkyproject/slurmd-pyxis"  # srun --container-image
    assert ns["logfile"]["resources"]["requests"] == ns["logfile"]["resources"]["limits"]  # Guaranteed QoS


def test_exactly_one_default_partition_and_gres_types() -> None:
    values = slurm.slurm_values(stack_config("prod"))
    assert list(values["nodesets"]) == ["gpu-a100", "gpu-h100", "trainium"]
    defaults = [n for n, v in values["nodesets"].items() if v["partition"]["configMap"]["Default"] == "YES"]
    assert defaults == ["gpu-a100"]
    assert values["controller"]["extraConfMap"]["GresTypes"] == ["gpu", "neuron"]
    assert values["configFiles"] == {
        "gres.conf": "AutoDetect=nvidia\n",
        "plugstack.conf": "include /usr/share/pyxis/*\n",
        "topology.conf": topology.slurm_topology_conf({"gpu-a100": 16, "gpu-h100": 8, "trainium": 32}),
    }
    assert "partitions" not in values, "the chart's own partitions map stays at its default"


def test_shared_mount_path_is_configurable() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(sharedMountPath="/lustre"))
    values = slurm.slurm_values(cfg)
    assert {v["slurmd"]["volumeMounts"][0]["mountPath"] for v in values["nodesets"].values()} == {"/lustre"}
    assert values["loginsets"][slurm.LOGINSET]["login"]["volumeMounts"][0]["mountPath"] == "/lustre"


def test_replicas_default_to_min_nodes_and_can_be_overridden() -> None:
    def replicas(cfg: StackConfig) -> dict[str, int]:
        return {n: v["replicas"] for n, v in slurm.slurm_values(cfg)["nodesets"].items()}

    # prod keeps no standing slurmd node (4 on gpu-a100 idled ~1,150 A100-hours of the 48-hour mix)
    assert replicas(stack_config("prod")) == {"gpu-a100": 0, "gpu-h100": 0, "trainium": 0}
    unset = cfg_with(lambda s: s["schedulers"]["slurm"].pop("nodesetReplicas"))
    assert replicas(unset) == {"gpu-a100": 0, "gpu-h100": 0, "trainium": 0}  # minNodes
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(nodesetReplicas={"gpu-h100": 2}))
    assert replicas(cfg) == {"gpu-a100": 0, "gpu-h100": 2, "trainium": 0}


@pytest.mark.parametrize(
    "replicas, key",
    [
        ({"gpu-h100": 9}, "ekstrain:schedulers.slurm.nodesetReplicas.gpu-h100"),
        ({"nope": 1}, "ekstrain:schedulers.slurm.nodesetReplicas.nope"),
    ],
)
def test_bad_replicas_are_rejected_naming_the_key(replicas: dict[str, int], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        cfg_with(lambda s: s["schedulers"]["slurm"].update(nodesetReplicas=replicas))
    assert [i.key for i in caught.value.issues] == [key]


def ssh_on(**settings: Any) -> Callable[[dict[str, Any]], None]:
    """prod's Slurm with the login node's SSH endpoint on (the seed has it off)."""
    return lambda s: s["schedulers"]["slurm"].update(loginSsh=True, **settings)


def test_login_open_to_the_world_is_rejected() -> None:
    with pytest.raises(ConfigError) as caught:
        cfg_with(ssh_on(loginAllowedCidrs=["0.0.0.0/0"]))
    assert [i.key for i in caught.value.issues] == ["ekstrain:schedulers.slurm.loginAllowedCidrs"]


def test_login_is_an_internal_nlb_restricted_to_allowed_cidrs() -> None:
    login = slurm.slurm_values(cfg_with(ssh_on(loginAllowedCidrs=["10.40.0.0/16"])))["loginsets"][slurm.LOGINSET]
    assert login["service"]["metadata"]["annotations"] == {
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
        "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
    }
    # type: LoadBalancer is the chart's default for a LoginSet Service.
    assert login["service"]["spec"] == {"loadBalancerSourceRanges": ["10.40.0.0/16"]}
    cfg = cfg_with(ssh_on(loginAllowedCidrs=["10.1.0.0/24", "10.2.0.0/24"]))
    assert slurm.login_source_ranges(cfg) == ["10.1.0.0/24", "10.2.0.0/24"]


def test_login_defaults_to_the_vpc_cidr() -> None:
    cfg = cfg_with(ssh_on())
    assert slurm.slurm_values(cfg)["loginsets"][slurm.LOGINSET]["service"]["spec"]["loadBalancerSourceRanges"] == [
        "10.40.0.0/16"
    ]


def test_prod_seed_has_no_ssh_endpoint_and_ssh_settings_without_it_are_refused() -> None:
    """GIVEN loginSsh: false (the prod seed) THEN the login Service is ClusterIP (no NLB, kubectl exec only),
    and SSH keys, a key file or allowed CIDRs, which would change nothing, are refused naming the key."""
    login = slurm.slurm_values(stack_config("prod"))["loginsets"][slurm.LOGINSET]
    assert login["service"] == {"spec": {"type": "ClusterIP"}} and "rootSshAuthorizedKeys" not in login
    for key, value in (
        ("loginAllowedCidrs", ["10.40.0.0/16"]),
        ("loginSshAuthorizedKeysFile", "security/slurm-login.pub"),
    ):
        with pytest.raises(ConfigError) as caught:
            cfg_with(lambda s, key=key, value=value: s["schedulers"]["slurm"].update({key: value}))
        [issue] = caught.value.issues
        assert issue.key == f"ekstrain:schedulers.slurm.{key}" and "loginSsh: true" in issue.fix


def test_controllers_run_on_system_nodes() -> None:
    values = slurm.slurm_values(stack_config("prod"))
    for part in ("controller", "restapi", "accounting"):
        terms = values[part]["podSpec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert terms == [
            {"matchExpressions": [{"key": "ekstrain.io/node-role", "operator": "In", "values": ["system"]}]}
        ]
    op = slurm.operator_values(stack_config("prod"))
    assert op["operator"]["nodeSelector"] == op["webhook"]["nodeSelector"] == {"ekstrain.io/node-role": "system"}


def test_accounting_points_at_the_mariadb_secret() -> None:
    acct = slurm.slurm_values(stack_config("prod"))["accounting"]
    assert acct["enabled"] is True
    assert acct["storageConfig"] == {
        "host": "mariadb",
        "port": 3306,
        "database": "slurm_acct_db",
        "username": "slurm",
        "passwordKeyRef": {"name": "mariadb-password", "key": "password"},
    }


@needs_upstream
@pytest.mark.parametrize(
    "change", [lambda s: None, lambda s: s["schedulers"]["slurm"].update(accounting=False, certManager=False)]
)
def test_values_use_only_chart_keys(change: Callable[[dict[str, Any]], None]) -> None:
    cfg = cfg_with(change)
    values = slurm.slurm_values(cfg)
    assert validation.unknown_value_keys(values, validation.chart_defaults("slurm")) == []
    assert chart_values.value_problems("slurm", values, "1.34") == []
    assert validation.unknown_value_keys(slurm.operator_values(cfg), validation.chart_defaults("slurm-operator")) == []


@needs_upstream
def test_strict_check_catches_typos_inside_nodesets() -> None:
    values = slurm.slurm_values(stack_config("prod"))
    values["nodesets"]["gpu-h100"]["replica"] = 1
    values["nodesets"]["gpu-h100"]["podSpec"]["tolerations"][0]["efect"] = "NoSchedule"
    problems = chart_values.value_problems("slurm", values, "1.34")
    assert problems[0] == "unknown key nodesets.gpu-h100.replica"
    assert len(problems) == 2 and "efect" in problems[1]


def test_cert_manager_values_use_documented_keys() -> None:
    def paths(d: dict[str, Any], prefix: str = "") -> set[str]:
        out = set()
        for k, v in d.items():
            here = f"{prefix}{k}"
            if isinstance(v, dict) and k not in ("nodeSelector", "resources"):
                out |= paths(v, here + ".")
            else:
                out.add(here)
        return out

    assert paths(slurm.cert_manager_values()) == slurm.CERT_MANAGER_KEYS


# ---- the recorded program -------------------------------------------------------------------------


def test_prod_releases_install_in_order(prod_recording: Recording) -> None:
    rel = releases(prod_recording)
    assert {
        n: (r.inputs["namespace"], r.inputs["version"])
        for n, r in rel.items()
        if n in ("cert-manager", "slurm-operator-crds", "slurm-operator", "slurm")
    } == {
        "cert-manager": ("cert-manager", "v1.19.1"),
        "slurm-operator-crds": ("slinky", "1.2.1"),
        "slurm-operator": ("slinky", "1.2.1"),
        "slurm": ("slurm", "1.2.1"),
    }
    assert rel["cert-manager"].inputs["values"]["crds"] == {"enabled": True}
    # Each waits for the cluster (its node group runs the pods Helm's wait needs), then for the previous step.
    own = lambda r: {d for d in r.dependencies if "ekstrain:slurm:Slurm" in d}  # noqa: E731
    (node_group,) = prod_recording.of_type("eks:index:ManagedNodeGroup")
    assert all(node_group.urn in rel[n].dependencies for n in ("cert-manager", "slurm-operator-crds", "slurm-operator"))
    assert own(rel["slurm-operator-crds"]) == {rel["cert-manager"].urn}
    assert own(rel["slurm-operator"]) == {rel["slurm-operator-crds"].urn, rel["cert-manager"].urn}
    assert rel["slurm-operator"].inputs["values"]["certManager"] == {"enabled": True}
    slurm_deps = set(rel["slurm"].dependencies)
    assert rel["slurm-operator"].urn in slurm_deps
    by_urn = {r.urn: r for r in prod_recording.records}
    assert {by_urn[u].type for u in slurm_deps} >= {
        "kubernetes:core/v1:Namespace",
        "kubernetes:core/v1:Secret",
        "kubernetes:apps/v1:StatefulSet",
        "kubernetes:core/v1:Service",
    }
    assert rel["slurm"].inputs["chart"] == DEFAULT_CHARTS["slurm"].chart
    assert rel["slurm"].inputs["values"]["nodesets"]["gpu-h100"]["slurmd"]["resources"]["limits"] == {
        "nvidia.com/gpu": 8,
        "vpc.amazonaws.com/efa": 32,
        "cpu": "189",
        "memory": "1884Gi",
    }


def test_no_cert_manager_uses_the_documented_install() -> None:
    rec = run_stack(cfg_with(lambda s: s["schedulers"]["slurm"].update(certManager=False)))
    rel = releases(rec)
    assert "cert-manager" not in rel
    assert rel["slurm-operator"].inputs["values"]["certManager"] == {"enabled": False}
    assert not [d for d in rel["slurm-operator-crds"].dependencies if "ekstrain:slurm:Slurm" in d]


def test_mariadb_password_is_a_random_password_kept_secret(prod_recording: Recording) -> None:
    pw = prod_recording.one("random:index/randomPassword:RandomPassword", "slurm-db-password")
    root = prod_recording.one("random:index/randomPassword:RandomPassword", "slurm-db-root-password")
    assert pw.inputs["length"] == 32 and pw.inputs["overrideSpecial"] == "-_."
    secret = prod_recording.one("kubernetes:core/v1:Secret", "slurm-db-secret")
    assert secret.inputs["metadata"] == {
        "name": "mariadb-password",
        "namespace": "slurm",
        "labels": slurm.mariadb_labels(),
    }
    assert secret.inputs["stringData"] == {"password": pw.outputs["result"], "root-password": root.outputs["result"]}
    assert prod_recording.outputs["slurmAccountingPassword"] == pw.outputs["result"]


def _component(**kw: Any) -> Callable[[], Any]:
    cfg = stack_config("prod")

    def program() -> Any:
        comp = Slurm(
            "slurm",
            SlurmArgs(
                crds_chart=DEFAULT_CHARTS["slurm-operator-crds"],
                operator_chart=DEFAULT_CHARTS["slurm-operator"],
                slurm_chart=DEFAULT_CHARTS["slurm"],
                operator_values=slurm.operator_values(cfg),
                slurm_values=slurm.slurm_values(cfg),
                **kw,
            ),
        )
        return {"secret": comp.accounting_password.is_secret() if comp.accounting_password else False}

    return program


def test_accounting_password_output_is_secret() -> None:
    def program() -> Any:
        return pulumi.Output.from_input(_component()()["secret"])

    rec = run_program(program)
    assert rec.outputs is True


def test_fsx_pv_and_pvc_in_the_slurm_namespace_when_storage_is_wired() -> None:
    rec = run_program(
        _component(
            fsx_file_system_id="fs-0123456789abcdef0",
            fsx_dns_name="fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com",
            fsx_mount_name="abcdefgh",
            fsx_capacity_gib=4800,
        )
    )
    pv = rec.one("kubernetes:core/v1:PersistentVolume", "slurm-fsx-pv")
    pvc = rec.one("kubernetes:core/v1:PersistentVolumeClaim", "slurm-fsx-pvc")
    assert pv.inputs["spec"]["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "volumeAttributes": {"dnsname": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com", "mountname": "abcdefgh"},
    }
    assert pv.inputs["spec"]["claimRef"] == {"namespace": "slurm", "name": "fsx-lustre"}
    assert pvc.inputs["metadata"] == {"name": "fsx-lustre", "namespace": "slurm"}
    assert pvc.inputs["spec"]["volumeName"] == pv.inputs["metadata"]["name"]
    assert pvc.urn in releases(rec)["slurm"].dependencies
    if validation.upstream_dir() is not None:
        for r in (pv, pvc):
            obj = {"apiVersion": "v1", "kind": r.type.rsplit(":", 1)[1], **r.inputs}
            assert validation.validate_object(obj, "1.34") == []


def test_prod_slurm_mounts_the_stack_fsx(prod_recording: Recording) -> None:
    # GIVEN prod with FSx and Slurm; THEN the slurm namespace gets its own PV/PVC on the same file system.
    fsx = prod_recording.one("aws:fsx/lustreFileSystem:LustreFileSystem", "fsx")
    slurm_pvs = [
        r
        for r in prod_recording.of_type("kubernetes:core/v1:PersistentVolume")
        if prod_recording.top_component(r).type == "ekstrain:slurm:Slurm"
    ]
    assert len(slurm_pvs) == 1
    csi = slurm_pvs[0].inputs["spec"]["csi"]
    assert csi["volumeHandle"] == fsx.outputs["id"]
    assert csi["volumeAttributes"] == {"dnsname": fsx.outputs["dnsName"], "mountname": fsx.outputs["mountName"]}


def test_accounting_off_removes_the_database() -> None:
    rec = run_program(_component(accounting=False))
    types = {r.type for r in rec.records}
    assert "kubernetes:apps/v1:StatefulSet" not in types
    # What is left of passwords and Secrets are the chart's auth/slurm and JWT keys (no database password).
    assert sorted(r.name for r in rec.of_type("random:index/randomPassword:RandomPassword")) == [
        "slurm-jwtKey",
        "slurm-slurmKey",
    ]
    assert sorted(r.name for r in rec.of_type("kubernetes:core/v1:Secret")) == ["slurm-jwtKey", "slurm-slurmKey"]


def test_fsx_inputs_accept_file_system_outputs() -> None:
    """What infra/program.py will pass once storage is merged: outputs of a LustreFileSystem."""
    import pulumi_aws as aws

    cfg = stack_config("prod")

    def program() -> Any:
        fs = aws.fsx.LustreFileSystem(
            "fsx",
            subnet_ids="subnet-1",
            storage_capacity=4800,
            deployment_type="PERSISTENT_2",
            per_unit_storage_throughput=250,
        )
        Slurm(
            "slurm",
            SlurmArgs(
                crds_chart=DEFAULT_CHARTS["slurm-operator-crds"],
                operator_chart=DEFAULT_CHARTS["slurm-operator"],
                slurm_chart=DEFAULT_CHARTS["slurm"],
                operator_values=slurm.operator_values(cfg),
                slurm_values=slurm.slurm_values(cfg),
                fsx_file_system_id=fs.id,
                fsx_dns_name=fs.dns_name,
                fsx_mount_name=fs.mount_name,
                fsx_capacity_gib=4800,
            ),
        )
        return {"id": fs.id}

    rec = run_program(program)
    fs = rec.one("aws:fsx/lustreFileSystem:LustreFileSystem", "fsx")
    csi = rec.one("kubernetes:core/v1:PersistentVolume", "slurm-fsx-pv").inputs["spec"]["csi"]
    assert csi["volumeHandle"] == rec.outputs["id"]
    assert csi["volumeAttributes"] == {"dnsname": fs.outputs["dnsName"], "mountname": fs.outputs["mountName"]}
