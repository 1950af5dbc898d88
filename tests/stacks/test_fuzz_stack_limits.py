"""Property-based classes of bad input v3: per class, a hypothesis strategy draws values around
the real limit, an oracle written from the documented rule says whether AWS/Karpenter/Volcano/Go would
accept them, and the loader must agree: accepted exactly when the oracle accepts, refused with a
ConfigError naming the class's key otherwise, never a traceback, never slower than the hang guard.

CI runs 60 examples per class; a fuzz run prints per-class counts and the slowest refusal:

    EKSTRAIN_FUZZ_EXAMPLES=3000 .venv/bin/python -m pytest tests/stacks/test_fuzz_stack_limits.py -s -q \\
        -p no:cacheprovider
"""

from __future__ import annotations

import collections
import copy
import datetime as dt
import ipaddress
import os
import re
import string
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import stack_config, stack_sections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_stack_rules import _set as set_path

from ekstrain.facts import catalog, versions
from ekstrain.layout import prometheus_sizing, subnets
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import parse
from ekstrain.stacks.models.tags import program_tag_count

EXAMPLES = int(os.environ.get("EKSTRAIN_FUZZ_EXAMPLES", "60"))
SECONDS_PER_CASE = 10.0  # hang guard on a loaded 2-core machine, not a speed target
TODAY = dt.date(2026, 12, 3)
BASE = {name: stack_sections(name) for name in ("dev", "prod")}
STATS: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
SLOWEST: dict[str, float] = collections.defaultdict(float)
RUN = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def check(cls: str, base: str, change: Callable[[dict[str, Any]], None], valid: bool, key: str) -> None:
    """Parse ``base`` with ``change``; the outcome must match the oracle's ``valid``; refusals name ``key``."""
    sections = copy.deepcopy(BASE[base])
    change(sections)
    STATS[cls]["examples"] += 1
    started = time.perf_counter()
    try:
        parse(sections, "fuzz", today=TODAY)
        accepted, issues = True, []
    except ConfigError as exc:
        accepted, issues = False, exc.issues
    except Exception:
        STATS[cls]["tracebacks"] += 1
        raise
    seconds = time.perf_counter() - started
    if seconds > SECONDS_PER_CASE:
        STATS[cls]["hangs"] += 1
    assert seconds <= SECONDS_PER_CASE
    if accepted and not valid:
        STATS[cls]["accepted-invalid"] += 1
    if not accepted and valid:
        STATS[cls]["false-rejections"] += 1
    assert accepted == valid, [str(i) for i in issues]
    if accepted:
        STATS[cls]["valid"] += 1
    else:
        STATS[cls]["refused"] += 1
        SLOWEST[cls] = max(SLOWEST[cls], seconds)
        assert all(i.problem and i.fix for i in issues)
        assert any(i.key.startswith(key) for i in issues), [str(i) for i in issues]


_set = set_path  # the stack-rule tests' dotted-path edit (tests/stacks/test_stack_rules.py)


NASTY = ["\n", "\r", "\t", "\x00", "\x7f", " ", "é", "/", ".", "_", "-", "$", "\u202e"]


def _text(alphabet: str, max_size: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(list(alphabet) + NASTY), max_size=max_size)


# ---- cluster name: EKS CreateCluster ^[0-9A-Za-z][A-Za-z0-9\-_]*, plus the names derived from it ----------------
NAME_CHARS = string.ascii_letters + string.digits + "-_"


@RUN
@given(
    name=st.one_of(
        _text(NAME_CHARS, 60),
        st.builds(lambda d, r: d + r, st.sampled_from("0123456789"), _text(NAME_CHARS, 50)),
        st.text(st.sampled_from(NAME_CHARS), min_size=40, max_size=110),
    )
)
def test_cluster_name(name: str) -> None:
    eks = re.fullmatch(r"[0-9A-Za-z][A-Za-z0-9_-]{0,99}", name) is not None
    # KarpenterNodeRole-<name> is an IAM role name (at most 64); generated bucket names refuse "_".
    valid = eks and len("KarpenterNodeRole-" + name) <= 64 and "_" not in name
    check("cluster name", "dev", _set("cluster.name", name), valid, "ekstrain:cluster.name")


