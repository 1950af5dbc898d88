"""The command line in one room: every command's code is in cli/ (``ekstrain.cli``), and nothing else parses
arguments or defines a command.

GIVEN every module of the package (ekstrain/ and the layers it links: components, infra, stacks, assembly, policy,
security), read with ast WHEN one outside cli/ imports click, argparse (or optparse, getopt, typer), reads
``sys.argv`` or starts as a program (``if __name__ == "__main__"``) THEN it is reported, but for the few programs
below that are not commands of ``ekstrain``. And every command of the ``ekstrain`` tree is handled by a function
of ``ekstrain.cli``.
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import click
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ekstrain"
CLI = (ROOT / "cli").resolve()
PARSERS = {"click", "argparse", "optparse", "getopt", "typer"}
# Programs that are not `ekstrain` commands, each for its reason:
NOT_COMMANDS = {
    # `python -m ekstrain`: two lines that start ekstrain.cli.main (nothing imports it).
    "ekstrain/__main__.py": "the package's entry point into cli/",
    # The exporter runs inside the cluster: observability mounts this file in a ConfigMap (python3 efa_exporter.py).
    "ekstrain/agents/efa_exporter.py": "a program the cluster runs, not a command of ekstrain",
    # The health gate's guard runs on every accelerator node: components/health_gate.py mounts it in a ConfigMap.
    "ekstrain/agents/health_guard.py": "a program the cluster runs, not a command of ekstrain",
    # Checkpoint rotation runs in a CronJob and the Slurm gang sizer in a Deployment: each mounts its file from a
    # ConfigMap (components/checkpoints.py, components/slurm.py).
    "ekstrain/agents/checkpoint_rotation.py": "a program the cluster runs, not a command of ekstrain",
    "ekstrain/agents/slurm_gang.py": "a program the cluster runs, not a command of ekstrain",
    # The Pulumi programs: the engine runs them (Pulumi.yaml main: infra/; the CrossGuard pack).
    "infra/__main__.py": "the Pulumi program",
    "policy/__main__.py": "the CrossGuard policy pack",
}


def modules() -> list[pathlib.Path]:
    """Every .py file of the package, each once (the linked layers by their real path)."""
    seen: dict[pathlib.Path, None] = {}
    for folder, dirs, files in os.walk(PACKAGE, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in ("venv", ".venv", "__pycache__"))
        for name in sorted(files):
            if name.endswith(".py"):
                seen.setdefault((pathlib.Path(folder) / name).resolve())
    return list(seen)


def command_code(path: pathlib.Path) -> list[str]:
    """What makes ``path`` command-line code: parser imports, ``sys.argv``, a ``__main__`` block."""
    found = []
    for node in sorted(ast.walk(ast.parse(path.read_text(), str(path))), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: imports {a.name}" for a in node.names if a.name.split(".")[0] in PARSERS]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in PARSERS:
                found.append(f"{node.lineno}: imports {node.module}")
        elif isinstance(node, ast.Attribute) and node.attr == "argv" and isinstance(node.value, ast.Name):
            if node.value.id == "sys":
                found.append(f"{node.lineno}: reads sys.argv")
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "__name__":
            main = any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.comparators)
            found += [f"{node.lineno}: runs as a program (__main__)"] if main else []
    return found


def outside_the_room(paths: list[pathlib.Path], root: pathlib.Path = ROOT) -> list[str]:
    bad = []
    for path in paths:
        if path.is_relative_to(CLI):
            continue
        rel = path.relative_to(root).as_posix()
        if rel in NOT_COMMANDS:
            continue
        bad += [f"{rel}:{what}" for what in command_code(path)]
    return bad


def test_GIVEN_the_package_WHEN_read_THEN_only_cli_parses_arguments_or_defines_commands() -> None:
    paths = modules()
    # The walk sees every layer through its link (it cannot pass by reading only ekstrain/'s own files).
    for layer in ("cli", "components", "infra", "stacks", "assembly", "policy"):
        assert any(p.is_relative_to(ROOT / layer) for p in paths), layer
    assert outside_the_room(paths) == []


def test_GIVEN_the_exceptions_WHEN_listed_THEN_each_still_exists_and_is_a_program() -> None:
    # A stale entry would let a new command hide under an old name.
    for rel in NOT_COMMANDS:
        assert (ROOT / rel).is_file(), rel
        assert command_code(ROOT / rel) or rel.endswith("__main__.py"), rel


def test_GIVEN_command_code_outside_cli_WHEN_read_THEN_it_is_reported(tmp_path: pathlib.Path) -> None:
    # The check itself can fail: each kind of command code is caught, and cli/ alone may hold it.
    (tmp_path / "planner").mkdir()
    bad = tmp_path / "planner" / "tool.py"
    bad.write_text(
        "import argparse\nfrom click import command\nimport sys\n\n"
        "def f():\n    return sys.argv[1:]\n\nif __name__ == '__main__':\n    f()\n"
    )
    assert outside_the_room([bad], tmp_path) == [
        "planner/tool.py:1: imports argparse",
        "planner/tool.py:2: imports click",
        "planner/tool.py:6: reads sys.argv",
        "planner/tool.py:8: runs as a program (__main__)",
    ]
    assert command_code(CLI / "main.py")  # the room itself has command code (the walk is not blind)


def leaf_handlers() -> dict[str, object]:
    """Every leaf command of ``ekstrain``'s argparse declarations -> the function that handles it."""
    import argparse

    from ekstrain.cli import main

    out: dict[str, object] = {}

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[path] = parser._defaults.get("func") or parser._defaults.get("handler")
            return
        for name, child in subs[0].choices.items():
            walk(child, f"{path} {name}".strip())

    walk(main.build_parser(), "")
    return out


