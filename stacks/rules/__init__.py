"""Cross-field rules over a parsed :class:`StackConfig`: pure, run before any resource exists.

Field-level rules (types, ranges, unknown keys) live on the models; these need several fields
or the instance catalog. Each returns :class:`ConfigIssue`s that name the key and the fix.

One module a section (stacks/rules/<section>.py); :func:`check` here runs them all, in the order the report
lists them. The public names of the sections are read from here as they were from the one file.
"""

from __future__ import annotations

import datetime as dt

from ekstrain.facts import versions
from ekstrain.stacks import capacity_rules, loop_rules
from ekstrain.stacks.errors import ConfigIssue
from ekstrain.stacks.models import StackConfig
from ekstrain.stacks.rules.cluster import _cluster, cluster_sg_inbound_rules
from ekstrain.stacks.rules.cost import _cost
from ekstrain.stacks.rules.derived import (
    CAPACITY_BLOCK_INSTANCE_TYPES,
    QUEUE_NAME_MAX,
    VOLCANO_BUILTIN_QUEUES,
    derived_queue_names,
    names_and_room,
)
from ekstrain.stacks.rules.jupyterhub import _jupyterhub
from ekstrain.stacks.rules.network import (
    DOCUMENTATION_NETWORKS,
    EXISTING,
    MAX_ALLOWED_ADDRESSES,
    NON_PUBLIC,
    VPC_CONFLICTS,
    VPC_RANGES,
    _network,
)
from ekstrain.stacks.rules.partitions import _partitions, pool_names
from ekstrain.stacks.rules.quotas import _limits
from ekstrain.stacks.rules.releases import (
    _ami_against_launch,
    _compat,
    _kubernetes_window,
    _offerings,
    _versions,
    compat_pins,
)
from ekstrain.stacks.rules.schedulers import _schedulers, _slurm_login, team_warnings
from ekstrain.stacks.rules.storage import FSX_PERSISTENT_2_THROUGHPUTS, _kms_keys, _storage

__all__ = [
    "CAPACITY_BLOCK_INSTANCE_TYPES",
    "DOCUMENTATION_NETWORKS",
    "EXISTING",
    "FSX_PERSISTENT_2_THROUGHPUTS",
    "MAX_ALLOWED_ADDRESSES",
    "NON_PUBLIC",
    "QUEUE_NAME_MAX",
    "VOLCANO_BUILTIN_QUEUES",
    "VPC_CONFLICTS",
    "VPC_RANGES",
    "check",
    "cluster_sg_inbound_rules",
    "compat_pins",
    "derived_queue_names",
    "names_and_room",
    "pool_names",
    "team_warnings",
]


def check(cfg: StackConfig, today: dt.date | None = None) -> tuple[list[ConfigIssue], list[str]]:
    """Return (errors, warnings) for the whole stack."""
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    errors += _network(cfg)
    errors += _cluster(cfg)
    part_errors, part_warnings = _partitions(cfg)
    errors += part_errors
    warnings += part_warnings
    storage_errors, storage_warnings = _storage(cfg)
    errors += storage_errors
    warnings += storage_warnings
    errors += _schedulers(cfg)
    warnings += team_warnings(cfg)
    errors += _cost(cfg)
    errors += _versions(cfg)
    errors += _compat(cfg)
    errors += _kms_keys(cfg)
    hub_errors, hub_warnings = _jupyterhub(cfg)
    errors += hub_errors
    tls_errors, tls_warnings = loop_rules.hub_tls(cfg)
    errors += tls_errors
    warnings += tls_warnings
    ck_errors, ck_warnings = loop_rules.checkpoints(cfg)
    errors += ck_errors
    warnings += ck_warnings
    warnings += hub_warnings
    slurm_errors, slurm_warnings = _slurm_login(cfg)
    errors += slurm_errors
    warnings += slurm_warnings
    day = today or dt.date.today()
    errors += _kubernetes_window(cfg, day)
    offer_errors, offer_warnings = _offerings(cfg, day)
    errors += offer_errors
    warnings += offer_warnings
    errors += _ami_against_launch(cfg)
    errors += _limits(cfg, day)
    errors += names_and_room(cfg)
    block_errors, block_warnings = capacity_rules.check(cfg, day)
    errors += block_errors
    warnings += block_warnings
    ami = versions.ami_alias_warning(cfg.versions.ami_alias_version, cfg.versions.ami_alias_max_age_days, day)
    if ami:
        warnings.append(f"ekstrain:versions.amiAliasVersion: {ami}")
    if cfg.cluster.bootstrap_access_cidrs:
        warnings.append(
            "ekstrain:cluster.bootstrapAccessCidrs: the API endpoint is public for "
            f"{cfg.cluster.bootstrap_access_cidrs} (first deploy from outside the VPC); remove the key once the "
            "in-VPC runner is up, and `pulumi up` from it makes the endpoint private (docs/delivery.md, first deploy)"
        )
    warning = versions.support_warning(cfg.cluster.kubernetes_version, day)
    if warning and not errors:
        warnings.append(f"ekstrain:cluster.kubernetesVersion: {warning}")
    return errors, warnings
