"""The policy pack as the Pulumi CLI runs it: `policy/__main__.py` started as a process, spoken to
over the analyzer gRPC protocol (GetAnalyzerInfo, Configure, Analyze, AnalyzeStack). No CLI needed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from conftest import REPO
from ekstrain_policy import rules
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

MANDATORY = analyzer_pb2.EnforcementLevel.Value("MANDATORY")


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    # The CLI starts the pack with the engine address; the pack prints the port it serves on.
    proc = subprocess.Popen(
        [sys.executable, "__main__.py", "127.0.0.1:0"],
        cwd=REPO / "policy",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().strip() or 0)
        assert port, proc.stderr.read().decode() if proc.stderr else "no port"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    json_format.ParseDict(props, s)
    return s


def analyze(
    stub: analyzer_pb2_grpc.AnalyzerStub, type_: str, props: dict[str, Any], protect: bool = False
) -> list[tuple[str, str, int]]:
    req = analyzer_pb2.AnalyzeRequest(
        type=type_,
        properties=_struct(props),
        urn=f"urn:pulumi:s::p::{type_}::x",
        name="x",
        options=analyzer_pb2.AnalyzerResourceOptions(protect=protect),
    )
    return [(d.policyName, d.message, d.enforcementLevel) for d in stub.Analyze(req).diagnostics]


def test_pack_serves_every_policy(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "ekstrain"
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert set(levels) == {r.name for r in rules.RULES}
    assert {n for n, lvl in levels.items() if lvl == MANDATORY} == {r.name for r in rules.RULES if r.mandatory}


def test_pack_reports_violations_and_respects_unknowns(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    open_endpoint = {
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
        "encryptionConfigKeyArn": "arn:aws:kms:us-west-2:1:key/k",
        "enabledClusterLogTypes": ["api", "audit", "authenticator"],
    }
    found = analyze(analyzer, rules.EKS_CLUSTER, open_endpoint)
    assert [(n, lvl) for n, _, lvl in found] == [("eks-endpoint-restricted", MANDATORY)]
    assert analyze(analyzer, rules.EKS_CLUSTER, {**open_endpoint, "publicAccessCidrs": ["203.0.113.0/24"]}) == []
    unknown = analyze(analyzer, rules.EKS_CLUSTER, {**open_endpoint, "publicAccessCidrs": UNKNOWN_STRING_VALUE})
    assert [n for n, m, _ in unknown if "during preview" in m] == ["eks-endpoint-restricted"]


def test_pack_config_from_the_stack_file_applies(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    fsx = {"deploymentType": "SCRATCH_2", "tags": {"Environment": "dev"}}
    assert analyze(analyzer, rules.FSX_LUSTRE, fsx) == []
    cfg = json.loads((REPO / "policy" / "config" / "prod.json").read_text())
    analyzer.Configure(
        analyzer_pb2.ConfigureAnalyzerRequest(
            policyConfig={name: analyzer_pb2.PolicyConfig(properties=_struct(values)) for name, values in cfg.items()}
        )
    )
    try:
        assert [n for n, _, _ in analyze(analyzer, rules.FSX_LUSTRE, fsx)] == ["stateful-protected-in-prod"]
        assert analyze(analyzer, rules.FSX_LUSTRE, fsx, protect=True) == []
    finally:
        analyzer.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig={}))


def test_pack_stack_policies(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    bucket = analyzer_pb2.AnalyzerResource(
        type=rules.S3_BUCKET,
        urn="urn:pulumi:s::p::aws:s3/bucket:Bucket::data",
        name="data",
        properties=_struct({"bucket": "b", "id": "b"}),
    )
    found = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[bucket])).diagnostics
    assert sorted(d.policyName for d in found) == ["s3-encrypted", "s3-public-access-blocked", "s3-tls-only"]


def test_pack_counts_engine_secrets_as_secret_sources(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """GIVEN Helm values whose credential the engine sends as a Pulumi secret (a `config set --secret` value, or
    an Output.secret) THEN credentials-from-secret-sources is silent; the same value in plaintext is a literal.
    A Kubernetes Secret's secret marking proves nothing (its SDK marks every Secret): a literal stays a literal,
    except the program's config-sourced jupyterhub-oauth. (pulumi-policy unwraps secrets; pack.py keeps paths.)"""
    sig = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}

    def resource(type_: str, name: str, props: dict[str, Any]) -> analyzer_pb2.AnalyzerResource:
        urn = f"urn:pulumi:s::p::{type_}::{name}"
        return analyzer_pb2.AnalyzerResource(type=type_, urn=urn, name=name, properties=_struct(props))

    def policies(*resources: analyzer_pb2.AnalyzerResource) -> list[str]:
        req = analyzer_pb2.AnalyzeStackRequest(resources=list(resources))
        return [d.policyName for d in analyzer.AnalyzeStack(req).diagnostics]

    password = {"hub": {"config": {"DummyAuthenticator": {"password": "hunter2"}}}}
    hidden = {"hub": {"config": {"DummyAuthenticator": {"password": {**sig, "value": "hunter2"}}}}}
    assert policies(resource(rules.HELM_RELEASE, "hub", {"values": password})) == ["credentials-from-secret-sources"]
    assert policies(resource(rules.HELM_RELEASE, "hub", {"values": hidden})) == []
    assert policies(resource(rules.HELM_RELEASE, "hub", {"values": {**sig, "value": password}})) == []
    literal = {"stringData": {**sig, "value": {"password": "hunter2"}}}
    assert policies(resource(rules.K8S_SECRET, "db", literal)) == ["credentials-from-secret-sources"]
    assert policies(resource(rules.K8S_SECRET, "jupyterhub-oauth", literal)) == []
