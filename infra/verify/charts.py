"""Render every recorded Helm release with the real ``helm template``, as an install would.

Each release (``kubernetes:helm.sh/v3:Release`` inputs: chart, version, namespace, values) is
rendered from the pinned chart source archive ``<upstream>/chart-src/<chart>-<version>.tgz``
with the stack's ``--kube-version``, ``--api-versions`` for the CRDs this stack installs and
``--include-crds`` (unless the release sets ``skipCrds``) and without test hooks. The objects are written one per file:

    <build>/charts/<component>--<release>/<Kind>-<namespace>-<name>.yaml

That layout is the contract other tools read (``read_rendered``), like ``manifests/``.
Namespaced objects without a namespace get the release's, as ``helm install`` applies them;
null fields of custom resources are pruned as the API server prunes them.

Renders are cached under ``validation.cache_dir()`` keyed by the helm binary, the chart
archive, and every argument and value, so a warm render does not run helm again.
"""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import dataclasses
import functools
import hashlib
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import tarfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ekstrain.facts import names
from ekstrain.files import filememo, paths
from ekstrain.infra.verify.emitted import redact_secret_object
from ekstrain.tooling import helm, validation

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
HELM_ENV = helm.HELM_ENV
JOBS = max(2, os.cpu_count() or 2)  # helm is CPU-bound: one helm process per core (the CI machines have 2)
# A helm template process lives a fraction of a second: collecting garbage is most of its runtime's overhead.
# No collection below 512 MiB (kube-prometheus-stack peaks near 210 MB) takes 15-25% off its CPU time; the output
# is the same. GOGC/GOMEMLIMIT in the environment win.
HELM_GC = {"GOGC": "off", "GOMEMLIMIT": "512MiB"}
# Every helm process of this one takes a slot, whichever thread or check starts it.
_HELM_SLOTS = threading.BoundedSemaphore(JOBS)
_LOADER = validation.KubeYamlLoader
CRD_KIND = "CustomResourceDefinition"
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# Built-in kinds that are not namespaced (custom resources: the CRD's scope says).
CLUSTER_SCOPED = {
    "Namespace",
    "Node",
    "PersistentVolume",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
    "PriorityClass",
    "RuntimeClass",
    "IngressClass",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "APIService",
    "ComponentStatus",
    "DeviceClass",
}


class HelmMissing(RuntimeError):
    pass


helm_binary = helm.helm_binary  # the project's one lookup (ekstrain/tooling/helm.py)


HELM_RELEASE_NAME = re.compile(names.DNS_SUBDOMAIN_PATTERN)
"""helm's release-name rule (pkg/chartutil validateReleaseName; at most 53 characters)."""


@dataclass(frozen=True)
class Release:
    """What a ``kubernetes:helm.sh/v3:Release`` asks Helm to install."""

    group: str
    """The top-level component that declared it (the directory prefix)."""
    name: str
    chart: str
    version: str
    namespace: str
    values: dict[str, Any] = field(default_factory=dict)
    skip_crds: bool = False

    @property
    def key(self) -> str:
        return f"{self.group}--{self.name}"

    @property
    def chart_name(self) -> str:
        """``oci://ghcr.io/x/charts/slurm`` -> ``slurm``."""
        return self.chart.rstrip("/").rsplit("/", 1)[-1]

    @classmethod
    def from_inputs(cls, group: str, inputs: dict[str, Any]) -> Release:
        return cls(
            group,
            str(inputs.get("name")),
            str(inputs.get("chart")),
            str(inputs.get("version")),
            str(inputs.get("namespace") or "default"),
            dict(inputs.get("values") or {}),
            bool(inputs.get("skipCrds")),
        )


def chart_archive(release: Release) -> pathlib.Path | None:
    root = validation.upstream_dir()
    if root is None:
        return None
    path = root / "chart-src" / f"{release.chart_name}-{release.version}.tgz"
    return path if path.exists() else None


