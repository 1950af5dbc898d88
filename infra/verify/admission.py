"""Admission: every rendered pod template against the Pod Security Standards its namespace enforces.

A namespace labelled ``pod-security.kubernetes.io/enforce: baseline|restricted`` makes the API server
refuse pods that break that level; a Deployment or DaemonSet then never gets pods and Helm's wait fails
the `up` (JupyterHub's user pods fail at "Start"). Namespaces without the label (and those Helm creates)
enforce ``privileged`` (EKS configures no cluster-wide default).

The rules are the upstream Pod Security Standards as the admission plugin implements them:
kubernetes/kubernetes staging/src/k8s.io/pod-security-admission/policy/check_*.go (v1.35; listed per
rule below) and https://kubernetes.io/docs/concepts/security/pod-security-standards/. Exceptions are
on the reviewed list (security/reviewed-runtime-objects.yaml, check ``admission``), each with its reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ekstrain.infra.verify import Check
from ekstrain.infra.verify.pods import Inventory, PodTemplate, containers
from ekstrain.simulate import quantity

NAME = "admission: pod security level of each namespace"
CHECK = "admission"
ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")

# check_capabilities_baseline.go: capabilities a baseline pod may add.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_sysctls.go (1.32+ list): the safe sysctls.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
# check_seLinuxOptions.go: allowed SELinux types.
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
# check_restrictedVolumes.go: volume types a restricted pod may use.
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
_VOLUME_META = frozenset({"name"})


def _sc(c: dict[str, Any]) -> dict[str, Any]:
    return c.get("securityContext") or {}


def baseline(spec: dict[str, Any], metadata: dict[str, Any]) -> Iterator[str]:
    """Violations of the baseline level."""
    pod_sc = spec.get("securityContext") or {}
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess") or any(
        (_sc(c).get("windowsOptions") or {}).get("hostProcess") for c in containers(spec)
    ):
        yield "hostProcess containers (check_hostProcess.go)"
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key):
            yield f"{key}: true (check_hostNamespaces.go)"
    for c in containers(spec):
        name = c.get("name")
        sc = _sc(c)
        if sc.get("privileged"):
            yield f"container {name} is privileged (check_privileged.go)"
        added = set((sc.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
        if added:
            yield f"container {name} adds capabilities {sorted(added)} (check_capabilities_baseline.go)"
        ports = [p.get("hostPort") for p in c.get("ports") or [] if p.get("hostPort")]
        if ports:
            yield f"container {name} uses hostPort {ports} (check_hostPorts.go)"
        if sc.get("procMount") not in (None, "Default"):
            yield f"container {name} procMount {sc.get('procMount')} (check_procMount.go)"
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"container {name} seccompProfile Unconfined (check_seccompProfile_baseline.go)"
        if (sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
            yield f"container {name} appArmorProfile Unconfined (check_appArmorProfile.go)"
        se = sc.get("seLinuxOptions") or {}
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            yield f"container {name} seLinuxOptions {se} (check_seLinuxOptions.go)"
    for v in spec.get("volumes") or []:
        if "hostPath" in v:
            yield f"hostPath volume {v.get('name')} (check_hostPathVolumes.go)"
    if (pod_sc.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield "pod seccompProfile Unconfined (check_seccompProfile_baseline.go)"
    if (pod_sc.get("appArmorProfile") or {}).get("type") == "Unconfined":
        yield "pod appArmorProfile Unconfined (check_appArmorProfile.go)"
    se = pod_sc.get("seLinuxOptions") or {}
    if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
        yield f"pod seLinuxOptions {se} (check_seLinuxOptions.go)"
    unsafe = [s.get("name") for s in pod_sc.get("sysctls") or [] if s.get("name") not in SAFE_SYSCTLS]
    if unsafe:
        yield f"unsafe sysctls {unsafe} (check_sysctls.go)"
    for key, value in (metadata.get("annotations") or {}).items():
        if key.startswith("container.apparmor.security.beta.kubernetes.io/") and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            yield f"annotation {key}: {value} (check_appArmorProfile.go)"


def restricted(spec: dict[str, Any], metadata: dict[str, Any]) -> Iterator[str]:
    """Violations of the restricted level (which includes baseline)."""
    yield from baseline(spec, metadata)
    pod_sc = spec.get("securityContext") or {}
    for v in spec.get("volumes") or []:
        kinds = set(v) - _VOLUME_META - RESTRICTED_VOLUMES
        if kinds:
            yield f"volume {v.get('name')} of type {sorted(kinds)} (check_restrictedVolumes.go)"
    pod_non_root = pod_sc.get("runAsNonRoot")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_sc.get("runAsUser") == 0:
        yield "pod runAsUser 0 (check_runAsUser.go)"
    for c in containers(spec):
        name = c.get("name")
        sc = _sc(c)
        if sc.get("allowPrivilegeEscalation") is not False:
            yield f"container {name} does not set allowPrivilegeEscalation: false (check_allowPrivilegeEscalation.go)"
        if not (sc.get("runAsNonRoot") if "runAsNonRoot" in sc else pod_non_root):
            yield f"container {name} does not run as non-root (runAsNonRoot; check_runAsNonRoot.go)"
        if sc.get("runAsUser") == 0:
            yield f"container {name} runAsUser 0 (check_runAsUser.go)"
        seccomp = (sc.get("seccompProfile") or {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield (
                f"container {name} seccompProfile is not RuntimeDefault/Localhost (check_seccompProfile_restricted.go)"
            )
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            yield f"container {name} does not drop ALL capabilities (check_capabilities_restricted.go)"
        extra = set(caps.get("add") or []) - {"NET_BIND_SERVICE"}
        if extra:
            yield f"container {name} adds {sorted(extra)} (check_capabilities_restricted.go)"


RULES = {"baseline": baseline, "restricted": restricted}


def namespace_levels(objects: list[dict[str, Any]]) -> dict[str, str]:
    """Namespace -> enforced level, from the Namespace objects the stack applies."""
    levels = {}
    for obj in objects:
        if obj.get("kind") == "Namespace":
            labels = (obj.get("metadata") or {}).get("labels") or {}
            levels[(obj.get("metadata") or {}).get("name", "")] = labels.get(ENFORCE, "privileged")
    return levels


def violations(template: PodTemplate, level: str) -> list[str]:
    rule = RULES.get(level)
    return [] if rule is None else list(rule(template.spec, template.metadata))


_HUGEPAGES = {"hugepages-2Mi": 2**21, "hugepages-1Gi": 2**30, "hugepages-32Mi": 2**25, "hugepages-64Ki": 2**16}


def api_validation(spec: dict[str, Any]) -> Iterator[str]:
    """What the API server's pod validation refuses at every Pod Security level (kubernetes
    pkg/apis/core/validation/validation.go, v1.35): a mountPath twice in one container (ValidateVolumeMounts:
    "must be unique"), a volume or container name twice (validateVolumes, validateContainers: "Duplicate value"),
    and a hugepages request or limit that is no whole number of pages (validateResourceQuantityHugePageValue:
    "is not positive integer multiple of")."""
    volumes = [str(v.get("name")) for v in spec.get("volumes") or [] if isinstance(v, dict)]
    for name in sorted({v for v in volumes if volumes.count(v) > 1}):
        yield f"volume {name!r} is listed {volumes.count(name)} times (validateVolumes: Duplicate value)"
    names = [str(c.get("name")) for c in containers(spec)]
    for name in sorted({n for n in names if names.count(n) > 1}):
        yield f"container name {name!r} is used {names.count(name)} times (validateContainers: Duplicate value)"
    for c in containers(spec):
        paths = [str(m.get("mountPath")) for m in c.get("volumeMounts") or [] if isinstance(m, dict)]
        for path in sorted({m for m in paths if paths.count(m) > 1}):
            yield (
                f"container {c.get('name')} mounts {paths.count(path)} volumes at {path} (ValidateVolumeMounts: "
                "mountPath must be unique)"
            )
        for kind in ("requests", "limits"):
            for resource, value in ((c.get("resources") or {}).get(kind) or {}).items():
                page = _HUGEPAGES.get(str(resource))
                try:
                    amount = quantity.parse(value) if page else 0
                except ValueError:
                    continue  # the schema check names a value that is no quantity
                if page and (amount <= 0 or amount % page):
                    yield (
                        f"container {c.get('name')} {kind} {resource}: {value} is not a positive whole number of "
                        f"{resource.removeprefix('hugepages-')} pages (validateResourceQuantityHugePageValue)"
                    )


def check(templates: list[PodTemplate], levels: dict[str, str], inventory: Inventory) -> Check:
    result = Check(NAME, what="pod templates")
    for t in templates:
        result.checked += 1
        invalid = list(api_validation(t.spec))
        if invalid:  # no level and no review admits these: the API server refuses the object
            result.problems.append(
                f"{t.owner} ({t.source}) {t.path}: the API server refuses this pod: {'; '.join(invalid)}. Fix the "
                "pod (or the stack key or chart value that writes it)"
            )
        level = levels.get(t.namespace, "privileged")
        found = violations(t, level)
        if not found:
            continue
        if inventory.reviewed_for(CHECK, (t.kind, t.namespace, t.name)) is not None:
            continue
        result.problems.append(
            f"{t.owner} ({t.source}) {t.path}: namespace {t.namespace} enforces Pod Security '{level}', "
            f"which refuses: {'; '.join(found)}. Fix the pod (or the chart value that adds it), or label the "
            "namespace with the level it needs and list the reason in security/reviewed-runtime-objects.yaml"
        )
    return result
