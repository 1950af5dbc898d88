"""Pulumi entry point (``main: infra/`` in Pulumi.yaml): load config, compose, export."""

import importlib.util
import pathlib
import sys

# `pulumi up` runs this file with infra/ as the script directory; when ekstrain is not installed into the
# virtualenv, import it from the checkout this file is in. Never add a directory when it is installed: that
# would put the package's own layers (components, infra, ...) at the top of sys.path.
if importlib.util.find_spec("ekstrain") is None:
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
    try:
        outputs = build(cfg)
    except ConfigError as exc:
        # raised by build() before its first resource: the files it applies (the MPIJob CRD) are missing
        raise pulumi.RunError(str(exc)) from None
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs


OUTPUTS = main()
