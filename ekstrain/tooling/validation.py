"""Validate rendered Kubernetes objects and Helm values against the real upstream schemas.

- Custom resources: the CRD's ``openAPIV3Schema`` from the pinned upstream files (see
  ``shared/upstream/SOURCES.md``), converted to JSON Schema the way the API server treats it:
  unknown fields are rejected unless ``x-kubernetes-preserve-unknown-fields`` says otherwise,
  ``int-or-string`` accepts both. CEL rules (``x-kubernetes-validations``) are listed for the
  caller to check with its own tests; they are not evaluated here.
- Built-in kinds: ``kubernetes-validate`` in strict mode for the cluster's Kubernetes version.
- Helm values: every key path must exist in the chart's upstream ``values.yaml`` (below maps
  that are empty upstream, anything goes: they are free-form, such as ``nodeSelector``).

The upstream files are not copied into this repository. They are read from ``$EKSTRAIN_UPSTREAM_DIR`` when
set, else from the first *complete* directory (every file :func:`required_upstream_files` lists) of:
``.upstream/`` of the project (:func:`ekstrain.files.paths.project_dir`), then, when running from a source checkout,
``../shared/upstream`` beside it and its ``.upstream/`` (filled by ``make fetch-upstream``) (:func:`upstream_dir`).
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import json
import os
import pathlib
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import yaml

from ekstrain.files.paths import CHECKOUT, PACKAGE, project_dir, upstream_fix
from ekstrain.files.yaml_safe import SAFE_LOADER


# The upstream CRDs are several MB of YAML: libyaml's loader parses them ~10x faster when present.
class KubeYamlLoader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """Safe YAML as Kubernetes reads it: a bare ``=`` (YAML 1.1's value tag, e.g. in Prometheus operator CRD
    enums ``[=, !=, =~, !~]``) is the string "=", which PyYAML's safe loader refuses."""


KubeYamlLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))
_YAML_LOADER = KubeYamlLoader
T = TypeVar("T")

# API groups served by Kubernetes itself (validated by kubernetes-validate, not by a CRD).
BUILTIN_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "networking.k8s.io",
    "scheduling.k8s.io",
    "autoscaling",
    "coordination.k8s.io",
    "node.k8s.io",
    "apiextensions.k8s.io",
    "admissionregistration.k8s.io",
    "apiregistration.k8s.io",  # APIService (kube-aggregator; KEDA's external metrics API)
    "discovery.k8s.io",
    "resource.k8s.io",
}


def required_upstream_files() -> list[str]:
    """Every file (relative to the upstream directory) the render reads: each pinned chart's archive
    (``chart-src/<chart>-<version>.tgz``) and values.yaml, and every file of the upstream pins
    (``ekstrain/pins/upstream-pins.tsv``, package data: CRDs, values, reference files; what
    ``ekstrain upstream fetch`` writes)."""
    from ekstrain.facts import versions

    out: list[str] = []
    for chart in versions.DEFAULT_CHARTS.values():
        out.append(f"chart-src/{chart.chart.rstrip('/').rsplit('/', 1)[-1]}-{chart.version}.tgz")
        if chart.upstream_dir:
            out.append(f"charts/{chart.upstream_dir}/values.yaml")
    pins = PACKAGE / "pins" / "upstream-pins.tsv"
    if pins.is_file():
        for line in pins.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                out.append(line.split("\t", 1)[0])
    return sorted(set(out))


def upstream_missing(root: pathlib.Path) -> list[str]:
    """The files of :func:`required_upstream_files` that ``root`` lacks (empty: a complete directory)."""
    return [rel for rel in required_upstream_files() if not (root / rel).is_file()]


def upstream_candidates() -> list[pathlib.Path]:
    """Where the pinned upstream files are looked for, in order: ``.upstream/`` of the project, then, from a
    source checkout, ``../shared/upstream`` beside it (a mirror of the pinned files) and the checkout's own
    ``.upstream/`` (what ``make fetch-upstream`` fills). ``$EKSTRAIN_UPSTREAM_DIR`` (or ``--upstream-dir``) is not
    a candidate: when set, it is the directory, complete or not."""
    candidates = [project_dir() / ".upstream"]
    if CHECKOUT is not None:
        candidates += [CHECKOUT.parent / "shared" / "upstream", CHECKOUT / ".upstream"]
    out: list[pathlib.Path] = []
    for c in candidates:
        if c.absolute() not in out:
            out.append(c.absolute())
    return out


