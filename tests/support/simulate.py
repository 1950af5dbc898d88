"""The simulator's fixtures (a pytest plugin, tests/conftest.py): prod rendered with the charts the simulator
reads, and the empty cluster loaded from it. Every module that simulates against prod shares the one render."""

from __future__ import annotations

import pathlib

import pytest

from ekstrain.cli import render as render_cli
from ekstrain.simulate import charts, engine
from ekstrain.simulate.load import load
from ekstrain.stacks.loader import load_flat, read_stack_file
from ekstrain.tooling import validation
from support.renders import REPO, Renders

HELM = charts.helm_binary()
CHARTS = ("device-plugins--", "slurm--slurm", "volcano--")
"""The charts whose objects the simulator reads (device plugins, the Slurm operator's NodeSets, Volcano)."""


def add_charts(root: pathlib.Path) -> pathlib.Path:
    """Render into ``root`` (a render's output) the charts the simulator reads."""
    upstream = validation.upstream_dir()
    assert upstream is not None and HELM is not None
    assert charts.render_missing(root, pathlib.Path(upstream) / "chart-src", HELM, CHARTS) == []
    return root


def build(root: pathlib.Path, stack_file: pathlib.Path | None = None) -> pathlib.Path:
    """A prod render of ``stack_file`` (default: the shipped one) at ``root``, with the simulator's charts."""
    args = ["--stack", "prod", "--out", str(root)]
    if stack_file is not None:
        args += ["--stack-file", str(stack_file)]
    assert render_cli.main(args) == 0
    return add_charts(root)


@pytest.fixture(scope="session")
def prod_build(tmp_path_factory: pytest.TempPathFactory, renders: Renders) -> pathlib.Path:
    """The session's prod render, copied, with the charts the simulator reads added: read it, never write into it."""
    if HELM is None or validation.upstream_dir() is None:
        pytest.skip("needs a helm binary and the upstream chart archives")
    return add_charts(renders.copy("prod", tmp_path_factory.mktemp("simulate") / "prod"))


@pytest.fixture(scope="module")
def cluster(prod_build: pathlib.Path) -> engine.Cluster:
    """The empty prod cluster the simulator starts from (one per module: a test may replace its nodes)."""
    flat, _ = read_stack_file(REPO / "Pulumi.prod.yaml")
    prod = load_flat(flat, "prod")[0]
    return load(prod_build, list(prod.cluster.system_node_group.instance_types))
