"""One fact, one place: each rule that validation (stacks/) and construction (components/, assembly/) both need is
defined once, below both, and both read it.

Source scans prove no second copy is written; behaviour checks prove the readers agree on the same inputs.
"""

from __future__ import annotations

import argparse
import pathlib
import re

import pytest
from pydantic import BaseModel, Field, ValidationError

from ekstrain.assembly import jupyterhub as hub
from ekstrain.assembly.schedulers import slurm
from ekstrain.cli import argtypes
from ekstrain.components import volumes
from ekstrain.contracts import kinds
from ekstrain.facts import names, spend
from ekstrain.layout import storage_sizing
from ekstrain.payloads import fsx_volume
from ekstrain.simulate import deploy, engine, load, nodes
from ekstrain.stacks import rules
from ekstrain.stacks.models import base, schedulers

ROOT = pathlib.Path(__file__).resolve().parents[1]
CODE = ("ekstrain", "stacks", "assembly", "components", "infra", "cli")


def sources_containing(pattern: str, under: str = "") -> list[str]:
    """Our source files (each once: ekstrain/<layer> are symlinks to the layers; vendor/ left out) whose text
    matches ``pattern``, among those whose path starts with ``under``."""
    found = []
    for top in CODE:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/vendor/" in rel or any(rel.startswith(f"ekstrain/{layer}/") for layer in CODE[1:]):
                continue
            if rel.startswith(under) and re.search(pattern, path.read_text()):
                found.append(rel)
    return found


# ---- the DNS-1123 label -----------------------------------------------------------------------------------------


def test_GIVEN_the_sources_WHEN_searched_for_the_dns_label_expression_THEN_only_names_writes_it() -> None:
    # stacks/models (twice), stacks/rules, components/args, cli/argtypes and infra/verify each wrote their own.
    assert sources_containing(re.escape("[a-z0-9]([-a-z0-9]")) == ["ekstrain/facts/names.py"]
    assert f"^{names.DNS_LABEL_PATTERN}$" == base.DNS_LABEL and schedulers.TEAM_NAME is base.DNS_LABEL


class _Label(BaseModel):
    name: str = Field(pattern=base.DNS_LABEL, max_length=names.DNS_LABEL_MAX)


@pytest.mark.parametrize(
    "text", ["a", "gpu-h100", "0", "a" * 63, "a" * 64, "-a", "a-", "A", "a_b", "a.b", "", "ü", "a--b", "9x"]
)
def test_GIVEN_a_name_WHEN_validation_the_cli_and_the_rule_judge_it_THEN_they_agree(text: str) -> None:
    by_rule = names.is_dns_label(text)
    try:
        _Label(name=text)
        by_validation = True
    except ValidationError:
        by_validation = False
    try:
        argtypes.namespace(text)
        by_cli = True
    except argparse.ArgumentTypeError:
        by_cli = False
    assert by_rule == by_validation == by_cli
    assert names.is_dns_label(text, 50) == (by_rule and len(text) <= 50)


# ---- the FSx static volume --------------------------------------------------------------------------------------


def test_GIVEN_the_three_namespaces_that_mount_fsx_WHEN_their_volumes_are_built_THEN_one_builder_made_them() -> None:
    assert sources_containing(r'"mountname"') == ["ekstrain/payloads/fsx_volume.py"]
    assert sources_containing(r'"fsx\.csi\.aws\.com"') == ["ekstrain/payloads/fsx_volume.py"]
    args = ("fs-0123", "fs-0123.fsx.us-west-2.amazonaws.com", "abcdef", 1200)
    training, in_slurm, in_hub = volumes.fsx_pv_manifest(*args), slurm.fsx_pv("slurm-fsx", *args), hub.fsx_pv(*args)
    # the same file system, the same driver and attributes; only access and binding differ
    for pv in (training, in_slurm, in_hub):
        assert pv["spec"]["csi"]["volumeHandle"] == "fs-0123" and pv["spec"]["csi"]["driver"] == fsx_volume.DRIVER
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and "flock" in pv["spec"]["mountOptions"]
    assert in_slurm["spec"]["claimRef"] == {"namespace": slurm.NAMESPACE, "name": names.FSX_PVC}
    assert in_hub["spec"]["accessModes"] == ["ReadOnlyMany"] and in_hub["spec"]["csi"]["readOnly"] is True
    assert "claimRef" not in training["spec"] and training["spec"]["accessModes"] == ["ReadWriteMany"]
    assert hub.fsx_pvc(1200)["spec"]["volumeName"] == hub.FSX_PV
    assert volumes.fsx_pvc_manifest(1200)["spec"]["volumeName"] == names.FSX_PV