def upstream_dir() -> pathlib.Path | None:
    """The upstream directory the render reads: ``$EKSTRAIN_UPSTREAM_DIR`` when set (a directory with ``crds/``),
    else the first of :func:`upstream_candidates` that holds every required file, else the first that has a
    ``crds/`` directory (the render then names the files it lacks: :func:`upstream_missing`). So a partial
    ``.upstream/`` (a fetch that failed midway, ``mkdir -p .upstream/crds``) never hides a complete mirror."""
    explicit = os.environ.get("EKSTRAIN_UPSTREAM_DIR")
    if explicit:
        return pathlib.Path(explicit) if (pathlib.Path(explicit) / "crds").is_dir() else None
    present = [c for c in upstream_candidates() if (c / "crds").is_dir()]
    for c in present:
        if not upstream_missing(c):
            return c
    return present[0] if present else None


class SchemasMissing(RuntimeError):
    pass


def _require_upstream() -> pathlib.Path:
    found = upstream_dir()
    if found is None:
        raise SchemasMissing(f"upstream schemas not found: {upstream_fix()}")
    return found


@dataclass(frozen=True)
class CrdVersion:
    group: str
    version: str
    kind: str
    schema: dict[str, Any]
    cel_rules: tuple[tuple[str, str, str], ...]
    """(json path, rule, message) of every x-kubernetes-validations entry."""
    namespaced: bool = True


def schemas_of(docs: list[Any]) -> dict[tuple[str, str], CrdVersion]:
    """(apiVersion, kind) -> schema for every served version of the CustomResourceDefinitions in ``docs``."""
    out: dict[tuple[str, str], CrdVersion] = {}
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc["spec"]
        for v in spec["versions"]:
            if not v.get("served", True):
                continue
            raw = v["schema"]["openAPIV3Schema"]
            api = f"{spec['group']}/{v['name']}"
            out[(api, spec["names"]["kind"])] = CrdVersion(
                spec["group"],
                v["name"],
                spec["names"]["kind"],
                _to_json_schema(raw),
                tuple(_cel_rules(raw, "$")),
                spec.get("scope", "Namespaced") == "Namespaced",
            )
    return out


def cache_dir() -> pathlib.Path:
    """Where parsed schemas and chart renders are cached ($EKSTRAIN_CACHE_DIR, default build/.cache of the
    project), one
    subdirectory per version of the checking code: a cache entry is keyed by its inputs' hash, and a
    changed checker must not reuse what an older one computed from the same inputs."""
    return cache_root() / _checker_digest()


def cache_root() -> pathlib.Path:
    """The cache's top directory: what depends only on external tools and inputs (raw helm output) lives
    here, shared by every version of the checking code."""
    return pathlib.Path(os.environ.get("EKSTRAIN_CACHE_DIR") or project_dir() / "build" / ".cache")