# ---- partition labels: Kubernetes syntax, Karpenter v1.14.1 restricted domains, NodePool maxProperties 100 -------
PREFIXES = [
    "",
    "example.com",
    "team.example.com",
    "kubernetes.io",
    "node-role.kubernetes.io",
    "node-restriction.kubernetes.io",
    "node.kubernetes.io",
    "topology.kubernetes.io",
    "mykubernetes.io",
    "k8s.io",
    "kops.k8s.io",
    "karpenter.sh",
    "karpenter.k8s.aws",
    "ekstrain.io",
    "Upper.com",
    "a" * 254,
    "-bad.com",
]
LABEL_CHARS = string.ascii_letters + string.digits + "-_."


def _label_key() -> st.SearchStrategy[str]:
    name = st.one_of(_text(LABEL_CHARS, 70), st.sampled_from(["hostname", "team", "zone"]))
    return st.builds(lambda p, n: f"{p}/{n}" if p else n, st.sampled_from(PREFIXES), name)


def _oracle_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", name):
        return False
    if slash:
        labels_ok = all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", part) for part in prefix.split("."))
        if not prefix or len(prefix) > 253 or not labels_ok:
            return False
    if key == "kubernetes.io/hostname" or prefix.endswith("ekstrain.io"):
        return False
    if prefix.endswith(
        ("node-role.kubernetes.io", "kops.k8s.io", "node-restriction.kubernetes.io", "node.kubernetes.io")
    ):
        return True
    return not prefix.endswith(("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws"))


