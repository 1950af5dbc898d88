"""Workload files for ``ekstrain simulate``: read, check and refuse with the file, the problem and the fix.

Every file is read as UTF-8 text. A file with ``#SBATCH`` directives at the start of a line is a Slurm
batch script whatever its name (an sbatch saved as ``.yaml`` is simulated, not skipped); any other file
named on the command line, or ending in .yaml/.yml/.json inside a directory, is YAML. Every field the
simulation reads is checked for its type before it is used, with the Kubernetes rule it breaks:

- quantities follow apimachinery's grammar (:mod:`ekstrain.simulate.quantity`); requests and limits
  are non-negative and extended resources (``nvidia.com/gpu``, EFA, Neuron) whole numbers
  (kubernetes pkg/apis/core/validation/validation.go ``ValidateResourceRequirements``:
  ``ValidateNonnegativeQuantity``, "must be an integer" for extended resources);
- replica counts are non-negative integers (``ValidateNonnegativeField``), at most
  :data:`MAX_COUNT` (what the simulation models; beyond it the search space is not bounded);
- sbatch ``--nodes`` is ``N`` or ``N-M`` (Slurm sbatch(1)), counts of other numeric options digits.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Iterator
from typing import Any

import yaml

from ekstrain.files import inputs_guard
from ekstrain.files.paths import in_checkout
from ekstrain.files.yaml_safe import SAFE_LOADER
from ekstrain.simulate.quantity import parse
from ekstrain.workloads import registry

MAX_BYTES = 8 * 2**20
"""Larger than any workload manifest; a bigger file is refused before it is parsed."""
MAX_DEPTH = 48
"""Kubernetes objects nest well under this; deeper YAML is refused before Python's recursion limit."""
MAX_NODES = 200_000
"""Values per document (with aliases expanded); a large manifest holds a few thousand."""
MAX_COUNT = 100_000
"""Replicas/nodes per workload the simulation models (EKS supports far fewer nodes per cluster)."""
YAML_SUFFIXES = (".yaml", ".yml", ".json")
SBATCH_LINE = re.compile(r"^#SBATCH[ \t]+(.*)$", re.MULTILINE)
EXTENDED_DOMAINLESS = ("cpu", "memory", "ephemeral-storage", "pods")


