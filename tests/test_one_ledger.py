"""Issue 33: every pod that holds a partition's nodes goes through that partition's Volcano queue."""

from __future__ import annotations

from conftest import cfg_with, stack_config

from ekstrain.assembly.schedulers import slurm
from ekstrain.assembly.schedulers.common import partition_facts


# GIVEN prod (Volcano + Slinky), THEN every NodeSet's slurmd pod names Volcano and its partition's queue.
def test_slurmd_pods_join_their_partitions_queue() -> None:
    cfg = stack_config("prod")
    for p in partition_facts(cfg):
        ns = slurm.nodeset(cfg, p)
        assert ns["podSpec"]["schedulerName"] == "volcano"
        assert ns["metadata"] == {"annotations": {"scheduling.volcano.sh/queue-name": p.name}}


# GIVEN Volcano off, THEN the NodeSet keeps the default scheduler and names no queue.
def test_slurmd_pods_without_volcano_use_the_default_scheduler() -> None:
    cfg = cfg_with(lambda s: s["schedulers"]["volcano"].update(enabled=False, queueWeights={}))
    for p in partition_facts(cfg):
        ns = slurm.nodeset(cfg, p)
        assert "schedulerName" not in ns["podSpec"]
        assert "metadata" not in ns
