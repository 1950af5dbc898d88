"""Stack config stops at assembly: importing a component never loads ``ekstrain.stacks``.

Components receive plain typed args (plans built by assembly/ from the stack config); the builders they call read
the stack models only as types. One fresh interpreter imports every component in turn, dropping every ``ekstrain``
module between two, so each component is measured on its own import chain.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "ekstrain" or m.startswith("ekstrain.")]:
        del sys.modules[loaded]
    importlib.import_module(name)
    out[name] = sorted(m for m in sys.modules if m.startswith("ekstrain.stacks"))
print(json.dumps(out))
"""


def stack_modules_loaded_by(modules: list[str]) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *modules], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300
    )
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


def components() -> list[str]:
    return sorted(f"ekstrain.components.{p.stem}" for p in (ROOT / "components").glob("*.py"))


def test_GIVEN_every_component_WHEN_imported_alone_THEN_no_stack_module_is_loaded() -> None:
    names = components()
    assert len(names) > 20
    loaded = stack_modules_loaded_by(names)
    assert {name: mods for name, mods in loaded.items() if mods} == {}


def test_GIVEN_a_module_that_reads_the_stack_models_WHEN_probed_THEN_it_is_reported() -> None:
    # The probe can fail: the loader reads the models, and a component imported after it is measured afresh.
    loaded = stack_modules_loaded_by(["ekstrain.stacks.loader", "ekstrain.components.args"])
    assert "ekstrain.stacks.models" in loaded["ekstrain.stacks.loader"]
    assert loaded["ekstrain.components.args"] == []
