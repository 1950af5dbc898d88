"""infra/verify/emitted.py: the files the render writes hold no secret value (literal credentials, Secret data,
the stack's secure: values, anything the program passed as a Pulumi secret), and the Argo CD Applications reference
Secrets instead of carrying values."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ekstrain.files import filememo
from ekstrain.infra.verify import emitted


def _write(out: pathlib.Path, rel: str, doc: object) -> None:
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))


def test_redact_replaces_or_removes_secret_paths_and_leaves_the_input_alone() -> None:
    values = {
        "hub": {
            "cookieSecret": "c0ffee",
            "existingSecret": "jupyterhub-keys",
            "config": {"CryptKeeper": {"keys": ["k"]}},
        },
        "proxy": {"secretToken": "t0k3n", "chp": {}},
    }
    paths = ["hub.cookieSecret", "hub.config.CryptKeeper.keys[0]", "proxy.secretToken"]
    assert emitted.redact(values, paths) == {
        "hub": {
            "cookieSecret": "[secret]",
            "existingSecret": "jupyterhub-keys",
            "config": {"CryptKeeper": {"keys": ["[secret]"]}},
        },
        "proxy": {"secretToken": "[secret]", "chp": {}},
    }
    # an Application leaves them out: what they emptied goes too, what was empty stays
    assert emitted.redact(values, paths, remove=True) == {
        "hub": {"existingSecret": "jupyterhub-keys"},
        "proxy": {"chp": {}},
    }
    assert values["hub"]["cookieSecret"] == "c0ffee"


def test_a_clean_output_passes(tmp_path: pathlib.Path) -> None:
    _write(
        tmp_path,
        "manifests/a/Secret-ns-x.yaml",
        emitted.redact_secret_object(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "stringData": {"password": "hunter22"}}
        ),
    )
    _write(tmp_path, "helm/a--r.yaml", {"values": {"auth": {"existingSecret": "db", "passwordSecretKey": "pw"}}})
    _write(tmp_path, "manifests/a/EC2NodeClass-x.yaml", {"spec": {"metadataOptions": {"httpTokens": "required"}}})
    check = emitted.scan(tmp_path, ["offline-secret-placeholder"])
    assert (check.checked, check.problems) == (3, [])


def test_each_seeded_leak_is_found_naming_file_and_path(tmp_path: pathlib.Path) -> None:
    # GIVEN an Application with hub.cookieSecret inline (what the JupyterHub Application once carried),
    # a Secret written with its data, and a stack secure: value copied into resources.yaml
    _write(
        tmp_path,
        "argocd/Application-argocd-jupyterhub.yaml",
        {
            "kind": "Application",
            "spec": {"source": {"helm": {"valuesObject": {"hub": {"cookieSecret": "ab12cd34ef56"}}}}},
        },
    )
    _write(tmp_path, "charts/x--y/Secret-ns-s.yaml", {"apiVersion": "v1", "kind": "Secret", "data": {"k": "c2VjcmV0"}})
    (tmp_path / "resources.yaml").write_text("- inputs:\n    clientSecretValue: offline-secret-placeholder\n")
    # WHEN scanned
    problems = emitted.scan(tmp_path, ["offline-secret-placeholder"]).problems
    # THEN each is named
    assert (
        "argocd/Application-argocd-jupyterhub.yaml: spec.source.helm.valuesObject.hub.cookieSecret: a literal value "
        "under a secret-named key; reference a Secret"
    ) in problems
    assert (
        "charts/x--y/Secret-ns-s.yaml: data.k: a literal value under a secret-named key; reference a Secret" in problems
    )
    assert "resources.yaml: a secret value (stack secure: or Pulumi secret) in plaintext" in problems


def test_prod_render_writes_no_secret_and_its_hub_application_references_the_keys_secret() -> None:
    from conftest import run_stack, stack_config

    from ekstrain.infra import offline

    rec = run_stack(stack_config("prod"))
    release = rec.one("kubernetes:helm.sh/v3:Release", "jupyterhub")
    # Pulumi's release: every generated key a Pulumi secret, and hub.existingSecret
    assert {"values.proxy.secretToken", "values.hub.cookieSecret", "values.hub.config.CryptKeeper.keys[0]"} <= set(
        release.secret_inputs
    )
    assert offline.plain(release.inputs)["values"]["hub"]["existingSecret"] == "jupyterhub-keys"
    keys = rec.one("kubernetes:core/v1:Secret", "jupyterhub-keys")
    assert keys.inputs["metadata"] == {"name": "jupyterhub-keys", "namespace": "jupyterhub"}
    assert sorted(keys.inputs["stringData"]) == ["hub.config.CryptKeeper.keys", "hub.config.JupyterHub.cookie_secret"]
    assert "stringData" in keys.secret_inputs


def test_a_file_text_scanned_again_is_answered_from_the_first_scan(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same text (in any file, under any name) is parsed once per process and answers as it did; changed text is
    parsed again; text that is no YAML answers nothing, as before."""
    monkeypatch.setattr(emitted, "_literals", filememo.Recent(emitted.LITERALS_KEEP))
    parsed: list[str] = []
    real = emitted.yaml.load_all
    monkeypatch.setattr(emitted.yaml, "load_all", lambda text, **k: parsed.append(text) or real(text, **k))
    leak = {"kind": "Secret", "apiVersion": "v1", "data": {"k": "c2VjcmV0"}}
    _write(tmp_path, "charts/a--b/Secret-ns-s.yaml", leak)
    _write(tmp_path, "charts/c--d/Secret-ns-t.yaml", leak)
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "broken.yaml").write_text("a: [\n")
    first = emitted.scan(tmp_path, []).problems
    assert first == [
        "charts/a--b/Secret-ns-s.yaml: data.k: a literal value under a secret-named key; reference a Secret",
        "charts/c--d/Secret-ns-t.yaml: data.k: a literal value under a secret-named key; reference a Secret",
    ]
    assert len(parsed) == 2  # the leak's text once, the broken file once
    assert emitted.scan(tmp_path, []).problems == first and len(parsed) == 2
    _write(tmp_path, "charts/c--d/Secret-ns-t.yaml", {**leak, "data": {}})
    assert emitted.scan(tmp_path, []).problems == first[:1] and len(parsed) == 3
