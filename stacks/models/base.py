"""Base model shared by every stack-config section."""

from __future__ import annotations

import ipaddress
import posixpath
import re
import types
import typing
import unicodedata
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from ekstrain.facts import names
from ekstrain.stacks import limits


class Model(BaseModel):
    """camelCase YAML keys, snake_case attributes, no unknown keys, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        validate_default=True,
        use_attribute_docstrings=True,
    )

    own_text_checks: ClassVar[frozenset[str]] = frozenset()
    """Fields whose validator refuses control characters itself, with a message of its own."""

    @field_validator("*", mode="before")
    @classmethod
    def _plain_scalars(cls, value: Any, info: ValidationInfo) -> Any:
        """Every text setting is one line of printable characters, and a count is a number, never a boolean.

        A control character (newline, tab, escape) in a name or a free-text field splits the rows of SUMMARY's
        tables and of the files the program writes; YAML's ``true`` is a bool, which pydantic's lax mode would
        read as the count 1."""
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and info.field_name not in cls.own_text_checks:
            problem = scalar_problem(value, field.annotation)
            if problem:
                raise ValueError(problem)
        return value


def _ipv4_cidr(value: str) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        problem = f"{value!r} is not an IPv4 CIDR with zero host bits ({exc})"
        raise ValueError(f"{problem}; write it like 10.0.0.0/16") from None
    return str(net)


IPv4Cidr = Annotated[str, AfterValidator(_ipv4_cidr)]


def _ec2_id(kind: str, pattern: re.Pattern[str], example: str) -> AfterValidator:
    prefix = pattern.pattern.split("-")[0]

    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise _fail(
                f"{value[:60]!r} is not a {kind} id ({prefix}- and 8 or 17 lowercase hex digits)",
                f"copy the id as AWS prints it ({example})",
            )
        return value

    return AfterValidator(check)


VpcId = Annotated[str, _ec2_id("VPC", limits.VPC_ID, "vpc-0123456789abcdef0")]
SubnetId = Annotated[str, _ec2_id("subnet", limits.SUBNET_ID, "subnet-0123456789abcdef0")]
SecurityGroupId = Annotated[str, _ec2_id("security group", limits.SECURITY_GROUP_ID, "sg-0123456789abcdef0")]

DNS_LABEL = rf"^{names.DNS_LABEL_PATTERN}$"
"""The DNS-1123 label rule (ekstrain/facts/names.py) as a pydantic pattern."""


def _fail(problem: str, fix: str) -> ValueError:
    # stacks.loader splits "problem; fix" into the two halves of a ConfigIssue.
    return ValueError(f"{problem}; {fix}")


_KMS_KEY_ARN = re.compile(
    r"arn:(?P<partition>[a-z-]+):kms:(?P<region>[a-z0-9-]+):\d{12}:"
    r"key/(mrk-[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)


def _kms_key_arn(value: str) -> str:
    if not _KMS_KEY_ARN.fullmatch(value):
        raise _fail(
            f"{value!r} is not a KMS key ARN",
            "write arn:aws:kms:<region>:<account>:key/<key id> (key ARNs only: FSx refuses alias ARNs)",
        )
    return value


KmsKeyArn = Annotated[str, AfterValidator(_kms_key_arn)]
"""Region and partition are checked against the stack by ``ekstrain.stacks.rules`` (keys are regional)."""


def kms_key_region(arn: str) -> str:
    match = _KMS_KEY_ARN.fullmatch(arn)
    return match["region"] if match else ""


_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
_BUCKET_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def _bucket_name(value: str) -> str:
    """Every S3 general-purpose bucket naming rule (docs: "General purpose bucket naming rules")."""
    fix = "use 3-63 lowercase letters, digits and hyphens, starting and ending with a letter or digit"
    if not _BUCKET.fullmatch(value):
        raise _fail(f"{value!r} is not a valid S3 bucket name", fix)
    if ".." in value or ".-" in value or "-." in value:
        raise _fail(f"{value!r} has adjacent periods or a period next to a hyphen", fix)
    if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", value):
        raise _fail(f"{value!r} is formatted as an IP address, which S3 refuses", fix)
    bad = [x for x in _BUCKET_PREFIXES if value.startswith(x)] + [x for x in _BUCKET_SUFFIXES if value.endswith(x)]
    if bad:
        raise _fail(f"{value!r} uses the prefix or suffix {bad[0]!r} that S3 reserves", fix)
    if "." in value:
        raise _fail(
            f"{value!r} contains periods: virtual-hosted HTTPS (and S3 Transfer Acceleration) fail on them", fix
        )
    return value


BucketName = Annotated[str, AfterValidator(_bucket_name)]

_SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib64",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/run",
    "/var/lib/kubelet",
)


def _absolute_path(value: str) -> str:
    fix = "use an absolute, normalised path such as /data (leading slash, no trailing slash, no . or ..)"
    if not re.fullmatch(r"/[A-Za-z0-9_./-]{1,255}", value):
        raise _fail(f"{value!r} is not an absolute path of letters, digits, '_', '-', '.' and '/'", fix)
    if posixpath.normpath(value) != value or value == "/" or any(p in (".", "..") for p in value.split("/")):
        raise _fail(f"{value!r} is not a normalised absolute path", fix)
    return value


AbsolutePath = Annotated[str, AfterValidator(_absolute_path)]
"""A path inside a file system (FSx data repository path, EFS access point root)."""


def _mount_path(value: str) -> str:
    _absolute_path(value)
    if any(value == d or value.startswith(d + "/") for d in _SYSTEM_DIRS):
        raise _fail(
            f"{value!r} would mount over a system directory of the container",
            "use a dedicated directory such as /fsx or /shared",
        )
    return value


MountPath = Annotated[str, AfterValidator(_mount_path)]
"""Where a volume is mounted in a container: absolute, normalised, not over a system directory."""


_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def control_character(text: str) -> str | None:
    """The first control character of ``text`` (Unicode Cc, line and paragraph separators, the bidirectional
    overrides that reorder what a reader sees), named, or None."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI_CONTROLS:
            name = {"\n": "a newline", "\t": "a tab", "\r": "a carriage return"}.get(ch, f"U+{ord(ch):04X}")
            return name
    return None


