"""From the wheel, in an empty directory, offline: a user's first three commands.

    ekstrain upstream helm --mirror URL       the pinned helm (helm's release archive, verified by the helm pin)
    ekstrain upstream fetch --mirror URL      the pinned CRDs, chart archives and chart values, each verified
    ekstrain render --stack prod              the shipped example stack (no Pulumi project here), every check run

The wheel is built from this checkout and installed (pip, once for the session's wheel tests: tests/support/wheel.py)
into a directory that a .pth puts on a fresh virtualenv's path, the virtualenv's only ekstrain (its dependencies come
from this interpreter's site-packages through a .pth, as there is no index offline). The mirrors are built in the
test: helm's release archive around the pinned helm binary, and scripts/upstream_mirror.py over the pinned upstream
files beside the checkout. Nothing of the checkout is on the commands' path, and no helm is on PATH.
"""

from __future__ import annotations

import hashlib
import io
import os
import pathlib
import subprocess
import sys
import sysconfig
import tarfile
import time
import venv
from collections.abc import Iterator

import pytest
from conftest import REPO
from support.mirror import built_mirror
from support.wheel import installed_wheel

from ekstrain.tooling import helm, upstream, validation

SHARED = REPO.parent / "shared" / "upstream"
SRC = SHARED if SHARED.is_dir() else validation.upstream_dir()


@pytest.fixture(scope="module")
def env_bin(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A fresh virtualenv with the installed wheel on its path (no dependencies: they come from this interpreter's
    site-packages, added by a .pth as plain directories, so no editable install of the checkout is on its path)."""
    wheel_site = installed_wheel(tmp_path_factory)  # built and installed once for the session (tests/support/wheel.py)
    root = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = pathlib.Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    deps += [sysconfig.get_path("purelib")] if sysconfig.get_path("purelib") not in deps else []
    # .pth files are read in name order: the wheel's ekstrain comes before the dependencies
    (site / "ekstrain-wheel.pth").write_text(f"{wheel_site}\n")
    (site / "zz-dependencies.pth").write_text("".join(f"{p}\n" for p in deps))
    # the console script as pip writes it for the wheel's entry point
    script = root / "bin" / "ekstrain"
    script.write_text(f"#!{python}\nimport sys\nfrom ekstrain.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return root / "bin"


@pytest.fixture(scope="module")
def helm_mirror(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory laid out as get.helm.sh with helm's release archive around the pinned binary."""
    binary = helm.helm_binary()
    if binary is None or hashlib.sha256(pathlib.Path(binary).read_bytes()).hexdigest() != upstream.HELM_SHA256:
        pytest.skip("the pinned helm is not here to build the mirror from: run `ekstrain upstream helm`")
    root = tmp_path_factory.mktemp("get.helm.sh")
    data = pathlib.Path(binary).read_bytes()
    buf = io.BytesIO()
    # gzip level 0 (stored blocks): the ~60 MB binary at the default level 9 took ~6 CPU-s to pack (level 0: ~0.1 s;
    # unpacking it in `upstream helm` ~0.3 s less), the archive just as valid; what the fetch verifies is the
    # binary's sha256
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=0) as tgz:
        info = tarfile.TarInfo(upstream.HELM_TARBALL_MEMBER)
        info.size, info.mode = len(data), 0o755
        tgz.addfile(info, io.BytesIO(data))
    (root / upstream.HELM_TARBALL).write_bytes(buf.getvalue())
    return root.as_uri()


@pytest.fixture(scope="module")
def upstream_mirror_url() -> Iterator[str]:
    if SRC is None:
        pytest.skip("no pinned upstream files beside the checkout to build the mirror from")
    from scripts import upstream_mirror

    server, base = upstream_mirror.serve(built_mirror(SRC))  # laid out once per session (tests/support/mirror.py)
    yield base
    server.shutdown()


