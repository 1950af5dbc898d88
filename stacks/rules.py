"""Cross-field rules over a parsed :class:`StackConfig`: pure, run before any resource exists.

Field-level rules (types, ranges, unknown keys) live on the models; these need several fields
or the instance catalog. Each returns :class:`ConfigIssue`s that name the key and the fix.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re

from ekstrain import catalog, karpenter_specs, storage_sizing, versions
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
    storage_errors, storage_warnings = _storage(cfg)
    errors += storage_errors
    warnings += storage_warnings
    errors += _schedulers(cfg)
    errors += _versions(cfg)
    slurm_errors, slurm_warnings = _slurm_login(cfg)
    errors += slurm_errors
    warnings += slurm_warnings
    ami = versions.ami_alias_warning(cfg.versions.ami_alias_version, cfg.versions.ami_alias_max_age_days,
                                     today or dt.date.today())
    if ami:
        warnings.append(f"ekstrain:versions.amiAliasVersion: {ami}")
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


DOCUMENTATION_NETWORKS = tuple(ipaddress.IPv4Network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"))


def _slurm_login(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    from ekstrain.schedulers.slurm import authorized_keys, keys_file

    s = cfg.schedulers.slurm
    if not s.enabled:
        return [], []
    path = keys_file(cfg)
    if path is not None and not path.is_file():
        return [ConfigIssue("ekstrain:schedulers.slurm.loginSshAuthorizedKeysFile", f"{path} does not exist",
                            "create it (one OpenSSH public key per line) or remove the key")], []
    if not authorized_keys(cfg):
        return [], ["ekstrain:schedulers.slurm.loginSshAuthorizedKeys: the login node has no SSH key, so "
                    "`ssh root@<login>` is refused; add a public key to loginSshAuthorizedKeys or to the "
                    "loginSshAuthorizedKeysFile, then deploy (README, Slurm)"]
    return [], []


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
    if not c.endpoint_public_access and not (c.deploy_cidrs or c.deploy_security_group_ids):
        out.append(ConfigIssue("ekstrain:cluster.deployCidrs",
                               "the API endpoint is private and the EKS cluster security group admits only its "
                               "members, so nothing that deploys can reach it",
                               "list the CIDR of the in-VPC (or peered) deploy runner in deployCidrs, or its "
                               "security group in deploySecurityGroupIds (docs/delivery.md)"))
    for key, cidrs in (("publicAccessCidrs", c.public_access_cidrs), ("deployCidrs", c.deploy_cidrs)):
        doc = [x for x in cidrs if any(ipaddress.IPv4Network(x).subnet_of(d) for d in DOCUMENTATION_NETWORKS)]
        if doc:
            out.append(ConfigIssue(f"ekstrain:cluster.{key}", f"{doc} are documentation ranges (RFC 5737): no "
                                   "runner or office has them", "list the real CIDRs that run `pulumi up` and kubectl"))
    bad_sg = [g for g in c.deploy_security_group_ids if not g.startswith("sg-")]
    if bad_sg:
        out.append(ConfigIssue("ekstrain:cluster.deploySecurityGroupIds", f"{bad_sg} are not security group ids",
                               "use ids of the form sg-0123456789abcdef0"))
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
        if part.capacity_type == "reserved" and part.wants_placement_group:
            warnings.append(f"{_p(i, part, 'placementGroup')}: instances launch into the placement group "
                            f"{karpenter_specs.placement_group_name(cfg.cluster.name, part.name)}, so an On-Demand "
                            "Capacity Reservation is only used if it was created in that group; Capacity Blocks "
                            "are co-located by EC2 already: set placementGroup: false for them")
        if part.min_nodes > 0:
            errors.append(ConfigIssue(_p(i, part, "minNodes"),
                                      f"minNodes {part.min_nodes}: warm nodes need Karpenter's alpha StaticCapacity "
                                      "feature gate (NodePool.spec.replicas), which this platform keeps off",
                                      "set minNodes: 0; nodes are launched when a job asks for them and kept "
                                      "while busy (raise consolidateAfter to keep idle nodes longer)"))
        errors += _partition_labels(i, part)
    if cfg.partitions:
        errors += _karpenter_names(cfg)
    return errors, warnings


_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def _partition_labels(index: int, part: PartitionConfig) -> list[ConfigIssue]:
    out = []
    for key, value in part.labels.items():
        where = _p(index, part, f"labels.{key}")
        domain = key.split("/", 1)[0] if "/" in key else ""
        if any(domain == d or domain.endswith("." + d) for d in karpenter_specs.RESERVED_LABEL_DOMAINS):
            out.append(ConfigIssue(where, f"the label domain {domain!r} is reserved (Karpenter, Kubernetes or "
                                          "the platform set these labels)",
                                   "use your own domain, e.g. team.example.com/owner"))
        elif not _LABEL_KEY.match(key):
            out.append(ConfigIssue(where, f"{key!r} is not a valid Kubernetes label key",
                                   "use [prefix/]name with alphanumerics, '-', '_' or '.' (name at most 63)"))
        if not _LABEL_VALUE.match(value):
            out.append(ConfigIssue(where, f"{value!r} is not a valid label value",
                                   "use at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric"))
    return out


def _karpenter_names(cfg: StackConfig) -> list[ConfigIssue]:
    """IAM role names are at most 64 characters, SQS queue names at most 80."""
    name = cfg.cluster.name
    too_long = [n for n in (karpenter_specs.node_role_name(name), karpenter_specs.controller_role_name(name))
                if len(n) > 64]
    if len(karpenter_specs.interruption_queue_name(name)) > 80:
        too_long.append(karpenter_specs.interruption_queue_name(name))
    if not too_long:
        return []
    longest = len(karpenter_specs.node_role_name(""))
    return [ConfigIssue("ekstrain:cluster.name",
                        f"{name!r} makes Karpenter resource names too long for AWS: {too_long}",
                        f"use a cluster name of at most {64 - longest} characters")]


def _storage(cfg: StackConfig) -> tuple[list[ConfigIssue], list[str]]:
    st = cfg.storage
    fsx = st.fsx
    out: list[ConfigIssue] = []
    warnings: list[str] = []
    b = st.buckets
    if b.datasets_bucket and b.datasets_bucket == b.checkpoints_bucket:
        out.append(ConfigIssue("ekstrain:storage.buckets.checkpointsBucket",
                               "datasetsBucket and checkpointsBucket are the same bucket; one bucket cannot be "
                               "linked twice to a file system and the lifecycles differ",
                               "name two different buckets (or leave both unset for generated names)"))
    if cfg.environment == "prod" and not st.protect:
        warnings.append("ekstrain:storage.protect: false in a prod stack: a destroy or replacement deletes "
                        "buckets, FSx and EFS with their data")
    if not fsx.enabled:
        return out, warnings
    key = "ekstrain:storage.fsx"
    cap = fsx.storage_capacity_gib
    if not storage_sizing.valid_capacity(cap):
        lower = max(1200, cap // 2400 * 2400)
        out.append(ConfigIssue(f"{key}.storageCapacityGiB", f"{cap} GiB is not a valid Lustre SSD capacity",
                               f"use 1200 or a multiple of 2400 (nearest: {lower} or {(cap // 2400 + 1) * 2400})"))
    if fsx.deployment_type == "PERSISTENT_2":
        if fsx.per_unit_storage_throughput not in FSX_PERSISTENT_2_THROUGHPUTS:
            out.append(ConfigIssue(f"{key}.perUnitStorageThroughput",
                                   f"{fsx.per_unit_storage_throughput} MB/s/TiB is not offered for PERSISTENT_2",
                                   f"use one of {', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))}"))
    else:
        if fsx.per_unit_storage_throughput is not None:
            out.append(ConfigIssue(f"{key}.perUnitStorageThroughput",
                                   f"{fsx.deployment_type} has a fixed throughput (200 MB/s/TiB)",
                                   "remove perUnitStorageThroughput (set it to null)"))
        if fsx.kms_key_arn is not None:
            out.append(ConfigIssue(f"{key}.kmsKeyArn",
                                   f"{fsx.deployment_type} file systems are always encrypted with an FSx-managed "
                                   "key and do not accept a customer KMS key",
                                   "remove kmsKeyArn, or use deploymentType: PERSISTENT_2"))
        if not fsx.auto_export_events:
            # DRAs (import and export) work on SCRATCH_2 with Lustre 2.12+; only SCRATCH_1/2.10 lack them.
            warnings.append(f"{key}.autoExportEvents: empty on {fsx.deployment_type}: scratch data is not "
                            "replicated, so checkpoints are lost on a file-server failure unless exported to S3")
    paths = {"dataPath": fsx.data_path, "checkpointPath": fsx.checkpoint_path}
    for field, path in paths.items():
        if not path.startswith("/") or path == "/" or path.endswith("/") or "//" in path:
            out.append(ConfigIssue(f"{key}.{field}", f"{path!r} is not an absolute sub-directory",
                                   "use a path like /data (leading slash, no trailing slash)"))
    if fsx.data_path == fsx.checkpoint_path:
        out.append(ConfigIssue(f"{key}.checkpointPath", "dataPath and checkpointPath are the same",
                               "use separate paths such as /data and /checkpoints"))
    elif (fsx.checkpoint_path + "/").startswith(fsx.data_path + "/") or (
            fsx.data_path + "/").startswith(fsx.checkpoint_path + "/"):
        out.append(ConfigIssue(f"{key}.checkpointPath",
                               f"{fsx.checkpoint_path!r} and {fsx.data_path!r} overlap; two data repository "
                               "associations cannot have nested file-system paths",
                               "use sibling paths such as /data and /checkpoints"))
    for field, events in (("autoImportEvents", fsx.auto_import_events), ("autoExportEvents", fsx.auto_export_events)):
        if len(set(events)) != len(events):
            out.append(ConfigIssue(f"{key}.{field}", f"{events} lists an event twice",
                                   "list each of NEW, CHANGED, DELETED at most once"))
    ck = st.checkpoint
    if ck.size_gib is not None and not out:
        result = storage_sizing.report(storage_sizing.gib_to_bytes(ck.size_gib), ck.target_save_seconds,
                                       fsx.deployment_type, cap, fsx.per_unit_storage_throughput)
        if not result.meets_target:
            r = result.recommended
            fix = (f"set storageCapacityGiB: {r.capacity_gib} and perUnitStorageThroughput: "
                   f"{r.per_unit_throughput} ({r.save_seconds:,.0f} s)" if r and fsx.deployment_type == "PERSISTENT_2"
                   else f"set storageCapacityGiB: {r.capacity_gib} ({r.save_seconds:,.0f} s)" if r
                   else "use PERSISTENT_2 with a higher tier, or save sharded/asynchronously")
            warnings.append(f"ekstrain:storage.checkpoint: a {ck.size_gib:,.0f} GiB checkpoint takes "
                            f"{result.configured.save_seconds:,.0f} s on the configured FSx "
                            f"({result.configured.throughput_mb_s:,.0f} MB/s baseline), over targetSaveSeconds "
                            f"{ck.target_save_seconds}; {fix}")
    return out, warnings


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
    by_name = {p.name: p for p in cfg.partitions}
    for part, replicas in sorted(s.slurm.nodeset_replicas.items()):
        key = f"ekstrain:schedulers.slurm.nodesetReplicas.{part}"
        if part not in by_name:
            out.append(ConfigIssue(key, f"{part!r} is not a partition", f"use partition names: {sorted(names)}"))
        elif not 0 <= replicas <= by_name[part].max_nodes:
            out.append(ConfigIssue(key, f"{replicas} slurmd pods is outside 0..maxNodes ({by_name[part].max_nodes})",
                                   "each replica holds one whole node: use a count between 0 and the partition's "
                                   "maxNodes"))
    if any(ipaddress.IPv4Network(c).prefixlen == 0 for c in s.slurm.login_allowed_cidrs):
        out.append(ConfigIssue("ekstrain:schedulers.slurm.loginAllowedCidrs",
                               "0.0.0.0/0 lets every address that can reach the VPC ssh to the login node",
                               "list the VPC, VPN or office CIDRs instead"))
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
