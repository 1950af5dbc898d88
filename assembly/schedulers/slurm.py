"""Slinky (slurm-operator v1.2) values and the plain objects around it, from a StackConfig.

Mapping (the seed's ``SlurmCluster``/``SlurmNodeSet`` were not real APIs; this is the real chart):

- partition P -> ``nodesets.P`` of the ``slurm`` chart (the operator turns it into a
  ``slinky.slurm.net/v1beta1`` NodeSet): slurmd pods selected onto ``karpenter.sh/nodepool: P``,
  tolerating P's accelerator taint, each requesting (= limiting) every accelerator and EFA interface
  of one node, so one slurmd pod owns one whole node. Pending slurmd pods are what make Karpenter
  launch the nodes.
- partition P -> ``nodesets.P.partition`` (the operator's per-NodeSet Slurm partition, named P like
  the NodeSet, holding exactly its nodes ``P-0 .. P-<n>``). The chart's top-level ``partitions`` map
  is left at its default (its ``all`` example stays disabled).
- GRES: ``GresTypes`` on the controller, ``Gres=<gpu|neuron>:<n>`` on the NodeSet (the operator also
  copies it to the slurm.conf NodeSet line since slurm-operator#191, so first registrations are not
  ``Gres=(null)``: slurm-operator#106), ``gres.conf: AutoDetect=nvidia`` for GPU devices (the
  maintainers' recipe in slurm-operator#57; needs no NVML library). Neuron devices are declared as
  count-only GRES: Slurm has no Neuron autodetection and the pod owns every device of its node.
- login: one LoginSet behind an internal NLB restricted to ``loginAllowedCidrs``.
- slurmrestd and slurmdbd (accounting) with MariaDB, all on system nodes.
- with Volcano: one PodGroup per partition that its slurmd pods name (``scheduling.k8s.io/group-name``), kept at the
  NodeSet's replicas by a small sizer (ekstrain/agents/slurm_gang.py), so the nodes KEDA adds for a job are admitted
  all-or-nothing instead of one pod at a time.
"""

from __future__ import annotations

import json
import pathlib
from typing import TYPE_CHECKING, Any

from ekstrain.agents import slurm_gang
from ekstrain.assembly import logs
from ekstrain.assembly.jobs.pod import QUEUE_ANNOTATION, VOLCANO_SCHEDULER
from ekstrain.assembly.schedulers import autoscaling, teams
from ekstrain.assembly.schedulers.common import PartitionFacts, partition_facts
from ekstrain.facts import names, versions
from ekstrain.facts.names import SYSTEM_NODE_AFFINITY, SYSTEM_NODE_SELECTOR
from ekstrain.layout import topology
from ekstrain.layout.controller_resources import MEDIUM, SMALL, sized
from ekstrain.payloads import fsx_volume, pod_security
from ekstrain.simulate.nodes import allocatable, capacity

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig


def _authorized_keys(cfg: StackConfig) -> list[str]:
    # Read where the stack config is (the key file is a stack-config path), and only when values are built, so that
    # importing this builder (components/slurm.py does) does not load the stack layer.
    from ekstrain.stacks.slurm_login import authorized_keys

    return authorized_keys(cfg)


NAMESPACE = "slurm"
OPERATOR_NAMESPACE = "slinky"
CERT_MANAGER_NAMESPACE = "cert-manager"
RELEASE = "slurm"
LOGINSET = "main"
SHARED_VOLUME = "shared"

MARIADB_NAME = "mariadb"
"""Service name of the accounting database (the chart's ``accounting.storageConfig.host`` default)."""
MARIADB_SECRET = "mariadb-password"
AUTH_KEYS = {"slurmKey": ("slurm-auth-key", "slurm.key"), "jwtKey": ("slurm-jwt-key", "jwt.key")}
"""The chart's ``slurmKey``/``jwtKey`` -> the Secret (name, key) the program creates from a Pulumi random.
The chart would make them with ``randAscii 1024`` unless ``lookup`` finds them, which Argo CD (no cluster
access while rendering) never does: a new key on every refresh (charts/slurm 1.2.1 templates/secrets/).
Names differ from the chart's own (``slurm-auth-slurm``, ``slurm-auth-jwt``) so the switch creates no clash."""
AUTH_KEY_LENGTH = 1024
"""What the chart generates (``randAscii 1024``)."""
"""Secret with keys ``password`` (slurm user) and ``root-password``; the chart's default passwordKeyRef."""
MARIADB_IMAGE = "public.ecr.aws/docker/library/mariadb:11.4"
"""The Docker Official Image through its Amazon ECR Public mirror (no Docker Hub pull-rate limit)."""
"""MariaDB 11.4 LTS (supported until 2029); slurmdbd supports MariaDB/MySQL."""
MARIADB_DATABASE = "slurm_acct_db"
MARIADB_USER = "slurm"

