"""Load and validate a stack's config, from the Pulumi engine or straight from a stack file.

``load()`` is what ``infra/__main__.py`` calls under a real ``pulumi up`` (the engine hands the
program the stack's config); ``read_stack_file()`` turns a ``Pulumi.<stack>.yaml`` into the same
flat config map for the offline render and the tests, which have no CLI to do it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import pathlib
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from ekstrain.facts import catalog
from ekstrain.files import yaml12
from ekstrain.stacks import keys, rules, yaml_reader
from ekstrain.stacks.errors import ConfigError, ConfigIssue
from ekstrain.stacks.models import StackConfig

SECRET_PLACEHOLDER = "offline-secret-placeholder"


def _sections() -> dict[str, str]:
    """StackConfig field alias -> stack-file key."""
    return {(f.alias or name): keys.config_key(f.alias or name) for name, f in StackConfig.model_fields.items()}


STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
"""Top-level keys of a Pulumi stack settings file."""


def read_stack_file(path: pathlib.Path) -> tuple[dict[str, str], list[str]]:
    """Flat config map (values JSON-encoded as the engine passes them) and the secret keys.

    ``secure:`` values (at the key or nested below it, as ``--path`` writes them) cannot be decrypted
    without the CLI: they become placeholders and the key is marked secret, as the engine marks it.
    Anything that is not a plain stack file (see :mod:`ekstrain.stacks.yaml_reader`) raises ConfigError.
    """
    doc, texts = yaml_reader.load_stack_document(path)
    name = str(path)
    unknown = sorted(set(doc) - set(STACK_FILE_KEYS))
    if unknown:
        raise ConfigError(
            [
                ConfigIssue(
                    f"{name}: {unknown[0]}",
                    "is not a stack-file key",
                    f"put settings under config:; top-level keys are {', '.join(STACK_FILE_KEYS)}",
                )
            ],
            name,
        )
    raw = doc.get("config")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            [
                ConfigIssue(
                    f"{name}: config",
                    f"is a {type(raw).__name__}, not a mapping",
                    "write config: followed by indented key: value lines (see Pulumi.dev.yaml)",
                )
            ],
            name,
        )
    flat: dict[str, str] = {}
    secrets: list[str] = []
    issues = []
    for key, value in raw.items():
        # A top-level scalar reaches the program as the text written (yaml_reader._config_texts).
        value = texts.get(key, value)
        namespace, sep, rest = key.partition(":")
        if rest.startswith("config:") and rest != "config:":
            # Pulumi's config.ParseKey also reads the legacy <namespace>:config:<name> form as <namespace>:<name>.
            key, rest = f"{namespace}:{rest.removeprefix('config:')}", rest.removeprefix("config:")
            if key in raw:
                issues.append(
                    ConfigIssue(
                        f"{name}: config.{namespace}:config:{rest}",
                        f"is the legacy spelling of {key}, which is also set",
                        f"keep only {key}",
                    )
                )
                continue
        if not sep or not namespace or not rest:
            issues.append(
                ConfigIssue(
                    f"{name}: config.{key}",
                    "is not a namespaced key",
                    f"write it as {keys.PROJECT}:{key} (or aws:{key} for a provider setting)",
                )
            )
            continue
        if value is None and key in {keys.config_key(t) for t in _TEXT_SECTIONS}:
            issues.append(
                ConfigIssue(
                    f"{name}: config.{key}",
                    "has no value (YAML null)",
                    f'remove the key to leave it unset, or quote the text: {key}: "..."',
                )
            )
            continue
        try:
            plain, secure = _placeholders(value, f"{name}: config.{key}")
        except _NotSecure as exc:
            issues.append(ConfigIssue(exc.where, exc.problem, exc.fix(key)))
            continue
        flat[key] = plain if isinstance(plain, str) else json.dumps(yaml12.go_json(plain))
        if secure:
            secrets.append(key)
    if issues:
        raise ConfigError(issues, name)
    return flat, secrets


class _NotSecure(Exception):
    def __init__(self, where: str, problem: str = "a secure: value must be the only key, and text"):
        super().__init__(where)
        self.where, self.problem = where, problem

    @staticmethod
    def fix(key: str) -> str:
        return f"set it with `pulumi config set --secret {key} ...` (add --path for a nested value)"


def _placeholders(value: Any, where: str) -> tuple[Any, bool]:
    """``value`` with every ``{secure: ...}`` replaced by the placeholder, and whether there was one.

    Pulumi writes ``pulumi config set --secret`` as ``{secure: v1:...}`` at the key, and with ``--path``
    anywhere below it (``ekstrain:jupyterhub.auth.clientId``); the engine hands the program the whole key,
    decrypted, and marks the key secret. A mapping with ``secure`` and other keys is a mistake: refused.
    """
    if isinstance(value, dict):
        if "secure" in value:
            if set(value) != {"secure"} or not isinstance(value["secure"], str):
                raise _NotSecure(where)
            if not value["secure"].strip():
                # Pulumi decrypts the text (config/crypt.go: the passphrase provider splits "v1:<nonce>:<ct>",
                # a cloud KMS provider base64-decodes it): empty text is "bad value" at `pulumi up`, never a secret.
                raise _NotSecure(where, "is secure: with no ciphertext (pulumi up cannot decrypt empty text)")
            return SECRET_PLACEHOLDER, True
        found = False
        out: dict[str, Any] = {}
        for k, v in value.items():
            out[k], secure = _placeholders(v, f"{where}.{k}")
            found = found or secure
        return out, found
    if isinstance(value, list):
        items = [_placeholders(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


_TEXT_SECTIONS = frozenset(
    (f.alias or name)
    for name, f in StackConfig.model_fields.items()
    if f.annotation is str
    or typing.get_args(f.annotation) in ((str, type(None)),)
    or typing.get_origin(f.annotation) is typing.Literal
)
"""StackConfig sections that are text (aws:region, ekstrain:environment, the client secret...)."""


def sections_from_flat(flat: dict[str, Any]) -> tuple[dict[str, Any], list[ConfigIssue]]:
    """Group flat ``ns:key`` config into StackConfig sections; flag unknown ``ekstrain:`` keys."""
    by_key = {v: k for k, v in _sections().items()}
    sections: dict[str, Any] = {}
    issues = []
    for key, value in flat.items():
        if key in by_key:
            section = by_key[key]
            # Text settings stay text, as `pulumi.Config().get()` reads them (a secret "123" or "null" is that
            # string); objects and lists arrive JSON-encoded (`get_object`).
            sections[section] = value if section in _TEXT_SECTIONS else _decode(value)
            # The engine's values bypass the stack-file reader: the same limits on what they hold.
            problem = yaml_reader.check_value(sections[section], key)
            if problem:
                issues.append(problem)
        elif key == DISABLE_DEFAULT_PROVIDERS:
            issues += _default_providers(_decode(value))
        elif key.startswith(f"{keys.PROJECT}:"):
            known = ", ".join(sorted(by_key.values()))
            issues.append(
                ConfigIssue(key, "is not a known setting", f"remove it or fix its spelling; known keys: {known}")
            )
    return sections, issues


DISABLE_DEFAULT_PROVIDERS = "pulumi:disable-default-providers"
DEFAULT_PROVIDER_PACKAGES = ("aws",)
"""Packages whose resources the program registers with the default provider (it creates no explicit aws
provider; the Kubernetes resources get the cluster's explicit one). Pulumi refuses each such resource when its
package is in ``pulumi:disable-default-providers`` ("Default provider for 'aws' disabled", pulumi docs,
"Disabling default providers"; ``*`` disables every package)."""


def _default_providers(value: Any) -> list[ConfigIssue]:
    listed = value if isinstance(value, list) else [value]
    hit = [str(p) for p in listed if str(p) in ("*", *DEFAULT_PROVIDER_PACKAGES)]
    if not hit:
        return []
    return [
        ConfigIssue(
            DISABLE_DEFAULT_PROVIDERS,
            f"disables the default provider of {', '.join(repr(h) for h in hit)}, which this program's AWS "
            "resources use (it creates no explicit aws provider): every one would be refused at `pulumi up`",
            "remove 'aws' (and '*') from pulumi:disable-default-providers; set the AWS region with aws:region "
            "and credentials with the usual AWS environment",
        )
    ]


def parse(
    sections: dict[str, Any], source: str = "stack config", today: dt.date | None = None
) -> tuple[StackConfig, list[str]]:
    """Validate sections into a StackConfig; raise ConfigError listing every problem at once."""
    try:
        cfg = StackConfig.model_validate(sections)
    except ValidationError as exc:
        catalog.use_stack_types({})
        raise ConfigError([_issue(e, sections) for e in exc.errors()], source) from None
    # The stack's own instance types (ekstrain:instanceTypes) join the catalog for its rules, program and jobs.
    catalog.use_stack_types(cfg.catalog_types())
    errors, warnings = rules.check(cfg, today)
    if errors:
        catalog.use_stack_types({})
        raise ConfigError(errors, source)
    return cfg, warnings


CREDENTIAL_KEYS = ("ekstrain:jupyterhubClientSecret",)
"""Settings the program handles as credentials (kept Pulumi secrets in the state)."""


def load_flat(
    flat: dict[str, Any], source: str, today: dt.date | None = None, secret_keys: Any = None
) -> tuple[StackConfig, list[str]]:
    """``secret_keys``: the keys the engine (or the stack file) holds as secrets; None when unknown."""
    sections, unknown = sections_from_flat(flat)
    if unknown:
        raise ConfigError(unknown, source)
    cfg, warnings = parse(sections, source, today)
    warnings += namespace_warnings(flat)
    if secret_keys is not None:
        warnings += secret_warnings(flat, set(secret_keys))
    return cfg, warnings


NAMESPACES = (keys.PROJECT, "aws", "kubernetes", "pulumi")
"""Config namespaces something reads under ``pulumi up``: this program, its AWS and Kubernetes providers,
and the engine (``pulumi:disable-default-providers``). Pulumi hands every other namespace to the program
too, and nothing reads it: a misspelled namespace is silently a no-op there."""


def namespace_warnings(flat: dict[str, Any]) -> list[str]:
    """A did-you-mean for each key whose namespace is a near miss of one that is read (``ekstrian:``)."""
    out = []
    for key in sorted(flat):
        namespace, _, rest = key.partition(":")
        if namespace in NAMESPACES or not rest:
            continue
        near = difflib.get_close_matches(namespace.lower(), NAMESPACES, n=1, cutoff=0.7)
        if near:
            out.append(
                f"{key}: nothing reads the namespace {namespace!r}, so this setting is ignored (did you mean "
                f"{near[0]}:{rest}?); rename it to {near[0]}:{rest}, or remove it"
            )
    return out


def secret_warnings(flat: dict[str, Any], secret_keys: set[str]) -> list[str]:
    """A credential in plain text, or a secret the program will write as a plain value."""
    out = []
    for key in CREDENTIAL_KEYS:
        if key in flat and key not in secret_keys:
            out.append(
                f"{key}: set in plain text (it sits unencrypted in the stack file and the engine's config); "
                f"set it with `pulumi config set --secret {key} <value>`"
            )
    for key in sorted(secret_keys - set(CREDENTIAL_KEYS)):
        if key in flat:
            out.append(
                f"{key}: holds a secret (secure:) value, but the program writes this setting into resources as "
                f"plain values: it is encrypted in the stack file only; keep credentials in {CREDENTIAL_KEYS[0]}"
            )
    return out


def load_stack_file(path: pathlib.Path, today: dt.date | None = None) -> tuple[StackConfig, list[str]]:
    flat, secrets = read_stack_file(path)
    return load_flat(flat, path.name, today, secret_keys=secrets)


def load(stack: str) -> tuple[StackConfig, list[str]]:
    """Read the config the engine handed this program (``pulumi up``/``preview``, or mocks)."""
    from pulumi.runtime import config as runtime_config

    flat = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    # The language host passes secret keys in PULUMI_CONFIG_SECRET_KEYS; mocks (the render) through set_all_config.
    secret = set(runtime_config.get_config_secret_keys_env()) | {k for k in flat if runtime_config.is_config_secret(k)}
    return load_flat(flat, f"Pulumi.{stack}.yaml", secret_keys=secret)


# ---- pydantic error -> ConfigIssue -------------------------------------------------------------


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that owns the last element of ``loc`` (for listing allowed keys)."""
    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        model = _inner_model(field.annotation)
        if model is None:
            return None
    return model


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _issue(error: Any, raw: dict[str, Any]) -> ConfigIssue:
    loc = tuple(error["loc"])
    path = keys.key_path(loc, raw)
    kind = error["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        allowed = sorted(f.alias or n for n, f in model.model_fields.items()) if model else []
        return ConfigIssue(
            path, "is not a known setting", f"remove it or fix its spelling; allowed here: {', '.join(allowed)}"
        )
    if kind == "missing":
        return ConfigIssue(path, "is required", "add it to the stack file (see Pulumi.dev.yaml for an example)")
    if error.get("input") == SECRET_PLACEHOLDER:
        return ConfigIssue(
            path,
            "is a secret (secure:), which the offline render cannot decrypt, and this setting is checked as "
            f"{kind.split('_', 1)[0]}: the render cannot validate it",
            "set it without --secret (it is not a credential), or check it with `pulumi preview`",
        )
    message = error["msg"].removeprefix("Value error, ")
    if kind == "value_error" and "; " in message:
        problem, fix = message.split("; ", 1)
        return ConfigIssue(path, problem, fix)
    got = repr(error.get("input"))
    return ConfigIssue(path, f"{message} (got {got if len(got) <= 80 else got[:77] + '...'})", _hint(kind, error))


def _hint(kind: str, error: Any) -> str:
    ctx = error.get("ctx") or {}
    if kind == "literal_error":
        return f"use one of {ctx.get('expected')}"
    if kind.startswith(("greater_than", "less_than")):
        return f"use a value {error['msg'].split('should be ', 1)[-1]}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"write it as {kind.split('_', 1)[0]}"
    if kind == "string_pattern_mismatch":
        return f"match the pattern {ctx.get('pattern')}"
    return "correct the value as described"
