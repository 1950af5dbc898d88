"""Notebooks that start on a cold partition, and TLS for the hub (issue: the platform's own loops).

GIVEN prod's partitions WHEN the hub's profiles are built THEN each gives KubeSpawner a start_timeout covering the
partition's cold start (launch + health gate + image pull: ekstrain/layout/cold_start.py, the simulator's own numbers),
the
NLB terminates TLS with the stack's ACM certificate, and a stack with an https callback and no certificate is refused.
The timeline (prod rendered once, test_simulate's module fixture) counts a notebook KubeSpawner would give up on.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from conftest import cfg_with, stack_config
from support.simulate import HELM

from ekstrain.assembly import jupyterhub as hub
from ekstrain.facts import catalog
from ekstrain.layout import cold_start
from ekstrain.payloads import health_gate
from ekstrain.simulate import engine
from ekstrain.simulate.mix import notebook_pod, read_mix
from ekstrain.simulate.notebooks import START_TIMEOUT_KEY
from ekstrain.simulate.timeline import Arrival, Mix, simulate_timeline
from ekstrain.stacks import loop_rules
from ekstrain.stacks.errors import ConfigError
from ekstrain.tooling import validation

PROD = stack_config("prod")
REPO = pathlib.Path(__file__).resolve().parents[2]
needs_helm = pytest.mark.skipif(
    HELM is None or validation.upstream_dir() is None, reason="needs a helm binary and the upstream chart archives"
)


# ---- the render -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("part", PROD.partitions, ids=lambda p: p.name)
def test_each_profile_waits_for_its_partitions_cold_start(part: Any) -> None:
    """GIVEN a prod partition THEN its profile's start_timeout is at least launch + gate + pull of its family, and
    more than z2jh's default 300 s (which gives up on every cold accelerator partition)."""
    family = catalog.get(part.instance_types[0]).family
    over = hub.profile(part, True)["kubespawner_override"]
    cold = cold_start.LAUNCH_MINUTES[family] + health_gate.gate_minutes(family) + cold_start.pull_minutes(family)
    assert over["start_timeout"] >= cold * 60 > hub.DEFAULT_START_TIMEOUT
    assert f"up to {over['start_timeout'] // 60} min" in hub.profile(part, True)["description"]


def test_the_hub_default_is_the_slowest_profile_and_events_stream() -> None:
    values = hub.chart_values(PROD)
    su = values["singleuser"]
    assert su["startTimeout"] == max(p["kubespawner_override"]["start_timeout"] for p in su["profileList"])
    assert su["events"] is True  # KubeSpawner's progress: the pod's events on the spawn page


