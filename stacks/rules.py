"""Cross-field rules over a parsed :class:`StackConfig`: pure, run before any resource exists.

Field-level rules (types, ranges, unknown keys) live on the models; these need several fields
or the instance catalog. Each returns :class:`ConfigIssue`s that name the key and the fix.
"""

from __future__ import annotations

import datetime as dt
import ipaddress

from ekstrain import catalog, versions
from stacks.errors import ConfigIssue
from stacks.models import StackConfig
from stacks.models.partitions import PartitionConfig

FSX_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)


def _p(index: int, part: PartitionConfig, field: str = "") -> str:
    return f"ekstrain:partitions[{index}] ({part.name})" + (f".{field}" if field else "")


def check(cfg: StackConfig, today: dt.date | None = None) -> tuple[list[ConfigIssue], list[str]]:
    """Return (errors, warnings) for the whole stack."""
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    errors += _network(cfg)
    errors += _cluster(cfg)
    part_errors, part_warnings = _partitions(cfg)
    errors += part_errors
    warnings += part_warnings
    errors += _storage(cfg)
    errors += _schedulers(cfg)
    errors += _versions(cfg)
    warning = versions.support_warning(cfg.cluster.kubernetes_version, today or dt.date.today())
    if warning:
        warnings.append(f"ekstrain:cluster.kubernetesVersion: {warning}")
    return errors, warnings


def _network(cfg: StackConfig) -> list[ConfigIssue]:
    net = cfg.network
    out = []
    wrong_region = [az for az in net.availability_zones if not az.startswith(cfg.region) or az == cfg.region]
    if wrong_region:
        out.append(ConfigIssue("ekstrain:network.availabilityZones",
                               f"{wrong_region} are not availability zones of aws:region {cfg.region}",
                               f"use zones such as {cfg.region}a, {cfg.region}b"))
    if net.training_availability_zone not in net.availability_zones:
        out.append(ConfigIssue("ekstrain:network.trainingAvailabilityZone",
                               f"{net.training_availability_zone!r} is not one of availabilityZones "
                               f"{net.availability_zones}",
                               "pick the training AZ from ekstrain:network.availabilityZones (the AZ where "
                               "your accelerator capacity or reservation is)"))
    return out


def _cluster(cfg: StackConfig) -> list[ConfigIssue]:
    c = cfg.cluster
    out = []
    if c.endpoint_public_access and not c.public_access_cidrs:
        out.append(ConfigIssue("ekstrain:cluster.publicAccessCidrs",
                               "endpointPublicAccess is true but no CIDR allow-list is given",
                               "list the office/VPN CIDRs that may reach the API server, or set "
                               "endpointPublicAccess: false"))
    if any(ipaddress.IPv4Network(x).prefixlen == 0 for x in c.public_access_cidrs):
        out.append(ConfigIssue("ekstrain:cluster.publicAccessCidrs", "0.0.0.0/0 opens the API server to the internet",
                               "list specific CIDRs instead"))
    accelerated = [t for t in c.system_node_group.instance_types if catalog.is_accelerated(t)]
    if accelerated:
        out.append(ConfigIssue("ekstrain:cluster.systemNodeGroup.instanceTypes",
                               f"{accelerated} are accelerated instances; the system node group runs controllers only",
                               "use general-purpose types such as m7i.xlarge; accelerators belong in partitions"))
    ng = c.system_node_group
    if not ng.min_size <= ng.desired_size <= ng.max_size:
        out.append(ConfigIssue("ekstrain:cluster.systemNodeGroup",
                               f"needs minSize <= desiredSize <= maxSize, got {ng.min_size}/{ng.desired_size}/"
                               f"{ng.max_size}", "adjust the three sizes"))
    return out