NLB_ANNOTATIONS = {
    # Served by the AWS cloud controller EKS runs in its control plane, so no extra controller is
    # needed: an internal NLB; loadBalancerSourceRanges becomes the node SG ingress for port 22.
    "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
}

GRES_NAME = {"nvidia.com/gpu": "gpu", "aws.amazon.com/neuron": "neuron"}


def login_source_ranges(cfg: StackConfig) -> list[str]:
    """Who may reach port 22 of the login NLB: the configured CIDRs, else the VPC."""
    return list(cfg.schedulers.slurm.login_allowed_cidrs) or [cfg.network.vpc_cidr]


def login_service(cfg: StackConfig) -> dict[str, Any]:
    """The login Service: the chart's LoadBalancer (an internal NLB for port 22) when SSH is on, else a
    ClusterIP Service (no load balancer, nothing listens outside the cluster: ``kubectl exec`` only)."""
    if not cfg.schedulers.slurm.login_ssh:
        return {"spec": {"type": "ClusterIP"}}
    return {
        "metadata": {"annotations": dict(NLB_ANNOTATIONS)},
        "spec": {"loadBalancerSourceRanges": login_source_ranges(cfg)},
    }


def nodeset_replicas(cfg: StackConfig, part: str) -> int:
    """slurmd pods of a partition. Each one holds a whole node (Karpenter launches it for the pending
    pod and keeps it while the pod runs), so the default is the partition's minNodes: zero cost when
    idle, and users scale the NodeSet up before submitting (docs/schedulers.md)."""
    return cfg.schedulers.slurm.nodeset_replicas.get(part, cfg.partition(part).min_nodes)


def standing_nodes(cfg: StackConfig, part: str) -> int:
    """Nodes of a partition that slurmd pods hold all the time (0 when Slurm is off): the rest of the
    partition's maxNodes is what Kubernetes jobs can get."""
    return nodeset_replicas(cfg, part) if cfg.schedulers.slurm.enabled else 0


NODE_DAEMONSET_RESERVE = {"cpu": 2.0, "memory": 8 * 2**30}
"""Left on every accelerator node for its DaemonSets (device plugins, CSI node plugins, DCGM exporter or
neuron-monitor, EKS add-ons): their requests sum to well under this; ``ekstrain simulate`` checks the
slurmd pod still fits beside the rendered DaemonSets."""
LOGFILE_RESOURCES = {"cpu": "100m", "memory": "128Mi"}
# Slurm daemons on the system nodes. The slurm chart 1.2.1's values.yaml suggests (commented out) requests of
# cpu 1 / memory 1Gi for slurmctld, slurmrestd, slurmdbd and the login container, 500m / 128Mi for the
# reconfigure and logfile sidecars and a 500m / 100Mi limit for initconf. The daemons take that; the memory
# limit leaves slurmctld room for its job and node tables on a cluster of a few hundred nodes (its state is
# on the PVC, a restart loses nothing). The sidecars tail a log / run scontrol once: 100m is plenty and keeps
# the three system nodes' CPU for the controllers.
SLURM_DAEMON_RESOURCES = sized("1", "1Gi", "4Gi")
SLURM_SIDECAR_RESOURCES = {"requests": dict(LOGFILE_RESOURCES), "limits": {"memory": "256Mi"}}
INITCONF_RESOURCES = sized("100m", "100Mi", "100Mi")
SHM_VOLUME = "dshm"
SHM_FRACTION = 0.125
"""Memory-backed /dev/shm size limit as a share of the slurmd memory (NCCL and DataLoader workers use it)."""
PLUGSTACK = "include /usr/share/pyxis/*\n"
"""plugstack.conf loading pyxis (the slurmd-pyxis image installs its spank config there)."""


