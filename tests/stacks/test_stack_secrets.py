"""Secrets set the documented way are read as Pulumi reads them and pass the policy pack.

``pulumi config set --secret ekstrain:jupyterhubClientSecret ...`` writes ``{secure: v1:...}`` at the key;
with ``--path`` (``ekstrain:jupyterhub.auth.clientId``) the same mapping sits below the key. The engine hands
the program the whole key decrypted and marks it secret; the offline render cannot decrypt, so it uses a
placeholder and marks the key the same way. A credential that reaches a Secret from such a value is a
Pulumi secret in the state and comes from a secret source: the policy pack must not call it a literal.
"""

from __future__ import annotations

import json
import os
import pathlib
import re

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from ekstrain.infra import render
from ekstrain.infra.verify import policy as policy_check
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import SECRET_PLACEHOLDER, load_flat, read_stack_file

SECURE = {"secure": "v1:AAABAGV4YW1wbGUtY2lwaGVydGV4dA=="}


def _without(text: str, key: str) -> str:
    """The stack file's text without ``key`` (and its indented value lines), whether the seed sets it or not."""
    return re.sub(rf"(?m)^  {re.escape(key)}:.*\n(^    .*\n)*", "", text)


def _prod_with(tmp_path: pathlib.Path, extra: str) -> pathlib.Path:
    path = tmp_path / "Pulumi.prod.yaml"
    text = _without((REPO / "Pulumi.prod.yaml").read_text(), "ekstrain:jupyterhubClientSecret")
    path.write_text(text.rstrip("\n") + "\n" + extra)
    return path


def test_nested_secure_values_become_placeholders_and_mark_the_key_secret(tmp_path: pathlib.Path) -> None:
    """GIVEN `config set --secret --path ekstrain:jupyterhub.auth.clientId` THEN the nested value is a
    placeholder string (was: a mapping, refused as "not a string") and the key is secret."""
    path = _prod_with(tmp_path, "  ekstrain:jupyterhubClientSecret:\n    secure: v1:abc\n")
    text = path.read_text().replace(
        "      clientId: Iv1.0123456789abcdef\n", "      clientId:\n        secure: v1:xyz\n"
    )
    assert "secure: v1:xyz" in text, "the seed's clientId line moved: update the test"
    path.write_text(text)
    flat, secrets = read_stack_file(path)
    assert sorted(secrets) == ["ekstrain:jupyterhub", "ekstrain:jupyterhubClientSecret"]
    assert flat["ekstrain:jupyterhubClientSecret"] == SECRET_PLACEHOLDER
    assert json.loads(flat["ekstrain:jupyterhub"])["auth"]["clientId"] == SECRET_PLACEHOLDER
    cfg, _ = load_flat(flat, path.name)
    assert cfg.jupyterhub.auth.client_id == SECRET_PLACEHOLDER


@settings(max_examples=int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "50")), deadline=None)
@given(
    path=st.lists(
        st.one_of(st.integers(0, 2), st.text("abcXYZ-_", min_size=1, max_size=8).filter(lambda k: k != "secure")),
        max_size=4,
    )
)
def test_a_secure_mapping_anywhere_is_a_placeholder(tmp_path_factory: pytest.TempPathFactory, path: list) -> None:
    """Property: wherever `--path --secret` puts the secure mapping, the reader yields the placeholder there."""
    value: object = SECURE
    expected: object = SECRET_PLACEHOLDER
    for step in reversed(path):
        if isinstance(step, int):
            value, expected = [None] * step + [value], [None] * step + [expected]
        else:
            value, expected = {step: value}, {step: expected}
    file = tmp_path_factory.mktemp("s") / "Pulumi.x.yaml"
    file.write_text(json.dumps({"config": {"ekstrain:thing": value}}))
    flat, secrets = read_stack_file(file)
    assert secrets == ["ekstrain:thing"]
    got = flat["ekstrain:thing"]
    assert (got if isinstance(expected, str) else json.loads(got)) == expected


