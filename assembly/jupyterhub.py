"""JupyterHub (zero-to-jupyterhub 4.4.0) values and the read-only FSx volume, from a StackConfig.

- one profile per partition (``jupyterhub.profiles`` or all): GPU profiles ask for 1, 2, 4 or 8
  GPUs of the partition's node (a choice), Trainium profiles for 1 or all 16 Neuron devices; pods
  are pinned to the partition by ``ekstrain.io/partition`` and tolerate its accelerator taint, so
  Karpenter launches a node of that partition for a notebook and removes it when the notebook is
  culled and the node is empty;
- home directories on EFS: a dynamic ReadWriteMany PVC per user of class ``efs-ap`` (one EFS access
  point per user, kept when the PVC goes);
- the training FSx file system mounted read-only at ``/fsx`` (datasets, checkpoints to inspect);
- idle servers culled after ``cullIdleMinutes``;
- auth: GitHub or generic OAuth restricted to listed organizations/users; the dummy authenticator
  only outside prod and only with a password; never an open hub;
- the proxy behind an internal NLB restricted to ``allowedCidrs`` (default: the VPC), which terminates TLS on 443
  with the ACM certificate ``tls.certificateArn`` (the OAuth callback is https; the stack rules refuse one without);
- a start timeout per profile from the partition's cold start (:mod:`ekstrain.layout.cold_start`: launch + health gate +
  image pull, the numbers the simulator plays), with KubeSpawner's pod events shown on the spawn page meanwhile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ekstrain.assembly.schedulers import teams
from ekstrain.facts import catalog, names, versions
from ekstrain.facts.names import SYSTEM_NODE_SELECTOR
from ekstrain.layout import cold_start
from ekstrain.layout.controller_resources import sized
from ekstrain.layout.notebook_size import NOTEBOOK_CPU, NOTEBOOK_MEMORY_GIB
from ekstrain.layout.partitions import shape
from ekstrain.payloads import fsx_volume

if TYPE_CHECKING:
    from ekstrain.stacks.models import StackConfig
    from ekstrain.stacks.models.partitions import PartitionConfig

NAMESPACE = "jupyterhub"
RELEASE = "jupyterhub"
FSX_PV = f"{NAMESPACE}-fsx-lustre"
FSX_PVC = names.FSX_PVC
HOME = "/home/jovyan"
NLB_ANNOTATIONS = {
    # The AWS cloud controller in the EKS control plane serves these: an internal NLB.
    "service.beta.kubernetes.io/aws-load-balancer-type": "nlb",
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
}
OAUTH_SECRET = "jupyterhub-oauth"
"""Secret (key ``client-secret``) the hub reads its OAuth client secret from: created by Pulumi from
``ekstrain:jupyterhubClientSecret`` when set, else by the operator (the secret never has to be in
the stack file)."""
OAUTH_SECRET_KEY = "client-secret"
TLS_ANNOTATIONS = {
    # The AWS cloud provider's service controller puts a TLS listener with this ACM certificate on the ports named
    # in -ssl-ports and forwards plain TCP to the targets (kubernetes/cloud-provider-aws docs/service_controller.md,
    # NLB TLS termination since Kubernetes 1.15); z2jh's `proxy.https.type: offload` maps Service port 443 to the
    # proxy's http port (charts/jupyterhub 4.4.0 templates/proxy/service.yaml).
    "ssl_cert": "service.beta.kubernetes.io/aws-load-balancer-ssl-cert",
    "ssl_ports": "service.beta.kubernetes.io/aws-load-balancer-ssl-ports",
    "policy": "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy",
}
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
"""TLS 1.3 and 1.2 only (Elastic Load Balancing security policies for NLB)."""
DEFAULT_START_TIMEOUT = 300
"""z2jh's ``singleuser.startTimeout`` default (charts/jupyterhub 4.4.0 values.yaml)."""
GPU_CHOICES = (1, 2, 4, 8)
NEURON_CHOICES = (1, 16)


def source_ranges(cfg: StackConfig) -> list[str]:
    return list(cfg.jupyterhub.allowed_cidrs) or [cfg.network.vpc_cidr]


def offered(cfg: StackConfig) -> list[PartitionConfig]:
    wanted = cfg.jupyterhub.profiles
    return [p for p in cfg.partitions if not wanted or p.name in wanted]