@functools.cache
def _checker_digest() -> str:
    sources = [pathlib.Path(__file__)]
    for package in ("infra/verify",):
        sources += sorted((PACKAGE / package).glob("*.py"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + path.read_bytes())
    return f"code-{digest.hexdigest()[:16]}"


_CACHE_FORMAT = "crd-schemas-v2"  # bump when schemas_of/_to_json_schema change what they produce


_CRD_LOCK = threading.Lock()


def crd_schemas() -> dict[tuple[str, str], CrdVersion]:
    """(apiVersion, kind) -> schema for every served version of every upstream CRD.

    Parsing ~8 MB of CRD YAML takes seconds; the result is cached under cache_dir() (JSON, :func:`cached`), keyed by the
    hash of every CRD file's path and content, so a changed or added CRD re-parses. Threads that ask at once
    (the no-op values check's) wait for one parse instead of each parsing, and for the one prewarm_crd_schemas()
    started.
    """
    with _CRD_LOCK:
        global _PREWARM
        if _PREWARM is not None:
            _PREWARM.wait()
            _PREWARM = None
        return _crd_schemas()


_PREWARM: subprocess.Popen[bytes] | None = None


def prewarm_crd_schemas() -> None:
    """Parse the upstream CRDs into the cache in a process of its own, on the core the caller leaves idle (the
    render runs the single-threaded Pulumi program meanwhile); crd_schemas() then reads the cache entry. Nothing
    starts when the cache already holds them or there are no upstream schemas."""
    global _PREWARM
    if _PREWARM is not None or upstream_dir() is None:
        return
    if entry_path(f"crd-schemas-{_upstream_crds()[0]}").exists():
        return
    env = {
        **os.environ,
        "EKSTRAIN_CACHE_DIR": str(cache_root().absolute()),
        "EKSTRAIN_UPSTREAM_DIR": str(upstream_dir()),
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    try:
        _PREWARM = subprocess.Popen(
            [sys.executable, "-c", "from ekstrain.tooling import validation; validation.crd_schemas()"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        _PREWARM = None


@functools.lru_cache(maxsize=1)
def _crd_schemas() -> dict[tuple[str, str], CrdVersion]:
    digest, texts = _upstream_crds()
    return cached(
        f"crd-schemas-{digest}",
        lambda: {k: v for t in texts for k, v in schemas_of(list(yaml.load_all(t, Loader=_YAML_LOADER))).items()},
        valid=lambda v: isinstance(v, dict) and all(isinstance(x, CrdVersion) for x in v.values()),
    )


@functools.lru_cache(maxsize=1)
def _upstream_crds() -> tuple[str, list[bytes]]:
    root = _require_upstream() / "crds"
    paths = sorted(root.rglob("*.yaml"))
    texts = [p.read_bytes() for p in paths]
    digest = hashlib.sha256(_CACHE_FORMAT.encode())
    for p, t in zip(paths, texts, strict=True):
        digest.update(str(p.relative_to(root)).encode() + b"\0" + hashlib.sha256(t).digest())
    return digest.hexdigest()[:32], texts


def clear_caches() -> None:
    """Forget the in-process caches of upstream schemas (tests that point at another upstream dir)."""
    _crd_schemas.cache_clear()
    _upstream_crds.cache_clear()


def schemas_digest() -> str:
    """Hash of everything validate_object's answer depends on besides the object: the upstream CRDs, this
    module's conversion and the kubernetes-validate release (keys caches of validation results)."""
    from importlib import metadata

    return hashlib.sha256(
        f"{_upstream_crds()[0]}|{metadata.version('kubernetes-validate')}|{_source_hash()}".encode()
    ).hexdigest()[:32]


@functools.cache
def _source_hash() -> str:
    return hashlib.sha256(pathlib.Path(__file__).read_bytes()).hexdigest()


# ---- the on-disk cache: JSON with a content hash, never a deserialiser that can run code ----------------------
#
# build/.cache may come from a CI cache restored from another branch or a shared checkout, so nothing read from it
# may execute: an entry is JSON (Python's json module builds only dicts, lists, strings, numbers, booleans and
# None; https://docs.python.org/3/library/pickle.html warns that unpickling runs arbitrary code), the few other
# types the cached values hold are tagged and rebuilt from a fixed list (_decode_tagged), and the first line
# carries the sha256 of the body and the entry's key. An entry whose hash, key or shape does not check is
# recomputed with one warning line. The hash finds damage (a truncated file, an edited object), not a forger who
# recomputes it: what a forged entry can do is what its JSON says, never run code.

CACHE_FORMAT = "ekstrain-cache-v1"
CACHE_SUFFIX = ".json"
_TAG = "\u0000"


class DamagedEntry(ValueError):
    """A cache entry that cannot be used as is: why, in a few words."""


def _encode(value: Any) -> Any:
    """``value`` as plain JSON data; the types JSON lacks (tuples, sets, non-string keys, dates, bytes,
    CrdVersion) as ``{"\\u0000": tag, "v": ...}``. TypeError for any other type (the value is then not stored)."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is list:
        return [_encode(v) for v in value]
    if kind is dict:
        if _TAG not in value and all(type(k) is str for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {_TAG: "map", "v": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if kind is tuple:
        return {_TAG: "tuple", "v": [_encode(v) for v in value]}
    if kind in (set, frozenset):
        return {_TAG: "set", "v": [_encode(v) for v in value]}
    if kind is bytes:
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    if kind is dt.datetime:
        return {_TAG: "datetime", "v": value.isoformat()}
    if kind is dt.date:
        return {_TAG: "date", "v": value.isoformat()}
    if kind is CrdVersion:
        fields = [value.group, value.version, value.kind, value.schema, value.cel_rules, value.namespaced]
        return {_TAG: "crd", "v": _encode(fields)}
    raise TypeError(f"a cache entry cannot hold a {kind.__name__}")


def _crd_of(fields: Any) -> CrdVersion:
    group, version, kind, schema, rules, namespaced = fields
    if not (
        all(isinstance(x, str) for x in (group, version, kind))
        and isinstance(schema, dict)
        and isinstance(rules, tuple)
        and all(isinstance(r, tuple) and len(r) == 3 and all(isinstance(x, str) for x in r) for r in rules)
        and isinstance(namespaced, bool)
    ):
        raise DamagedEntry("a CRD schema of the wrong shape")
    return CrdVersion(group, version, kind, schema, rules, namespaced)


def _items(v: Any) -> list[Any]:
    if type(v) is not list:
        raise DamagedEntry("a tagged value that is not a list")
    return v


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "map": lambda v: {k: x for k, x in _items(v)},
    "tuple": lambda v: tuple(_items(v)),
    "set": lambda v: set(_items(v)),
    "bytes": lambda v: base64.b64decode(v, validate=True),
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "crd": _crd_of,
}


def _decode_tagged(obj: dict[str, Any]) -> Any:
    if _TAG not in obj:
        return obj
    decode = _DECODERS.get(obj[_TAG]) if isinstance(obj[_TAG], str) and set(obj) == {_TAG, "v"} else None
    if decode is None:
        raise DamagedEntry(f"an unknown tag {str(obj[_TAG])[:40]!r}")
    try:
        return decode(obj["v"])
    except DamagedEntry:
        raise
    except (TypeError, ValueError) as exc:  # a map of unhashable keys, a bad date, bad base64
        raise DamagedEntry(f"a damaged {obj[_TAG]} ({str(exc)[:80]})") from None


def _header(key: str, body: bytes) -> bytes:
    return f"{CACHE_FORMAT} {hashlib.sha256(body).hexdigest()} {key}\n".encode()


def read_entry_bytes(path: pathlib.Path, key: str) -> bytes:
    """The body of the entry at ``path`` when its header names ``key`` and its body's sha256;
    FileNotFoundError when there is none; DamagedEntry otherwise. Only a regular file is read (a FIFO planted
    in the cache would block the render)."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise DamagedEntry("not a regular file")
    with open(path, "rb") as f:
        raw = f.read()
    head, newline, body = raw.partition(b"\n")
    fields = head.split(b" ")
    if not newline or len(fields) != 3 or fields[0] != CACHE_FORMAT.encode():
        raise DamagedEntry(f"not an {CACHE_FORMAT} entry")
    if fields[2] != key.encode():
        raise DamagedEntry("the entry of another key")
    if hashlib.sha256(body).hexdigest().encode() != fields[1]:
        raise DamagedEntry("its content does not match its recorded sha256")
    return body


_WARNED: set[str] = set()


def warn_damaged(path: pathlib.Path, why: str) -> None:
    """One line per damaged entry and process: the entry is recomputed (and replaced when the cache is writable)."""
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        print(f"warning: cache entry {path} is damaged ({why}); recomputed", file=sys.stderr)


def read_entry(path: pathlib.Path, key: str) -> Any:
    """The value stored by :func:`store_entry` under ``key`` at ``path`` (see :func:`read_entry_bytes`)."""
    body = read_entry_bytes(path, key)
    try:
        return json.loads(body, object_hook=_decode_tagged)
    except DamagedEntry:
        raise
    except (ValueError, RecursionError) as exc:
        raise DamagedEntry(f"not JSON ({str(exc).splitlines()[0][:80]})") from None


def store_entry_bytes(path: pathlib.Path, key: str, body: bytes) -> None:
    """Write ``body`` with its header to ``path`` atomically (a partial file per process and thread, then a
    rename), so concurrent renders never read half a file; a read-only checkout still works, just slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
        partial.write_bytes(_header(key, body) + body)
        partial.replace(path)
    except OSError:
        pass


def store_entry(path: pathlib.Path, key: str, value: object) -> None:
    try:
        body = json.dumps(_encode(value), separators=(",", ":")).encode()
    except (TypeError, ValueError, RecursionError):
        return  # a value of a type the cache does not hold: computed again next time
    store_entry_bytes(path, key, body)


def entry_path(key: str) -> pathlib.Path:
    return cache_dir() / f"{key}{CACHE_SUFFIX}"


def cached(key: str, compute: Callable[[], T], valid: Callable[[Any], bool] | None = None) -> T:
    """``compute()``, memoised on disk under cache_dir() as ``key``.json (key must name the inputs' hash). An entry
    that is damaged, or of another shape than ``valid`` accepts, is recomputed with one warning line."""
    path = entry_path(key)
    try:
        value = read_entry(path, key)
        if valid is None or valid(value):
            return cast(T, value)
        warn_damaged(path, "a value of the wrong shape")
    except FileNotFoundError:
        pass
    except DamagedEntry as exc:
        warn_damaged(path, str(exc))
    except OSError as exc:
        warn_damaged(path, exc.strerror or str(exc))
    value = compute()
    store_entry(path, key, value)
    return value


pickled = cached  # the name the callers knew; nothing is pickled any more


def _cel_rules(node: Any, path: str) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    if not isinstance(node, dict):
        return found
    for rule in node.get("x-kubernetes-validations", []) or []:
        found.append((path, rule.get("rule", ""), rule.get("message", "")))
    for key, child in (node.get("properties") or {}).items():
        found += _cel_rules(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        found += _cel_rules(node["items"], f"{path}[*]")
    return found


def _to_json_schema(node: Any) -> Any:
    """OpenAPI v3 structural schema -> JSON Schema with the API server's strictness."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in (
            "x-kubernetes-validations",
            "x-kubernetes-list-type",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-map-type",
            "x-kubernetes-embedded-resource",
            "nullable",
            "format",
            "description",
            "example",
            "default",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-int-or-string",
        ):
            continue
        if key == "properties":
            out[key] = {k: _to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_to_json_schema(v) for v in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}] + out.get("anyOf", [])
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if node.get("type") == "object" and "additionalProperties" not in node and not preserve:
        out["additionalProperties"] = False
    if node.get("x-kubernetes-embedded-resource"):
        out.setdefault("properties", {}).update(
            {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}}
        )
    return out


def validate_object(
    obj: dict[str, Any], kubernetes_version: str, extra_crds: dict[tuple[str, str], CrdVersion] | None = None
) -> list[str]:
    """Problems with one manifest; empty when it is valid.

    ``extra_crds``: schemas of CRDs installed beside the upstream set (e.g. the ones charts render).
    """
    api = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    group = api.rsplit("/", 1)[0] if "/" in api else ""
    where = f"{kind} {obj.get('metadata', {}).get('namespace', '')}/{obj.get('metadata', {}).get('name', '?')}"
    if group in BUILTIN_GROUPS:
        validator = _builtin_validator(kubernetes_version, api, kind)
        if validator is None:
            return [f"{where}: no built-in schema for {api} {kind} in Kubernetes {kubernetes_version}"]
        error = next(iter(validator.iter_errors(obj)), None)
        return [f"{where}: {error.message}"] if error is not None else []
    crd = (extra_crds or {}).get((api, kind)) or crd_schemas().get((api, kind))
    if crd is None:
        return [f"{where}: no upstream CRD schema for {api} {kind} (add the CRD to the pinned upstream set)"]
    import jsonschema

    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    schema = dict(crd.schema)
    props = dict(schema.get("properties", {}))
    for key in ("apiVersion", "kind", "metadata"):
        props.pop(key, None)
    schema["properties"] = props
    # Some CRDs (Argo CD's) list metadata as required at the root: it is checked by the API server, not here.
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r not in ("apiVersion", "kind", "metadata")]
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    out = [f"{where}: {'.'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in errors]
    return out + [f"{where}: {p}" for p in embedded_problems(crd.group, body, kubernetes_version)]


# Core types some CRDs embed as x-kubernetes-preserve-unknown-fields: the operator decodes them into the
# corev1 structs, silently dropping unknown fields, so a misspelt key never reaches the pod. Checked here
# with the strict built-in schema. group -> (path under the object, core type).
EMBEDDED_CORE_TYPES: dict[str, tuple[tuple[str, str], ...]] = {
    # Slinky slurm-operator v1beta1: template, service and container fields are corev1 types in its API
    "slinky.slurm.net": (
        ("spec.template.spec", "PodSpec"),
        ("spec.service.spec", "ServiceSpec"),
        ("spec.slurmd", "Container"),
        ("spec.logfile", "Container"),
        ("spec.login", "Container"),
        ("spec.initconf", "Container"),
        ("spec.slurmctld", "Container"),
        ("spec.reconfigure", "Container"),
        ("spec.slurmdbd", "Container"),
        ("spec.slurmrestd", "Container"),
    ),
}


def embedded_problems(group: str, body: dict[str, Any], kubernetes_version: str) -> list[str]:
    out = []
    for path, core in EMBEDDED_CORE_TYPES.get(group, ()):
        node: Any = body
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        kind = "Service" if core == "ServiceSpec" else "Pod"
        spec: dict[str, Any] = dict(node)
        prefix = "spec"
        if core == "PodSpec":
            spec["containers"] = node.get("containers") or [{"name": "x"}]
        elif core == "Container":
            spec, prefix = {"containers": [{"name": "x", **node}]}, "spec.containers.0"
        obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
        validator = _builtin_validator(kubernetes_version, "v1", kind)
        for e in validator.iter_errors(obj) if validator is not None else ():
            at = ".".join(map(str, e.absolute_path))
            at = path + at[len(prefix) :] if at.startswith(prefix) else path
            out.append(f"{at}: {e.message} (as a {core}, the way the operator decodes it)")
    return out


@functools.cache
def _builtin_definitions(schema_dir: str) -> Any:
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    defs = utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", schema_dir)
    return Resource.from_contents(defs) @ Registry()


@functools.cache
def _builtin_validator(kubernetes_version: str, api: str, kind: str) -> Any:
    """kubernetes-validate's strict schema for a built-in kind, as ``kubernetes_validate.validate`` picks it,
    with its multi-MB definitions file loaded once per process instead of once per object."""
    import re

    import jsonschema
    from kubernetes_validate import utils
    from referencing import Resource

    wanted = utils.major_minor(kubernetes_version)
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= wanted][-1]
    schema_dir = f"v{version}-local-strict"
    api_part = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api)
    try:
        schema = utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{api_part}.json", wanted)
    except FileNotFoundError:
        return None
    registry = Resource.from_contents(schema) @ _builtin_definitions(schema_dir)
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