@RUN
@given(
    labels=st.dictionaries(_label_key(), _text(LABEL_CHARS, 70), max_size=4),
    bulk=st.integers(0, 100),
)
def test_partition_labels(labels: dict[str, str], bulk: int) -> None:
    every = {**{f"team.example.com/l{i}": "v" for i in range(bulk)}, **labels}
    valid = (
        len(every) <= 97
        and all(_oracle_label_key(k) for k in every)
        and all(re.fullmatch(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?", v) for v in every.values())
    )
    check("partition labels", "dev", _set("partitions.0.labels", every), valid, "ekstrain:partitions[0]")


# ---- NodePool/EC2NodeClass names across partitions (per-layout pools: trainium-trn1, trainium-trn1n) -----------
@RUN
@given(
    name=st.tuples(
        st.integers(0, 9),
        st.sampled_from(["trainium", "trainium-trn1", "trainium-trn1n", "trainium-trn2", "gpu-small", "default"]),
        st.from_regex(r"[a-z][a-z0-9-]{0,12}[a-z0-9]", fullmatch=True),
    ).map(lambda t: t[1] if t[0] < 5 else t[2])
)
def test_pool_name_collisions(name: str) -> None:
    def change(s: dict[str, Any]) -> None:
        s["partitions"] = [
            {"name": "trainium", "accelerator": "trainium", "instanceTypes": ["trn1.32xlarge", "trn1n.32xlarge"]}
            | {"maxNodes": 2},
            {"name": name, "accelerator": "gpu", "instanceTypes": ["g5.8xlarge"], "maxNodes": 1, "efa": False},
        ]

    valid = name not in ("trainium", "trainium-trn1", "trainium-trn1n", "default")
    check("pool name collisions", "dev", change, valid, "ekstrain:partitions[")


# ---- consolidateAfter: Karpenter parses it with Go's time.ParseDuration (int64 nanoseconds) -------------------
@RUN
@given(
    parts=st.lists(st.tuples(st.integers(0, 10**13), st.sampled_from("hms")), min_size=1, max_size=3),
    raw=st.one_of(st.none(), _text("0123456789hmsNever", 12)),
)
def test_consolidate_after(parts: list[tuple[int, str]], raw: str | None) -> None:
    text = raw if raw is not None else "".join(f"{n}{u}" for n, u in parts)
    if text == "Never":
        valid = True
    elif re.fullmatch(r"([0-9]+[hms])+", text):
        seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in re.findall(r"([0-9]+)([hms])", text))
        valid = seconds * 10**9 <= 2**63 - 1
    else:
        valid = False
    check("consolidateAfter", "dev", _set("partitions.0.consolidateAfter", text), valid, "ekstrain:partitions[0]")


# ---- security group ids: sg- and 8 or 17 lowercase hex digits ---------------------------------------------------
@RUN
@given(
    ids=st.lists(
        st.one_of(
            st.from_regex(r"sg-([0-9a-f]{8}|[0-9a-f]{17})", fullmatch=True),
            st.builds("sg-".__add__, _text("0123456789abcdefABCDEF", 20)),
            _text("sg-0a", 12),
        ),
        max_size=3,
    )
)
def test_security_group_ids(ids: list[str]) -> None:
    valid = all(re.fullmatch(r"sg-([0-9a-f]{8}|[0-9a-f]{17})", g) for g in ids)
    check("security group ids", "dev", _set("cluster.deploySecurityGroupIds", ids), valid, "ekstrain:cluster")


# ---- access-entry principals: the region's partition, IAM role/user ARNs -----------------------------------------
@RUN
@given(
    partition=st.sampled_from(["aws", "aws", "aws-cn", "aws-us-gov", "aws-iso-b"]),
    service=st.sampled_from(["iam", "iam", "sts"]),
    account=st.one_of(st.from_regex(r"[0-9]{12}", fullmatch=True), _text("0123456789", 13)),
    kind=st.sampled_from(["role", "user", "assumed-role"]),
    path=st.sampled_from(["/", "/ops/", "/a/b/", "//", "/sp ace/"]),
    name=st.one_of(
        st.from_regex(r"[A-Za-z0-9+=,.@_-]{1,64}", fullmatch=True),
        _text(string.ascii_letters + string.digits + "+=,.@_-", 70),
    ).filter(lambda n: "/" not in n),  # slashes belong to the path (drawn above)
)
def test_admin_principals(partition: str, service: str, account: str, kind: str, path: str, name: str) -> None:
    arn = f"arn:{partition}:{service}::{account}:{kind}{path}{name}"
    valid = (
        partition == "aws"
        and service == "iam"
        and re.fullmatch(r"[0-9]{12}", account) is not None
        and kind in ("role", "user")
        and re.fullmatch(r"/|/[!-~]+/", path) is not None
        and re.fullmatch(r"[A-Za-z0-9+=,.@_-]{1,64}", name) is not None
    )
    check("admin principals", "dev", _set("cluster.adminAccess", [{"principalArn": arn}]), valid, "ekstrain:cluster")


# ---- capacity reservations: Karpenter EC2NodeClass maxItems 30 terms, 20 tags per term ---------------------------
@RUN
@given(
    ids=st.integers(0, 35),
    tags=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.sampled_from(["", "x", "team"]), max_size=24),
)
def test_capacity_reservations(ids: int, tags: dict[str, str]) -> None:
    reservation: dict[str, Any] = {"ids": [f"cr-{i:017x}" for i in range(ids)], "tags": tags}
    valid = (ids or tags) and ids + (1 if tags else 0) <= 30 and len(tags) <= 20 and all(tags.values())

    def change(s: dict[str, Any]) -> None:
        s["partitions"][0].update(capacityType="reserved", capacityReservation=reservation, placementGroup=False)

    check("capacity reservations", "dev", change, bool(valid), "ekstrain:partitions[0]")


# ---- Volcano Queue weight: int32 1..65535 (Queue CRD) ---------------------------------------------------------
@RUN
@given(weight=st.one_of(st.integers(-3, 70000), st.integers(-(2**40), 2**40)))
def test_volcano_queue_weight(weight: int) -> None:
    check(
        "volcano queue weight",
        "dev",
        _set("schedulers.volcano.queueWeights", {"gpu-small": weight}),
        1 <= weight <= 65535,
        "ekstrain:schedulers.volcano.queueWeights",
    )


