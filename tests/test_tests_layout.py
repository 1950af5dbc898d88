"""scripts/tests_layout.py: where a test module belongs, and what changes when it moves there."""

from __future__ import annotations

import pathlib
import sys

import pytest

from scripts import tests_layout


def test_a_module_goes_to_the_folder_of_the_first_pattern_naming_it() -> None:
    assert tests_layout.folder_of("test_simulate_timeline.py") == "simulate"
    assert tests_layout.folder_of("test_verify_charts.py") == "infra"
    assert tests_layout.folder_of("test_jobs_templates.py") == "assembly"
    assert tests_layout.folder_of("test_cli_voice.py") == "cli"
    assert tests_layout.folder_of("test_facts.py") is None  # the ground floor stays in tests/


def test_every_folder_of_the_layout_is_put_on_sys_path_by_conftest() -> None:
    # GIVEN the folders the layout moves modules into THEN a helper imported by module name is found in each

    for folder, _ in tests_layout.LAYOUT:
        path = tests_layout.TESTS / folder
        assert not path.is_dir() or str(path) in sys.path, folder


def test_a_moved_module_builds_its_paths_one_level_further_up() -> None:
    text = (
        "REPO = pathlib.Path(__file__).resolve().parent.parent\n"
        "ROOT = pathlib.Path(__file__).resolve().parents[1]\n"
        'BUILD = pathlib.Path(__file__).parent / "data"\n'
        "sys.path.insert(0, os.path.dirname(__file__))\n"
    )
    assert tests_layout.deeper(text) == (
        "REPO = pathlib.Path(__file__).resolve().parents[2]\n"
        "ROOT = pathlib.Path(__file__).resolve().parents[2]\n"
        'BUILD = pathlib.Path(__file__).parents[1] / "data"\n'
        "sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n"
    )


def test_references_follow_the_module_and_only_that_module(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (paths put together here, so that no run of the script rewrites this test's own text)
    old, near, new = "tests/" + "test_example.py", "tests/" + "test_example_more.py", "tests/infra/" + "test_example.py"
    # GIVEN a file naming a module, a module whose name starts the same, and an absolute path ending alike
    note = tmp_path / "notes.md"
    note.write_text(f"{old}::test_x and {near} and /abs/{old}\n")
    monkeypatch.setattr(tests_layout, "REPO", tmp_path)
    monkeypatch.setattr(tests_layout, "tracked_text_files", lambda: [note])
    # WHEN the module moves to tests/infra/
    changed = tests_layout.rewrite_references({tmp_path / old: tmp_path / new})
    # THEN only its own references follow it
    assert changed == [note]
    assert note.read_text() == f"{new}::test_x and {near} and /abs/{old}\n"


def test_an_import_of_a_moved_helper_module_names_its_place_in_support(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "test_new.py"
    module.write_text("from test_jobs_support import FakePlanner\nfrom test_jobs_templates import spec_for\n")
    monkeypatch.setattr(tests_layout, "test_modules", lambda: [module])
    assert tests_layout.rewrite_helper_imports() == [module]
    assert module.read_text() == "from support.jobs import FakePlanner\nfrom test_jobs_templates import spec_for\n"
