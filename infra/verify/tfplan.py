"""The recorded AWS resources as a Terraform plan JSON, for ``checkov --framework terraform_plan``.

pulumi-aws is bridged from terraform-provider-aws, so each resource is a Terraform resource:
- type token -> Terraform type: ``aws:ec2/vpc:Vpc`` -> ``aws_vpc`` (ec2 resources carry no module
  prefix), ``aws:s3/bucketPolicy:BucketPolicy`` -> ``aws_s3_bucket_policy``;
- input names camelCase -> snake_case, list blocks singular again (``rules`` -> ``rule``); nested
  objects (Pulumi flattens Terraform's single blocks) become one-element lists again, read from
  the SDK's input types; maps (tags) keep their keys;
- references: an input equal to another recorded resource's id/arn/name is written as a
  Terraform reference in ``configuration``, so checkov's graph checks (flow log of a VPC, public
  access block of a bucket, ...) connect resources as they would in Terraform.
Resources Pulumi components create remotely (the EKS cluster inside ``eks:index:Cluster``) are
not in the recording and so not in the plan.
"""

from __future__ import annotations

import re
import typing
from typing import Any

from pulumi import _types as ptypes

from ekstrain.infra import offline
from ekstrain.infra.verify import sdk_schema


def tf_type(type_token: str) -> str | None:
    pkg, _, rest = type_token.partition(":")
    module, _, _ = rest.rpartition(":")
    if pkg != "aws" or "/" not in module:
        return None
    service, _, name = module.partition("/")
    snake = snake_case(name)
    return f"aws_{snake}" if service == "ec2" else f"aws_{service}_{snake}"


def snake_case(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def tf_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def _object_class(hint: Any) -> tuple[type | None, bool]:
    """(input type of a nested object, whether it is a list of them) for an SDK type hint."""
    for alt in sdk_schema._alternatives(hint):  # noqa: SLF001
        origin = typing.get_origin(alt)
        if isinstance(alt, type) and ptypes.is_input_type(alt):
            return alt, False
        if origin is not None and origin.__name__ in ("list", "Sequence"):
            (item,) = typing.get_args(alt) or (Any,)
            for inner in sdk_schema._alternatives(item):  # noqa: SLF001
                if isinstance(inner, type) and ptypes.is_input_type(inner):
                    return inner, True
    return None, False


# The bridge pluralises Terraform list blocks (`rule` -> `rules`); blocks whose Terraform name is already
# plural keep it (launch template `block_device_mappings`, ...).
TF_PLURAL_BLOCKS = {
    "blockDeviceMappings",
    "networkInterfaces",
    "tagSpecifications",
    "elasticGpuSpecifications",
    "elasticInferenceAccelerators",
    "licenseSpecifications",
    "instanceRequirements",
}


def block_name(key: str) -> str:
    """Terraform name of a list block from its Pulumi name."""
    if key in TF_PLURAL_BLOCKS or not key.endswith("s") or key.endswith("ss"):
        return snake_case(key)
    return snake_case(key[:-3] + "y" if key.endswith("ies") else key[:-1])


def to_tf(value: dict[str, Any], cls: type | None) -> dict[str, Any]:
    """Pulumi inputs of an object of SDK type ``cls`` -> Terraform attribute values."""
    props = sdk_schema.properties(cls) if cls is not None else {}
    out: dict[str, Any] = {}
    for key, v in value.items():
        if key.startswith("__"):
            continue
        sub, many = _object_class(props[key]) if key in props else (None, False)
        plain = offline.plain(v)
        if sub is not None and many and isinstance(plain, list):
            out[block_name(key)] = [to_tf(x, sub) if isinstance(x, dict) else x for x in plain]
        elif sub is not None and isinstance(plain, dict):
            out[snake_case(key)] = [to_tf(plain, sub)]
        else:
            out[snake_case(key)] = plain
    return out


def _addressed(rec: offline.Recording) -> list[tuple[offline.Record, str, str, str]]:
    """(record, TF type, TF name, address) of every AWS custom resource; repeated names get _2, _3, ..."""
    out = []
    seen: dict[str, int] = {}
    for r in rec.records:
        typ = tf_type(r.type)
        if typ is None or not r.custom:
            continue
        base = tf_name(r.name)
        seen[f"{typ}.{base}"] = seen.get(f"{typ}.{base}", 0) + 1
        name = base if seen[f"{typ}.{base}"] == 1 else f"{base}_{seen[f'{typ}.{base}']}"
        out.append((r, typ, name, f"{typ}.{name}"))
    return out


def plan(rec: offline.Recording) -> dict[str, Any]:
    """A Terraform plan (format 1.2) creating every recorded AWS resource."""
    resources, changes, config = [], [], []
    addressed = _addressed(rec)
    by_value: dict[str, str] = {}
    for r, _, _, address in addressed:
        for attr in ("id", "arn", "name", "bucket", "keyId", "url"):
            out = r.outputs.get(attr)
            if isinstance(out, str) and len(out) > 6:
                by_value.setdefault(out, f"{address}.{snake_case(attr)}")
    for r, typ, name, address in addressed:
        values = to_tf(r.inputs, sdk_schema.args_class(r.type))
        common = {
            "address": address,
            "mode": "managed",
            "type": typ,
            "name": name,
            "provider_name": "registry.terraform.io/hashicorp/aws",
        }
        resources.append({**common, "schema_version": 0, "values": values})
        changes.append(
            {**common, "change": {"actions": ["create"], "before": None, "after": values, "after_unknown": {}}}
        )
        expressions: dict[str, Any] = {}
        for key, v in values.items():
            refs = _references(v, by_value, address)
            expressions[key] = {"references": refs} if refs else {"constant_value": v}
        config.append(
            {
                "address": address,
                "mode": "managed",
                "type": typ,
                "name": name,
                "provider_config_key": "aws",
                "expressions": expressions,
                "schema_version": 0,
            }
        )
    return {
        "format_version": "1.2",
        "terraform_version": "1.9.8",
        "planned_values": {"root_module": {"resources": resources}},
        "resource_changes": changes,
        "configuration": {
            "provider_config": {"aws": {"name": "aws", "full_name": "registry.terraform.io/hashicorp/aws"}},
            "root_module": {"resources": config},
        },
    }


def _references(value: Any, by_value: dict[str, str], own: str) -> list[str]:
    found: list[str] = []
    if isinstance(value, str) and value in by_value and not by_value[value].startswith(own + "."):
        ref = by_value[value]
        found += [ref, ref.rsplit(".", 1)[0]]
    elif isinstance(value, list):
        for v in value:
            found += [x for x in _references(v, by_value, own) if x not in found]
    return found