@filememo.per_file
def content_digest(path: str) -> str:
    """sha256 of a file's bytes: what cache keys name a chart archive or the helm binary by, so that a
    moved or copied checkout with the same content keeps its cache (never a path or an mtime)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@filememo.per_file
def chart_files_digest(path: str) -> str:
    """sha256 of a chart archive's files (each member's name and bytes, in name order), not of the archive: the
    same chart packaged again (another gzip level, file order or timestamps, as a project's release pipeline
    does) has the same digest, so an answer computed on the reference archive holds for the published one."""
    files: list[tuple[str, str]] = []
    with tarfile.open(path) as tgz:
        for member in tgz:
            data = tgz.extractfile(member) if member.isfile() else None
            if data is not None:
                files.append((member.name.lstrip("./"), hashlib.sha256(data.read()).hexdigest()))
    return hashlib.sha256(json.dumps(sorted(files)).encode()).hexdigest()


def template_key(
    release: Release,
    kube_version: str,
    api_versions: Iterable[str] = (),
    values: dict[str, Any] | None = None,
    crds: bool | None = None,
) -> str:
    """The cache key of one ``helm template``: helm's and the chart archive's content, every argument but
    the archive's location, and the values. Equal in every checkout of the same content."""
    return _args_and_key(release, kube_version, api_versions, values, crds)[2]


def check_helm_arguments(release: Release) -> None:
    """Refuse a release whose name or namespace helm would not take (so neither can be read as an option)."""
    if len(release.name) > 53 or not HELM_RELEASE_NAME.fullmatch(release.name):
        raise ValueError(
            f"Helm release name {release.name[:80]!r} ({release.group}): helm takes lowercase letters, digits, '-' "
            "and '.', at most 53 characters, beginning and ending with a letter or digit"
        )
    if not names.is_dns_label(release.namespace):
        raise ValueError(
            f"namespace {release.namespace[:80]!r} of Helm release {release.name}: a namespace is a DNS-1123 label "
            "(lowercase letters, digits and '-', at most 63, beginning and ending with a letter or digit)"
        )


def _args_and_key(
    release: Release,
    kube_version: str,
    api_versions: Iterable[str],
    values: dict[str, Any] | None,
    crds: bool | None,
) -> tuple[list[str], str, str]:
    """(helm template arguments, values body on stdin, cache key)."""
    check_helm_arguments(release)
    helm = helm_binary()
    if helm is None:
        raise HelmMissing(f"helm not found: {paths.helm_fix()}")
    archive = chart_archive(release)
    if archive is None:
        raise FileNotFoundError(
            f"no chart source chart-src/{release.chart_name}-{release.version}.tgz under {validation.upstream_dir()}"
        )
    args = [
        release.name,
        "<archive>",
        "--namespace",
        release.namespace,
        "--kube-version",
        f"{kube_version}.0",
        "--values",
        "-",
        "--skip-tests",
    ]  # test hooks run on `helm test`, not on install
    # --include-crds adds the crds/ directories (the chart's and its subcharts'): a chart without one renders the
    # same either way, so the flag is left out of the key (the no-op check's base is then the render's own).
    if ((not release.skip_crds) if crds is None else crds) and _has_crds(archive):
        args.append("--include-crds")
    apis = sorted(set(api_versions))
    if apis:
        args += ["--api-versions", ",".join(apis)]
    body = json.dumps(release.values if values is None else values, sort_keys=True)
    key = hashlib.sha256(json.dumps([content_digest(helm), content_digest(archive), args, body]).encode())
    args[1] = str(archive)
    return args, body, key.hexdigest()[:40]


