"""The Slurm login node's SSH keys as the stack config names them (inline keys plus a key file).

Lives with the config so that both the rules (``stacks/rules.py``: the file must exist) and the
values (``assembly/schedulers/slurm.py``: the keys go into the LoginSet) read it the same way.
"""

from __future__ import annotations

import pathlib

from stacks.models import StackConfig

PROJECT_DIR = pathlib.Path(__file__).resolve().parents[1]


def keys_file(cfg: StackConfig) -> pathlib.Path | None:
    name = cfg.schedulers.slurm.login_ssh_authorized_keys_file
    return None if name is None else PROJECT_DIR / name


def authorized_keys(cfg: StackConfig) -> list[str]:
    """Root's keys on the login node: the listed ones, then the key file's (blank and # lines skipped)."""
    keys = list(cfg.schedulers.slurm.login_ssh_authorized_keys)
    path = keys_file(cfg)
    if path is not None and path.exists():
        keys += [
            line.strip() for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")
        ]
    return keys