# ---- KMS keys -----------------------------------------------------------------------------------------------------


def test_GIVEN_the_components_WHEN_searched_for_kms_keys_THEN_every_key_is_set_up_by_one_helper() -> None:
    # efs, fsx, cluster, cost and logs (twice) each wrote Key + Alias + KeyPolicy with their own rotation and window.
    assert sources_containing(r"aws\.kms\.Key\(") == ["components/iam.py"]
    assert sources_containing(r"aws\.kms\.Alias\(") == ["components/iam.py"]
    assert sources_containing(r"deletion_window_in_days=\d") == []


# ---- the usage-error parser ---------------------------------------------------------------------------------------


def test_GIVEN_the_cli_WHEN_searched_for_argparse_parsers_with_their_own_error_line_THEN_there_is_one() -> None:
    assert sources_containing(r"class \w+\(argparse\.ArgumentParser\)") == ["cli/argtypes.py"]
    from ekstrain.cli.main import build_parser

    lines = []
    for argv in (["plan", "search", "--top", "x"], ["job", "render", "--nodes", "0"]):
        with pytest.raises(SystemExit) as stop:
            build_parser().parse_args(argv)
        assert stop.value.code == 2
        lines.append(argv)
    assert lines


def test_GIVEN_a_plan_and_a_job_usage_error_WHEN_parsed_THEN_both_read_as_the_house_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ekstrain.cli.main import build_parser

    for argv, prog in (
        (["plan", "search", "--top", "x"], "ekstrain plan search"),
        (["job", "render", "--nodes", "0"], "ekstrain job render"),
    ):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        err = capsys.readouterr().err
        assert err.startswith(f"error: {prog}: ") and err.endswith(f"(see {prog} --help)\n") and err.count("\n") == 1


# ---- prices, tiers and node capacity ------------------------------------------------------------------------------


def test_GIVEN_the_price_tables_WHEN_read_THEN_the_deploy_bill_and_the_teardown_note_quote_one_price() -> None:
    assert deploy.MONTHLY_USD is kinds.MONTHLY_USD and deploy.HOURS_PER_MONTH is spend.HOURS_PER_MONTH
    eks_month, _ = kinds.MONTHLY_USD["aws:eks/cluster:Cluster"]
    assert eks_month == pytest.approx(kinds.EKS_CLUSTER_USD_PER_HOUR * spend.HOURS_PER_MONTH)
    assert kinds.BILLED_WHILE_KEPT["aws:eks/cluster:Cluster"].startswith(f"${kinds.EKS_CLUSTER_USD_PER_HOUR:.2f} ")
    assert kinds.MONTHLY_USD["aws:kms/key:Key"][0] == kinds.KMS_KEY_USD_PER_MONTH
    assert kinds.BILLED_WHILE_KEPT["aws:kms/key:Key"].startswith(f"${kinds.KMS_KEY_USD_PER_MONTH:g} per key-month")
    assert sources_containing(r"HOURS_PER_MONTH = ") == ["ekstrain/facts/spend.py"]


def test_GIVEN_the_fsx_throughput_tiers_WHEN_validation_sizing_and_pricing_read_them_THEN_they_are_one_tuple() -> None:
    assert rules.FSX_PERSISTENT_2_THROUGHPUTS is storage_sizing.PERSISTENT_2_TIERS
    assert tuple(kinds.FSX_PERSISTENT2_USD_PER_GB_MONTH) == storage_sizing.PERSISTENT_2_TIERS


def test_GIVEN_a_system_node_WHEN_the_simulator_sizes_it_THEN_it_uses_the_one_capacity_formula() -> None:
    (node,) = load.system_nodes(["m7i.2xlarge"])
    gp = nodes.general_purpose("m7i.2xlarge")
    assert gp is not None and node.capacity == nodes.capacity(gp, None)
    # a node without a pods figure holds kubelet's default, the table's own fallback
    assert engine.per_node({"cpu": 0.001}, {"cpu": 1000.0}) == nodes.DEFAULT_MAX_PODS
    assert sources_containing(r"\b110\b", under="ekstrain/simulate/") == ["ekstrain/simulate/nodes.py"]
