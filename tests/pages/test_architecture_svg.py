"""docs/architecture.svg is prod's architecture picture as the render draws it now (`make architecture`), and the
picture shows the architecture: VPC, AZs, subnets with the EFA subnet, placement groups, the control plane, the
system node group, each NodePool with its instance types and limit, FSx with its S3 associations, EFS, buckets,
schedulers."""

from __future__ import annotations

import html
import re

from conftest import REPO, stack_config

from ekstrain.infra.offline import Recording
from ekstrain.pages import render_page, topology


def test_docs_architecture_svg_is_what_the_render_draws(prod_recording: Recording) -> None:
    drawn = render_page.XML_HEAD + topology.figure(prod_recording, stack_config("prod"), "prod-arch")
    committed = (REPO / "docs" / "architecture.svg").read_text()
    assert committed == drawn, "docs/architecture.svg is stale: run `make architecture` and commit it"


def test_the_picture_shows_the_architecture(prod_recording: Recording) -> None:
    cfg = stack_config("prod")
    svg = topology.figure(prod_recording, cfg, "t")
    words = html.unescape(" ".join(re.findall(r">([^<>]+)</text>", svg)))
    assert "VPC 10.40.0.0/16" in words
    for zone in cfg.network.availability_zones:
        assert f"AZ {zone}" in words
    assert f"AZ {cfg.network.training_availability_zone} (training)" in words
    assert "EFA subnet 10.40.0.0/18" in words and "ekstrain-prod-gpu-a100" in words
    assert "ekstrain-prod-gpu-h100" not in words  # gpu-h100 is a Capacity Block: no placement group (docs/capacity.md)
    assert "EKS control plane" in words and "system node group" in words and "m7i.2xlarge" in words
    for pool in ("gpu-a100", "gpu-h100", "trainium-trn1", "trainium-trn1n"):
        assert f"NodePool {pool}" in words
    assert "p5.48xlarge" in words and "limit 8 nodes" in words
    assert "FSx for Lustre" in words and "/data <-> s3://" in words and "/checkpoints <-> s3://" in words
    assert "EFS model store" in words and "storage-datasets" in words
    assert "Slurm (Slinky)" in words and "Volcano queues" in words
    assert svg.count("<path") > 20  # boxes and arrows