def test_GIVEN_the_command_tree_WHEN_walked_THEN_every_command_is_handled_in_ekstrain_cli() -> None:
    from ekstrain.cli import main

    handlers = leaf_handlers()
    assert set(handlers) >= {"plan search", "plan evaluate", "plan calibrate", "job render", "job schedulers"}
    assert {"simulate", "diff"} <= set(handlers)
    for path, handler in handlers.items():
        assert getattr(handler, "__module__", "").startswith("ekstrain.cli."), (path, handler)
    # The Click-only commands and storage: their callbacks are ekstrain.cli's too.
    tree = main.build_cli()
    assert sorted(tree.commands) == [
        "catalog",
        "deploy-policy",
        "diff",
        "job",
        "plan",
        "render",
        "simulate",
        "storage",
        "upstream",
    ]
    for name in ("catalog", "render"):
        callback = tree.commands[name].callback
        assert callback is not None and callback.__module__ == "ekstrain.cli.main", name
    storage = tree.commands["storage"]
    assert isinstance(storage, click.Command) and storage.callback is not None
    assert storage.callback.__closure__ is not None
    runs = [c.cell_contents for c in storage.callback.__closure__ if callable(c.cell_contents)]
    assert any(getattr(r, "__module__", "") == "ekstrain.cli.storage" for r in runs), runs


def test_GIVEN_the_entry_points_WHEN_run_THEN_each_starts_ekstrain_cli() -> None:
    # The console script (pyproject), `python -m ekstrain` and `python -m ekstrain.cli` all start cli/main.py.
    assert 'ekstrain = "ekstrain.cli.main:main"' in (ROOT / "pyproject.toml").read_text()
    for module in ("ekstrain", "ekstrain.cli"):
        done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, cwd=ROOT)
        assert (done.returncode, done.stdout.split()[0], done.stderr) == (0, "ekstrain", ""), module


@pytest.mark.parametrize("page", ["catalog", "configuration"])
def test_GIVEN_a_generated_page_WHEN_printed_by_its_command_THEN_it_is_the_checked_in_file(
    page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from ekstrain.cli import reference

    assert reference.main([page]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / f"{page}.md").read_text()
