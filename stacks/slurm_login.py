"""The Slurm login node's SSH keys as the stack config names them (inline keys plus a key file).

Lives with the config so that both the rules (``stacks/rules/schedulers.py``: the file must be a readable key file
inside the project) and the values (``assembly/schedulers/slurm.py``: the keys go into the LoginSet) read
it the same way.

The file's lines end up in root's ``authorized_keys`` and in the Helm values (the Pulumi state), so only a
regular file inside the project directory is read (no absolute path, no ``..``, no symlink that leaves
the project: under ``pulumi up`` files such as ``/proc/self/environ`` hold credentials), and every line
must be one OpenSSH public key, checked like the inline keys. Problems never quote the file's content.
"""

from __future__ import annotations

import pathlib

from ekstrain.files.paths import project_dir
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.models.schedulers import ssh_public_key_problem

PROJECT_DIR: pathlib.Path | None = None
"""Where Pulumi.yaml is; key-file paths are relative to it. @default None: :func:`ekstrain.files.paths.project_dir`
(the render's stack-file directory, or the nearest ``Pulumi.yaml`` from the working directory up), never the
installed package."""
MAX_KEY_FILE_BYTES = 64 * 1024
"""An authorized_keys file of a few hundred keys; bounds what is read."""
KEY = "ekstrain:schedulers.slurm.loginSshAuthorizedKeysFile"


def project_root(root: pathlib.Path | None = None) -> pathlib.Path:
    """``root``, else :data:`PROJECT_DIR`, else the project directory."""
    return root or PROJECT_DIR or project_dir()


def keys_file(cfg: StackConfig, root: pathlib.Path | None = None) -> pathlib.Path | None:
    name = cfg.schedulers.slurm.login_ssh_authorized_keys_file
    return None if name is None else project_root(root) / name


def read_keys_file(path: pathlib.Path, root: pathlib.Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """(keys, problems as (problem, fix)) of an authorized_keys file; blank and ``#`` lines skipped."""
    base = project_root(root).resolve()
    fix_place = f"keep the key file inside the project directory {base} (e.g. security/slurm-login.pub)"
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        return [], [(f"{path} does not exist", "create it (one OpenSSH public key per line) or remove the key")]
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        return [], [(f"{path} cannot be resolved ({exc})", fix_place)]
    if not real.is_relative_to(base):
        return [], [(f"{path} leads outside the project directory (to {real})", fix_place)]
    if not real.is_file():
        return [], [(f"{path} is not a regular file", "point it at an authorized_keys file")]
    try:
        with real.open("rb") as fh:
            data = fh.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        return [], [(f"{path} cannot be read ({exc.strerror or exc})", "check the file's permissions")]
    if len(data) > MAX_KEY_FILE_BYTES:
        return [], [(f"{path} is larger than {MAX_KEY_FILE_BYTES // 1024} KiB", "list only public keys in it")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], [(f"{path} is not UTF-8 text", "an authorized_keys file is text: one public key per line")]
    keys: list[str] = []
    problems: list[tuple[str, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip(" \t\r")
        if not stripped or stripped.startswith("#"):
            continue
        if "PRIVATE KEY" in stripped:
            problems.append(
                (
                    f"{path} line {number} is part of a private key",
                    "remove the private key from the file (and rotate it: it was on disk in the project); "
                    "list public keys (id_ed25519.pub) only",
                )
            )
            break
        problem = ssh_public_key_problem(stripped)
        if problem:
            problems.append((f"{path} line {number}: {problem}", "write one public key per line: ssh-ed25519 AAAA..."))
        else:
            keys.append(stripped)
    return keys, problems


def authorized_keys(cfg: StackConfig, root: pathlib.Path | None = None) -> list[str]:
    """Root's keys on the login node: the listed ones, then the key file's (never a line that failed a check)."""
    keys = list(cfg.schedulers.slurm.login_ssh_authorized_keys)
    path = keys_file(cfg, root)
    if path is not None:
        file_keys, problems = read_keys_file(path, root)
        if problems:  # stacks.rules refuses such a stack before anything is built
            raise ValueError(f"{KEY}: {problems[0][0]}")
        keys += file_keys
    return keys
