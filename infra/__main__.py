"""Pulumi entry point (``main: infra/`` in Pulumi.yaml): load config, compose, export."""

import pathlib
import sys

# `pulumi up` runs this file with infra/ as the script directory; make the repo's packages
# importable even when the project is not installed into the virtualenv.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import pulumi  # noqa: E402

from ekstrain.infra.program import build  # noqa: E402
from ekstrain.stacks.errors import ConfigError  # noqa: E402
from ekstrain.stacks.loader import load  # noqa: E402


def main() -> dict:
    try:
        cfg, warnings = load(pulumi.get_stack())
    except ConfigError as exc:
        # RunError: Pulumi prints the message without a traceback; nothing is registered yet.
        raise pulumi.RunError(str(exc)) from None
    for warning in warnings:
        pulumi.log.warn(warning)
    outputs = build(cfg)
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs


OUTPUTS = main()
