"""Anything that is not a plain stack file is a ConfigError naming the file, the line or key, and the fix.

Each case runs the real render entry point (``python -m ekstrain.cli.render``'s ``main``): exit 2, one
``key: problem / fix`` report on stderr, no traceback, in well under a few seconds.
"""

from __future__ import annotations

import pathlib
import time

import pytest
from conftest import REPO

from ekstrain.cli import render as render_cli
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import read_stack_file

DEV = (REPO / "Pulumi.dev.yaml").read_text()


def _dev_with(old: str, new: str) -> bytes:
    """Pulumi.dev.yaml with one edit; fails loudly when the seed file no longer has ``old``."""
    assert old in DEV, f"Pulumi.dev.yaml no longer contains {old!r}: update this case"
    return DEV.replace(old, new, 1).encode()


def _bomb(levels: int = 8) -> str:
    lines = ["config:", '  l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"  l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


# name -> (file bytes, text expected in the report)
NOT_A_STACK_FILE: dict[str, tuple[bytes, str]] = {
    "root is a list": (b"- config\n- x\n", "top level is a list, not a mapping"),
    "root is a scalar": (b"just text\n", "top level is a str, not a mapping"),
    "empty file": (b"", "is empty"),
    "config is a list": (b"config: [a, b]\n", "config: is a list, not a mapping"),
    "integer key": (b"config:\n  aws:region: us-west-2\n  1: x\n", "key 1 is an int, not text"),
    "yes/on key": (b"config:\n  on: 1\n", "on is a boolean in YAML 1.1 but the text 'on' in YAML 1.2"),
    "nested non-string key": (_dev_with("  ekstrain:network:\n", "  ekstrain:network:\n    2: x\n"), "key 2 is an int"),
    "unhashable key": (b"config:\n  ? [a, b]\n  : x\n", "mapping key is a list"),
    "non-UTF-8 bytes": (DEV.encode().replace(b"ekstrain-dev", b"ekstrain-d\xffv"), "line 6: is not UTF-8"),
    "deep nesting": (b"config:\n  ekstrain:tags: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nests deeper than 32"),
    "alias bomb": (_bomb().encode(), "expands (through aliases) to more than 10000"),
    "recursive alias": (b"config: &c\n  ekstrain:x: *c\n", "refers to the collection that contains it"),
    ".inf": (
        _dev_with("storageCapacityGiB: 1200", "storageCapacityGiB: .inf"),
        "config.ekstrain:storage.fsx.storageCapacityGiB: inf is not a finite number",
    ),
    ".nan": (_dev_with("maxNodes: 2", "maxNodes: .nan"), "maxNodes: nan is not a finite number"),
    "date value": (_dev_with('kubernetesVersion: "1.36"', "kubernetesVersion: 2025-01-01"), "is a YAML date"),
    "binary value": (b"config:\n  ekstrain:project: !!binary aGVsbG8=\n", "is a YAML bytes"),
    "python tag": (b"config:\n  ekstrain:project: !!python/object:os.system x\n", "not valid YAML"),
    "huge integer": (_dev_with("maxNodes: 2", "maxNodes: " + "9" * 30), "is out of range"),
    "too large": (b"config:\n" + b"  # padding\n" * 100_000, "larger than 1024 KiB"),
    "syntax error": (b"config:\n  aws:region: [us-west-2\n", "is not valid YAML"),
    "un-namespaced key": (b"config:\n  region: us-west-2\n", "config.region: is not a namespaced key"),
    "unknown top-level key": (b"confg:\n  aws:region: us-west-2\n", "confg: is not a stack-file key"),
    "malformed secure value": (b"config:\n  ekstrain:x:\n    secure: 1\n", "secure: value must be"),
}


def _render(path: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    started = time.perf_counter()
    code = render_cli.main(["--stack", "x", "--stack-file", str(path), "--out", str(tmp_path / "out")])
    # A hang guard, generous for a loaded 2-core CI machine; the refusal times are figures in `make bench`.
    assert time.perf_counter() - started < 30, "a bad stack file is refused within seconds"
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("case", sorted(NOT_A_STACK_FILE))
def test_not_a_stack_file_exits_2_with_key_and_fix(
    case: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a file that is not a plain stack file WHEN it is rendered THEN exit 2 with the problem and a fix."""
    data, expected = NOT_A_STACK_FILE[case]
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(data)
    code, err = _render(path, tmp_path, capsys)
    assert code == 2, err
    assert expected in err and "fix:" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["top level", "config key", "nested"])
def test_duplicate_keys_at_any_level_are_errors(
    where: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN the dev stack with one key written twice THEN the second one is reported with both lines, never
    last-wins."""
    lines = DEV.splitlines(keepends=True)
    if where == "top level":
        text, expected = DEV + "config:\n  aws:region: us-west-2\n", "key 'config' appears twice"
    elif where == "config key":
        at = lines.index("  aws:region: us-west-2\n")
        text, expected = (
            "".join(lines[: at + 1] + ["  aws:region: us-east-1\n"] + lines[at + 1 :]),
            "key 'aws:region' appears twice",
        )
    else:
        at = lines.index("      maxNodes: 2\n")
        text, expected = (
            "".join(lines[: at + 1] + ["      maxNodes: 64\n"] + lines[at + 1 :]),
            "key 'maxNodes' appears twice",
        )
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(text)
    code, err = _render(path, tmp_path, capsys)
    assert code == 2 and expected in err and "(also at line" in err, err


def test_merge_keys_are_not_duplicates(tmp_path: pathlib.Path) -> None:
    """YAML merge keys (``<<``) are the documented way to share values; they stay allowed."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("config:\n  ekstrain:tags: &t {a: b}\n  ekstrain:x:\n    <<: *t\n    c: d\n")
    flat, _ = read_stack_file(path)
    assert flat["ekstrain:x"] == '{"a": "b", "c": "d"}'


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_missing_file_or_directory_exits_2(
    kind: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    if kind == "directory":
        path.mkdir()
    code, err = _render(path, tmp_path, capsys)
    assert code == 2 and ("does not exist" if kind == "missing" else "is a directory") in err
    assert "Traceback" not in err


def test_read_stack_file_raises_only_config_error(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_bytes(b"\x00\x01\x02")
    with pytest.raises(ConfigError):
        read_stack_file(path)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[" * 5000 + "]" * 5000, "ekstrain:cluster"),
        ('{"name": NaN}', "ekstrain:cluster.name: nan is not a finite number"),
        ("[" * 40 + "]" * 40, "nests deeper than 32"),
    ],
)
def test_engine_config_gets_the_same_limits(value: str, expected: str) -> None:
    """GIVEN config as `pulumi up` hands it over (JSON strings, no stack-file reader in between)
    THEN the same limits apply and only a ConfigError is raised."""
    from ekstrain.stacks.loader import load_flat

    with pytest.raises(ConfigError) as caught:
        load_flat({"aws:region": "us-west-2", "ekstrain:cluster": value}, "Pulumi.x.yaml")
    assert expected in str(caught.value)