def _devices(p: PartitionConfig) -> tuple[int, ...]:
    per_node = shape(p.name, p.accelerator, p.instance_types, p.efa).accelerators_per_node
    choices = GPU_CHOICES if p.accelerator == catalog.GPU else NEURON_CHOICES
    return tuple(c for c in choices if c <= per_node) or (per_node,)


def start_timeout(p: PartitionConfig) -> int:
    """KubeSpawner ``start_timeout`` (seconds) for a profile of ``p``: a notebook on a partition with no node yet
    waits for Karpenter's launch, the health gate's pre-flight (every accelerator NodePool carries its startup taint)
    and the image pull (:mod:`ekstrain.layout.cold_start`); z2jh's 300 s default gives up first and deletes the pod."""
    family = catalog.get(p.instance_types[0]).family
    return cold_start.notebook_start_timeout(family, gated=True)


def profile(p: PartitionConfig, default: bool, volcano: bool = False, queue: str | None = None) -> dict[str, Any]:
    """One kubespawner profile: the partition's nodes, its taint, an accelerator-count choice. With Volcano
    the server pod joins the partition's queue, so the queue's capacity counts it and no gang is admitted
    for nodes a notebook holds (assembly/schedulers/volcano.py). ``queue``: the partition's queue for pods of no
    team (@default the partition's name; ``<partition>-shared`` when teams name the partition,
    assembly/schedulers/teams.py)."""
    it = catalog.get(p.instance_types[0])
    resource = it.accelerator_resource
    gpu = p.accelerator == catalog.GPU
    choices = {
        str(n): {
            "display_name": f"{n} {'GPU' if gpu else 'Neuron device'}{'s' if n > 1 else ''}",
            "kubespawner_override": {
                "extra_resource_limits": {resource: str(n)},
                "extra_resource_guarantees": {resource: str(n)},
            },
        }
        for n in _devices(p)
    }
    override: dict[str, Any] = {
        "image": versions.JUPYTER_GPU_IMAGE if gpu else versions.JUPYTER_NEURON_IMAGE,
        "node_selector": {names.PARTITION_LABEL: p.name},
        "tolerations": [{"key": resource, "operator": "Equal", "value": names.TAINT_VALUE, "effect": "NoSchedule"}],
        "cpu_guarantee": NOTEBOOK_CPU,
        "mem_guarantee": f"{NOTEBOOK_MEMORY_GIB}G",  # kubespawner's ByteSpecification: G is 1024**3
        # A profile's kubespawner_override sets any KubeSpawner trait for servers of that profile (kubespawner
        # spawner.py `profile_list`: "kubespawner_override: a dictionary with overrides to apply to the KubeSpawner
        # settings"); start_timeout is the Spawner trait the hub waits on before it stops the pod.
        "start_timeout": start_timeout(p),
    }
    if volcano:
        override["scheduler_name"] = "volcano"
        override["extra_annotations"] = {"scheduling.volcano.sh/queue-name": queue or p.name}
    if not gpu:
        # The Neuron SDK image has no Jupyter: install the singleuser server, then start it.
        override["cmd"] = [
            "bash",
            "-c",
            f"pip install --no-cache-dir {versions.JUPYTER_NEURON_SINGLEUSER} && exec jupyterhub-singleuser",
        ]
    return {
        "display_name": f"{p.name} ({', '.join(p.instance_types)})",
        "description": (
            f"{it.accelerator.model} on a {p.name} node; with none free one is launched and checked for you "
            f"(up to {start_timeout(p) // 60} min: the progress below shows its events)"
        ),
        "slug": p.name,
        "default": default,
        "kubespawner_override": override,
        "profile_options": {"devices": {"display_name": "Accelerators", "choices": choices}},
    }


def auth_config(cfg: StackConfig, client_secret: Any = None) -> dict[str, Any]:
    """``hub.config``: the authenticator and who may log in (rules refuse an open hub). OAuth client
    secrets come from the environment (``OAUTH_CLIENT_SECRET``, see :func:`chart_values`); only the
    dummy password (never in prod) is passed here."""
    a = cfg.jupyterhub.auth
    common: dict[str, Any] = {"admin_users": list(a.admin_users)}
    if a.allowed_users:
        common["allowed_users"] = list(a.allowed_users)
    if a.type == "github":
        return {
            "JupyterHub": {"authenticator_class": "github", "admin_access": False},
            "Authenticator": common,
            "GitHubOAuthenticator": {
                "client_id": a.client_id,
                "oauth_callback_url": a.callback_url,
                "allowed_organizations": list(a.allowed_organizations),
                "scope": ["read:org"],
            },
        }
    if a.type == "generic-oauth":
        return {
            "JupyterHub": {"authenticator_class": "generic-oauth", "admin_access": False},
            "Authenticator": common,
            "GenericOAuthenticator": {
                "client_id": a.client_id,
                "oauth_callback_url": a.callback_url,
                "authorize_url": a.authorize_url,
                "token_url": a.token_url,
                "userdata_url": a.userdata_url,
                "username_claim": a.username_claim,
                "scope": ["openid", "profile"],
            },
        }
    # dummy (not in prod): one shared password, still only the listed users
    return {
        "JupyterHub": {"authenticator_class": "dummy", "admin_access": False},
        "Authenticator": common,
        "DummyAuthenticator": {"password": client_secret},
    }


