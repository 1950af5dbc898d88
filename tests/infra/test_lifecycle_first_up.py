"""Day 1: the first `pulumi up` from an empty account, as docs/delivery.md ("First deploy") tells an operator.

The runbook's commands are read from the document and carried out on a copy of each shipped stack file
(`pulumi config set --path` / `pulumi config rm` as the CLI writes them); each `pulumi up` becomes an offline
render with every check (schemas, references, admission, creation order, policy pack...), and the API endpoint
must be reachable from where that phase runs (infra/verify/reach.py). Phase 2 may change nothing but the
endpoint: an in-place EKS update (UpdateClusterConfig), never a replacement.
"""

from __future__ import annotations

import ipaddress
import pathlib
import re
import shlex
from typing import Any

import pytest
import yaml
from conftest import REPO, STACK_NAMES
from support.renders import Renders

from ekstrain.cli import render as render_cli
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.infra import offline, render
from ekstrain.infra.verify.reach import Runner, api_reachable
from ekstrain.stacks.loader import load_flat, read_stack_file

RUNBOOK = REPO / "docs" / "delivery.md"
WORKSTATION = "52.94.10.10"
"""The operator's public egress address in phase 1 (what `curl -s https://checkip.amazonaws.com` prints)."""


def runbook_phase(name: str) -> list[str]:
    """The shell lines of the fenced block after ``<!-- first-deploy:<name> -->``."""
    text = RUNBOOK.read_text()
    match = re.search(rf"<!-- first-deploy:{name} -->\s*```sh\n(.*?)```", text, re.S)
    assert match, f"docs/delivery.md has no first-deploy:{name} block"
    return [line for line in match.group(1).splitlines() if line.strip()]


def _path(key: str) -> tuple[str, list[str | int]]:
    top, _, rest = key.partition(".")
    parts: list[str | int] = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", rest):
        parts.append(int(index) if index else name)
    return top, parts


def pulumi_config(stack_file: pathlib.Path, line: str) -> bool:
    """Apply one runbook line to the stack file as the CLI would; True for `pulumi up`."""
    line = line.replace("$(curl -s https://checkip.amazonaws.com)", WORKSTATION)
    argv = shlex.split(line)
    doc = yaml.safe_load(stack_file.read_text())
    config: dict[str, Any] = doc["config"]
    if argv[:2] == ["pulumi", "up"]:
        return True
    if argv[:3] == ["pulumi", "config", "set"] and "--path" in argv:
        key, value = [a for a in argv[3:] if a != "--path"]
        top, parts = _path(key)
        node: Any = config.setdefault(top, {} if not isinstance(parts[0], int) else [])
        for here, nxt in zip(parts, parts[1:], strict=False):
            if isinstance(here, int):
                while len(node) <= here:
                    node.append({} if not isinstance(nxt, int) else [])
                node = node[here]
            else:
                node = node.setdefault(here, [] if isinstance(nxt, int) else {})
        last = parts[-1]
        if isinstance(last, int):
            while len(node) <= last:
                node.append(None)
        node[last] = value
    elif argv[:3] == ["pulumi", "config", "rm"]:
        top, parts = _path(argv[3])
        node = config[top]
        for here in parts[:-1]:
            node = node[here]
        del node[parts[-1]]
    else:
        raise AssertionError(f"the runbook line {line!r} is not a command this test knows how to carry out")
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return False


def pulumi_up(stack: str, stack_file: pathlib.Path, out: pathlib.Path) -> tuple[offline.Recording, str]:
    """The render of ``stack_file`` and the recording of the program it ran (kept as it ran, not run again: a
    prod program run is seconds of CPU; a replayed render ran none, so then it runs here)."""
    ran: list[offline.Recording] = []
    real = render.run_program

    def kept(*args: Any, **kwargs: Any) -> offline.Recording:
        ran.append(real(*args, **kwargs))
        return ran[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render, "run_program", kept)
        code = render_cli.main(["--stack", stack, "--stack-file", str(stack_file), "--out", str(out)])
    summary = (out / "SUMMARY.md").read_text()
    assert code == 0, summary[summary.find("## Checks") :]
    flat, secrets = read_stack_file(stack_file)
    load_flat(flat, stack_file.name)
    return (ran[-1] if ran else render.run_program(flat, secrets, stack)), summary


def _inputs(rec: offline.Recording) -> dict[tuple[str, str], Any]:
    return {(r.type, r.name): offline.plain(r.inputs) for r in rec.records}


