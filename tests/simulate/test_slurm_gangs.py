"""Slurm gangs: the slurmd pods KEDA adds for an sbatch job are admitted all-or-nothing, and Argo CD leaves KEDA's
NodeSet replicas alone.

GIVEN prod (Volcano + Slinky + KEDA) WHEN rendered THEN each partition's slurmd pods name one PodGroup, a sizer keeps
its minMember at the NodeSet's replicas (its script runs here as a real process against a stand-in API server), and
the Argo CD Application for the slurm release ignores NodeSet replicas; the timeline (prod rendered once,
test_simulate's module fixture) admits a Slurm job's slurmd pods together instead of one at a time.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner
from support.simulate import HELM
from test_jobs_templates import spec_for

from ekstrain.agents import slurm_gang
from ekstrain.assembly.jobs import render, render_sbatch
from ekstrain.assembly.schedulers import slurm as slurm_values
from ekstrain.assembly.schedulers import teams
from ekstrain.payloads import argocd
from ekstrain.simulate import engine
from ekstrain.simulate.timeline import Arrival, Mix, simulate_timeline
from ekstrain.tooling import validation

PROD = stack_config("prod")
needs_helm = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


# ---- the render -----------------------------------------------------------------------------------------------


def test_slurmd_pods_name_their_partitions_podgroup() -> None:
    """GIVEN prod THEN each NodeSet's pod template names the partition's PodGroup (Volcano's controller then makes
    none of minMember 1 for them), which is in the partition's queue."""
    values = slurm_values.slurm_values(PROD)
    groups = {o["metadata"]["name"]: o for o in slurm_values.gang_objects(PROD) if o["kind"] == "PodGroup"}
    for p in PROD.partitions:
        notes = values["nodesets"][p.name]["metadata"]["annotations"]
        name = notes[slurm_gang.GROUP_ANNOTATION]
        assert name == f"slurm-{p.name}"
        assert (
            groups[name]["spec"]["queue"]
            == teams.shared_queue(PROD, p.name)
            == notes["scheduling.volcano.sh/queue-name"]
        )
        assert groups[name]["metadata"]["namespace"] == slurm_values.NAMESPACE


def test_the_sizer_may_only_read_nodesets_and_pods_and_patch_podgroups() -> None:
    objs = {o["kind"]: o for o in slurm_values.gang_objects(PROD) if o["kind"] != "PodGroup"}
    rules = objs["Role"]["rules"]
    assert {(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in rules} == {
        ("slinky.slurm.net", "nodesets", ("get",)),
        ("", "pods", ("list",)),
        ("scheduling.volcano.sh", "podgroups", ("get", "patch")),
    }
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == slurm_values.GANG_SIZER_IMAGE
    assert objs["ConfigMap"]["data"]["slurm_gang.py"] == pathlib.Path(slurm_gang.__file__).read_text()
    groups = json.loads(next(e["value"] for e in pod["containers"][0]["env"] if e["name"] == "GROUPS"))
    assert groups["slurm-gpu-h100"]["nodeset"] == "slurm-worker-gpu-h100"
    assert groups["slurm-gpu-h100"]["perPod"]["nvidia.com/gpu"] == "8"


def test_no_volcano_no_gang() -> None:
    from conftest import cfg_with

    cfg = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))
    assert slurm_values.gang_objects(cfg) == []
    assert "metadata" not in slurm_values.slurm_values(cfg)["nodesets"]["gpu-h100"]


def test_argocd_ignores_the_nodeset_replicas_keda_owns() -> None:
    """GIVEN the slurm release's Application THEN NodeSet spec.replicas is ignored in diffs and syncs (the old
    Application reset KEDA's scale to the chart's replicas on every sync); other Applications are unchanged."""
    release = {"name": "slurm", "chart": "oci://ghcr.io/slinkyproject/charts/slurm", "version": "1.2.1"}
    app = argocd.application({**release, "namespace": "slurm"})
    assert app["spec"]["ignoreDifferences"] == [
        {"group": "slinky.slurm.net", "kind": "NodeSet", "jsonPointers": ["/spec/replicas"]}
    ]
    assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]
    other = argocd.application({**release, "name": "keda", "namespace": "keda"})
    assert "ignoreDifferences" not in other["spec"]
    assert "RespectIgnoreDifferences=true" not in other["spec"]["syncPolicy"]["syncOptions"]


# ---- the sizer as a process -------------------------------------------------------------------------------------


class _Api(BaseHTTPRequestHandler):
    state: dict[str, Any] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        s = self.state
        if self.path.endswith("/pods"):
            self._send(200, {"items": s["pods"]})
        elif "/nodesets/" in self.path:
            self._send(200, s["nodesets"][self.path.rsplit("/", 1)[1]])
        elif "/podgroups/" in self.path:
            self._send(200, s["podgroups"][self.path.rsplit("/", 1)[1]])
        else:
            self._send(404, {})

    def do_PATCH(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.headers["Content-Type"] == "application/merge-patch+json"
        name = self.path.rsplit("/", 1)[1]
        self.state["podgroups"][name]["spec"].update(body["spec"])
        self.state["patches"].append((name, body))
        self._send(200, self.state["podgroups"][name])


def _pod(group: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"annotations": {slurm_gang.GROUP_ANNOTATION: group}}, "status": {"phase": phase}}


