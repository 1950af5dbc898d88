"""Node labels a partition may add (``ekstrain:partitions[].labels``): Kubernetes' syntax, Karpenter's rules.

Sources:
- syntax: Kubernetes "Labels and Selectors" (k8s.io/apimachinery ``validation.IsQualifiedName`` and
  ``IsValidLabelValue``): an optional DNS-subdomain prefix of at most 253 characters and ``/``, a name of
  at most 63 alphanumerics, ``-``, ``_``, ``.`` starting and ending alphanumeric; values the same, or empty.
- restricted domains: Karpenter v1 ``pkg/apis/v1/labels.go`` (kubernetes-sigs/karpenter, as in v1.14.1):
  ``IsRestrictedNodeLabel`` refuses a label whose domain *ends with* (``strings.HasSuffix``) kubernetes.io,
  k8s.io or karpenter.sh (the AWS provider adds karpenter.k8s.aws), unless the domain ends with one of the
  exceptions node-role.kubernetes.io, kops.k8s.io, node-restriction.kubernetes.io or (kubelet may set it
  itself) node.kubernetes.io; kubernetes.io/hostname is always restricted. Karpenter's well-known labels
  (zone, instance type, arch, capacity type...) are allowed by Karpenter but set here from the partition
  (instanceTypes, capacityType, the training AZ), so a template label would contradict them: refused.
- count: the NodePool CRD (``crds/karpenter.sh/nodepool.yaml``, v1.14.1) caps ``spec.template.metadata.labels``
  at ``maxProperties: 100``; the platform sets up to ``PROGRAM_LABELS`` of them.

Every pattern is matched with ``fullmatch`` (``re.match(...$)`` lets a trailing newline through).
"""

from __future__ import annotations

import re

from ekstrain.facts import names

LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
LABEL_PREFIX = re.compile(names.DNS_SUBDOMAIN_PATTERN)
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?")

KARPENTER_RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
KARPENTER_DOMAIN_EXCEPTIONS = (
    "node-role.kubernetes.io",
    "kops.k8s.io",
    "node-restriction.kubernetes.io",
    "node.kubernetes.io",
)
KARPENTER_RESTRICTED_LABELS = ("kubernetes.io/hostname",)
PLATFORM_DOMAINS = ("ekstrain.io",)
"""Our own labels (partition, accelerator, EFA): read by device plugins, queues and jobs."""

NODEPOOL_MAX_LABELS = 100
PROGRAM_LABELS = 3
"""ekstrain.io/partition, ekstrain.io/accelerator, ekstrain.io/efa (ekstrain/karpenter_specs.node_labels)."""
MAX_PARTITION_LABELS = NODEPOOL_MAX_LABELS - PROGRAM_LABELS


def key_problem(key: str) -> tuple[str, str] | None:
    """(problem, fix) when ``key`` cannot be a partition's node label key, else None."""
    prefix, slash, name = key.rpartition("/")
    syntax_fix = "use [prefix/]name: a DNS subdomain prefix, a name of at most 63 alphanumerics, '-', '_' or '.'"
    if not LABEL_NAME.fullmatch(name) or (
        slash and (not prefix or len(prefix) > 253 or not LABEL_PREFIX.fullmatch(prefix))
    ):
        return f"{key[:80]!r} is not a valid Kubernetes label key", syntax_fix
    if key in KARPENTER_RESTRICTED_LABELS:
        return (
            f"the label {key!r} is reserved (Karpenter refuses it)",
            "use your own domain, e.g. team.example.com/owner",
        )
    if any(prefix.endswith(d) for d in PLATFORM_DOMAINS):
        return (
            f"the label domain {prefix!r} is reserved for the platform (partition, accelerator and EFA labels)",
            "use your own domain, e.g. team.example.com/owner",
        )
    if any(prefix.endswith(d) for d in KARPENTER_DOMAIN_EXCEPTIONS):
        return None
    if any(prefix.endswith(d) for d in KARPENTER_RESTRICTED_DOMAINS):
        return (
            f"the label domain {prefix!r} is reserved: Karpenter restricts domains ending in one of "
            f"{', '.join(KARPENTER_RESTRICTED_DOMAINS)}, and zone, instance type, arch and capacity type "
            "come from the partition",
            "use your own domain, or node-role.kubernetes.io / node-restriction.kubernetes.io",
        )
    return None


def value_problem(value: str) -> tuple[str, str] | None:
    if LABEL_VALUE.fullmatch(value):
        return None
    return (
        f"{value[:80]!r} is not a valid label value",
        "use at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric (or empty)",
    )


def count_problem(labels: dict[str, str]) -> tuple[str, str] | None:
    if len(labels) <= MAX_PARTITION_LABELS:
        return None
    return (
        f"{len(labels)} labels are more than a NodePool carries ({NODEPOOL_MAX_LABELS}, of which the platform "
        f"sets {PROGRAM_LABELS})",
        f"keep at most {MAX_PARTITION_LABELS}",
    )