def test_a_secure_mapping_with_other_keys_is_refused_naming_the_nested_key(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(json.dumps({"config": {"ekstrain:jupyterhub": {"auth": {"clientId": {**SECURE, "x": 1}}}}}))
    with pytest.raises(ConfigError) as caught:
        read_stack_file(path)
    assert caught.value.issues[0].key.endswith("config.ekstrain:jupyterhub.auth.clientId")
    assert "--path" in caught.value.issues[0].fix


def test_a_config_secret_in_a_kubernetes_secret_passes_the_policy_pack(tmp_path: pathlib.Path) -> None:
    """GIVEN prod with the client secret set by `pulumi config set --secret` WHEN the program runs offline
    THEN the Secret jupyterhub-oauth holds it as a Pulumi secret and no policy calls it a literal
    (was: credentials-from-secret-sources, a mandatory violation, so `make render` exited 1)."""
    path = _prod_with(tmp_path, "  ekstrain:jupyterhubClientSecret:\n    secure: v1:abc\n")
    flat, secrets = read_stack_file(path)
    rec = render.run_program(flat, secrets, "prod")
    oauth = [r for r in rec.records if r.type == "kubernetes:core/v1:Secret" and "oauth" in r.name]
    assert oauth and all(r.secret_inputs for r in oauth)
    check = policy_check.check_recording(rec, "prod")
    assert [p for p in check.problems if "credentials-from-secret-sources" in p] == []


def test_a_secret_in_a_typed_setting_is_explained_not_called_the_wrong_type(tmp_path: pathlib.Path) -> None:
    """GIVEN `config set --secret --path ekstrain:partitions[0].maxNodes 4` THEN the offline render says it cannot
    check a secret there (was: "Input should be a valid integer (got 'offline-secret-placeholder')")."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text((REPO / "Pulumi.dev.yaml").read_text().replace("maxNodes: 2", "maxNodes:\n        secure: v1:x"))
    flat, secrets = read_stack_file(path)
    assert secrets == ["ekstrain:partitions"]
    with pytest.raises(ConfigError) as caught:
        load_flat(flat, path.name)
    issue = caught.value.issues[0]
    assert issue.key == "ekstrain:partitions[0] (gpu-small).maxNodes"
    assert "cannot decrypt" in issue.problem and "without --secret" in issue.fix


@pytest.mark.parametrize("secret", ["123", "null", "true", "[1]", '{"a": 1}', "0.5"])
def test_text_settings_from_the_engine_stay_text(secret: str) -> None:
    """GIVEN `pulumi config set --secret ekstrain:jupyterhubClientSecret 123` THEN the engine hands over the text
    "123" and the program keeps it as the secret (was: JSON-decoded to 123, refused as "not a string", or
    "null" read as no secret at all)."""
    flat, _ = read_stack_file(REPO / "Pulumi.dev.yaml")
    cfg, _ = load_flat({**flat, "ekstrain:jupyterhubClientSecret": secret}, "Pulumi.dev.yaml")
    assert cfg.jupyterhub_client_secret == secret


def test_a_null_text_setting_in_the_stack_file_is_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "Pulumi.dev.yaml"
    dev = _without((REPO / "Pulumi.dev.yaml").read_text(), "ekstrain:jupyterhubClientSecret")
    path.write_text(dev + "  ekstrain:jupyterhubClientSecret: null\n")
    with pytest.raises(ConfigError, match="has no value"):
        read_stack_file(path)


def test_the_legacy_namespace_config_name_form_is_read_as_pulumi_reads_it(tmp_path: pathlib.Path) -> None:
    """Pulumi's config.ParseKey reads `ekstrain:config:cluster` as `ekstrain:cluster` (old stack files)."""
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text((REPO / "Pulumi.dev.yaml").read_text().replace("  ekstrain:cluster:", "  ekstrain:config:cluster:"))
    flat, _ = read_stack_file(path)
    assert "ekstrain:cluster" in flat and "ekstrain:config:cluster" not in flat
    assert load_flat(flat, path.name)[0].cluster.name == "ekstrain-dev"
    both = path.read_text() + "  ekstrain:cluster: {name: x}\n"
    path.write_text(both)
    with pytest.raises(ConfigError, match="legacy spelling"):
        read_stack_file(path)


def test_plaintext_credentials_and_secrets_written_as_plain_values_are_named(tmp_path: pathlib.Path) -> None:
    """Under `pulumi up` the engine says which keys are secrets: a plaintext client secret, and a secret the
    program writes into resources as a plain value (only the client secret is handled as a credential), warn."""
    flat, _ = read_stack_file(REPO / "Pulumi.dev.yaml")
    flat = {**flat, "ekstrain:jupyterhubClientSecret": "pw"}
    _, warnings = load_flat(flat, "Pulumi.dev.yaml", secret_keys={"ekstrain:cluster"})
    assert any(w.startswith("ekstrain:jupyterhubClientSecret: set in plain text") for w in warnings)
    assert any(w.startswith("ekstrain:cluster: holds a secret") for w in warnings)
    _, quiet = load_flat(flat, "Pulumi.dev.yaml", secret_keys={"ekstrain:jupyterhubClientSecret"})
    assert not any("plain text" in w or "holds a secret" in w for w in quiet)


def test_the_program_reads_the_engines_secret_keys(tmp_path: pathlib.Path) -> None:
    """infra/__main__.py (`pulumi up`) passes the engine's secret keys: a stack-file secret raises no warning."""
    from pulumi.runtime import config as runtime_config

    from ekstrain.stacks.loader import load

    path = _prod_with(tmp_path, "  ekstrain:jupyterhubClientSecret:\n    secure: v1:abc\n")
    flat, secrets = read_stack_file(path)
    before = dict(runtime_config.CONFIG.get())
    runtime_config.set_all_config(flat, secret_keys=secrets)
    try:
        _, warnings = load("prod")
        runtime_config.set_all_config(flat, secret_keys=[])
        _, plain = load("prod")
    finally:
        runtime_config.set_all_config(before, secret_keys=[])
    assert not any("plain text" in w for w in warnings)
    assert any(w.startswith("ekstrain:jupyterhubClientSecret: set in plain text") for w in plain)