def template(
    release: Release,
    kube_version: str,
    api_versions: Iterable[str] = (),
    values: dict[str, Any] | None = None,
    crds: bool | None = None,
    keep: bool = True,
) -> str:
    """``helm template`` output (multi-document YAML) for ``release``, cached on disk (template_key).
    ``crds`` overrides ``--include-crds`` (default: unless the release sets skipCrds); ``keep=False`` does not
    store a new render (the no-op check's one-off variants: its answer is cached instead)."""
    args, body, key = _args_and_key(release, kube_version, api_versions, values, crds)
    helm = str(helm_binary())
    # the first line holds the render's sha256 (ekstrain/tooling/validation.py read_entry_bytes): a truncated or edited
    # render is run again with one warning line, never served
    cached = validation.cache_root() / "helm" / f"{key}.entry.yaml"
    try:
        return validation.read_entry_bytes(cached, key).decode()
    except FileNotFoundError:
        pass
    except (validation.DamagedEntry, OSError, UnicodeDecodeError) as exc:
        validation.warn_damaged(cached, str(exc))
    with _HELM_SLOTS:
        proc = subprocess.run(
            [helm, "template", *args],
            input=body,
            capture_output=True,
            text=True,
            timeout=300,
            env={**HELM_GC, **os.environ, "HELM_CACHE_HOME": str(validation.cache_root() / "helm-home")},
        )
    if proc.returncode != 0:
        raise RuntimeError(
            f"helm template {release.name} ({release.chart_name} {release.version}) failed: "
            f"{proc.stderr.strip()[-2000:]}"
        )
    if not keep:
        return proc.stdout
    validation.store_entry_bytes(cached, key, proc.stdout.encode())
    return proc.stdout


def prune_nulls(value: Any) -> Any:
    """Drop null map entries recursively, as the API server does for custom resources."""
    if isinstance(value, dict):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


def _is_builtin(obj: dict[str, Any]) -> bool:
    api = str(obj.get("apiVersion", ""))
    return (api.rsplit("/", 1)[0] if "/" in api else "") in validation.BUILTIN_GROUPS


def parse(text: str) -> list[Any]:
    """The YAML documents of a render (parsed once per distinct text; charts' CRDs are megabytes)."""
    return [doc for _, doc in parse_documents(text)]


def parse_documents(text: str) -> list[tuple[str | None, Any]]:
    """(document text, document) for every YAML document of a render: the text of the piece between two ``---``
    lines when the piece holds exactly that one document, else None. Cached by the render's text."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:40]

    def load() -> list[tuple[str | None, Any]]:
        out: list[tuple[str | None, Any]] = []
        for piece in _DOCUMENT_MARKER.split(text):
            docs = list(yaml.load_all(piece, Loader=_LOADER))
            out += [(piece if len(docs) == 1 else None, doc) for doc in docs]
        return out

    return validation.cached(
        f"helm/docs-{digest}",
        load,
        valid=lambda v: (
            isinstance(v, list)
            and all(isinstance(d, tuple) and len(d) == 2 and (d[0] is None or isinstance(d[0], str)) for d in v)
        ),
    )


def objects(text: str, release: Release, crds: dict[tuple[str, str], validation.CrdVersion]) -> list[dict[str, Any]]:
    """The objects of one render, as the cluster would store them (namespace set, CR nulls pruned)."""
    return objects_of(parse(text), release, crds)


def _flatten_lists(docs: list[Any]) -> list[Any]:
    """Documents with every ``v1 List`` replaced by its items, as helm's kube client applies them
    (resource builder ``Flatten()``): a List is a client-side envelope, never an object on the cluster."""
    out: list[Any] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("apiVersion") == "v1" and str(doc.get("kind", "")).endswith("List"):
            out += _flatten_lists(list(doc.get("items") or []))
        else:
            out.append(doc)
    return out


def objects_of(
    docs: list[Any], release: Release, crds: dict[tuple[str, str], validation.CrdVersion]
) -> list[dict[str, Any]]:
    out = []
    for doc in _flatten_lists(docs):
        if not isinstance(doc, dict) or not doc:
            continue
        obj = doc if _is_builtin(doc) else prune_nulls(doc)
        meta = obj.setdefault("metadata", {})
        gvk = (str(obj.get("apiVersion")), str(obj.get("kind")))
        crd = crds.get(gvk) or (validation.crd_schemas().get(gvk) if not _is_builtin(obj) else None)
        namespaced = crd.namespaced if crd else obj.get("kind") not in CLUSTER_SCOPED
        if namespaced and not meta.get("namespace"):
            meta["namespace"] = release.namespace
        out.append(obj)
    return out


def mask_generated(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with values that differ on every render masked (Secret data that templates generate,
    since ``lookup`` returns nothing in template mode), for comparing renders."""
    if obj.get("kind") != "Secret":
        return obj
    masked = copy.deepcopy(obj)
    for key in ("data", "stringData"):
        if isinstance(masked.get(key), dict):
            masked[key] = {k: "<generated>" for k in masked[key]}
    return masked