def test_the_nlb_terminates_tls_with_the_stacks_certificate() -> None:
    """GIVEN prod (github OAuth, https callback, tls.certificateArn) THEN the proxy Service's NLB listens on 443 with
    the ACM certificate, forwards to the proxy's http port (offload) and has no clear-text listener."""
    proxy = hub.chart_values(PROD)["proxy"]
    notes = proxy["service"]["annotations"]
    assert notes["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == PROD.jupyterhub.tls.certificate_arn
    assert notes["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "https"
    assert notes["service.beta.kubernetes.io/aws-load-balancer-internal"] == "true"
    assert proxy["https"] == {"enabled": True, "type": "offload"}
    assert proxy["service"]["disableHttpPort"] is True


def _no_tls(sections: dict[str, Any]) -> None:
    sections["jupyterhub"].pop("tls", None)


def test_an_https_callback_with_nothing_terminating_tls_is_refused() -> None:
    """GIVEN prod without jupyterhub.tls WHEN parsed THEN one issue names the key and the ACM command (the old code
    rendered a hub on plain HTTP port 80 behind an https callback)."""
    with pytest.raises(ConfigError) as err:
        cfg_with(_no_tls)
    issues = [i for i in err.value.issues if i.key == "ekstrain:jupyterhub.tls.certificateArn"]
    assert len(issues) == 1, err.value
    assert "nothing terminates TLS" in issues[0].problem
    assert "aws acm request-certificate --domain-name notebooks.ml.example.com" in issues[0].fix


def test_a_bad_certificate_is_refused_and_another_regions_warned() -> None:
    with pytest.raises(ConfigError) as err:
        cfg_with(lambda s: s["jupyterhub"].update(tls={"certificateArn": "arn:aws:iam::111122223333:role/x"}))
    assert any("not an ACM certificate ARN" in i.problem for i in err.value.issues), err.value
    other = "arn:aws:acm:eu-west-1:111122223333:certificate/0f4e5a6b-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
    cfg = cfg_with(lambda s: s["jupyterhub"].update(tls={"certificateArn": other}))
    _, warnings = loop_rules.hub_tls(cfg)
    assert len(warnings) == 1 and "the certificate is in eu-west-1" in warnings[0]


def test_the_rule_passes_prod() -> None:
    assert loop_rules.hub_tls(PROD) == ([], [])


# ---- the timeline -----------------------------------------------------------------------------------------------


def _cold(prod_build: pathlib.Path, partition: str, timeout: int | None) -> Arrival:
    pod = notebook_pod(prod_build, partition, 1, "test")
    if timeout is not None:
        pod[START_TIMEOUT_KEY] = timeout
    return Arrival(f"Pod/nb-{partition}-{timeout}", pod, 30, 60)


@needs_helm
@pytest.mark.parametrize("partition", [p.name for p in PROD.partitions])
def test_a_cold_notebook_times_out_on_the_default_and_starts_on_the_rendered_timeout(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
    partition: str,
) -> None:
    """GIVEN a notebook spawned on an empty partition WHEN its profile has z2jh's 300 s (the old render) THEN the
    timeline counts it as timed out; WHEN it has the rendered start_timeout THEN it starts and nothing is a problem."""
    old = simulate_timeline(cluster, Mix([_cold(prod_build, partition, 300)], minutes=4 * 60, repair=True))
    assert any("notebook timed out" in p for p in old.problems), old.problems
    new = simulate_timeline(cluster, Mix([_cold(prod_build, partition, None)], minutes=4 * 60, repair=True))
    (job,) = [j for j in new.jobs if j.kind == "notebook"]
    assert job.first_started_at is not None and new.problems == [], new.problems


@needs_helm
def test_the_notebook_mix_starts_every_notebook(prod_build: pathlib.Path) -> None:
    """GIVEN examples/mix-notebooks-prod.yaml (a cold notebook on every kind of prod partition) THEN 0 problems."""
    from test_simulate import PROD as _  # noqa: F401 - same stack

    c = engine_cluster(prod_build)
    mix = read_mix(REPO / "examples" / "mix-notebooks-prod.yaml", prod_build)
    report = simulate_timeline(c, mix)
    notebooks = [j for j in report.jobs if j.kind == "notebook"]
    assert len(notebooks) == 4 and all(j.first_started_at is not None for j in notebooks)
    assert report.problems == [], report.problems


def engine_cluster(build: pathlib.Path) -> engine.Cluster:
    from ekstrain.simulate.load import load

    return load(build, list(PROD.cluster.system_node_group.instance_types))


@needs_helm
def test_a_notebook_queued_behind_a_full_partition_is_a_note_not_a_problem(
    cluster: engine.Cluster,
    prod_build: pathlib.Path,
) -> None:
    """GIVEN gpu-h100's 8 nodes held by an 8-node gang for 3 h WHEN a whole-node notebook is spawned at 0:30 THEN it
    waits for its queue past start_timeout: KubeSpawner gives it up (a NOTEBOOK line), which no start timeout could
    cover and which launches no node, so it is not counted as a cold-start problem."""
    from support.jobs import FakePlanner
    from test_jobs_templates import spec_for

    from ekstrain.assembly.jobs import render

    objs = render(spec_for("gpu-h100", nodes=8, name="full", global_batch=512), PROD, "volcano", FakePlanner())
    gang = next(o for o in objs if o["kind"] not in ("ConfigMap", "Service"))
    nb = notebook_pod(prod_build, "gpu-h100", 8, "test")
    mix = Mix([Arrival("Job/full", gang, 0, 180), Arrival("Pod/nb", nb, 30, 60)], minutes=8 * 60, repair=True)
    report = simulate_timeline(cluster, mix)
    assert not any("notebook timed out" in p for p in report.problems), report.problems
    assert any(line.startswith("NOTEBOOK Pod/nb: waited") for line in report.faults), report.faults
