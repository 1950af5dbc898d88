"""The offline engine's pulumi-eks children (infra/eks_children.py) against pulumi-eks's own implementation.

`../shared/tools/real-eks` runs pulumi-eks's Node.js component code (pinned, compiled) under the Node SDK's
mocks with the inputs our program sends to ``eks:index:Cluster`` and ``eks:index:ManagedNodeGroup`` and lists
every child it registers. The children the offline engine registers must be the same resources, with the
same inputs wherever the value is not one of the two mock engines' fakes (ids, ARNs of created resources).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
from typing import Any

import pytest
import yaml
from conftest import REPO
from support import shared

from ekstrain.components import cluster
from ekstrain.infra import offline

TOOL = REPO.parent / "shared" / "tools" / "real-eks" / "run.sh"
# Values only a mock engine makes up: the created role's ARN or name, the OIDC issuer URL and CA thumbprint,
# the kubeconfig (its server is a fake endpoint).
FAKES = {"roleArn", "role", "url", "thumbprintLists", "kubeconfig", "nodeRoleArn", "launchTemplate"}

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason="needs ../shared/tools/real-eks beside the checkout")


def real_eks_cache() -> pathlib.Path:
    """Where run.sh installs pulumi-eks's npm dependencies (~220 MB, ~11 CPU-s and the npm registry on first use):
    ``$REAL_EKS_CACHE`` when set, else the user's cache directory, so every checkout on the machine shares one
    install (run.sh reinstalls when its stamp, a digest of the tool's package.json and archive, differs)."""
    explicit = os.environ.get("REAL_EKS_CACHE")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    return pathlib.Path(base) / "ekstrain" / "real-eks"


@pytest.fixture(scope="module")
def real(prod_recording: offline.Recording, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """pulumi-eks's registrations, run once for the session: when pytest-xdist split this module over two workers,
    each ran run.sh, both installing the npm dependencies into the one cache directory at once (one removing what
    the other was unpacking) or one after the other (~15 CPU-s each on a clean machine)."""
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{missing} not on PATH: install Node.js 18+ (apt-get install nodejs npm) to run pulumi-eks")
    return shared.once(tmp_path_factory, "real-eks", lambda: _run_real_eks(prod_recording, tmp_path_factory))


def _run_real_eks(prod_recording: offline.Recording, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("real-eks")
    components = [
        {"type": r.type, "name": r.name, "inputs": offline.plain(r.inputs)}
        for r in prod_recording.records
        if r.type in ("eks:index:Cluster", "eks:index:ManagedNodeGroup")
    ]
    (tmp / "resources.yaml").write_text(yaml.safe_dump(components))
    env = {**os.environ, "REAL_EKS_CACHE": str(real_eks_cache())}
    done = subprocess.run(
        ["bash", str(TOOL), str(tmp / "resources.yaml"), str(tmp / "out.json")],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((tmp / "out.json").read_text())


def _ours(rec: offline.Recording) -> dict[tuple[str, str], offline.Record]:
    return {(r.type, r.name): r for r in rec.records if r.synthetic}


def _comparable(inputs: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in inputs.items() if k not in FAKES}
    if isinstance(out.get("configurationValues"), str):
        out["configurationValues"] = json.loads(out["configurationValues"])
    return out


def test_pulumi_eks_raises_no_error_for_our_inputs(real: dict[str, Any]) -> None:
    assert real["errors"] == []


def test_same_children(real: dict[str, Any], prod_recording: offline.Recording) -> None:
    theirs = {
        (r["type"], r["name"])
        for r in real["registrations"]
        if r["type"] not in ("eks:index:Cluster", "eks:index:ManagedNodeGroup")
    }
    assert set(_ours(prod_recording)) == theirs


def test_same_inputs_and_options(real: dict[str, Any], prod_recording: offline.Recording) -> None:
    ours = _ours(prod_recording)
    for r in real["registrations"]:
        key = (r["type"], r["name"])
        if key not in ours or not r.get("custom"):
            continue
        mine = ours[key]
        theirs = r.get("inputs") or {}
        if key[0] == "aws:eks/cluster:Cluster":
            # The Cluster component's transform runs on this child in a real `up` as it does offline (prod has a
            # deploy role): EKS bootstraps no entry for the creator (components/cluster.py creator_bootstrap_off).
            assert theirs["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is True, "pulumi-eks's own value"
            theirs = cluster.without_creator_bootstrap(theirs)
        assert _comparable(offline.plain(mine.inputs)) == _comparable(theirs), key
        assert sorted(mine.ignore_changes) == sorted(r.get("ignoreChanges") or []), key
        # Same parent (by name), so grouping and URNs match the real engine's.
        parent = prod_recording.by_urn(mine.parent)
        assert parent is not None and parent.name == r["parent"].rsplit("::", 1)[-1], key
        # Same in-component dependencies (by name).
        deps = {d.rsplit("::", 1)[-1] for d in r.get("dependencies") or []}
        mine_deps = {d.rsplit("::", 1)[-1] for d in mine.dependencies if d in {x.urn for x in ours.values()}}
        assert mine_deps <= deps | {"cluster"}, key


def test_kube_proxy_is_pinned_so_no_version_lookup_runs(real: dict[str, Any]) -> None:
    # Unpinned, pulumi-eks asks getAddonVersion(mostRecent) on every run: an unchanged `up` would update it.
    assert [i["token"] for i in real["invokes"] if "getAddonVersion" in i["token"]] == []