class InputError(Exception):
    """A workload file the simulation refuses: where, what is wrong, how to fix it (exit 2)."""

    def __init__(self, where: str, problem: str, fix: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where, self.problem, self.fix = where, problem, fix

    def report(self) -> str:
        return f"error: ekstrain simulate: {self.where}: {self.problem}\nfix: {self.fix}"


# --- sbatch ------------------------------------------------------------------------------------------

_NODES = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?")
_COUNT = re.compile(r"\d{1,9}")
_GPUS = re.compile(r"(?:[A-Za-z0-9_.]+:)?(\d{1,9})")
_SHORT = {"-N": "nodes", "-p": "partition", "-n": "ntasks", "-c": "cpus-per-task", "-G": "gpus"}
_COUNTS = ("ntasks", "ntasks-per-node", "cpus-per-task")
_GPU_OPTIONS = ("gpus", "gpus-per-node", "gpus-per-task")


def _directives(text: str) -> Iterator[tuple[str, str]]:
    """(option, value) of each ``#SBATCH`` line before the first command (sbatch stops reading there)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            return
        m = SBATCH_LINE.match(line)
        if not m:
            continue
        words = m.group(1).split()
        i = 0
        while i < len(words):
            word, value = words[i], None
            if word.startswith("--"):
                word, eq, attached = word.partition("=")
                value = attached if eq else None
            elif word.startswith("-") and len(word) > 2:
                word, value = word[:2], word[2:]
            if value is None and i + 1 < len(words) and not words[i + 1].startswith("-"):
                i, value = i + 1, words[i + 1]
            i += 1
            yield _SHORT.get(word, word[2:] if word.startswith("--") else word), value or ""


def sbatch_request(text: str) -> dict[str, Any]:
    """Partition and node count of an sbatch script (min of ``--nodes=N-M``); ValueError naming the bad
    directive."""
    out: dict[str, Any] = {"partition": None, "nodes": 1}
    for name, value in _directives(text):
        if name == "nodes":
            m = _NODES.fullmatch(value)
            if m is None:
                raise ValueError(f"#SBATCH --nodes={value!r} is not a node count (sbatch takes N or MIN-MAX)")
            low = int(m.group(1))
            if low < 1 or (m.group(2) and int(m.group(2)) < low):
                raise ValueError(f"#SBATCH --nodes={value} asks for no node or an empty range")
            if low > MAX_COUNT:
                raise ValueError(f"#SBATCH --nodes={value} is beyond the {MAX_COUNT} nodes simulate models")
            out["nodes"] = low
        elif name == "partition":
            if not value or not re.fullmatch(r"[A-Za-z0-9_.,-]{1,64}", value):
                raise ValueError(f"#SBATCH --partition={value!r} is not a Slurm partition name")
            out["partition"] = value.split(",")[0]
        elif name in _COUNTS and (not _COUNT.fullmatch(value) or int(value) < 1):
            raise ValueError(f"#SBATCH --{name}={value!r} is not a count of 1 or more")
        elif name in _GPU_OPTIONS and not _GPUS.fullmatch(value):
            raise ValueError(f"#SBATCH --{name}={value!r} is not a GPU count ([type:]N)")
    return out


def is_sbatch(text: str) -> bool:
    return SBATCH_LINE.search(text) is not None


# --- object checks -----------------------------------------------------------------------------------


class _Checker:
    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, path: str, problem: str, fix: str) -> InputError:
        return InputError(f"{self.where}: {path}", problem, fix)

    def mapping(self, value: Any, path: str, required: bool = False) -> dict[str, Any]:
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, f"is a {_type(value)}, expected a mapping", f"write {path} as `key: value` lines")
        return value

    def sequence(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, f"is a {_type(value)}, expected a list", f"write {path} as `- item` lines")
        return value

    def text(self, value: Any, path: str, required: bool = False) -> str | None:
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.fail(path, f"is a {_type(value)}, expected a string", f"quote the value of {path}")
        return value

    def strings(self, value: Any, path: str) -> None:
        for k, v in self.mapping(value, path).items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise self.fail(
                    f"{path}.{k}",
                    f"is a {_type(v)}, expected a string",
                    f'quote it: {k}: "{v}" (Kubernetes labels, selectors and annotations are strings)',
                )

    def count(self, value: Any, path: str) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, f"is {value!r} ({_type(value)}), expected a whole number", f"set {path} to 0 or more")
        if value < 0:
            raise self.fail(path, f"is {value}: Kubernetes refuses negative counts", f"set {path} to 0 or more")
        if value > MAX_COUNT:
            raise self.fail(path, f"is {value}, beyond the {MAX_COUNT} simulate models", f"use at most {MAX_COUNT}")

    def quantities(self, value: Any, path: str) -> None:
        for name, q in self.mapping(value, path).items():
            where = f"{path}[{name}]"
            if not isinstance(name, str):
                raise self.fail(
                    where, "resource name is not a string", "name resources as strings (cpu, nvidia.com/gpu)"
                )
            try:
                amount = parse(q)
            except ValueError as exc:
                raise self.fail(where, str(exc), "write a quantity such as 500m, 16Gi or 8") from None
            if amount < 0:
                raise self.fail(
                    where, f"is {q}: Kubernetes refuses negative requests and limits", f"request 0 or more {name}"
                )
            if "/" in name and not name.startswith(("kubernetes.io/", "requests.")) and amount != int(amount):
                raise self.fail(
                    where, f"is {q}: extended resources are whole numbers", f"request a whole number of {name}"
                )

    def containers(self, value: Any, path: str) -> None:
        for i, c in enumerate(self.sequence(value, path)):
            cpath = f"{path}[{i}]"
            c = self.mapping(c, cpath, required=True)
            self.text(c.get("name"), f"{cpath}.name")
            self.text(c.get("image"), f"{cpath}.image")
            res = self.mapping(c.get("resources"), f"{cpath}.resources")
            self.quantities(res.get("requests"), f"{cpath}.resources.requests")
            self.quantities(res.get("limits"), f"{cpath}.resources.limits")

    def pod_spec(self, value: Any, path: str) -> None:
        spec = self.mapping(value, path)
        self.containers(spec.get("containers"), f"{path}.containers")
        self.containers(spec.get("initContainers"), f"{path}.initContainers")
        self.quantities(spec.get("overhead"), f"{path}.overhead")
        self.strings(spec.get("nodeSelector"), f"{path}.nodeSelector")
        self.text(spec.get("schedulerName"), f"{path}.schedulerName")
        for i, t in enumerate(self.sequence(spec.get("tolerations"), f"{path}.tolerations")):
            for key, v in self.mapping(t, f"{path}.tolerations[{i}]", required=True).items():
                if key != "tolerationSeconds":
                    self.text(v, f"{path}.tolerations[{i}].{key}")
        affinity = self.mapping(spec.get("affinity"), f"{path}.affinity")
        node = self.mapping(affinity.get("nodeAffinity"), f"{path}.affinity.nodeAffinity")
        req_path = f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        required = self.mapping(node.get("requiredDuringSchedulingIgnoredDuringExecution"), req_path)
        for i, term in enumerate(self.sequence(required.get("nodeSelectorTerms"), f"{req_path}.nodeSelectorTerms")):
            tpath = f"{req_path}.nodeSelectorTerms[{i}]"
            term = self.mapping(term, tpath, required=True)
            for j, e in enumerate(self.sequence(term.get("matchExpressions"), f"{tpath}.matchExpressions")):
                epath = f"{tpath}.matchExpressions[{j}]"
                e = self.mapping(e, epath, required=True)
                self.text(e.get("key"), f"{epath}.key", required=True)
                op = self.text(e.get("operator"), f"{epath}.operator", required=True)
                if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    raise self.fail(f"{epath}.operator", f"is {op!r}", "use In, NotIn, Exists, DoesNotExist, Gt or Lt")
                values = self.sequence(e.get("values"), f"{epath}.values")
                if any(not isinstance(v, str) for v in values):
                    raise self.fail(f"{epath}.values", "holds a non-string", "quote every value")
                if op in ("Gt", "Lt") and (len(values) != 1 or not re.fullmatch(r"-?\d{1,18}", values[0])):
                    raise self.fail(f"{epath}.values", f"{op} takes one integer", "give one integer value")

    def template(self, value: Any, path: str) -> None:
        self.pod_spec(self.mapping(value, path).get("spec"), f"{path}.spec")

    def replica_specs(self, value: Any, path: str) -> None:
        for role, s in self.mapping(value, path).items():
            s = self.mapping(s, f"{path}.{role}", required=True)
            self.count(s.get("replicas"), f"{path}.{role}.replicas")
            self.template(s.get("template"), f"{path}.{role}.template")

    def ray_cluster(self, value: Any, path: str) -> None:
        cluster = self.mapping(value, path)
        head = self.mapping(cluster.get("headGroupSpec"), f"{path}.headGroupSpec")
        self.template(head.get("template"), f"{path}.headGroupSpec.template")
        for i, g in enumerate(self.sequence(cluster.get("workerGroupSpecs"), f"{path}.workerGroupSpecs")):
            gpath = f"{path}.workerGroupSpecs[{i}]"
            g = self.mapping(g, gpath, required=True)
            self.text(g.get("groupName"), f"{gpath}.groupName")
            for key in ("replicas", "minReplicas", "numOfHosts"):
                self.count(g.get(key), f"{gpath}.{key}")
            self.template(g.get("template"), f"{gpath}.template")

    def check(self, obj: dict[str, Any]) -> None:
        self.text(obj.get("kind"), "kind", required=True)
        self.text(obj.get("apiVersion"), "apiVersion")
        meta = self.mapping(obj.get("metadata"), "metadata")
        self.text(meta.get("name"), "metadata.name")
        self.text(meta.get("namespace"), "metadata.namespace")
        self.strings(meta.get("labels"), "metadata.labels")
        self.strings(meta.get("annotations"), "metadata.annotations")
        spec = self.mapping(obj.get("spec"), "spec")
        described = registry.shape_of(obj)
        if described is not None:
            described.check_shape(self, spec, obj)

    def sbatch_script(self, value: Any, path: str) -> None:
        try:
            sbatch_request(value)
        except ValueError as exc:
            raise self.fail(path, str(exc), "write the directive as sbatch(1) documents it") from None


def _type(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _depth(doc: Any) -> int:
    """Nesting depth without recursion; a document of more than MAX_NODES values (YAML aliases can
    multiply a small file) counts as too deep."""
    deepest, stack, seen = 0, [(doc, 1)], 0
    while stack:
        node, d = stack.pop()
        deepest, seen = max(deepest, d), seen + 1
        if d > MAX_DEPTH or seen > MAX_NODES:
            return MAX_DEPTH + 1
        if isinstance(node, dict):
            stack += [(v, d + 1) for v in node.values()]
        elif isinstance(node, list):
            stack += [(v, d + 1) for v in node]
    return deepest


def _flow_depth(text: str) -> int:
    """Upper bound of the bracket nesting of flow collections, checked before the parser recurses."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _decode(path: pathlib.Path) -> str:
    try:  # a regular file, bounded (ekstrain/files/inputs_guard.py): a FIFO would block, /dev/zero never end
        data = inputs_guard.read_bytes(path, MAX_BYTES)
    except inputs_guard.NotARegularFile as exc:
        raise InputError(
            str(path), str(exc.strerror), "pass a workload file (YAML objects or an .sbatch script)"
        ) from None
    except inputs_guard.TooLarge as exc:
        raise InputError(
            str(path), str(exc.strerror), f"split it: a workload file holds at most {MAX_BYTES} bytes"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            str(path), f"is not UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})", "save it as UTF-8"
        ) from None


def _sbatch_object(path: pathlib.Path, text: str) -> dict[str, Any]:
    try:
        sbatch_request(text)
    except ValueError as exc:
        raise InputError(
            str(path), str(exc), "write the directive as sbatch(1) documents it, e.g. #SBATCH --nodes=4"
        ) from None
    return {"kind": "ConfigMap", "metadata": {"name": path.stem}, "data": {f"{path.stem}.sbatch": text}}


def _yaml_objects(path: pathlib.Path, text: str) -> list[dict[str, Any]]:
    if _flow_depth(text) > MAX_DEPTH:
        raise InputError(
            str(path), f"nests deeper than {MAX_DEPTH} levels", "flatten it: no Kubernetes object nests so deep"
        )
    try:
        docs = list(yaml.load_all(text, Loader=SAFE_LOADER))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in problem:
            raise InputError(
                str(path), f"nests too deep{at}", "flatten it: no Kubernetes object nests so deep"
            ) from None
        raise InputError(
            str(path), f"is not valid YAML{at}: {problem}", "fix the YAML syntax (yamllint shows it)"
        ) from None
    except RecursionError:
        raise InputError(
            str(path), "nests too deep to read", "flatten it: no Kubernetes object nests so deep"
        ) from None
    out = []
    for i, doc in enumerate(docs):
        where = f"{path} (document {i + 1})" if len(docs) > 1 else str(path)
        if doc is None:
            continue
        if _depth(doc) > MAX_DEPTH:
            raise InputError(
                where,
                f"nests deeper than {MAX_DEPTH} levels or holds more than {MAX_NODES} values (aliases expanded)",
                "flatten it and drop YAML aliases: no Kubernetes object is that deep or large",
            )
        if not isinstance(doc, dict):
            raise InputError(
                where,
                f"is a {_type(doc)}, not a Kubernetes object",
                "each YAML document is a mapping with kind and spec",
            )
        _Checker(where).check(doc)
        out.append(doc)
    return out


def read_file(path: pathlib.Path) -> list[dict[str, Any]]:
    """The workload objects of one file (an sbatch as a ConfigMap holding it); InputError when refused."""
    text = _decode(path)
    if is_sbatch(text):
        return [_sbatch_object(path, text)]
    return _yaml_objects(path, text)


def read_workloads(paths: list[pathlib.Path]) -> list[dict[str, Any]]:
    """Files named on the command line are read whatever their suffix; directories recursively, taking
    .yaml/.yml/.json and .sbatch files."""
    objects: list[dict[str, Any]] = []
    for p in paths:
        if not p.exists():
            raise InputError(
                str(p),
                "not found",
                f"pass workload files (`ekstrain job render ... --out FILE` writes one){in_checkout('make examples')}",
            )
        files = (
            sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in (*YAML_SUFFIXES, ".sbatch"))
            if p.is_dir()
            else [p]
        )
        for f in files:
            objects += read_file(f)
    return objects