def _partitions(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    errors: list[ConfigIssue] = []
    warnings: list[str] = []
    seen: set[str] = set()
    k8s = versions.parse_semver(cfg.cluster.kubernetes_version)
    for i, part in enumerate(cfg.partitions):
        if part.name in seen:
            errors.append(ConfigIssue(_p(i, part, "name"), f"partition name {part.name!r} is used twice",
                                      "give every partition a unique name"))
        seen.add(part.name)
        if part.min_nodes > part.max_nodes:
            errors.append(ConfigIssue(_p(i, part, "maxNodes"),
                                      f"maxNodes {part.max_nodes} is below minNodes {part.min_nodes}",
                                      f"raise maxNodes to at least {part.min_nodes} or lower minNodes"))
        known: list[catalog.InstanceType] = []
        for j, name in enumerate(part.instance_types):
            key = _p(i, part, f"instanceTypes[{j}]")
            if name not in catalog.CATALOG:
                errors.append(ConfigIssue(key, f"{name!r} is not in the instance catalog",
                                          f"use one of {', '.join(sorted(catalog.CATALOG))} (or add it to "
                                          "ekstrain/catalog.py with its EFA facts)"))
                continue
            it = catalog.get(name)
            known.append(it)
            if it.family != part.accelerator:
                errors.append(ConfigIssue(key, f"{name} is a {it.family} instance but the partition's accelerator is "
                                               f"{part.accelerator}",
                                          f"set accelerator: {it.family} or move {name} to a {it.family} partition"))
            if part.efa and not it.efa_capable:
                errors.append(ConfigIssue(key, f"{name} has no EFA interfaces but the partition has efa: true",
                                          f"remove {name} or set efa: false for this partition"))
            if versions.parse_semver(it.min_kubernetes_version) > k8s:
                errors.append(ConfigIssue(key, f"{name} needs Kubernetes >= {it.min_kubernetes_version} "
                                               f"(cluster is {cfg.cluster.kubernetes_version})",
                                          f"set ekstrain:cluster.kubernetesVersion to {it.min_kubernetes_version} "
                                          "or later"))
        if len({t.accelerator_count for t in known}) > 1:
            errors.append(ConfigIssue(_p(i, part, "instanceTypes"),
                                      "instance types have different accelerator counts "
                                      f"({ {t.name: t.accelerator_count for t in known} })",
                                      "keep types with the same accelerators per node in one partition; "
                                      "split the others into their own partition"))
        if part.efa and len({t.efa_max_interfaces for t in known}) > 1:
            least = min(t.efa_max_interfaces for t in known)
            more = [t.name for t in known if t.efa_max_interfaces > least]
            warnings.append(f"{_p(i, part, 'instanceTypes')}: nodes get {least} EFA interfaces (the common layout); "
                            f"{more} support more, put them in their own partition to use all of them")
        if part.wants_placement_group and not part.efa:
            errors.append(ConfigIssue(_p(i, part, "placementGroup"), "a placement group needs efa: true",
                                      "set efa: true or placementGroup: false"))
        if part.capacity_type == "reserved" and part.capacity_reservation is None:
            errors.append(ConfigIssue(_p(i, part, "capacityReservation"),
                                      "capacityType is reserved but no reservation is selected",
                                      "add capacityReservation: {ids: [cr-...]} or {tags: {...}}"))
        if part.capacity_reservation is not None and part.capacity_type != "reserved":
            errors.append(ConfigIssue(_p(i, part, "capacityType"),
                                      "a capacityReservation is given but capacityType is not reserved",
                                      "set capacityType: reserved"))
        cr = part.capacity_reservation
        if cr is not None and cr.instance_count is not None and part.max_nodes > cr.instance_count:
            errors.append(ConfigIssue(_p(i, part, "maxNodes"),
                                      f"maxNodes {part.max_nodes} exceeds the reservation's {cr.instance_count} "
                                      "instances",
                                      f"lower maxNodes to {cr.instance_count} or enlarge the reservation"))
    return errors, warnings


def _storage(cfg: StackConfig) -> list[ConfigIssue]:
    fsx = cfg.storage.fsx
    out = []
    if not fsx.enabled:
        return out
    key = "ekstrain:storage.fsx"
    cap = fsx.storage_capacity_gib
    if cap != 1200 and cap % 2400 != 0:
        lower = max(1200, cap // 2400 * 2400)
        out.append(ConfigIssue(f"{key}.storageCapacityGiB", f"{cap} GiB is not a valid Lustre SSD capacity",
                               f"use 1200 or a multiple of 2400 (nearest: {lower} or {(cap // 2400 + 1) * 2400})"))
    if fsx.deployment_type == "PERSISTENT_2":
        if fsx.per_unit_storage_throughput not in FSX_PERSISTENT_2_THROUGHPUTS:
            out.append(ConfigIssue(f"{key}.perUnitStorageThroughput",
                                   f"{fsx.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                                   f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}"))
    elif fsx.per_unit_storage_throughput is not None:
        out.append(ConfigIssue(f"{key}.perUnitStorageThroughput",
                               f"{fsx.deployment_type} has a fixed throughput (200 MB/s/TiB)",
                               "remove perUnitStorageThroughput (set it to null)"))
    if fsx.data_path == fsx.checkpoint_path:
        out.append(ConfigIssue(f"{key}.checkpointPath", "dataPath and checkpointPath are the same",
                               "use separate paths such as /data and /checkpoints"))
    for field, path in (("dataPath", fsx.data_path), ("checkpointPath", fsx.checkpoint_path)):
        if not path.startswith("/") or path == "/":
            out.append(ConfigIssue(f"{key}.{field}", f"{path!r} is not an absolute sub-directory",
                                   "use a path like /data"))
    return out


def _schedulers(cfg: StackConfig) -> list[ConfigIssue]:
    s = cfg.schedulers
    out = []
    if s.mpi_operator.enabled and s.kubeflow.flavor == "training-operator":
        out.append(ConfigIssue("ekstrain:schedulers.kubeflow.flavor",
                               "the legacy training operator and the MPI operator both own the CRD "
                               "mpijobs.kubeflow.org and cannot be installed together",
                               "use flavor: trainer (Kubeflow Trainer v2) with the MPI operator, or disable "
                               "mpiOperator"))
    names = {p.name for p in cfg.partitions}
    unknown = sorted(set(s.volcano.queue_weights) - names)
    if unknown:
        out.append(ConfigIssue("ekstrain:schedulers.volcano.queueWeights", f"{unknown} are not partitions",
                               f"use partition names: {sorted(names)}"))
    bad = {k: v for k, v in s.volcano.queue_weights.items() if v < 1}
    if bad:
        out.append(ConfigIssue("ekstrain:schedulers.volcano.queueWeights", f"weights must be >= 1, got {bad}",
                               "use positive integers"))
    if s.slurm.enabled and not cfg.storage.fsx.enabled:
        out.append(ConfigIssue("ekstrain:schedulers.slurm.enabled",
                               "Slurm needs the shared FSx file system for its NodeSets and login nodes",
                               "set ekstrain:storage.fsx.enabled: true"))
    return out


def _versions(cfg: StackConfig) -> list[ConfigIssue]:
    out = []
    cni = cfg.versions.addon("vpc-cni")
    if cni and any(p.efa for p in cfg.partitions):
        try:
            parsed = versions.parse_semver(cni)
        except ValueError:
            parsed = None
        if parsed is None or parsed < versions.MIN_VPC_CNI_FOR_EFA_ONLY:
            out.append(ConfigIssue("ekstrain:versions.addons.vpc-cni",
                                   f"{cni} cannot attach efa-only interfaces (needs v1.18.4 or later)",
                                   f"use {versions.DEFAULT_ADDON_VERSIONS['vpc-cni']}"))
    return out