def slurmd_resources(p: PartitionFacts) -> dict[str, Any]:
    """Whole-node Guaranteed resources for slurmd: every accelerator and EFA interface, and cpu/memory =
    the smallest allocatable of the partition's types (Karpenter's formulas, ekstrain/simulate/nodes.py)
    minus the DaemonSet reserve and the logfile sidecar; requests == limits."""
    alloc = [allocatable(t, capacity(t, None)) for t in p.shape.instance_types]
    cpu = int(min(a["cpu"] for a in alloc) - NODE_DAEMONSET_RESERVE["cpu"] - 0.1)
    mem_gib = int((min(a["memory"] for a in alloc) - NODE_DAEMONSET_RESERVE["memory"] - 128 * 2**20) // 2**30)
    res: dict[str, Any] = {**p.node_resources, "cpu": str(cpu), "memory": f"{mem_gib}Gi"}
    return {"requests": dict(res), "limits": dict(res)}


LOG_VOLUME = "job-logs"
LOG_PROLOG = "50-ekstrain-job-logs.sh"


def log_prolog() -> str:
    """Slurm's Prolog (root, on each node before the job's first step there; slurm.schedmd.com/prolog_epilog.html)
    makes the job's own output directory on the node, owned by the job's user, so slurmstepd can open
    ``--output=<dir>/<job id>/<name>.out`` where the log agent tails it (ekstrain:logging)."""
    return "\n".join(
        [
            "#!/usr/bin/env bash",
            "set -euo pipefail",
            f'install -d -m 0750 -o "$SLURM_JOB_UID" -g "${{SLURM_JOB_GID:-$SLURM_JOB_UID}}" '
            f'"{logs.SLURM_LOG_DIR}/$SLURM_JOB_ID"',
            "",
        ]
    )


def _log_volume(cfg: StackConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts): the node's sbatch-output directory, with ekstrain:logging."""
    if not cfg.logging.enabled:
        return [], []
    return (
        [{"name": LOG_VOLUME, "hostPath": {"path": logs.SLURM_LOG_DIR, "type": "DirectoryOrCreate"}}],
        [{"name": LOG_VOLUME, "mountPath": logs.SLURM_LOG_DIR}],
    )


def nodeset(cfg: StackConfig, p: PartitionFacts, default: bool = False) -> dict[str, Any]:
    """``nodesets.<partition>`` value of the slurm chart."""
    resources = slurmd_resources(p)
    shm = f"{int(int(resources['limits']['memory'][:-2]) * SHM_FRACTION)}Gi"
    log_volumes, log_mounts = _log_volume(cfg)
    return {
        "replicas": nodeset_replicas(cfg, p.name),
        "slurmd": {
            # Extended resources must have requests == limits; asking for all of them pins the pod
            # to a whole node of the partition. cpu/memory too: a Guaranteed pod, never evicted first.
            # The pyxis build of the chart's own slurmd tag (the chart's default tag is kept).
            "image": {"repository": versions.SLURMD_PYXIS_IMAGE["repository"]},
            "resources": resources,
            "volumeMounts": [
                {"name": SHARED_VOLUME, "mountPath": cfg.schedulers.slurm.shared_mount_path},
                {"name": SHM_VOLUME, "mountPath": "/dev/shm"},
                *log_mounts,
            ],
        },
        "logfile": {
            "image": dict(versions.ALPINE_IMAGE),
            "resources": {"requests": dict(LOGFILE_RESOURCES), "limits": dict(LOGFILE_RESOURCES)},
        },
        "extraConfMap": {
            "Gres": [f"{GRES_NAME[p.accelerator_resource]}:{p.shape.accelerators_per_node}"],
            "Features": [p.name],
            # The NodeSet's switch of topology.conf: a dynamic node joins a switch only through this registration
            # option (Slurm doc/html/dynamic_nodes.shtml "Dynamic Nodes + Topology"; ekstrain/layout/topology.py).
            "Topology": [f"{topology.SLURM_TOPOLOGY_NAME}:{topology.slurm_switch(p.name)}"],
        },
        "partition": slurm_partition(p, default),
        **_queue_metadata(cfg, p),
        "podSpec": {
            **_queue_scheduler(cfg),
            "nodeSelector": dict(p.node_selector),  # the chart adds kubernetes.io/os: linux
            "tolerations": [p.toleration],
            "volumes": [
                {"name": SHARED_VOLUME, "persistentVolumeClaim": {"claimName": names.FSX_PVC}},
                # The container runtime's default /dev/shm is 64 MiB: NCCL would fail on it.
                {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": shm}},
                *log_volumes,
            ],
        },
    }


def _queue_metadata(cfg: StackConfig, p: PartitionFacts) -> dict[str, Any]:
    """One ledger per partition: with Volcano, a slurmd pod holds a whole node of the partition, so it
    joins the partition's Queue like every other pod there (Volcano's PodGroup controller gives a plain
    ``schedulerName: volcano`` pod its own PodGroup in the queue its ``scheduling.volcano.sh/queue-name``
    annotation names: volcano v1.13 pkg/controllers/podgroup/pg_controller_handler.go). Without it the
    queue counts the node as free and admits a gang that cannot bind. The chart's
    ``nodesets.<n>.metadata`` goes onto the NodeSet's pod template (charts/slurm 1.2.1 values.yaml)."""
    if not cfg.schedulers.volcano.enabled:
        return {}
    # With teams the partition's queue is a parent: slurmd pods go to its `-shared` leaf (assembly/schedulers/teams.py).
    # The group-name annotation puts them in the partition's gang PodGroup (gang_objects), not one of minMember 1.
    return {
        "metadata": {
            "annotations": {
                QUEUE_ANNOTATION: teams.shared_queue(cfg, p.name),
                slurm_gang.GROUP_ANNOTATION: gang_name(p.name),
            }
        }
    }


# ---- Slurm gangs: one Volcano PodGroup per partition, sized to its NodeSet ------------------------------------

GANG_SIZER = "slurm-gang-sizer"
GANG_SIZER_IMAGE = versions.EFA_EXPORTER_IMAGE
"""The platform's pinned Python slim image (the sizer uses the standard library only)."""
GANG_POLL_SECONDS = 2
"""How often the sizer follows the NodeSets: KEDA polls every 30 s (assembly/schedulers/autoscaling.py) and the
operator then creates the pods; Volcano's scheduler runs every second (schedulePeriod 1s), so the PodGroup has its
new size within about two of its cycles after a scale-up."""


def gang_name(partition: str) -> str:
    return f"slurm-{partition}"


def per_pod(p: PartitionFacts) -> dict[str, str]:
    """One slurmd pod's requests (slurmd + the logfile sidecar), as the PodGroup's minResources count them."""
    total: dict[str, float] = {}
    for res in (slurmd_resources(p)["requests"], LOGFILE_RESOURCES):
        for k, v in res.items():
            total[k] = total.get(k, 0.0) + slurm_gang._quantity(str(v))
    return {k: slurm_gang._format(v) for k, v in sorted(total.items())}


def gang_podgroup(cfg: StackConfig, p: PartitionFacts) -> dict[str, Any]:
    """The partition's PodGroup at its floor (``nodesetReplicas``); the sizer follows KEDA from there."""
    floor = nodeset_replicas(cfg, p.name)
    spec = slurm_gang.desired(floor, 0, per_pod(p))
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": gang_name(p.name), "namespace": NAMESPACE},
        "spec": {**spec, "queue": teams.shared_queue(cfg, p.name)},
    }


def gang_objects(cfg: StackConfig) -> list[dict[str, Any]]:
    """PodGroups, the sizer's script, RBAC and Deployment (on the system nodes); none without Volcano."""
    if not (cfg.schedulers.slurm.enabled and cfg.schedulers.volcano.enabled):
        return []
    parts = partition_facts(cfg)
    groups = {gang_name(p.name): {"nodeset": autoscaling.nodeset_name(p.name), "perPod": per_pod(p)} for p in parts}
    labels = {"app.kubernetes.io/name": GANG_SIZER, "app.kubernetes.io/part-of": "ekstrain"}
    meta = {"name": GANG_SIZER, "namespace": NAMESPACE, "labels": labels}
    return [
        *[gang_podgroup(cfg, p) for p in parts],
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta,
            "data": {"slurm_gang.py": pathlib.Path(slurm_gang.__file__).read_text()},
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [
                {"apiGroups": ["slinky.slurm.net"], "resources": ["nodesets"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
                {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["get", "patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GANG_SIZER},
            "subjects": [{"kind": "ServiceAccount", "name": GANG_SIZER, "namespace": NAMESPACE}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "serviceAccountName": GANG_SIZER,
                        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
                        "securityContext": pod_security.restricted_pod(),
                        "containers": [
                            {
                                "name": "sizer",
                                "image": GANG_SIZER_IMAGE,
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["python3", "/opt/gang/slurm_gang.py"],
                                "env": [
                                    {"name": "NAMESPACE", "value": NAMESPACE},
                                    {"name": "POLL_SECONDS", "value": str(GANG_POLL_SECONDS)},
                                    {"name": "GROUPS", "value": json.dumps(groups, sort_keys=True)},
                                ],
                                "resources": sized("10m", "32Mi", "64Mi"),
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                                "volumeMounts": [{"name": "script", "mountPath": "/opt/gang", "readOnly": True}],
                            }
                        ],
                        "volumes": [{"name": "script", "configMap": {"name": GANG_SIZER}}],
                    },
                },
            },
        },
    ]


def _queue_scheduler(cfg: StackConfig) -> dict[str, Any]:
    """``podSpec.schedulerName``: the chart's podSpec extends the NodeSet's corev1.PodSpec."""
    return {"schedulerName": VOLCANO_SCHEDULER} if cfg.schedulers.volcano.enabled else {}


def slurm_partition(p: PartitionFacts, default: bool) -> dict[str, Any]:
    """``nodesets.<partition>.partition``: the Slurm partition of exactly this NodeSet."""
    return {
        "enabled": True,
        "configMap": {
            "Default": "YES" if default else "NO",
            "MaxTime": "UNLIMITED",
            "State": "UP",
            "MaxNodes": str(p.config.max_nodes),
            # Training jobs get whole nodes: no other job shares a node's GPUs/EFA.
            "OverSubscribe": "EXCLUSIVE",
        },
    }


def _system(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"affinity": SYSTEM_NODE_AFFINITY, **(extra or {})}


def slurm_values(cfg: StackConfig) -> dict[str, Any]:
    """Values of the ``slurm`` chart for the stack's partitions."""
    s = cfg.schedulers.slurm
    parts = partition_facts(cfg)
    gres_types = sorted({GRES_NAME[p.accelerator_resource] for p in parts})
    values: dict[str, Any] = {
        "clusterName": cfg.cluster.name,
        # Only the Secret's name: its key is the chart's default key name (AUTH_KEYS, slurm.authSlurmRef.key).
        **{option: {"create": False, "secretRef": {"name": n}} for option, (n, _) in AUTH_KEYS.items()},
        "configFiles": {
            "plugstack.conf": PLUGSTACK,
            **({"gres.conf": "AutoDetect=nvidia\n"} if any(p.is_gpu for p in parts) else {}),
            # One switch per NodeSet under one top switch (ekstrain/layout/topology.py slurm_topology_conf); a config
            # file
            # Slinky passes to Slurm (slurm-operator v1.2.1 internal/webhook/controller_webhook.go knownConfigFiles).
            "topology.conf": topology.slurm_topology_conf({p.name: p.config.max_nodes for p in parts}),
        },
        "controller": {
            "slurmctld": {"resources": SLURM_DAEMON_RESOURCES},
            "reconfigure": {"resources": SLURM_SIDECAR_RESOURCES},
            "logfile": {"image": dict(versions.ALPINE_IMAGE), "resources": SLURM_SIDECAR_RESOURCES},
            "extraConfMap": {
                **(
                    {"GresTypes": gres_types, "AccountingStorageTRES": [f"gres/{g}" for g in gres_types]}
                    if gres_types
                    else {}
                ),
                # slurm.conf: place jobs by topology.conf's switches (Slurm topology.conf(5), topology/tree).
                "TopologyPlugin": ["topology/tree"],
            },
            "podSpec": _system(),
            **autoscaling.controller_metrics(cfg),
        },
        "restapi": {"slurmrestd": {"resources": SLURM_DAEMON_RESOURCES}, "podSpec": _system()},
        "accounting": {
            "enabled": s.accounting,
            "storageConfig": {
                "host": MARIADB_NAME,
                "port": 3306,
                "database": MARIADB_DATABASE,
                "username": MARIADB_USER,
                "passwordKeyRef": {"name": MARIADB_SECRET, "key": "password"},
            },
            "slurmdbd": {"resources": SLURM_DAEMON_RESOURCES},
            "podSpec": _system(),
        },
        "loginsets": {
            LOGINSET: {
                "login": {
                    "volumeMounts": [{"name": SHARED_VOLUME, "mountPath": s.shared_mount_path}],
                    "resources": SLURM_DAEMON_RESOURCES,
                },
                "initconf": {"image": dict(versions.ALPINE_IMAGE), "resources": INITCONF_RESOURCES},
                "rootSshAuthorizedKeys": "\n".join(_authorized_keys(cfg)) or None,
                "podSpec": _system(
                    {"volumes": [{"name": SHARED_VOLUME, "persistentVolumeClaim": {"claimName": names.FSX_PVC}}]}
                ),
                "service": login_service(cfg),
            }
        },
        "nodesets": {p.name: nodeset(cfg, p, default=i == 0) for i, p in enumerate(parts)},
    }
    if cfg.logging.enabled:
        values["prologScripts"] = {LOG_PROLOG: log_prolog()}
    if values["loginsets"][LOGINSET]["rootSshAuthorizedKeys"] is None:
        del values["loginsets"][LOGINSET]["rootSshAuthorizedKeys"]
    if not s.accounting:
        values["accounting"] = {"enabled": False}
    return values


def operator_values(cfg: StackConfig) -> dict[str, Any]:
    """Values of the ``slurm-operator`` chart (CRDs come from the separate slurm-operator-crds release)."""
    return {
        "crds": {"enabled": False},
        "operator": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": MEDIUM},
        "webhook": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": SMALL},
        "certManager": {"enabled": cfg.schedulers.slurm.cert_manager},
    }


def cert_manager_values() -> dict[str, Any]:
    """cert-manager chart values (its values.yaml is not in shared/upstream: keys checked against
    CERT_MANAGER_KEYS, taken from the v1.19 chart's documented values)."""
    sel = dict(SYSTEM_NODE_SELECTOR)
    return {
        "crds": {"enabled": True},
        "nodeSelector": sel,
        "resources": MEDIUM,
        "webhook": {"nodeSelector": dict(sel), "resources": SMALL},
        "cainjector": {"nodeSelector": dict(sel), "resources": MEDIUM},
        # The post-install hook Job that waits for the webhook (cmctl check api): a sidecar size.
        "startupapicheck": {"nodeSelector": dict(sel), "resources": SMALL},
    }


CERT_MANAGER_KEYS = {
    "crds.enabled",
    "nodeSelector",
    "resources",
    "webhook.nodeSelector",
    "webhook.resources",
    "cainjector.nodeSelector",
    "cainjector.resources",
    "startupapicheck.nodeSelector",
    "startupapicheck.resources",
}


# ---- plain objects in the slurm namespace -------------------------------------------------------


def fsx_pv(name: str, file_system_id: Any, dns_name: Any, mount_name: Any, capacity_gib: int) -> dict[str, Any]:
    """Static PV for the stack's FSx for Lustre file system, bound only to the slurm namespace's PVC."""
    return fsx_volume.pv(name, file_system_id, dns_name, mount_name, capacity_gib, claim=(NAMESPACE, names.FSX_PVC))


def fsx_pvc(pv_name: str, capacity_gib: int) -> dict[str, Any]:
    return fsx_volume.pvc(names.FSX_PVC, NAMESPACE, pv_name, capacity_gib)


def mariadb_labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": MARIADB_NAME, "app.kubernetes.io/part-of": "slurm-accounting"}


def mariadb_service() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": MARIADB_NAME, "namespace": NAMESPACE, "labels": mariadb_labels()},
        "spec": {"selector": mariadb_labels(), "ports": [{"name": "mysql", "port": 3306, "targetPort": 3306}]},
    }


MARIADB_UID = 10001
"""Non-root uid: the official image runs as any uid whose data dir is writable (fsGroup)."""
MARIADB_SECRET_DIR = "/run/secrets/mariadb"


def mariadb_statefulset(volume_gib: int) -> dict[str, Any]:
    """One MariaDB replica on a system node with a gp3 volume; slurmdbd is its only client.

    Hardened: non-root, read-only root file system (scratch dirs are emptyDirs), no capabilities,
    passwords read from files (``MARIADB_*_FILE``) rather than environment variables.
    """
    probe = {
        "exec": {"command": ["healthcheck.sh", "--connect", "--innodb_initialized"]},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": MARIADB_NAME, "namespace": NAMESPACE, "labels": mariadb_labels()},
        "spec": {
            "serviceName": MARIADB_NAME,
            "replicas": 1,
            "selector": {"matchLabels": mariadb_labels()},
            # Keep the accounting volume when the StatefulSet is deleted or scaled down.
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": {"labels": mariadb_labels()},
                "spec": {
                    "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
                    "automountServiceAccountToken": False,
                    "securityContext": pod_security.restricted_pod(MARIADB_UID, fs_group=True),
                    "volumes": [
                        {"name": "secrets", "secret": {"secretName": MARIADB_SECRET, "defaultMode": 0o400}},
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "run", "emptyDir": {}},
                    ],
                    "containers": [
                        {
                            "name": "mariadb",
                            "image": MARIADB_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            # InnoDB settings the Slurm accounting guide asks for (accounting.html).
                            "args": [
                                "--innodb-buffer-pool-size=1G",
                                "--innodb-log-file-size=64M",
                                "--innodb-lock-wait-timeout=900",
                            ],
                            "env": [
                                {"name": "MARIADB_DATABASE", "value": MARIADB_DATABASE},
                                {"name": "MARIADB_USER", "value": MARIADB_USER},
                                {"name": "MARIADB_PASSWORD_FILE", "value": f"{MARIADB_SECRET_DIR}/password"},
                                {"name": "MARIADB_ROOT_PASSWORD_FILE", "value": f"{MARIADB_SECRET_DIR}/root-password"},
                            ],
                            "ports": [{"name": "mysql", "containerPort": 3306}],
                            "resources": {
                                "requests": {"cpu": "500m", "memory": "2Gi"},
                                "limits": {"cpu": "2", "memory": "2Gi"},
                            },
                            "readinessProbe": probe,
                            "livenessProbe": {**probe, "initialDelaySeconds": 60},
                            "volumeMounts": [
                                {"name": "data", "mountPath": "/var/lib/mysql"},
                                {"name": "secrets", "mountPath": MARIADB_SECRET_DIR, "readOnly": True},
                                {"name": "tmp", "mountPath": "/tmp"},
                                {"name": "run", "mountPath": "/run/mysqld"},
                            ],
                        }
                    ],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "gp3",
                        "resources": {"requests": {"storage": f"{volume_gib}Gi"}},
                    },
                }
            ],
        },
    }


def mariadb_network_policy() -> dict[str, Any]:
    """Only pods of the slurm namespace (slurmdbd) reach the database."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": MARIADB_NAME, "namespace": NAMESPACE, "labels": mariadb_labels()},
        "spec": {
            "podSelector": {"matchLabels": mariadb_labels()},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 3306}]}],
        },
    }


def auth_key_secret(option: str, value: Any) -> dict[str, Any]:
    """The Secret behind the chart's ``slurmKey`` or ``jwtKey`` (``AUTH_KEYS``), holding ``value``."""
    name, key = AUTH_KEYS[option]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": {key: value},
    }


def mariadb_secret(password: Any, root_password: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": MARIADB_SECRET, "namespace": NAMESPACE, "labels": mariadb_labels()},
        "type": "Opaque",
        "stringData": {"password": password, "root-password": root_password},
    }
