"""argparse ``type=`` functions shared by ``ekstrain plan`` and ``ekstrain job``.

Each turns one command-line string into a checked value or raises ``ArgumentTypeError`` with a
one-line reason; :class:`OneLineParser` prints that as ``error: prog: argument --x: reason (see prog --help)``
and exits 2 (no usage block, no traceback): the line the click front end prints (cli/kit.py ``one_line``).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
from typing import Any, NoReturn

from ekstrain.facts import names
from ekstrain.files import inputs_guard, outputs

# OCI distribution reference grammar (github.com/distribution/reference), anchored.
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE = re.compile(
    rf"(?P<name>{_DOMAIN}?{_COMPONENT}(?:/{_COMPONENT})*)(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)
QUANTITY = re.compile(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments: one line on stderr and exit 2 (argparse's own code), without the usage block. The one parser
    class of every argparse tree (subparsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def _int(text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def nonneg_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or more")
    return value


def finite_number(text: str, unit: str | None = None) -> float:
    """``text`` as a finite float, or argparse's error naming the text (cut to 40 characters) and the unit."""
    of = f" of {unit}" if unit else ""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number{of}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a finite number{of}")
    return value


def nonneg_float(text: str) -> float:
    value = finite_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be 0 or more")
    return value


def positive_float(text: str) -> float:
    value = finite_number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} must be more than 0")
    return value


def namespace(text: str) -> str:
    if not names.is_dns_label(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a Kubernetes namespace (DNS-1123 label: at most 63 "
            "lowercase letters, digits and '-', starting and ending alphanumeric)"
        )
    return text


def image(text: str) -> str:
    match = IMAGE.fullmatch(text)
    if match is None or len(match["name"]) > 255:
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a container image reference "
            "(registry/repository[:tag][@sha256:digest], lowercase repository)"
        )
    from ekstrain.infra.verify.images import split  # the render's own reading of a reference

    _, tag, digest = split(text)
    if not digest and tag in ("", "latest"):
        # the render refuses the same in the stack's images (infra/verify/images.py): the runtime would pull
        # whatever :latest is that day, so two nodes of one job can run different code
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} names no version (tag {tag or 'absent: latest'}); pin a tag (e.g. :25.01-py3) or a "
            "digest (@sha256:...)"
        )
    return text


def quantity(text: str) -> str:
    if not QUANTITY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Kubernetes quantity such as 5120Mi")
    return text


def writable_out(text: str) -> pathlib.Path:
    """A file path whose file can be created or replaced, checked before any work is done by the write guard
    (ekstrain/files/outputs.py: not a directory, not a stack or project file, in a writable directory that exists)."""
    try:
        return outputs.check_file("--out", pathlib.Path(text))
    except outputs.OutputRefused as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--out ")) from None


def json_object_file(text: str) -> dict[str, Any]:
    """A JSON file holding one object (the caller checks its keys and types)."""
    try:
        doc = json.loads(
            inputs_guard.read_text(pathlib.Path(text)),  # a regular file, bounded: a FIFO would block
            parse_constant=lambda c: (_ for _ in ()).throw(ValueError(f"{c} is not allowed")),
        )
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise argparse.ArgumentTypeError(f"{text!r} holds a JSON {type(doc).__name__}, not an object")
    return doc


def stack_name(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a stack name (letters, digits, '-', '_', '.')")
    return text


__all__ = [
    "OneLineParser",
    "image",
    "json_object_file",
    "namespace",
    "nonneg_float",
    "nonneg_int",
    "positive_float",
    "positive_int",
    "quantity",
    "stack_name",
    "writable_out",
]
