"""A stack file's bytes are parsed once per process (ekstrain/stacks/yaml_reader.py load_stack_document): each caller
gets its own copy, changed bytes are parsed again, and a refused file is refused every time, naming its own path."""

from __future__ import annotations

import pathlib

import pytest
from conftest import REPO

from ekstrain.files import filememo
from ekstrain.stacks import yaml_reader
from ekstrain.stacks.errors import ConfigError
from ekstrain.stacks.loader import read_stack_file


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The checked parses run (an empty memo of the test's own)."""
    monkeypatch.setattr(yaml_reader, "_parsed", filememo.Recent(yaml_reader.PARSED_KEEP))
    runs: list[int] = []
    real = yaml_reader._check_events

    def counted(text: str) -> None:
        runs.append(len(text))
        real(text)

    monkeypatch.setattr(yaml_reader, "_check_events", counted)
    return runs


def test_the_same_bytes_are_parsed_once_and_each_caller_gets_its_own_copy(
    tmp_path: pathlib.Path, parses: list[int]
) -> None:
    text = (REPO / "Pulumi.dev.yaml").read_text()
    a, b = tmp_path / "a" / "Pulumi.dev.yaml", tmp_path / "b" / "Pulumi.dev.yaml"
    for p in (a, b):
        p.parent.mkdir()
        p.write_text(text)
    first, texts = yaml_reader.load_stack_document(a)
    first["config"]["changed by the first caller"] = 1
    texts.clear()
    # THEN the same bytes at another path are not parsed again, and are what a fresh parse gives
    again = yaml_reader.load_stack_document(b)
    assert len(parses) == 1
    assert "changed by the first caller" not in again[0]["config"] and again[1]
    assert read_stack_file(b) == read_stack_file(REPO / "Pulumi.dev.yaml")
    yaml_reader._parsed.clear()
    assert yaml_reader.load_stack_document(b) == again and len(parses) == 2
    # AND changed bytes are parsed
    b.write_text(text.replace("maxNodes: 2", "maxNodes: 3"))
    assert yaml_reader.load_stack_document(b) != again and len(parses) == 3


def test_a_refused_file_is_refused_each_time_naming_its_path(tmp_path: pathlib.Path, parses: list[int]) -> None:
    bad = "- config\n"  # a list at the top: refused by the stack-file reader
    for name in ("one", "two"):
        path = tmp_path / name / "Pulumi.dev.yaml"
        path.parent.mkdir()
        path.write_text(bad)
        with pytest.raises(ConfigError) as refused:
            read_stack_file(path)
        assert str(path) in str(refused.value)
    assert len(parses) == 2 and not yaml_reader._parsed


def test_the_memo_keeps_only_the_latest_files(
    tmp_path: pathlib.Path, parses: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(yaml_reader, "_parsed", filememo.Recent(2))
    path = tmp_path / "Pulumi.dev.yaml"
    for n in (1, 2, 3, 1):
        path.write_text(f"config:\n  ekstrain:region: us-west-{n}\n")
        yaml_reader.load_stack_document(path)
    assert len(parses) == 4 and len(yaml_reader._parsed) == 2  # 1 was dropped when 3 was read