def _int_not_bool(annotation: Any) -> bool:
    """The annotation takes whole numbers and not booleans (``int``, ``int | None``, ``Annotated[int, ...]``)."""
    if typing.get_origin(annotation) is Annotated:
        return _int_not_bool(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        return bool not in args and any(_int_not_bool(a) for a in args)
    return annotation is int or annotation is float


def _items(annotation: Any) -> tuple[Any, Any]:
    """(key annotation, item annotation) of a dict or list annotation; (None, None) otherwise."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[0], args[1]
    if origin is list and args:
        return None, args[0]
    return None, None


def scalar_problem(value: Any, annotation: Any) -> str | None:
    """Why ``value`` may not fill a field of ``annotation``: a boolean where a number is wanted, or text with a
    control character (the problem never quotes the value: it may be a secret). Nested models check their own."""
    if isinstance(value, bool) and _int_not_bool(annotation):
        return f"{str(value).lower()} is a boolean, not a number; write the number (YAML reads true as a boolean)"
    if isinstance(value, str):
        bad = control_character(value)
        if bad:
            return f"the text holds {bad} (a control character); write it on one line of printable characters"
        return None
    key_type, item_type = _items(annotation)
    if isinstance(value, dict) and item_type is not None:
        for k, v in value.items():
            problem = scalar_problem(k, key_type) or (
                scalar_problem(v, item_type) if not isinstance(v, dict | list) else None
            )
            if problem:
                return f"{str(k)[:40]!r}: {problem}" if not control_character(str(k)) else problem
    if isinstance(value, list) and item_type is not None:
        for i, v in enumerate(value):
            if not isinstance(v, dict | list):
                problem = scalar_problem(v, item_type)
                if problem:
                    return f"item {i}: {problem}"
    return None
