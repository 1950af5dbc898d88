"""scripts/rooms_codemod.py on a small tree (no git): it moves what its table places, rewrites every kind of
reference, wraps the prose it lengthened, stops on a module it cannot place, and a second run changes nothing."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def codemod() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rooms_codemod", ROOT / "scripts" / "rooms_codemod.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rooms_codemod"] = module
    spec.loader.exec_module(module)
    return module


def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "ekstrain").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "ekstrain" / "__init__.py").write_text("")
    (tmp_path / "ekstrain" / "testing.py").write_text("from ekstrain import catalog\n")
    (tmp_path / "ekstrain" / "catalog.py").write_text("X = 1\n")
    (tmp_path / "ekstrain" / "paths.py").write_text(
        "import pathlib\n\nPACKAGE = pathlib.Path(__file__).resolve().parent\n"
    )
    (tmp_path / "ekstrain" / "lock.py").write_text('"""Reads ekstrain.lock.json."""\n')
    (tmp_path / "user.py").write_text(
        "from ekstrain import (\n    catalog,\n    planner,\n    paths as p,\n)\nimport ekstrain.lock\n"
        'PATCH = "ekstrain.catalog.X"\n'
        'FILE = ROOT / "ekstrain" / "lock.py"\n'
        'CODE = "from ekstrain import catalog; print(1)"\n'
        f"# {'a' * 90} (ekstrain/catalog.py) and more words\n"
    )
    (tmp_path / "README.md").write_text("See `ekstrain/lock.py`, ekstrain.lock.json and `python -m ekstrain.lock`.\n")
    (tmp_path / "tests" / "test_import_graph.py").write_text("ROOMS: tuple[str, ...] = ()\n")
    return tmp_path


@pytest.fixture
def rooms(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = codemod()
    monkeypatch.setattr(
        module,
        "ROOMS",
        {"facts": ("Facts.", ("catalog",)), "files": ("Files.", ("paths",)), "tooling": ("Tools.", ("lock",))},
    )
    return module


def test_GIVEN_a_tree_WHEN_the_codemod_runs_twice_THEN_modules_are_in_rooms_and_every_reference_follows(
    tmp_path: pathlib.Path, rooms: ModuleType
) -> None:
    root = tree(tmp_path)
    assert rooms.main(["--root", str(root), "--no-ruff"]) == 0
    ground = root / "ekstrain"
    assert sorted(p.name for p in ground.glob("*.py")) == ["__init__.py", "testing.py"]
    assert (ground / "facts" / "catalog.py").is_file() and (
        ground / "facts" / "__init__.py"
    ).read_text() == '"""Facts."""\n'
    assert "parents[1]" in (ground / "files" / "paths.py").read_text()  # still finds ekstrain/
    user = (root / "user.py").read_text()
    assert (
        "from ekstrain.facts import catalog\nfrom ekstrain import planner\nfrom ekstrain.files import paths as p\n"
        in user
    )
    assert "import ekstrain.tooling.lock\n" in user and '"ekstrain.facts.catalog.X"' in user
    assert 'ROOT / "ekstrain" / "tooling" / "lock.py"' in user
    assert '"from ekstrain.facts import catalog; print(1)"' in user
    assert all(len(line) <= 120 for line in user.splitlines()) and "(ekstrain/facts/catalog.py)" in user
    readme = (root / "README.md").read_text()
    assert readme == "See `ekstrain/tooling/lock.py`, ekstrain.lock.json and `python -m ekstrain.tooling.lock`.\n"
    assert (
        root / "tests" / "test_import_graph.py"
    ).read_text() == 'ROOMS: tuple[str, ...] = ("facts", "files", "tooling",)\n'
    # a second run finds nothing to do
    before = {p: p.read_text() for p in root.rglob("*") if p.is_file()}
    assert rooms.main(["--root", str(root), "--check"]) == 0
    assert rooms.main(["--root", str(root), "--no-ruff"]) == 0
    assert {p: p.read_text() for p in root.rglob("*") if p.is_file()} == before


def test_GIVEN_a_loose_module_the_table_does_not_place_WHEN_run_THEN_nothing_moves_and_it_is_named(
    tmp_path: pathlib.Path, rooms: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(tmp_path)
    (root / "ekstrain" / "newcomer.py").write_text("")
    assert rooms.main(["--root", str(root), "--no-ruff"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: rooms_codemod: ekstrain/ has loose modules the table does not place: newcomer\n")
    assert "fix: add each to ROOMS" in err and (root / "ekstrain" / "catalog.py").is_file()


def test_GIVEN_the_real_table_WHEN_read_THEN_every_loose_module_of_this_checkout_has_a_room() -> None:
    module = codemod()
    placed = module.module_rooms()
    loose = {p.stem for p in (ROOT / "ekstrain").glob("*.py")} - set(module.ENTRY_POINTS)
    assert loose <= set(placed), f"add to scripts/rooms_codemod.py ROOMS: {sorted(loose - set(placed))}"
