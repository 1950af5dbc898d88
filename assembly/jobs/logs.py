"""A job's logs, found by its name: the CloudWatch Logs Insights query and the ``aws logs start-query`` command that
``ekstrain job render --out FILE`` writes beside FILE (``FILE.logs.query``, ``FILE.logs.sh``).

The query reads the flat fields the log agent puts on every record (:data:`ekstrain.assembly.logs.FIELDS`): the
job's pods carry ``ekstrain.io/job``, ``ekstrain.io/job-kind`` and ``ekstrain.io/queue`` (:func:`pod_labels`), an
sbatch's output is tailed from the node (``job_kind`` sbatch, ``job`` = the Slurm job name). Results come in time
order with the rank or task index (``rank``: the replica or completion index of the pod, mpirun's
``--tag-output`` rank, srun's ``--label`` task). docs/observability.md.
"""

from __future__ import annotations

import pathlib
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ekstrain.assembly import logs
from ekstrain.facts import names
from ekstrain.workloads import registry

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig


class _JobKinds(Mapping[str, str]):
    """Scheduler -> its workload kind's ``log_kind`` (ekstrain/workloads), read when asked, so a kind registered
    later is found too."""

    def __getitem__(self, scheduler: str) -> str:
        try:
            return registry.by_scheduler(scheduler).log_kind
        except KeyError:
            raise KeyError(scheduler) from None

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in registry.schedulers())

    def __len__(self) -> int:
        return sum(1 for _ in registry.schedulers())


JOB_KINDS: Mapping[str, str] = _JobKinds()
"""Scheduler -> the ``ekstrain.io/job-kind`` value (and the record's ``job_kind``)."""
LOOKBACK_DAYS = 7
"""The start-query line's default window (``--start-time``); CloudWatch keeps ``ekstrain:logging.retentionDays``."""
FIELDS_SHOWN = "@timestamp, rank, pod, container, node, instance_id, queue, log"
"""``queue``: the Volcano queue the pods ran in (``ekstrain.io/queue``: with teams ``<partition>-<team>``)."""


def pod_labels(scheduler: str, queue: str) -> dict[str, str]:
    return {logs.JOB_KIND_LABEL: JOB_KINDS[scheduler], logs.QUEUE_LABEL: queue}


def quoted(value: str) -> str:
    """An Insights string literal (job names are DNS labels; quotes and backslashes escaped all the same)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def selector(scheduler: str, name: str, namespace: str) -> str:
    """The ``filter`` of a job's records: the fields its workload kind's records carry (``log_fields``):
    namespace, job and kind for pods; kind and job for an sbatch."""
    kind = registry.by_scheduler(scheduler)
    value = {"namespace": namespace, "job": name, "job_kind": kind.log_kind}
    return " and ".join(f"{field} = {quoted(value[field])}" for field in kind.log_fields)


def insights_query(scheduler: str, name: str, namespace: str) -> str:
    """Every line of the job, oldest first, with its rank."""
    extra = "".join(f", {f}" for f in registry.by_scheduler(scheduler).log_extra_shown)
    return (
        f"fields {FIELDS_SHOWN}{extra}\n"
        f"| filter {selector(scheduler, name, namespace)}\n"
        "| sort @timestamp asc\n"
        "| limit 10000"
    )


def first_failure_query(scheduler: str, name: str, namespace: str) -> str:
    """The rank that failed first: the earliest error-looking line per rank, earliest first."""
    return (
        f"fields @timestamp, rank, pod, queue, log\n"
        f"| filter {selector(scheduler, name, namespace)}\n"
        "| filter log like /(?i)(Traceback|Error|NCCL WARN|exit code|Signal|Killed)/\n"
        "| stats min(@timestamp) as first_error by rank, pod, queue\n"
        "| sort first_error asc\n"
        "| limit 20"
    )


@dataclass(frozen=True)
class JobLogs:
    query: str
    first_failure: str
    script: str


def start_query_line(region: str, log_group: str, query: str) -> str:
    return (
        shlex.join(
            [
                "aws",
                "logs",
                "start-query",
                "--region",
                region,
                "--log-group-name",
                log_group,
                "--start-time",
                "@@START@@",
                "--end-time",
                "@@END@@",
                "--query-string",
                query,
                "--query",
                "queryId",
                "--output",
                "text",
            ]
        )
        .replace("@@START@@", f"$(date -d '-{LOOKBACK_DAYS} days' +%s)")
        .replace("@@END@@", "$(date +%s)")
    )


def job_logs(scheduler: str, name: str, namespace: str, cluster: str, region: str) -> JobLogs:
    group = logs.log_group_names(cluster)["workloads"]
    query = insights_query(scheduler, name, namespace)
    first = first_failure_query(scheduler, name, namespace)
    script = "\n".join(
        [
            "#!/bin/sh",
            f"# The logs of {JOB_KINDS[scheduler]} {name} in time order with their rank (docs/observability.md).",
            "# Usage: sh THIS_FILE [first-failure]",
            "set -eu",
            'if [ "${1:-}" = first-failure ]; then',
            "  id=$(" + start_query_line(region, group, first) + ")",
            "else",
            "  id=$(" + start_query_line(region, group, query) + ")",
            "fi",
            "until aws logs get-query-results --region " + shlex.quote(region) + ' --query-id "$id" --query status '
            "--output text | grep -qxE 'Complete|Failed|Cancelled|Timeout'; do sleep 2; done",
            "aws logs get-query-results --region " + shlex.quote(region) + ' --query-id "$id" --output table',
            "",
        ]
    )
    return JobLogs(query=query + "\n", first_failure=first + "\n", script=script)


def files_beside(
    out: pathlib.Path, scheduler: str, name: str, namespace: str | None, cfg: StackConfig
) -> dict[str, str]:
    """The files ``ekstrain job render --out FILE`` writes beside FILE: ``FILE.logs.query`` (the Insights query,
    then the first-failure query) and ``FILE.logs.sh`` (start-query, wait, print). Empty for the NCCL health check
    or a stack without ``ekstrain:logging``."""
    if scheduler == "nccl-test" or not cfg.logging.enabled:
        return {}
    found = job_logs(scheduler, name, namespace or names.TRAINING_NAMESPACE, cfg.cluster.name, cfg.region)
    query = f"# every line, oldest first\n{found.query}\n# the first failing rank\n{found.first_failure}"
    return {
        str(out.with_name(out.name + ".logs.query")): query,
        str(out.with_name(out.name + ".logs.sh")): found.script,
    }