# ---- Helm values ---------------------------------------------------------------------------------

FREE_FORM_VALUES: dict[str, tuple[tuple[str, ...], ...]] = {
    # zero-to-jupyterhub passes hub.config through as traitlets config (c.<Class>.<trait>): any class.
    "jupyterhub": (("hub", "config"),),
    # A container's resources (ResourceRequirements) written as given (custom-scheduler.yaml toYaml); the
    # default has only requests.cpu.
    "neuron-helm-chart": (("scheduler", "customScheduler", "resources"),),
    # Subchart values the parent's values.yaml does not repeat: kube-prometheus-stack 88.5.3's charts/grafana
    # values.yaml `resources` and `sidecar.resources`, charts/kube-state-metrics and
    # charts/prometheus-node-exporter values.yaml `resources` (upstream/chart-src), each a container's
    # ResourceRequirements; and charts/kube-state-metrics values.yaml `metricLabelsAllowlist` (a list of
    # `<resource>=[<label>,...]`, the --metric-labels-allowlist flag).
    "kube-prometheus-stack": (
        ("grafana", "resources"),
        ("grafana", "sidecar", "resources"),
        ("kube-state-metrics", "resources"),
        ("kube-state-metrics", "metricLabelsAllowlist"),
        ("prometheus-node-exporter", "resources"),
        # charts/prometheus-node-exporter values.yaml `tolerations` (default: every NoSchedule taint).
        ("prometheus-node-exporter", "tolerations"),
    ),
}
"""Value paths a chart documents as free-form although its values.yaml has example keys there (or, for a
subchart's key, none): any keys below them are accepted."""


@functools.cache
def chart_defaults(upstream_chart_dir: str) -> dict[str, Any]:
    path = _require_upstream() / "charts" / upstream_chart_dir / "values.yaml"
    if not path.is_file():
        raise SchemasMissing(f"{path} is missing: {upstream_fix()}")
    defaults = yaml.load(path.read_text(), Loader=_YAML_LOADER) or {}
    for free in FREE_FORM_VALUES.get(upstream_chart_dir, ()):
        node = defaults
        for key in free[:-1]:
            node = node.setdefault(key, {}) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[free[-1]] = {}
    return defaults


def unknown_value_keys(values: Any, defaults: Any, path: str = "") -> list[str]:
    """Key paths in ``values`` that the chart's values.yaml does not have."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or not defaults:
        return []
    out = []
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if key not in defaults:
            out.append(here)
        else:
            out += unknown_value_keys(value, defaults[key], here)
    return out
