"""The NCCL/Neuron all-reduce health check: expected device counts come from the catalog."""

from __future__ import annotations

import pytest
from conftest import stack_config

from ekstrain.assembly.jobs import health_check
from ekstrain.facts import catalog, names
from ekstrain.tooling import validation

PROD = stack_config("prod")


@pytest.mark.parametrize("partition", [p.name for p in PROD.partitions])
def test_health_check_expects_the_catalog_counts(partition: str) -> None:
    part = PROD.partition(partition)
    it = catalog.get(part.instance_types[0])
    efa = min(catalog.get(t).efa_max_interfaces for t in part.instance_types)
    (job,) = health_check(PROD, partition)
    if validation.upstream_dir() is not None:
        assert validation.validate_object(job, PROD.cluster.kubernetes_version) == []
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]
    res = worker["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert res[it.accelerator_resource] == it.accelerator_count and res[names.EFA_RESOURCE] == efa
    assert worker["replicas"] == 2 and job["spec"]["slotsPerWorker"] == it.workers_per_node
    script = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"][2]
    assert f'[ "$acc" -eq {it.accelerator_count} ]' in script
    assert f'[ "$efa" -eq {efa} ]' in script and "fi_info -p efa" in script
    if part.accelerator == "gpu":
        assert "all_reduce_perf" in script and f"-np {2 * it.accelerator_count} --npernode 8" in script
    else:
        assert "nccom-test -r 64 -N 2" in script and "allr" in script


def test_health_check_node_count_is_bounded_by_the_partition() -> None:
    from ekstrain.assembly.jobs import JobRequestError

    with pytest.raises(JobRequestError, match="maxNodes 8"):
        health_check(PROD, "gpu-h100", nodes=9)
    (job,) = health_check(PROD, "gpu-h100", nodes=8)
    assert job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 8
