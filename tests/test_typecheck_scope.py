"""mypy reads only the pulumi-aws and pulumi-kubernetes modules the program and pulumi-eks use (pyproject.toml):
every other service is skipped, so a call into it would be typed Any without a word. These tests keep the list of
followed modules equal to what the code imports, so no used service is ever skipped and none is listed in vain."""

from __future__ import annotations

import ast
import pathlib
import re
import sys
import textwrap

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy's own dependency below 3.11
    import tomli as tomllib

import pulumi_aws
import pulumi_eks
import pulumi_kubernetes
import pytest
from support import trees

REPO = pathlib.Path(__file__).resolve().parent.parent
SDKS = ("pulumi_aws", "pulumi_kubernetes")
# How deep a module path names one skipped-or-followed unit: an AWS service, a Kubernetes API group.
SDK_NAME = re.compile(r"\b(?:pulumi_aws|pulumi_kubernetes)(?:\.\w+)+")
DEPTH = {"pulumi_aws": 2, "pulumi_kubernetes": 2}


def _mypy_overrides() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]


def _followed_sections() -> list[set[str]]:
    """pyproject's followed SDK modules: [each package's own modules, the services and API groups used]."""
    return [set(s["module"]) for s in _mypy_overrides() if s.get("follow_imports") == "normal"]


def _followed() -> set[str]:
    return set().union(*_followed_sections())


def _skipped_patterns() -> set[str]:
    out: set[str] = set()
    for section in _mypy_overrides():
        if section.get("follow_imports") == "skip":
            out |= set(section["module"])
    return out


def sdk_units_used(source: str) -> set[str]:
    """The SDK units (``pulumi_aws.ec2``, ``pulumi_kubernetes.core``) a Python source reaches, through imports
    (``import pulumi_aws as aws``, ``from pulumi_aws import ec2``, ``import pulumi_aws.s3``) and the attributes of an
    imported name (``aws.ec2.Vpc``)."""
    tree = trees.parse(source)
    aliases: dict[str, str] = {}
    used: set[str] = set()

    def unit(dotted: str) -> None:
        parts = dotted.split(".")
        if parts[0] in SDKS and len(parts) >= DEPTH[parts[0]]:
            used.add(".".join(parts[: DEPTH[parts[0]]]))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in SDKS:
                    unit(alias.name)
                    if alias.asname:  # import pulumi_aws.s3 as s3: s3 is the module
                        aliases[alias.asname] = alias.name
                    else:  # import pulumi_aws.s3: the name bound is pulumi_aws
                        top = alias.name.split(".")[0]
                        aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SDKS:
            for alias in node.names:
                unit(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
            for dotted in SDK_NAME.findall(node.value):
                unit(dotted)
        if isinstance(node, ast.Attribute):
            chain = []
            current: ast.expr = node
            while isinstance(current, ast.Attribute):
                chain.append(current.attr)
                current = current.value
            if isinstance(current, ast.Name) and current.id in aliases:
                unit(".".join([aliases[current.id], *reversed(chain)]))
    # A service's own module of the same name as a top-level one (pulumi_aws.provider) is the package's, not a unit.
    return {u for u in used if _is_package(u)}


def _is_package(dotted: str) -> bool:
    top, _, rest = dotted.partition(".")
    return (_root(top) / rest / "__init__.py").is_file()


def _root(sdk: str) -> pathlib.Path:
    return pathlib.Path({"pulumi_aws": pulumi_aws, "pulumi_kubernetes": pulumi_kubernetes}[sdk].__file__).parent


def _sources() -> list[pathlib.Path]:
    """The files mypy checks (pyproject's ``files``, symlinked rooms followed, its excludes left out)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    out: list[pathlib.Path] = []
    for top in config["files"]:
        for path in sorted((REPO / top).glob("**/*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not any(re.match(pattern, rel) for pattern in config.get("exclude", [])):
                out.append(path)
    for room in (REPO / "ekstrain").iterdir():  # the rooms that are symlinks to top-level folders
        if room.is_symlink() and room.name not in ("policy_pack", "security"):
            out += sorted(room.resolve().glob("**/*.py"))
    return out


def _units_needed() -> set[str]:
    needed: set[str] = set()
    for path in _sources():
        needed |= sdk_units_used(path.read_text())
    # the types our calls into pulumi-eks are checked against
    # pulumi-eks names the SDKs' types in full (``pulumi_aws.ec2.SecurityGroup``): its text is enough
    for path in pathlib.Path(pulumi_eks.__file__).parent.glob("**/*.py"):
        for dotted in SDK_NAME.findall(path.read_text()):
            parts = dotted.split(".")
            if len(parts) >= 2 and _is_package(".".join(parts[:2])):
                needed.add(".".join(parts[:2]))
    return needed


def test_the_sdks_are_skipped_but_for_the_listed_modules():
    assert _skipped_patterns() == {"pulumi_aws.*", "pulumi_kubernetes.*"}


def test_every_sdk_unit_the_code_or_pulumi_eks_uses_is_followed_and_no_other():
    followed = _followed()
    needed = _units_needed()
    assert {"pulumi_aws.ec2", "pulumi_aws.iam", "pulumi_kubernetes.core"} <= needed  # the scan sees the program
    missing = sorted(u for u in needed if u not in followed or f"{u}.*" not in followed)
    assert not missing, f"add to pyproject.toml's followed SDK modules (the unit and its .*): {missing}"
    own, units = _followed_sections()
    assert all(m.split(".")[0] in SDKS for m in own | units)
    listed_units = {m for m in units if not m.endswith(".*")}
    assert {f"{m}.*" for m in listed_units} == units - listed_units
    stale = sorted(listed_units - needed)
    assert not stale, f"pyproject.toml follows SDK modules nothing uses: {stale}"


def test_each_packages_own_modules_listed_exist():
    for module in _followed():
        top, _, rest = module.partition(".")
        if top not in SDKS or not rest or rest.endswith("*") or _is_package(module):
            continue
        assert (_root(top) / f"{rest}.py").is_file(), module


@pytest.mark.parametrize(
    "source, unit",
    [
        ("import pulumi_aws as aws\naws.appstream.Fleet('x')\n", "pulumi_aws.appstream"),
        ("import pulumi_aws\npulumi_aws.appstream.Fleet('x')\n", "pulumi_aws.appstream"),
        ("from pulumi_aws import appstream\n", "pulumi_aws.appstream"),
        ("x: 'pulumi_aws.appstream.Fleet'\n", "pulumi_aws.appstream"),
        ("import pulumi_aws.appstream as a\n", "pulumi_aws.appstream"),
        (
            "import pulumi_kubernetes as k8s\nk8s.autoscaling.v2.HorizontalPodAutoscaler('x')\n",
            "pulumi_kubernetes.autoscaling",
        ),
    ],
)
def test_a_new_service_in_the_code_is_seen(source, unit):
    assert unit in sdk_units_used(textwrap.dedent(source))
    assert unit not in _followed()  # so the first test would name it
