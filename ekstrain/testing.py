"""Run your own Pulumi program offline: ekstrain's strict mock engine, no cloud, no Pulumi CLI (docs/components.md).

    from ekstrain.testing import run_offline

    rec = run_offline(my_program, {"aws:region": "us-east-2"})
    assert [r.name for r in rec.of_type("eks:index:Cluster")] == ["acme-train"]

``run_offline`` takes a function that creates resources (and returns the outputs to resolve, or None), or the
path of a program's ``__main__.py`` / directory, and returns the ``Recording``: every registration the engine
received (type, name, parent URN, inputs, dependsOn, provider, protect), the resolved outputs and the invokes.
The mocks are the render's own (ekstrain/infra/offline.py): outputs the providers compute get fakes, and an
invoke they do not know fails loudly, so a test cannot pass on a value the cloud would never return.
"""

from __future__ import annotations

import pathlib
import runpy
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ekstrain.infra.offline import Record, Recording

__all__ = ["Record", "Recording", "run_offline"]


def run_offline(
    program: Callable[[], Any] | str | pathlib.Path,
    config: Mapping[str, str] | None = None,
    *,
    stack: str = "test",
    secret_keys: Sequence[str] = (),
    preview: bool = False,
) -> Recording:
    """Run ``program`` once on fresh offline mocks with Pulumi ``config`` (``{"aws:region": ..., "proj:key":
    ...}``; keys in ``secret_keys`` are Pulumi secrets); ``preview=True`` leaves computed values unknown, as
    ``pulumi preview`` does. Raises if the program fails or its outputs never resolve."""
    from ekstrain.infra import offline  # pulumi loads here, not on `import ekstrain.testing`

    settings = dict(config or {})
    settings.setdefault("aws:region", "us-west-2")
    if callable(program):
        body = program

        def run() -> Any:
            return body() or {}

    else:
        path = pathlib.Path(program)
        main = path / "__main__.py" if path.is_dir() else path
        if not main.is_file():
            raise FileNotFoundError(f"run_offline: {program!r} is neither a function nor a program's __main__.py")

        def run() -> Any:
            sys.path.insert(0, str(main.parent))  # the program's own packages, as `pulumi up` in its directory
            try:
                runpy.run_path(str(main), run_name="__main__")
            finally:
                sys.path.remove(str(main.parent))
            return {}

    return offline.run(run, settings, list(secret_keys), stack=stack, preview=preview)


def __getattr__(name: str) -> Any:
    """``Record`` and ``Recording`` on first use (their module imports pulumi)."""
    if name in ("Record", "Recording"):
        from ekstrain.infra import offline

        return getattr(offline, name)
    raise AttributeError(name)