# ---- OAuth URLs: https with a host --------------------------------------------------------------------------------
@RUN
@given(
    scheme=st.sampled_from(["https", "http", "HTTPS", "javascript", "ftp", ""]),
    host=st.one_of(
        st.sampled_from(["hub.example.com", "localhost", "", "-x.com", "a" * 260]),
        _text("abc.-", 12).filter(lambda h: "/" not in h),  # a slash would start the path
    ),
    port=st.sampled_from(["", ":443", ":8443", ":x", ":999999"]),
    path=st.one_of(st.just("/hub/oauth_callback"), st.just(""), st.builds("/".__add__, _text("abc/?=&%", 10))),
)
def test_oauth_urls(scheme: str, host: str, port: str, path: str) -> None:
    url = f"{scheme}://{host}{port}{path}"
    valid = (
        scheme == "https"
        and re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?", host) is not None
        and re.fullmatch(r"(:[0-9]{1,5})?", port) is not None
        and re.fullmatch(r"(/[!-~]*)?", path) is not None
    )
    check("oauth urls", "prod", _set("jupyterhub.auth.callbackUrl", url), valid, "ekstrain:jupyterhub.auth.callbackUrl")


# ---- tags with aws:defaultTags: 50 per resource with the program's 10, no case-only duplicates --------------------
TAG_KEYS = ["team", "Team", "TEAM", "project", "PROJECT", "name", "cost-center", "aws:x", "owner"]


@RUN
@given(
    own=st.dictionaries(st.sampled_from(TAG_KEYS), st.just("v"), max_size=4),
    default=st.dictionaries(st.sampled_from(TAG_KEYS), st.just("v"), max_size=4),
    bulk_own=st.integers(0, 36),
    bulk_default=st.integers(0, 36),
)
def test_tags_with_default_tags(own: dict[str, str], default: dict[str, str], bulk_own: int, bulk_default: int) -> None:
    mine = {**own, **{f"o{i}": "v" for i in range(bulk_own)}}
    theirs = {**default, **{f"d{i}": "v" for i in range(bulk_default)}}
    program = {"project", "environment", "managedby", "name"}
    keys = [*mine, *theirs]
    lowered = collections.defaultdict(set)
    for k in keys:
        lowered[k.lower()].add(k)
    # An accelerated instance carries the program's and Karpenter's tags (Project, Environment, ManagedBy,
    # ekstrain.io/partition, Karpenter's six, and stack and team where cost allocation is on): 12 on prod, 9 on
    # dev, whose cost section is off.
    dev = stack_config("dev")
    count = program_tag_count(dev.cost.enabled, bool(dev.partitions))
    valid = (
        len(mine) + count <= 50
        and not any(k.lower().startswith("aws:") for k in keys)
        and not any(k.lower() in program for k in keys)
        and all(len(v) == 1 for v in lowered.values())
        and (not theirs or len(set(mine) | set(theirs)) + count <= 50)
    )

    def change(s: dict[str, Any]) -> None:
        s["tags"] = mine
        if theirs:
            s["defaultTags"] = {"tags": theirs}

    check("tags with aws:defaultTags", "dev", change, valid, "")


# ---- non-EFA partitions: maxNodes x IPs per node within the training AZ's private subnet -------------------------
NON_EFA_TYPES = sorted(t for t, it in catalog.CATALOG.items() if it.family == "gpu")


@RUN
@given(prefix=st.integers(16, 20), nodes=st.integers(1, 2000), itype=st.sampled_from(NON_EFA_TYPES))
def test_private_subnet_capacity(prefix: int, nodes: int, itype: str) -> None:
    vpc = f"10.50.0.0/{prefix}"
    private = list(list(ipaddress.IPv4Network(vpc).subnets(prefixlen_diff=2))[1].subnets(prefixlen_diff=1))[0]
    room = int((private.num_addresses - 5) * 0.9)
    need = nodes * 2 * catalog.get(itype).ipv4_per_eni  # the primary ENI and VPC CNI's one warm ENI
    assert subnets.ips_per_node(catalog.get(itype)) == 2 * catalog.get(itype).ipv4_per_eni

    def change(s: dict[str, Any]) -> None:
        s["network"]["vpcCidr"] = vpc
        s["cluster"]["deployCidrs"] = [vpc]
        s["partitions"][0].update(efa=False, maxNodes=nodes, instanceTypes=[itype])

    check("private subnet capacity", "dev", change, need <= room, "ekstrain:network.vpcCidr")