def file_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{obj.get('kind', 'Object')}-{ns + '-' if ns else ''}{meta.get('name')}.yaml".replace("/", "_")


def api_versions_of(crds: Iterable[dict[str, Any]]) -> set[str]:
    """``group/version`` and ``group/version/Kind`` for every served version of ``crds``."""
    out = set()
    for doc in crds:
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            spec = doc["spec"]
            for v in spec["versions"]:
                if v.get("served", True):
                    api = f"{spec['group']}/{v['name']}"
                    out |= {api, f"{api}/{spec['names']['kind']}"}
    return out


@functools.cache
def _uses_capabilities(archive: pathlib.Path) -> bool:
    """Whether any template of the chart asks ``.Capabilities.APIVersions`` (only those need a second pass)."""
    key = f"helm/capabilities-{content_digest(archive)[:40]}"
    return validation.cached(key, lambda: _scan_capabilities(archive), valid=lambda v: isinstance(v, bool))


def _has_crds(archive: pathlib.Path) -> bool:
    """Whether the chart or one of its subcharts has a ``crds/`` directory."""
    key = f"helm/has-crds-{content_digest(archive)[:40]}"
    return validation.cached(key, lambda: _scan_crds(archive), valid=lambda v: isinstance(v, bool))


def _scan_crds(archive: pathlib.Path) -> bool:
    """``<chart>/crds/...`` or ``.../charts/<subchart>/crds/...``; a packed subchart (``charts/*.tgz``) may have one,
    so may an archive that cannot be read (helm will say why)."""
    try:
        with tarfile.open(archive) as tgz:
            members = [m.name for m in tgz.getmembers() if m.isfile()]
    except (OSError, tarfile.TarError):
        return True
    for name in members:
        parts = name.split("/")
        if name.endswith(".tgz") or any(
            seg == "crds" and (i == 1 or (i >= 3 and parts[i - 2] == "charts")) for i, seg in enumerate(parts[:-1])
        ):
            return True
    return False


def _scan_capabilities(archive: pathlib.Path) -> bool:
    with tarfile.open(archive) as tgz:
        for member in tgz.getmembers():
            if member.isfile() and member.name.endswith((".yaml", ".tpl", ".txt")):
                f = tgz.extractfile(member)
                if f is not None and b"APIVersions" in f.read():
                    return True
    return False


@dataclass
class Rendered:
    """Every release of a stack rendered: objects per release key, and what failed."""

    objects: dict[str, list[dict[str, Any]]]
    crds: dict[tuple[str, str], validation.CrdVersion]
    problems: list[str]
    api_versions: set[str]
    digests: dict[str, str] = field(default_factory=dict)
    """Release key -> hash of what its objects were made from (keys the written-file cache)."""
    texts: dict[int, str] = field(default_factory=dict)
    """``id()`` of a chart CRD object -> the document text helm rendered it from (write() writes that text instead
    of emitting the parsed object again: the charts' CRDs are 17 of prod's 19 MB of chart YAML)."""