@pytest.mark.parametrize("stack", STACK_NAMES)
def test_first_up_from_an_empty_account(stack: str, tmp_path: pathlib.Path, renders: Renders) -> None:
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text((REPO / f"Pulumi.{stack}.yaml").read_text())
    # GIVEN the shipped stack and an operator outside any VPC: as shipped, the endpoint is private
    shipped = renders.program(stack)
    reachable, why = api_reachable(shipped, Runner(WORKSTATION, in_vpc=False))
    assert not reachable and "private" in why, "without the bootstrap phase a fresh account cannot be deployed"

    # WHEN phase 1 of the runbook runs (endpoint open to the workstation while the key is set)
    ups = [pulumi_config(stack_file, line) for line in runbook_phase("phase1")]
    assert ups[-1] is True and sum(ups) == 1
    phase1, summary1 = pulumi_up(stack, stack_file, tmp_path / "phase1")
    # THEN every check passes, the workstation reaches the API, and the render says the endpoint is open
    assert api_reachable(phase1, Runner(WORKSTATION, in_vpc=False))[0]
    assert "ekstrain:cluster.bootstrapAccessCidrs: the API endpoint is public for ['52.94.10.10/32']" in summary1
    assert "## Creation order" in summary1 and "creation order: CRDs, webhooks, nodes, read objects first" in summary1
    # AND its preview reads nothing the run creates: no resource is imported (resources.yaml records each import
    # id; the render's imports check ran), and the deploy role's admin entry is created by the program, EKS's
    # bootstrap entry for the creator turned off (components/cluster.py creator_bootstrap_off)
    resources = yaml.load((tmp_path / "phase1" / "resources.yaml").read_text(), Loader=SAFE_LOADER)
    assert all("import" in r for r in resources)
    assert [r["name"] for r in resources if r["import"]] == []
    assert "imports: no import of a resource this stack creates" in summary1
    deployer = [r for r in resources if r["name"] == "cluster-deployer"]
    assert sorted(r["type"] for r in deployer) == [
        "aws:eks/accessEntry:AccessEntry",
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
    ]
    eks = next(r for r in resources if r["type"] == "aws:eks/cluster:Cluster")
    assert eks["inputs"]["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is False
    # AND resources.yaml names every dependency, parent and provider by URN (names repeat: `cluster-deployer` is the
    # entry and its association), and the Kubernetes provider waits for that association and the system nodes
    urns = {r["urn"] for r in resources}
    assert len(urns) == len(resources) > len({r["name"] for r in resources})
    for r in resources:
        assert set(r["dependsOn"]) <= urns and r["provider"] in urns | {""}, r["urn"]
        # (the root stack is not a recorded resource; under the mocks its URN is the first stack run in the process)
        assert r["parent"] in urns or re.fullmatch(
            r"urn:pulumi:\w+::ekstrain::pulumi:pulumi:Stack::ekstrain-\w+", r["parent"]
        )
    (association,) = [r["urn"] for r in deployer if r["type"].endswith(":AccessPolicyAssociation")]
    (nodes,) = [r["urn"] for r in resources if r["type"] == "eks:index:ManagedNodeGroup"]
    provider = next(r for r in resources if r["type"] == "pulumi:providers:kubernetes" and r["name"] == "cluster-k8s")
    assert {association, nodes} <= set(provider["dependsOn"])
    # AND the first `up` activates no cost-allocation tag, and the render checked every kind's deploy contract
    assert not [r for r in resources if r["type"] == "aws:costexplorer/costAllocationTag:CostAllocationTag"]
    assert "deploy contracts: every kind modelled" in summary1

    # WHEN the in-VPC runner (an address of deployCidrs) runs phase 2
    network = yaml.safe_load(stack_file.read_text())["config"]["ekstrain:network"]
    runner = Runner(str(ipaddress.ip_network(network["vpcCidr"]).network_address + 100), in_vpc=True)
    ups = [pulumi_config(stack_file, line) for line in runbook_phase("phase2")]
    assert ups[-1] is True and sum(ups) == 1
    # (phase 2's stack file says what the shipped one says, value for value: its `pulumi up` is the shipped
    # stack's render, every check passed, and its program is the shipped program, as the session rendered them)
    assert read_stack_file(stack_file) == read_stack_file(REPO / f"Pulumi.{stack}.yaml")
    phase2, summary2 = renders.program(stack), (renders(stack) / "SUMMARY.md").read_text()
    # THEN the runner reaches the private endpoint, the workstation no longer does
    assert api_reachable(phase2, runner)[0], api_reachable(phase2, runner)[1]
    assert not api_reachable(phase2, Runner(WORKSTATION, in_vpc=False))[0]
    assert "bootstrapAccessCidrs" not in summary2
    # AND phase 2 is the shipped stack again (its stack file, asserted above), changing only the endpoint of the EKS
    # cluster (updated in place)
    before, after = _inputs(phase1), _inputs(phase2)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {("eks:index:Cluster", "cluster"), ("aws:eks/cluster:Cluster", "cluster-eksCluster")}
    eks_before = before[("aws:eks/cluster:Cluster", "cluster-eksCluster")]
    eks_after = after[("aws:eks/cluster:Cluster", "cluster-eksCluster")]
    assert {k for k in eks_before if eks_before[k] != eks_after[k]} == {"vpcConfig"}
    assert eks_before["vpcConfig"] == {
        **eks_after["vpcConfig"],
        "endpointPublicAccess": True,
        "publicAccessCidrs": [f"{WORKSTATION}/32"],
    }