def run(bin_dir: pathlib.Path, cwd: pathlib.Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``ekstrain *args`` of the installed wheel in ``cwd``: nothing of this checkout or its helm on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EKSTRAIN_", "PULUMI_", "UPSTREAM_"))}
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    started = time.perf_counter()
    done = subprocess.run(
        [str(bin_dir / "ekstrain"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1800
    )
    return done, time.perf_counter() - started


def test_the_wheel_fetches_helm_and_the_upstream_files_then_renders_prod_in_an_empty_directory(
    env_bin: pathlib.Path, helm_mirror: str, upstream_mirror_url: str, tmp_path: pathlib.Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    where, _ = run(env_bin, empty, "--version")
    assert where.returncode == 0, where.stderr
    # the package is the wheel's, never this checkout's
    probe = subprocess.run(
        [
            str(env_bin / "python"),
            "-c",
            "import ekstrain, ekstrain.files.paths as p; print(ekstrain.__file__, p.CHECKOUT)",
        ],
        cwd=empty,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(REPO) not in probe.stdout and probe.stdout.split()[1] == "None", probe.stdout
    times = {}

    got_helm, times["upstream helm"] = run(env_bin, empty, "upstream", "helm", "--mirror", helm_mirror)
    assert got_helm.returncode == 0, got_helm.stderr[-3000:]
    assert hashlib.sha256((empty / ".tools" / "helm").read_bytes()).hexdigest() == upstream.HELM_SHA256

    fetched, times["upstream fetch"] = run(env_bin, empty, "upstream", "fetch", "--mirror", upstream_mirror_url)
    assert fetched.returncode == 0, fetched.stdout[-3000:] + fetched.stderr[-3000:]
    assert (empty / ".upstream" / "crds").is_dir() and list((empty / ".upstream" / "chart-src").glob("*.tgz"))

    rendered, times["render --stack prod"] = run(env_bin, empty, "render", "--stack", "prod")
    assert rendered.returncode == 0, rendered.stdout[-3000:] + rendered.stderr[-3000:]
    assert "rendering the shipped example stack prod" in rendered.stderr
    assert "0 did not run" in rendered.stdout and "0 problem(s)" in rendered.stdout, rendered.stdout
    summary = (empty / "build" / "prod" / "SUMMARY.md").read_text()
    assert "NOT VALIDATED" not in summary and "valid against the pinned upstream schemas" in summary
    # the shipped lock answered the no-op check (a first render without ~340 helm runs); nothing written beside it
    assert "21 of 21 releases answered by ekstrain.lock.json" in rendered.stderr, rendered.stderr[-3000:]
    assert sorted(p.name for p in empty.iterdir()) == [".tools", ".upstream", "build"]
    print("wheel flow (exit 0 each):", ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))


def _tarball(into: pathlib.Path, binary: bytes) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tgz:
        info = tarfile.TarInfo(upstream.HELM_TARBALL_MEMBER)
        info.size = len(binary)
        tgz.addfile(info, io.BytesIO(binary))
    (into / upstream.HELM_TARBALL).write_bytes(buf.getvalue())
    return into.as_uri()


def test_a_helm_mirror_serving_another_binary_or_nothing_is_refused_and_nothing_is_written(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "tools" / "helm"
    # another binary under the pinned name: refused, naming both digests
    assert upstream.fetch_helm(dest, mirror=_tarball(tmp_path, b"#!/bin/sh\necho not helm\n")) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ekstrain upstream helm: ") and upstream.HELM_SHA256 in err and "\nfix: " in err
    assert not dest.exists()
    # no archive there, or a URL that is not one: one error and its fix each
    assert upstream.fetch_helm(dest, mirror=(tmp_path / "empty").as_uri()) == 1
    assert "fix: point --mirror at a directory or server holding" in capsys.readouterr().err
    assert upstream.fetch_helm(dest, mirror="ftp://mirror") == 2
    assert not dest.exists()


def test_the_shipped_example_is_rendered_only_from_an_installed_package_outside_a_project(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ekstrain.files import paths

    monkeypatch.delenv(paths.PROJECT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "CHECKOUT", None)  # installed
    assert paths.example_stack("prod") == paths.EXAMPLE_STACKS / "Pulumi.prod.yaml"
    assert paths.example_stack("staging") is None  # no such example
    (tmp_path / "Pulumi.yaml").write_text("name: acme\n")  # the user's project: their stack files or an error
    assert paths.example_stack("prod") is None
    (tmp_path / "Pulumi.yaml").unlink()
    monkeypatch.setattr(paths, "CHECKOUT", REPO)  # a checkout: its stack files are at hand
    assert paths.example_stack("prod") is None
