"""Facts that drift: numbers in the stack files and the docs that code computes, checked against it.

One table: (file, text with ``{}`` where the computed value goes, the value). A row fails when the
code's answer changes and the prose does not (or the prose is reworded: then update the row).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest
import yaml
from conftest import REPO, stack_config

from ekstrain.assembly import observability
from ekstrain.cli.main import main
from ekstrain.facts import catalog, versions
from ekstrain.layout import efa, storage_sizing
from ekstrain.layout.partitions import layout_nodes, shape

GIB = storage_sizing.GIB


@cache
def prod_checkpoint_plan() -> tuple[str, int]:
    """The planner command Pulumi.prod.yaml's comment cites, and its checkpoint_bytes."""
    text = (REPO / "Pulumi.prod.yaml").read_text()
    (command,) = re.findall(r"#\s*`(ekstrain plan evaluate [^`]+)`", text)
    return command, int(_planner_json(shlex.split(command)[1:])["checkpoint_bytes"])


def _planner_json(argv: list[str]) -> dict[str, Any]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def prod_checkpoint_section() -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "Pulumi.prod.yaml").read_text())
    section: dict[str, Any] = doc["config"]["ekstrain:storage"]["checkpoint"]
    return section


def test_prod_checkpoint_size_is_the_planners_checkpoint_bytes_rounded_up_to_gib() -> None:
    # GIVEN the planner command Pulumi.prod.yaml cites for storage.checkpoint.sizeGiB
    command, checkpoint_bytes = prod_checkpoint_plan()
    assert "--model llama3-70b" in command and command.endswith("--json")
    # WHEN compared with the stack value and the comment's figure
    comment = (REPO / "Pulumi.prod.yaml").read_text()
    # THEN sizeGiB is checkpoint_bytes in whole GiB, rounded up (a save never holds less than the plan)
    assert prod_checkpoint_section()["sizeGiB"] == math.ceil(checkpoint_bytes / GIB) == 920
    assert f"checkpoint_bytes = {checkpoint_bytes}" in comment


def _prod_fsx() -> tuple[Any, storage_sizing.SaveReport]:
    cfg = stack_config("prod")
    fsx = cfg.storage.fsx
    assert cfg.storage.checkpoint.size_gib is not None
    rep = storage_sizing.report(
        storage_sizing.gib_to_bytes(cfg.storage.checkpoint.size_gib),
        cfg.storage.checkpoint.target_save_seconds,
        fsx.deployment_type,
        fsx.storage_capacity_gib,
        fsx.per_unit_storage_throughput,
    )
    return cfg, rep


def _recommended() -> storage_sizing.Option:
    rec = _prod_fsx()[1].recommended
    assert rec is not None
    return rec


def _trainium_layouts() -> str:
    p = next(p for p in stack_config("prod").partitions if p.name == "trainium")
    s = shape(p.name, p.accelerator, p.instance_types, p.efa)
    pools = layout_nodes(s, p.max_nodes)
    (t1, n1), (t2, n2) = pools
    assert n1 == n2
    efa = {t.name: s.efa_for(t.name) for t in s.instance_types}
    return f"`{t1.name}` {efa['trn1.32xlarge']} EFA and `{t2.name}` {efa['trn1n.32xlarge']}, {n1} nodes each"


def _prod_full_size_per_hour() -> str:
    """Every prod partition at maxNodes, cheapest-to-dearest instance type of each."""
    ranges = [catalog.price_range(p.instance_types) for p in stack_config("prod").partitions]
    parts = stack_config("prod").partitions
    lo = sum((r[0] or 0) * p.max_nodes for r, p in zip(ranges, parts, strict=True))
    hi = sum((r[1] or 0) * p.max_nodes for r, p in zip(ranges, parts, strict=True))
    return f"${lo:,.0f}-{hi:,.0f}"


def _prometheus() -> str:
    gib = observability.storage_gib(stack_config("prod"))
    return f"prod: {gib} GiB, `retentionSize` {int(gib * observability.RETENTION_SIZE_FRACTION)} GiB"


