"""Every hint names a command the user has: ``ekstrain ...`` (every install), and a Makefile target only beside it
and only when the package runs from a checkout (ekstrain/files/paths.py ``in_checkout``): a wheel user has no Makefile.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re

import pytest
from conftest import REPO
from support import trees

from ekstrain.cli import simulate as simulate_cli
from ekstrain.files import paths
from ekstrain.tooling import lock

MAKE_TARGET = re.compile(
    r"\bmake (render|lock|examples|simulate|fetch-upstream|test|unit|lint|ruff|fmt|bench|architecture|clean|\.tools)\b"
)
ROOMS = ("ekstrain", "components", "infra", "stacks", "assembly", "cli")


def make_hints_outside_in_checkout(source: str) -> list[tuple[int, str]]:
    """String literals (not docstrings) naming a make target, except inside an ``in_checkout(...)`` call."""
    tree = trees.parse(source)
    skipped: set[int] = set()
    for node in trees.nodes(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # docstrings, bare strings
            skipped.add(id(node.value))
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "in_checkout":
            skipped |= {id(sub) for sub in ast.walk(node)}
    return [
        (node.lineno, node.value)
        for node in trees.nodes(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skipped
        and MAKE_TARGET.search(node.value)
    ]


def test_the_scan_finds_a_bare_make_hint_and_passes_one_in_checkout() -> None:
    assert make_hints_outside_in_checkout('fix = "run `make lock` and commit it"\n') == [
        (1, "run `make lock` and commit it")
    ]
    assert make_hints_outside_in_checkout('fix = "`ekstrain render --lock write`" + in_checkout("make lock")\n') == []
    assert make_hints_outside_in_checkout('"""Docs: `make render`."""\n') == []


def test_no_string_the_package_prints_names_a_make_target_outside_a_checkout_hint() -> None:
    found = []
    for room in ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            if room == "ekstrain" and path.relative_to(REPO / room).parts[0] in ROOMS:
                continue  # the symlinked rooms, scanned once as themselves
            found += [
                f"{path.relative_to(REPO)}:{n}: {s[:100]!r}"
                for n, s in make_hints_outside_in_checkout(path.read_text())
            ]
    assert found == []


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """As from the wheel: no source checkout beside the package."""
    monkeypatch.setattr(paths, "CHECKOUT", None)


def test_the_lock_hints_name_ekstrain_render_and_make_lock_only_in_a_checkout(
    installed: None, tmp_path: pathlib.Path
) -> None:
    assert lock.write_command("prod") == "`ekstrain render --stack prod --lock write`"
    broken = tmp_path / lock.LOCK_NAME
    broken.write_text("{oops")
    with pytest.raises(lock.LockError) as refused:
        lock.load(broken)
    assert "ekstrain render --stack <stack> --lock write" in str(refused.value) and "make " not in str(refused.value)
    about = json.loads(lock.Lock(tmp_path / "l.json").text())["about"]
    assert "ekstrain render --stack S --lock write" in about and "make " not in about


def test_in_a_checkout_the_make_target_is_named_beside_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "CHECKOUT", REPO)
    assert lock.write_command("dev") == (
        "`ekstrain render --stack dev --lock write` (in this checkout: `make lock STACK=dev`)"
    )


def test_simulate_without_a_render_says_ekstrain_render(
    installed: None, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(build=tmp_path / "nothing", stack="prod")
    assert simulate_cli.rendered_build(args) is None
    err = capsys.readouterr().err
    assert "fix: run `ekstrain render --stack prod` first" in err and "make " not in err, err