# ---- the EKS cluster security group's inbound rules (VPC quota 60 per group, IPv4) --------------------------------
# Oracle from the sources (stacks/limits.py): EKS's own self rule; one 443 rule per deploy CIDR; per internal NLB
# (JupyterHub's proxy on port 80; the Slurm login node's port 22 when loginSsh is on) a rule per source range,
# an ICMP path-MTU rule per source range and a health-check rule per subnet (prod: 3 zones); an empty list is
# one range (the VPC CIDR).
def _cidrs(n: int, second: int) -> list[str]:
    return [f"10.{second}.{i}.0/24" for i in range(n)]


@RUN
@given(deploy=st.integers(1, 70), ssh=st.booleans(), login=st.integers(0, 40), hub=st.integers(0, 40))
def test_cluster_security_group_rules(deploy: int, ssh: bool, login: int, hub: int) -> None:
    zones = len(BASE["prod"]["network"]["availabilityZones"])
    rules = {
        "ekstrain:cluster.deployCidrs": deploy,
        "ekstrain:schedulers.slurm.loginAllowedCidrs": 2 * max(login, 1) + zones if ssh else 0,
        "ekstrain:jupyterhub.allowedCidrs": 2 * max(hub, 1) + zones,
    }
    valid = 1 + sum(rules.values()) <= 60
    key = max(rules, key=lambda k: rules[k])

    def change(s: dict[str, Any]) -> None:
        s["cluster"]["deployCidrs"] = _cidrs(deploy, 40)
        s["schedulers"]["slurm"].update(loginSsh=ssh, loginAllowedCidrs=_cidrs(login, 41) if ssh else [])
        s["jupyterhub"]["allowedCidrs"] = _cidrs(hub, 42)

    check("cluster security group rules", "prod", change, valid, key)


# ---- AMI release pins: a date no later than today, no earlier than the Kubernetes version's EKS release, and not a
# release with a known defect ------------------------------------------------------------------------------------
@RUN
@given(
    day=st.one_of(
        st.dates(dt.date(2020, 1, 1), dt.date(2032, 1, 1)),
        st.sampled_from([versions.ami_release_date(v) for v in versions.AMI_RELEASES_WITH_KNOWN_DEFECTS]),
    )
)
def test_ami_release_dates(day: dt.date | None) -> None:
    assert day is not None
    released = versions.KUBERNETES_RELEASES["1.36"].released
    pin = f"v{day:%Y%m%d}"
    valid = released <= day <= TODAY and pin not in versions.AMI_RELEASES_WITH_KNOWN_DEFECTS
    check("AMI release pin", "dev", _set("versions.amiAliasVersion", pin), valid, "ekstrain:versions.amiAliasVersion")


# ---- kube-proxy add-on pins: the version skew policy against the cluster's 1.36 --------------------------------
@RUN
@given(minor=st.integers(20, 40), patch=st.integers(0, 9), build=st.integers(1, 30))
def test_kube_proxy_skew(minor: int, patch: int, build: int) -> None:
    pin = f"v1.{minor}.{patch}-eksbuild.{build}"
    check(
        "kube-proxy skew",
        "dev",
        _set("versions.addons", {"kube-proxy": pin}),
        33 <= minor <= 36,
        "ekstrain:versions.addons.kube-proxy",
    )