def _sizer(state: dict[str, Any], groups: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    _Api.state = state
    server = HTTPServer(("127.0.0.1", 0), _Api)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {
            **os.environ,
            "API_SERVER": f"http://127.0.0.1:{server.server_address[1]}",
            "GROUPS": json.dumps(groups),
            "ONCE": "1",
        }
        cmd = [sys.executable, slurm_gang.__file__]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=30, check=False)
    finally:
        server.shutdown()


def test_the_sizer_process_follows_kedas_scale_up() -> None:
    """GIVEN KEDA scaled gpu-h100's NodeSet 2 -> 8 for a 6-node job (2 slurmd pods running, 6 pending) and its
    PodGroup at minMember 2 WHEN the sizer runs THEN it patches minMember 8 and minResources = 6 pods' requests (the
    running two are in the queue's allocated already); a second pass changes nothing."""
    per_pod = {"cpu": "180100m", "memory": "1900Gi", "nvidia.com/gpu": "8"}
    groups = {"slurm-gpu-h100": {"nodeset": "slurm-worker-gpu-h100", "perPod": per_pod}}
    state = {
        "nodesets": {"slurm-worker-gpu-h100": {"spec": {"replicas": 8}}},
        "podgroups": {"slurm-gpu-h100": {"spec": {"minMember": 2, "minResources": {}, "queue": "gpu-h100"}}},
        "pods": [_pod("slurm-gpu-h100", "Running")] * 2 + [_pod("slurm-gpu-h100", "Pending")] * 6,
        "patches": [],
    }
    done = _sizer(state, groups)
    assert done.returncode == 0, done.stderr
    spec = state["podgroups"]["slurm-gpu-h100"]["spec"]
    assert spec["minMember"] == 8 and spec["queue"] == "gpu-h100"
    assert spec["minResources"] == {"cpu": "1080.6", "memory": str(6 * 1900 * 2**30), "nvidia.com/gpu": "48"}
    assert "slurm-gpu-h100: minMember 8" in done.stdout
    again = _sizer(state, groups)
    assert again.returncode == 0 and len(state["patches"]) == 1


def test_the_sizer_process_reports_an_unreachable_api() -> None:
    env = {
        **os.environ,
        "API_SERVER": "http://127.0.0.1:9",
        "GROUPS": json.dumps({"g": {"nodeset": "n", "perPod": {}}}),
    }
    done = subprocess.run(
        [sys.executable, slurm_gang.__file__], capture_output=True, text=True, env={**env, "ONCE": "1"}, timeout=30
    )
    assert done.returncode == 1 and done.stderr.startswith("sync failed:")


# ---- the timeline -----------------------------------------------------------------------------------------------


def _ungrouped(c: engine.Cluster) -> engine.Cluster:
    """The old render: slurmd pods without the group-name annotation (a PodGroup of minMember 1 each)."""
    nodesets = copy.deepcopy(c.nodesets)
    for ns in nodesets.values():
        ns["spec"]["template"]["metadata"]["annotations"].pop(slurm_gang.GROUP_ANNOTATION)
    return dataclasses.replace(c, nodesets=nodesets)


@needs_helm
def test_a_slurm_job_is_admitted_whole_or_not_at_all(cluster: engine.Cluster) -> None:
    """GIVEN a 14-node Volcano gang on gpu-a100 (16 nodes) for 6 h and, at 0:30, a 4-node sbatch job KEDA scales the
    NodeSet for WHEN slurmd pods are admitted one at a time (old) THEN 2 of them are admitted, their p4d nodes launch
    and idle until the gang ends (stranded); WHEN they are one gang (rendered) THEN none is admitted before all 4 fit,
    and nothing strands."""
    assert "gpu-a100" in cluster.autoscaled
    gang = render(spec_for("gpu-a100", nodes=14, name="big", global_batch=14 * 64), PROD, "volcano", FakePlanner())
    big = next(o for o in gang if o["kind"] not in ("ConfigMap", "Service"))
    text = render_sbatch(spec_for("gpu-a100", nodes=4, name="ft", global_batch=256), PROD, FakePlanner())
    sbatch = {"kind": "ConfigMap", "metadata": {"name": "ft"}, "data": {"ft.sbatch": text}}
    arrivals = [Arrival("Job/big", big, 0, 6 * 60), Arrival("sbatch/ft", sbatch, 30, 120)]
    old = simulate_timeline(_ungrouped(cluster), Mix(list(arrivals), minutes=12 * 60, repair=True))
    assert any("stranded" in p for p in old.problems), old.problems
    ft_old = next(j for j in old.jobs if j.name == "sbatch/ft")
    assert any("slurmd pods run, Slurm waits" in w for w in ft_old.waited), ft_old.waited
    new = simulate_timeline(cluster, Mix(list(arrivals), minutes=12 * 60, repair=True))
    ft = next(j for j in new.jobs if j.name == "sbatch/ft")
    assert ft.state == "finished" and not any("slurmd pods run" in w for w in ft.waited), ft.waited
    assert any(w.startswith("NodeSet scaled by 4: gang of 4 slurmd pods") for w in ft.waited), ft.waited
    assert not any("stranded" in p for p in new.problems), new.problems
    assert "stranded (held by a job that cannot start)" not in new.idle.get("gpu-a100", {})