def render_all(
    releases: list[Release],
    kube_version: str,
    extra_crds: Iterable[dict[str, Any]] = (),
    progress: Callable[[int, int], None] | None = None,
) -> Rendered:
    """Render every release (in parallel). Charts that test ``.Capabilities.APIVersions`` are rendered
    again with the API versions of every CRD the stack installs (charts' and ``extra_crds``).
    ``progress(done, total)`` after each helm process of the first pass."""
    problems: list[str] = []
    texts: dict[str, str] = {}
    docs: dict[str, list[Any]] = {}
    crd_texts: dict[str, dict[int, str]] = {}

    def run(rels: list[Release], apis: set[str], report: Callable[[int, int], None] | None = None) -> None:
        with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
            futures = {pool.submit(template, r, kube_version, apis): r for r in rels}
            for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                r = futures[fut]
                try:
                    text = fut.result()
                except (RuntimeError, FileNotFoundError) as exc:
                    problems.append(f"helm release {r.key}: {exc}")
                else:
                    # Parsed as it arrives, while helm renders the next ones (CRDs make this seconds of Python);
                    # a text the second pass renders the same is not parsed again.
                    if texts.get(r.key) != text or r.key not in docs:
                        texts[r.key] = text
                        pairs = parse_documents(text)
                        docs[r.key] = [doc for _, doc in pairs]
                        crd_texts[r.key] = {
                            id(doc): piece.strip("\n") + "\n"
                            for piece, doc in pairs
                            if piece is not None and isinstance(doc, dict) and doc.get("kind") == CRD_KIND
                        }
                if report is not None:
                    report(done, len(rels))

    run(releases, set(), progress)
    crd_docs = list(extra_crds)
    digest = hashlib.sha256(json.dumps(crd_docs, sort_keys=True, default=str).encode())
    for key in sorted(texts):
        digest.update(hashlib.sha256(texts[key].encode()).digest())
    for parsed in docs.values():
        crd_docs += [d for d in parsed if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
    apis = api_versions_of(crd_docs)
    again = [r for r in releases if r.key in texts and apis_for(r, apis)]
    if again:
        run(again, apis)
    crds = validation.cached(
        f"crd-schemas-charts-{digest.hexdigest()[:40]}",
        lambda: validation.schemas_of(crd_docs),
        valid=lambda v: isinstance(v, dict) and all(isinstance(c, validation.CrdVersion) for c in v.values()),
    )
    objs = {r.key: objects_of(docs[r.key], r, crds) for r in releases if r.key in texts}
    digests = {
        r.key: hashlib.sha256(
            f"{digest.hexdigest()}|{r.key}|{r.namespace}|".encode() + texts[r.key].encode()
        ).hexdigest()[:40]
        for r in releases
        if r.key in texts
    }
    # A CRD goes through objects_of() unchanged (cluster-scoped, a built-in kind: nothing set or pruned), so the
    # text helm rendered it from is its file.
    raw = {i: t for key, by_id in crd_texts.items() if key in objs for i, t in by_id.items()}
    return Rendered(objs, crds, sorted(problems), apis, digests, raw)


def asks_capabilities(release: Release) -> bool | None:
    """Whether the release's chart asks ``.Capabilities.APIVersions``; None without its archive."""
    archive = chart_archive(release)
    return None if archive is None else _uses_capabilities(archive)


def apis_for(release: Release, apis: set[str]) -> set[str]:
    """The ``--api-versions`` a release is rendered with: only charts that ask get them."""
    archive = chart_archive(release)
    return apis if apis and archive is not None and _uses_capabilities(archive) else set()


def write(out: pathlib.Path, rendered: Rendered) -> int:
    """Write ``out/charts/<component>--<release>/<Kind>-<ns>-<name>.yaml``; returns the object count."""
    root = out / "charts"
    if root.exists():
        shutil.rmtree(root)
    n = 0
    for key, objs in sorted(rendered.objects.items()):
        d = root / key
        d.mkdir(parents=True)

        def dump(objs: list[dict[str, Any]] = objs) -> list[tuple[str, str]]:
            # A Secret's data is written redacted (infra/verify/emitted.py): the files are artifacts.
            return [
                (
                    file_name(o),
                    rendered.texts.get(id(o)) or yaml.dump(redact_secret_object(o), Dumper=_DUMPER, sort_keys=False),
                )
                if o.get("kind") != "Secret"
                else (file_name(o), yaml.dump(redact_secret_object(o), Dumper=_DUMPER, sort_keys=False))
                for o in objs
            ]

        # YAML emission of the charts' CRDs is most of the write time: reuse it while the render is the same
        digest = rendered.digests.get(key)
        # a cached file name is a plain name (file_name() never makes a "/"): an entry naming a path elsewhere is
        # no render of ours and is recomputed, never written outside the output
        files = validation.cached(f"helm/files-redacted-{digest}", dump, valid=_plain_files) if digest else dump()
        for name, text in files:
            (d / name).write_text(text)
            n += 1
    return n


def read_rendered(build_dir: pathlib.Path | str) -> list[tuple[str, dict[str, Any]]]:
    """(``<component>--<release>``, object) for every chart-rendered object under ``build_dir/charts``.

    The public reader of the on-disk layout (e.g. for the scheduling simulator)."""
    root = pathlib.Path(build_dir) / "charts"
    out = []
    for path in sorted(root.glob("*/*.yaml")):
        out.append((path.parent.name, yaml.load(path.read_text(), Loader=_LOADER)))
    return out


# ---- values leaves that change nothing --------------------------------------------------------


def chart_defaults(release: Release) -> dict[str, Any]:
    """The chart's own values.yaml, read from the archive that is rendered."""
    archive = chart_archive(release)
    if archive is None:
        return {}
    with tarfile.open(archive) as tgz:
        f = tgz.extractfile(f"{release.chart_name}/values.yaml")
        return (yaml.load(io.TextIOWrapper(f), Loader=_LOADER) or {}) if f is not None else {}


def leaves(values: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Key paths of scalar/list values (lists are leaves: their items are not addressed by key)."""
    if isinstance(values, dict) and values:
        return [p for k, v in values.items() for p in leaves(v, (*path, str(k)))]
    return [path] if path else []


def value_at(tree: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` of nested mappings, or :data:`MISSING`."""
    for k in path:
        if not isinstance(tree, dict) or k not in tree:
            return MISSING
        tree = tree[k]
    return tree


MISSING = object()


def without(values: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    out = copy.deepcopy(values)
    node = out
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return out


def _comparable(text: str, release: Release) -> list[Any]:
    docs = list(yaml.load_all(text, Loader=_LOADER))
    return sorted(json.dumps(mask_generated(o), sort_keys=True, default=str) for o in objects_of(docs, release, {}))


# A line ``---`` ends a YAML document wherever it is (even inside a block scalar): splitting a render there gives
# texts that each parse to whole documents of it.
_DOCUMENT_MARKER = re.compile(r"^---[ \t]*$", re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _documents(text: str) -> collections.Counter[str]:
    """The documents of a render by text (a multiset; the base render of the no-op check is split once)."""
    return collections.Counter(_DOCUMENT_MARKER.split(text))


@functools.lru_cache(maxsize=8192)
def _document_comparable(document: str, namespace: str) -> tuple[str, ...]:
    """``_comparable`` of one document's text (only the namespace of its release matters to it)."""
    return tuple(_comparable(document, Release("", "", "", "", namespace)))


def same_objects(text: str, other: str, release: Release) -> bool:
    """Whether two renders of ``release`` hold the same objects, generated secrets masked (``_comparable``).

    Documents with the same text on both sides are matched unparsed; of the rest, each document is parsed on its
    own and the comparison stops at the first object of ``other`` that ``text`` lacks. The answer is the one
    comparing the whole renders gives: the objects are a multiset, and one document's objects depend on that
    document alone (and the release's namespace)."""
    if text == other:
        return True
    left, right = _documents(text), _documents(other)
    common = left & right
    try:
        missing = collections.Counter(
            c for doc in (left - common).elements() for c in _document_comparable(doc, release.namespace)
        )
        for doc in (right - common).elements():
            for c in _document_comparable(doc, release.namespace):
                if missing[c] <= 0:
                    return False
                missing[c] -= 1
    except yaml.YAMLError:
        return _comparable(text, release) == _comparable(other, release)
    return not +missing


def noop_key(release: Release, kube_version: str, api_versions: Iterable[str] = ()) -> str:
    """What the no-op answer of ``release`` is a function of, as a key: the chart's files (not the archive's
    bytes: ``chart_files_digest``), helm's version (the same answer on every platform's build of a release; its
    binary digest when it reports none), the release's name, namespace and values, the Kubernetes version and API
    versions. Keys the cache and ekstrain.lock.json (ekstrain/tooling/lock.py)."""
    archive = chart_archive(release)
    binary = helm_binary()
    helm_id = (helm.helm_version(binary) or content_digest(binary)) if binary and os.path.exists(binary) else ""
    return hashlib.sha256(
        json.dumps(
            [
                chart_files_digest(archive) if archive else "",
                helm_id,
                release.name,
                release.namespace,
                release.values,
                kube_version,
                sorted(api_versions),
                release.skip_crds,
            ],
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()[:40]


def _plain_files(value: Any) -> bool:
    """A cached list of (file name, text) whose every name is one plain file name."""
    return isinstance(value, list) and all(
        isinstance(f, tuple)
        and len(f) == 2
        and isinstance(f[0], str)
        and isinstance(f[1], str)
        and "/" not in f[0]
        and "\0" not in f[0]
        and f[0] not in ("", ".", "..")
        for f in value
    )


def noop_leaves(release: Release, kube_version: str, api_versions: Iterable[str] = ()) -> list[str]:
    """Values keys set to something other than the chart default whose removal leaves every rendered
    object unchanged (generated secrets masked): the chart ignores them, usually a misplaced key.

    One render per such key (cached); the answer itself is cached on the same inputs (``noop_key``). The renders
    leave out the chart's ``crds/`` directory: helm never templates it, so no value can change it (megabytes less
    YAML)."""
    apis = sorted(api_versions)
    key = noop_key(release, kube_version, apis)
    return validation.cached(
        f"helm/noop-{key}",
        lambda: _noop_leaves(release, kube_version, apis),
        valid=lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
    )


# Values mappings with one entry per partition: chart name -> their key paths. The no-op check renders one entry of
# each set of entries that are the same but for their name (ekstrain/layout/partitions.py gives every partition the same
# shape), so its helm runs grow with the kinds of partition, not their number (64 EFA partitions: ~3x prod).
PER_PARTITION_MAPS: dict[str, tuple[tuple[str, ...], ...]] = {"slurm": (("nodesets",),)}


def _renamed(value: Any, old: str, new: str) -> str:
    """``value`` as JSON with ``old`` replaced by ``new`` where it stands as a whole name (not inside another)."""
    token = re.compile(rf"(?<![A-Za-z0-9_.-]){re.escape(old)}(?![A-Za-z0-9_.-])")
    return token.sub(new, json.dumps(value, sort_keys=True))


def entry_classes(entries: dict[str, Any]) -> dict[str, list[str]]:
    """Representative -> its entries (itself first): entries whose values are the representative's with its name
    replaced by theirs, both ways (so the chart renders them alike but for the name)."""
    classes: dict[str, list[str]] = {}
    for name, value in entries.items():
        for rep in classes:
            if _renamed(entries[rep], rep, name) == json.dumps(value, sort_keys=True) and _renamed(
                value, name, rep
            ) == json.dumps(entries[rep], sort_keys=True):
                classes[rep].append(name)
                break
        else:
            classes[name] = [name]
    return classes


def reduced(
    release: Release,
) -> tuple[Release, Callable[[list[str]], list[str]], dict[tuple[str, ...], Release]]:
    """``release`` with one entry of each class (:func:`entry_classes`) of its per-partition mappings; the map of a
    no-op answer for it to one for ``release`` (a key of a representative stands for the same key of each entry of
    its class); and per representative, ``release`` with that entry alone in its mapping (its keys are checked
    there: a smaller render, the chart renders each entry on its own)."""
    values = copy.deepcopy(release.values)
    expand: dict[tuple[str, ...], list[str]] = {}
    singles: dict[tuple[str, ...], Release] = {}
    for path in PER_PARTITION_MAPS.get(release.chart_name, ()):
        entries = value_at(values, path)
        if not isinstance(entries, dict) or len(entries) < 2:
            continue
        classes = entry_classes(entries)
        node = value_at(values, path[:-1]) if len(path) > 1 else values
        node[path[-1]] = {rep: entries[rep] for rep in classes}
        for rep, members in classes.items():
            expand[path + (rep,)] = members
    for prefix in expand:
        alone = copy.deepcopy(values)
        node = value_at(alone, prefix[:-2]) if len(prefix) > 2 else alone
        node[prefix[-2]] = {prefix[-1]: value_at(values, prefix)}
        singles[prefix] = dataclasses.replace(release, values=alone)

    def answer(noop: list[str]) -> list[str]:
        out = []
        for dotted in noop:
            parts = tuple(dotted.split("."))
            prefix = next((p for p in expand if parts[: len(p)] == p), None)
            if prefix is None:
                out.append(dotted)
                continue
            out += [".".join((*prefix[:-1], m, *parts[len(prefix) :])) for m in expand[prefix]]
        return sorted(out)

    if not expand:
        return release, lambda noop: noop, {}
    return dataclasses.replace(release, values=values), answer, singles


def _noop_leaves(release: Release, kube_version: str, apis: list[str]) -> list[str]:
    small, expand, singles = reduced(release)
    if not singles:
        return _noop_leaves_of(release, kube_version, apis)

    def outside(path: tuple[str, ...]) -> bool:
        return not any(path[: len(prefix)] == prefix for prefix in singles)

    found = _noop_leaves_of(small, kube_version, apis, outside)  # the keys outside the entries: every class present
    for prefix, alone in singles.items():
        found += _noop_leaves_of(alone, kube_version, apis, functools.partial(_under, prefix))
    return expand(found)


def _under(prefix: tuple[str, ...], path: tuple[str, ...]) -> bool:
    return path[: len(prefix)] == prefix


def _noop_leaves_of(
    release: Release,
    kube_version: str,
    apis: list[str],
    among: Callable[[tuple[str, ...]], bool] = lambda path: True,
) -> list[str]:
    """The no-op keys of ``release`` among the key paths ``among`` admits."""
    defaults = chart_defaults(release)
    candidates = [
        p for p in leaves(release.values) if among(p) and value_at(defaults, p) != value_at(release.values, p)
    ]
    if not candidates:
        return []
    base = template(release, kube_version, apis, crds=False)

    def same_without(path: tuple[str, ...]) -> bool:
        try:
            variant = template(release, kube_version, apis, without(release.values, path), crds=False, keep=False)
        except RuntimeError:  # the chart refuses to render without it (a required value): it matters
            return False
        return same_objects(base, variant, release)

    def changes_nothing(paths: list[tuple[str, ...]]) -> list[bool]:
        # Twice as many threads as helm slots: comparing one render overlaps the next helm process.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2 * JOBS) as pool:
            return list(pool.map(same_without, paths))

    noop = {p for p, same in zip(candidates, changes_nothing(candidates), strict=True) if same}
    # Report the outermost key that changes nothing (``scheduler.affinity``, not each leaf below it).
    tried: set[tuple[str, ...]] = set()
    while True:
        parents = sorted({p[:-1] for p in noop if len(p) > 1} - tried)
        parents = [
            q for q in parents if all(any(c[: len(n)] == n for n in noop) for c in candidates if c[: len(q)] == q)
        ]
        if not parents:
            break
        tried |= set(parents)
        for parent, same in zip(parents, changes_nothing(parents), strict=True):
            if same:
                noop = {q for q in noop if q[: len(parent)] != parent} | {parent}
    return sorted(".".join(p) for p in noop)
