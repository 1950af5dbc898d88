"""No secret in the files the render writes.

The render's output is a CI artifact and the source of a GitOps repository (``argocd/``): it must hold no
credential. What the program passes as a Pulumi secret (the engine records those input paths:
``offline.Record.secret_inputs``) is written as :data:`REDACTED` (manifests, resources.yaml, helm values) or left
out (Argo CD Applications, which reference Secrets instead: ``hub.existingSecret``), and every Kubernetes Secret's
``data``/``stringData`` is written redacted, chart-rendered ones included.

:func:`scan` then reads every file written (manifests, charts, helm values, argocd/, resources.yaml, aws-plan.json)
and reports (1) a literal string under a credential-named key (``password``, ``secret``, ``token``, ``apiKey``,
``privateKey``, ``credentials``; not ``existingSecret``/``secretName``/``...Ref``: policy/ekstrain_policy/rules.py
``SENSITIVE_KEY``), (2) a Secret whose data is not redacted, (3) any of the stack's ``secure:`` values, or any value
the program marked secret, appearing anywhere in plaintext.
"""

from __future__ import annotations

import copy
import hashlib
import pathlib
import re
from collections.abc import Iterable
from typing import Any

import yaml

from ekstrain.files import filememo
from ekstrain.infra.verify import Check
from ekstrain.infra.verify.policy import rules
from ekstrain.tooling.validation import KubeYamlLoader

CHECK_NAME = "emitted files: no secret values (manifests, charts, helm, argocd, resources.yaml)"
REDACTED = "[secret]"
"""What a secret value is written as."""
SCANNED = ("manifests", "charts", "helm", "argocd")
SCANNED_FILES = ("resources.yaml", "aws-plan.json")
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
NOT_CREDENTIALS = {"httpTokens"}
"""Credential-looking keys that hold none: EC2 metadata options ``httpTokens: required``."""


def _steps(path: str) -> list[str | int]:
    return [int(i) if i else k for k, i in _STEP.findall(path)]


def redact(value: Any, paths: Iterable[str], remove: bool = False) -> Any:
    """``value`` with each dotted path (``values.hub.cookieSecret``, ``keys[0]``) replaced by :data:`REDACTED`, or
    removed (``remove``: the key or list item goes, and a mapping or list left empty by that goes too);
    ``value`` itself is not modified."""
    out = copy.deepcopy(value)
    # deepest and last list items first, so that removing one leaves the other paths' indexes valid
    for path in sorted(paths, key=lambda p: [(-1, -x) if isinstance(x, int) else (0, x) for x in _steps(p)][::-1]):
        steps = _steps(path)
        node = out
        for step in steps[:-1]:
            try:
                node = node[step]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        last = steps[-1] if steps else None
        if node is None or last is None:
            continue
        present = (isinstance(node, dict) and last in node) or (
            isinstance(node, list) and isinstance(last, int) and last < len(node)
        )
        if present and remove:
            del node[last]
        elif present:
            node[last] = REDACTED
    return _prune(value, out) if remove else out


def _prune(before: Any, after: Any) -> Any:
    """``after`` without the mappings and lists that were non-empty in ``before`` and are empty now."""
    if isinstance(after, dict) and isinstance(before, dict):
        out = {}
        for k, v in after.items():
            pruned = _prune(before.get(k), v)
            if pruned in ({}, []) and before.get(k) not in ({}, []):
                continue
            out[k] = pruned
        return out
    return after


def redact_secret_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A Kubernetes Secret with every ``data``/``stringData`` value :data:`REDACTED`; other objects unchanged."""
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1":
        return obj
    out = dict(obj)
    for prop in ("data", "stringData"):
        if isinstance(obj.get(prop), dict):
            out[prop] = {k: REDACTED for k in obj[prop]}
    return out


def literal_secrets(value: Any, path: str = "") -> Iterable[str]:
    """Paths of non-empty literal strings under credential-named keys (and unredacted Secret data)."""
    if isinstance(value, dict):
        if value.get("kind") == "Secret" and value.get("apiVersion") == "v1":
            for prop in ("data", "stringData"):
                block = value.get(prop)
                for k, v in (block if isinstance(block, dict) else {}).items():
                    if v not in (REDACTED, "", None):
                        yield f"{path}{prop}.{k}"
        for key, v in value.items():
            here = f"{path}{key}"
            if key == "annotations":
                continue  # annotation values are checksums and references (checksum/secret, inject-ca-from-secret)
            if (
                isinstance(v, str)
                and v not in ("", REDACTED, key)  # a name map (image-pull-secret: image-pull-secret) holds no value
                and key not in NOT_CREDENTIALS
                and "existing" not in str(key)  # z2jh's names map: hub-existing-secret: <a Secret's name>
                and rules.SENSITIVE_KEY.search(str(key))
            ):
                if not rules.NON_CREDENTIAL_KEY.search(str(key)) and not v.startswith(("<", "$(", "${")):
                    yield here
            else:
                yield from literal_secrets(v, f"{here}.")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from literal_secrets(v, f"{path.rstrip('.')}[{i}].")


def _files(out: pathlib.Path) -> list[pathlib.Path]:
    files = [p for d in SCANNED if (out / d).is_dir() for p in sorted((out / d).rglob("*")) if p.is_file()]
    return files + [out / f for f in SCANNED_FILES if (out / f).is_file()]


def scan(out: pathlib.Path, secret_values: Iterable[str]) -> Check:
    """Every written file: literal credentials, unredacted Secrets, and any of ``secret_values`` in plaintext."""
    values = sorted({v for v in secret_values if isinstance(v, str) and len(v) >= 8 and v != REDACTED})
    check = Check(CHECK_NAME, what="files")
    for path in _files(out):
        check.checked += 1
        rel = path.relative_to(out)
        text = path.read_text(errors="replace")
        for v in values:
            if v in text:
                check.problems.append(f"{rel}: a secret value (stack secure: or Pulumi secret) in plaintext")
                break
        if path.suffix not in (".yaml", ".yml") or path.name.startswith("CustomResourceDefinition-"):
            continue  # a CRD's schema holds no values (and is most of the bytes: text-scanned above only)
        for where in _literals_of(text):
            check.problems.append(f"{rel}: {where}: a literal value under a secret-named key; reference a Secret")
    return check


LITERALS_KEEP = 8192
"""Files' answers kept by :func:`_literals_of` (the latest used): a prod render writes ~600 YAML files."""
_literals: filememo.Recent[list[str]] = filememo.Recent(LITERALS_KEEP)


def _literals_of(text: str) -> list[str]:
    """:func:`literal_secrets` of every document of a YAML file's text (none when it is no YAML), kept per text
    (sha256) for the process: the answer depends on nothing else, and a process that renders a stack again writes
    the same files (parsing them again was a quarter of a warm render's CPU)."""
    key = hashlib.sha256(text.encode()).hexdigest()
    kept = _literals.get(key)
    if kept is not None:
        return kept
    try:
        docs = list(yaml.load_all(text, Loader=KubeYamlLoader))
    except yaml.YAMLError:
        found: list[str] = []
    else:
        found = [where for doc in docs for where in literal_secrets(doc)]
    return _literals.put(key, found)
