"""schedulers.slurm.loginSshAuthorizedKeysFile: only a file inside the project, every line one public key.

Its lines go into root's authorized_keys and the Helm values (the state): a path to /etc/passwd,
/proc/self/environ (credentials under `pulumi up`), ``../`` or a symlink out of the project is refused, and
so is every line that is not one OpenSSH public key (options, private-key blocks, garbage). The problem
names the line, never its content.
"""

from __future__ import annotations

import base64
import collections
import datetime as dt
import os
import pathlib
import struct
import time
from typing import Any

import pytest
from conftest import stack_sections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ekstrain.stacks import slurm_login
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.stacks.models.schedulers import SSH_KEY_TYPES, ssh_public_key_problem

KEY_FIELD = "ekstrain:schedulers.slurm.loginSshAuthorizedKeysFile"
EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "100"))
STATS: collections.Counter[str] = collections.Counter()
SLOWEST = [0.0]


def ed25519(seed: int = 0) -> str:
    blob = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes((seed + i) % 256 for i in range(32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} user{seed}@example"


def _load(path_value: str) -> list[tuple[str, str]]:
    """Issues (key, problem) for the prod stack with the key file set to ``path_value``; [] when valid."""
    sections = stack_sections("prod")
    sections["schedulers"]["slurm"].update(loginSsh=True, loginSshAuthorizedKeysFile=path_value)
    try:
        parse(sections, "Pulumi.test.yaml", today=dt.date(2026, 12, 3))
    except ConfigError as exc:
        return [(i.key, i.problem) for i in exc.issues]
    return []


@pytest.fixture
def project(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.setattr(slurm_login, "PROJECT_DIR", root)
    return root


@pytest.mark.parametrize("value", ["/etc/passwd", "/proc/self/environ", "../secrets.pub", "a/../../x", "./k", "a//b"])
def test_paths_outside_the_project_are_refused_by_shape(value: str) -> None:
    issues = _load(value)
    assert [k for k, _ in issues] == [KEY_FIELD], issues


def test_a_symlink_out_of_the_project_is_refused(project: pathlib.Path, tmp_path: pathlib.Path) -> None:
    outside = tmp_path / "outside.pub"
    outside.write_text(ed25519() + "\n")
    (project / "keys.pub").symlink_to(outside)
    (project / "env").symlink_to("/proc/self/environ")
    assert "leads outside the project directory" in _load("keys.pub")[0][1]
    assert "leads outside the project directory" in _load("env")[0][1]
    (project / "inside.pub").write_text(ed25519() + "\n")
    (project / "link.pub").symlink_to(project / "inside.pub")
    assert _load("link.pub") == []


def test_private_keys_options_and_garbage_are_refused_without_quoting_them(project: pathlib.Path) -> None:
    private = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----\n"
    )
    (project / "private.pub").write_text(private)
    (project / "options.pub").write_text(f'command="/bin/sh -c id" {ed25519()}\n')
    (project / "secret.pub").write_text("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG\n")
    (project / "binary.pub").write_bytes(b"\xff\xfe\x00")
    (project / "dir.pub").mkdir()
    for name, words in (
        ("private.pub", "private key"),
        ("options.pub", "line 1: does not start with a key type"),
        ("secret.pub", "line 1"),
        ("binary.pub", "not UTF-8"),
        ("dir.pub", "not a regular file"),
        ("missing.pub", "does not exist"),
    ):
        issues = _load(name)
        assert issues and all(k == KEY_FIELD for k, _ in issues), (name, issues)
        assert words in issues[0][1], (name, issues)
        assert "wJalr" not in str(issues) and "b3BlbnNz" not in str(issues)


def test_a_key_file_of_valid_keys_reaches_the_login_node(project: pathlib.Path) -> None:
    from conftest import cfg_with

    from ekstrain.assembly.schedulers import slurm

    keys = [ed25519(i) for i in range(3)]
    (project / "team.pub").write_text("# team\n\n" + "\n".join(keys) + "\r\n")
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(loginSsh=True, loginSshAuthorizedKeysFile="team.pub"))
    assert slurm.slurm_values(cfg)["loginsets"]["main"]["rootSshAuthorizedKeys"] == "\n".join(keys)


_LINE = st.one_of(
    st.builds(ed25519, st.integers(0, 255)),
    st.text(max_size=120),
    st.builds(lambda t, b: f"{t} {b}", st.sampled_from(SSH_KEY_TYPES), st.text("ABCabc0123+/=", max_size=80)),
    st.builds(lambda o, k: f"{o} {k}", st.sampled_from(['from="*"', "no-pty", 'command="id"']), st.just(ed25519())),
    st.just("-----BEGIN RSA PRIVATE KEY-----"),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=6))
def test_key_file_lines_property(project: pathlib.Path, lines: list[str]) -> None:
    """Property: the file is accepted exactly when every non-blank, non-# line is a public key; a refusal
    names the file key and never echoes a line."""
    (project / "k.pub").write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    text = (project / "k.pub").read_bytes().decode("utf-8", errors="replace")
    stripped = [x.strip(" \t\r") for x in text.split("\n")]
    meaningful = [x for x in stripped if x and not x.startswith("#")]
    valid = all(ssh_public_key_problem(x) is None and "PRIVATE KEY" not in x for x in meaningful)
    started = time.perf_counter()
    keys, problems = slurm_login.read_keys_file(project / "k.pub")
    seconds = time.perf_counter() - started
    STATS["examples"] += 1
    STATS["valid" if not problems else "refused"] += 1
    STATS["accepted-invalid"] += int(not problems and not valid)
    STATS["false-rejections"] += int(bool(problems) and valid)
    if problems:
        SLOWEST[0] = max(SLOWEST[0], seconds)
    assert (not problems) == valid
    if valid:
        assert keys == meaningful
    for problem, _ in problems:
        listed = ", ".join(SSH_KEY_TYPES)  # the problem names the accepted key types
        assert not any(len(x) > 12 and x in problem and x not in listed for x in meaningful)


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    if EXAMPLES >= 1000:
        c = STATS
        print(
            f"\nkey-file lines | {c['examples']} | {c['valid']} | {c['refused']} | 0 | 0 | {c['accepted-invalid']} | "
            f"{c['false-rejections']} | {SLOWEST[0] * 1000:.1f} ms"
        )