def proxy_service(cfg: StackConfig) -> dict[str, Any]:
    """``proxy.service``: the internal NLB; with ``tls.certificateArn`` it listens on 443 only, terminating TLS."""
    annotations = dict(NLB_ANNOTATIONS)
    arn = cfg.jupyterhub.tls.certificate_arn
    service: dict[str, Any] = {"type": "LoadBalancer", "annotations": annotations}
    if arn:
        annotations[TLS_ANNOTATIONS["ssl_cert"]] = arn
        annotations[TLS_ANNOTATIONS["ssl_ports"]] = "https"
        annotations[TLS_ANNOTATIONS["policy"]] = TLS_POLICY
        service["disableHttpPort"] = True  # no clear-text listener beside it
    service["loadBalancerSourceRanges"] = source_ranges(cfg)
    return service


def proxy_https(cfg: StackConfig) -> dict[str, Any]:
    """``proxy.https``: offload (the NLB holds the certificate) when ``tls.certificateArn`` is set."""
    if not cfg.jupyterhub.tls.certificate_arn:
        return {}
    return {"https": {"enabled": True, "type": "offload"}}


def chart_values(cfg: StackConfig, dummy_password: Any = None) -> dict[str, Any]:
    j = cfg.jupyterhub
    parts = offered(cfg)
    hub: dict[str, Any] = {
        "config": auth_config(cfg, dummy_password),
        "nodeSelector": dict(SYSTEM_NODE_SELECTOR),
        "resources": sized("100m", "512Mi", "1Gi"),
    }
    if j.auth.type != "dummy":
        # oauthenticator reads client_secret from OAUTH_CLIENT_SECRET.
        hub["extraEnv"] = {
            "OAUTH_CLIENT_SECRET": {"valueFrom": {"secretKeyRef": {"name": OAUTH_SECRET, "key": OAUTH_SECRET_KEY}}}
        }
    return {
        "hub": hub,
        "proxy": {
            "service": proxy_service(cfg),
            **proxy_https(cfg),
            "chp": {"nodeSelector": dict(SYSTEM_NODE_SELECTOR), "resources": sized("50m", "128Mi", "256Mi")},
        },
        "singleuser": {
            # The hub-wide default is the slowest profile's cold start; each profile sets its own.
            "startTimeout": max([start_timeout(p) for p in parts] or [DEFAULT_START_TIMEOUT]),
            # KubeSpawner streams the pod's events (Karpenter's nomination, the pull) to the spawn page
            # (kubespawner spawner.py `events_enabled`, z2jh `singleuser.events`); set here so it stays on.
            "events": True,
            "storage": {
                "type": "dynamic",
                "capacity": f"{j.user_storage_gib}Gi",
                "homeMountPath": HOME,
                "dynamic": {"storageClass": names.EFS_STORAGE_CLASS, "storageAccessModes": ["ReadWriteMany"]},
                "extraVolumes": [{"name": "fsx", "persistentVolumeClaim": {"claimName": FSX_PVC, "readOnly": True}}],
                "extraVolumeMounts": [{"name": "fsx", "mountPath": cfg.storage.fsx.mount_path, "readOnly": True}],
            },
            "profileList": [
                profile(p, i == 0, cfg.schedulers.volcano.enabled, teams.shared_queue(cfg, p.name))
                for i, p in enumerate(parts)
            ],
            # The chart's default adds a privileged NET_ADMIN init container to every user pod, which the
            # namespace's Pod Security `baseline` refuses. IMDS stays closed: the partitions' nodes answer IMDSv2
            # with hop limit 1 (no pod reaches it) and the chart's singleuser NetworkPolicy already denies
            # egress to 169.254.169.254 (egressAllowRules.cloudMetadataServer: false).
            "cloudMetadata": {"blockWithIptables": False},
        },
        # Karpenter launches the nodes; the user scheduler and image pre-pullers (which would pull
        # the multi-GB notebook images onto every node) stay off.
        "scheduling": {"userScheduler": {"enabled": False}, "userPlaceholder": {"enabled": False}},
        "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
        "cull": {"enabled": True, "timeout": j.cull_idle_minutes * 60, "every": 300, "users": False},
    }