FACTS: list[tuple[str, str, Callable[[], object]]] = [
    # -- Kubernetes and pins (ekstrain/facts/versions.py) --
    ("docs/overview.md", "On 2026-12-03: {} is the default", lambda: versions.DEFAULT_KUBERNETES_VERSION),
    (
        "docs/overview.md",
        "CoreDNS and kube-proxy builds {},",
        lambda: versions.addon_version("coredns", versions.DEFAULT_KUBERNETES_VERSION),
    ),
    (
        "docs/overview.md",
        ", {}; the others: `ekstrain/facts/versions.py`",
        lambda: versions.addon_version("kube-proxy", versions.DEFAULT_KUBERNETES_VERSION),
    ),
    ("docs/overview.md", "(`amiAliasVersion`, 1.35: {})", lambda: versions.AMI_ALIAS_VERSIONS["1.35"]),
    ("docs/overview.md", "installs zero-to-jupyterhub {} in", lambda: versions.DEFAULT_CHARTS["jupyterhub"].version),
    ("docs/overview.md", "(chart argo-cd {},", lambda: versions.DEFAULT_CHARTS["argo-cd"].version),
    # -- partitions (ekstrain/facts/catalog.py, EFA layouts) --
    ("docs/overview.md", "prod's trainium:\n{}", _trainium_layouts),
    (
        "docs/overview.md",
        "gpu-h100: p5 x{},",
        lambda: next(p.max_nodes for p in stack_config("prod").partitions if p.name == "gpu-h100"),
    ),
    (
        "docs/partitions.md",
        "{} efa-only interfaces on p5en",
        lambda: sum(i.interface_type == efa.EFA_ONLY for i in efa.efa_layout(catalog.CATALOG["p5en.48xlarge"])),
    ),
    # -- checkpoint save time (planner + ekstrain/layout/storage_sizing.py) --
    ("docs/overview.md", "a {} GiB checkpoint (the planner's", lambda: prod_checkpoint_section()["sizeGiB"]),
    (
        "docs/overview.md",
        "(7200 GiB at 500 MB/s/TiB = {} MB/s)",
        lambda: f"{_prod_fsx()[1].configured.throughput_mb_s:,.0f}",
    ),
    (
        "docs/overview.md",
        "takes about {} s, within the 300 s target",
        lambda: f"{_prod_fsx()[1].configured.save_seconds:,.0f}",
    ),
    (
        "docs/overview.md",
        "is {}.",
        lambda: (
            f"{_recommended().capacity_gib} GiB at {_recommended().per_unit_throughput} "
            f"MB/s/TiB ({_recommended().save_seconds:,.0f} s)"
        ),
    ),
    ("docs/storage.md", "14 bytes/parameter) = {} bytes", lambda: f"{prod_checkpoint_plan()[1]:,}"),
    ("docs/storage.md", "--checkpoint-bytes {} --target-seconds", lambda: prod_checkpoint_plan()[1]),
    ("docs/storage.md", "**{} s per save**", lambda: f"{_prod_fsx()[1].configured.save_seconds:,.0f}"),
    (
        "docs/storage.md",
        "cheapest configuration that meets it is {}/month)",
        lambda: (
            f"{_recommended().capacity_gib} GiB @ {_recommended().per_unit_throughput} MB/s/TiB "
            f"({_recommended().save_seconds:,.0f} s, about ${_recommended().usd_per_month:,.0f}"
        ),
    ),
    (
        "docs/storage.md",
        "{}\n```",
        lambda: (
            storage_sizing.report(prod_checkpoint_plan()[1], 300, "PERSISTENT_2", 4800, 250)
            .summary()
            .replace(" -> ", "\n-> ")
        ),
    ),
    # -- Slurm capacity (catalog prices x prod partitions, schedulers.slurm.nodesetReplicas) --
    ("docs/schedulers.md", "at full size: roughly {} per hour on demand", _prod_full_size_per_hour),
    (
        "Pulumi.prod.yaml",
        "nodesetReplicas: {{gpu-a100: {}}}",
        lambda: stack_config("prod").schedulers.slurm.nodeset_replicas["gpu-a100"],
    ),
    # -- observability sizing (assembly/observability.py) --
    ("docs/overview.md", "{}),", _prometheus),
    (
        "docs/platform.md",
        ": {} gp3, `retentionSize: ",
        lambda: f"{observability.storage_gib(stack_config('prod'))} GiB",
    ),
]


def stale(facts: list[tuple[str, str, Callable[[], object]]], read: Callable[[str], str]) -> list[str]:
    """Rows whose text, with the computed value filled in, is not in the file (whitespace-insensitive)."""

    def norm(s: str) -> str:
        return " ".join(s.split())

    return [
        f"{path}: expected {norm(text.format(value()))!r}"
        for path, text, value in facts
        if norm(text.format(value())) not in norm(read(path))
    ]


def test_docs_numbers_match_the_code() -> None:
    assert stale(FACTS, lambda p: (REPO / p).read_text()) == []


def test_a_stale_number_is_reported() -> None:
    # GIVEN a README whose save time no longer matches the sizing model
    readme = (REPO / "docs/overview.md").read_text()
    seconds = f"{_prod_fsx()[1].configured.save_seconds:,.0f}"
    assert f"takes about {seconds} s" in readme
    changed = readme.replace(f"takes about {seconds} s", "takes about 999 s")
    # WHEN checked THEN that row, and only it, is stale
    assert stale(FACTS, lambda p: changed if p == "docs/overview.md" else (REPO / p).read_text()) == [
        f"docs/overview.md: expected 'takes about {seconds} s, within the 300 s target'"
    ]


@pytest.mark.parametrize("path", sorted({p for p, _, _ in FACTS}))
def test_every_checked_file_exists(path: str) -> None:
    assert (REPO / path).is_file()