# ---- add-on pins per Kubernetes version (ekstrain/facts/versions.py ADDON_COMPATIBILITY, sources in ADDON_SOURCES)
# ------
# Oracle, written from the sources rather than from the table: kube-proxy within 3 minors below the cluster (skew
# policy); CoreDNS no newer than the minor of the newest EKS build listed for the version (EKS CoreDNS versions:
# 1.31/1.32 v1.11, 1.33 v1.12, 1.34 v1.13, 1.35 v1.14); the other add-ons have no citable bound (left to EKS).
COREDNS_NEWEST_MINOR = {"1.32": 11, "1.33": 12, "1.34": 13, "1.35": 14, "1.36": 14}


@RUN
@given(
    k8s=st.sampled_from(sorted(COREDNS_NEWEST_MINOR)),
    addon=st.sampled_from(sorted(versions.DEFAULT_ADDON_VERSIONS)),
    minor=st.integers(0, 40),
    patch=st.integers(0, 9),
    build=st.integers(1, 30),
)
def test_addon_versions_per_kubernetes_version(k8s: str, addon: str, minor: int, patch: int, build: int) -> None:
    pin = f"v1.{minor}.{patch}-eksbuild.{build}"
    cluster = int(k8s.split(".")[1])
    if addon == "kube-proxy":
        valid = cluster - 3 <= minor <= cluster
    elif addon == "coredns":
        valid = minor <= COREDNS_NEWEST_MINOR[k8s]
    elif addon == "vpc-cni":
        valid = (1, minor, patch) >= versions.MIN_VPC_CNI_FOR_EFA_ONLY  # dev's partition uses EFA
    else:
        valid = True

    def change(s: dict[str, Any]) -> None:
        s["cluster"]["kubernetesVersion"] = k8s
        s.setdefault("versions", {})["addons"] = {addon: pin}

    check("add-on per Kubernetes version", "dev", change, valid, f"ekstrain:versions.addons.{addon}")


# ---- system node group: x86_64 (AL2023_x86_64_STANDARD), not accelerated, not Mac -------------------------------
FAMILIES = [
    "m7i",
    "m7i-flex",
    "c7i",
    "r7iz",
    "m5zn",
    "m7g",
    "c7gn",
    "t4g",
    "x2gd",
    "a1",
    "mac2",
    "g5",
    "p5",
    "inf2",
    "trn1",
]


@RUN
@given(family=st.sampled_from(FAMILIES), size=st.sampled_from(["large", "xlarge", "4xlarge", "metal"]))
def test_system_node_types(family: str, size: str) -> None:
    name = f"{family}.{size}"
    arm = family in ("m7g", "c7gn", "t4g", "x2gd", "a1")
    valid = not arm and not family.startswith("mac") and not catalog.is_accelerated(name)
    check(
        "system node types",
        "dev",
        _set("cluster.systemNodeGroup.instanceTypes", [name]),
        valid,
        "ekstrain:cluster.systemNodeGroup",
    )


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    yield
    if EXAMPLES >= 1000:
        print(
            "\nclass | examples | valid | refused | tracebacks | hangs | accepted-invalid | false rejections | slowest"
        )
        for cls, c in sorted(STATS.items()):
            print(
                f"{cls} | {c['examples']} | {c['valid']} | {c['refused']} | {c['tracebacks']} | {c['hangs']} | "
                f"{c['accepted-invalid']} | {c['false-rejections']} | {SLOWEST[cls] * 1000:.1f} ms"
            )


# ---- Prometheus volume sized from retention: at most one gp3 volume (16 TiB) -----------------------------------
@RUN
@given(days=st.integers(1, 3650), interval=st.integers(5, 300))
def test_prometheus_volume(days: int, interval: int) -> None:
    def change(s: dict[str, Any]) -> None:
        s["observability"].update(retentionDays=days, scrapeIntervalSeconds=interval)
        s["observability"].pop("storageGiB", None)

    nodes = sum(p["maxNodes"] for p in BASE["prod"]["partitions"])
    system = BASE["prod"]["cluster"].get("systemNodeGroup", {}).get("maxSize", 4)
    gib = prometheus_sizing.prometheus_storage_gib(days, interval, nodes, system)
    check("prometheus volume", "prod", change, gib <= 16384, "ekstrain:observability.retentionDays")