GENERATED_SECRETS = ("proxy-token", "cookie-secret", "crypt-key")
"""Keys z2jh 4.4.0 generates with ``randHex``/``randAlphaNum`` unless ``lookup`` finds its Secret
(templates/hub/_helpers-passwords.tpl), which Argo CD never does: each is fed from a Pulumi random
instead, as a 32-byte hex key (what the chart generates for the cookie secret and CryptKeeper)."""
KEYS_SECRET = "jupyterhub-keys"
"""The Secret the program creates with the hub's cookie secret and CryptKeeper keys: the chart's ``hub.existingSecret``.
z2jh's hub reads each of these keys from that Secret first (files/hub/z2jh.py ``get_secret_value``: existing-secret,
then the chart's own), so an Argo CD Application carries the Secret's name, never the values."""
KEYS_SECRET_ITEMS = {"cookie-secret": "hub.config.JupyterHub.cookie_secret", "crypt-key": "hub.config.CryptKeeper.keys"}
"""GENERATED_SECRETS key -> the key z2jh reads in the existing Secret (jupyterhub_config.py)."""


def keys_secret(secrets: dict[str, Any]) -> dict[str, Any]:
    """The ``hub.existingSecret`` Secret (:data:`KEYS_SECRET`) holding the cookie secret and the CryptKeeper key."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": KEYS_SECRET, "namespace": NAMESPACE},
        "stringData": {item: secrets[key] for key, item in KEYS_SECRET_ITEMS.items()},
    }


def generated_secret_values(secrets: dict[str, Any]) -> dict[str, Any]:
    """Values setting the chart's own options for ``GENERATED_SECRETS`` (name -> hex key), and ``hub.existingSecret``.

    The values are Pulumi secrets: in the state encrypted, and in what the render writes redacted; the Argo CD
    Application leaves them out and keeps ``hub.existingSecret`` (infra/render.py): the hub then reads the cookie
    secret and CryptKeeper key from :data:`KEYS_SECRET`, and the proxy token is the chart's (generated per sync,
    read by hub and proxy from the same chart Secret; docs/platform.md). Pulumi's own release keeps all three, so
    ``helm template`` renders the same objects every time."""
    return {
        "proxy": {"secretToken": secrets["proxy-token"]},
        "hub": {
            "existingSecret": KEYS_SECRET,
            "cookieSecret": secrets["cookie-secret"],
            "config": {"CryptKeeper": {"keys": [secrets["crypt-key"]]}},
        },
    }


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, maps recursively (neither is modified)."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def oauth_secret(client_secret: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": OAUTH_SECRET, "namespace": NAMESPACE},
        "stringData": {OAUTH_SECRET_KEY: client_secret},
    }


def fsx_pv(file_system_id: Any, dns_name: Any, mount_name: Any, capacity_gib: int) -> dict[str, Any]:
    """The training FSx file system again, for the jupyterhub namespace, read-only."""
    return fsx_volume.pv(
        FSX_PV, file_system_id, dns_name, mount_name, capacity_gib, read_only=True, claim=(NAMESPACE, FSX_PVC)
    )


def fsx_pvc(capacity_gib: int) -> dict[str, Any]:
    return fsx_volume.pvc(FSX_PVC, NAMESPACE, FSX_PV, capacity_gib, read_only=True)


@dataclass(frozen=True, kw_only=True)
class HubPlan:
    """What the JupyterHub component needs from the stack config, and nothing else of it."""

    fsx_capacity_gib: int
    dummy_auth: bool
    """Dummy authenticator: the client secret is the shared password (in the values), not an OAuth Secret."""
    values: Callable[[Any], dict[str, Any]]
    """Chart values given the dummy password (an Output, or None)."""


def plan(cfg: StackConfig) -> HubPlan:
    return HubPlan(
        fsx_capacity_gib=cfg.storage.fsx.storage_capacity_gib,
        dummy_auth=cfg.jupyterhub.auth.type == "dummy",
        values=functools.partial(chart_values, cfg),
    )
