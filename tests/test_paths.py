"""ekstrain.files.paths: the user's project is the render's stack-file directory, $EKSTRAIN_PROJECT_DIR, or the nearest
Pulumi.yaml from the working directory up (``pulumi up`` of a ``main: infra/`` program runs in infra/); the
Slurm login key file and the render's cache follow it, never the package directory."""

from __future__ import annotations

import pathlib

import pytest
from conftest import cfg_with

from ekstrain.files import paths
from ekstrain.stacks import slurm_login
from ekstrain.tooling import validation


@pytest.fixture
def project(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.delenv(paths.PROJECT_ENV, raising=False)
    monkeypatch.delenv("EKSTRAIN_CACHE_DIR", raising=False)
    root = tmp_path / "acme"
    (root / "infra").mkdir(parents=True)
    (root / "Pulumi.yaml").write_text("name: acme\nruntime: python\nmain: infra/\n")
    return root


def test_the_nearest_pulumi_yaml_from_the_working_directory_up(
    project: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "infra")
    assert paths.project_dir() == project
    assert validation.cache_root() == project / "build" / ".cache"
    monkeypatch.setenv(paths.PROJECT_ENV, str(project / "infra"))
    assert paths.project_dir() == project / "infra"


def test_without_a_pulumi_yaml_the_working_directory(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.PROJECT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert paths.project_dir() == tmp_path


def test_the_render_sets_the_stack_files_directory_for_the_key_file(
    project: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    cfg = cfg_with(lambda s: s["schedulers"]["slurm"].update(loginSshAuthorizedKeysFile=None))
    cfg = cfg.model_copy(
        update={
            "schedulers": cfg.schedulers.model_copy(
                update={
                    "slurm": cfg.schedulers.slurm.model_copy(
                        update={"login_ssh_authorized_keys_file": "security/login.pub"}
                    )
                }
            )
        }
    )
    with paths.use_project(project):
        assert slurm_login.keys_file(cfg) == project / "security" / "login.pub"
        assert paths.project_dir() == project
    assert slurm_login.keys_file(cfg) == elsewhere / "security" / "login.pub"


def test_package_data_sits_in_the_package() -> None:
    assert (paths.POLICY_PACK / "PulumiPolicy.yaml").is_file()
    assert (paths.POLICY_PACK / "ekstrain_policy" / "rules.py").is_file()
    assert (paths.REVIEWS / "iam-lint-accepted.yaml").is_file()
    assert paths.PACKAGE.name == "ekstrain" and paths.POLICY_PACK.parent == paths.PACKAGE


def test_a_stack_file_belongs_to_its_pulumi_project_else_the_working_directorys(
    project: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "stacks").mkdir()
    assert paths.project_of(project / "stacks" / "Pulumi.dev.yaml") == project
    copy = tmp_path / "copy"
    copy.mkdir()
    monkeypatch.chdir(project / "infra")
    assert paths.project_of(copy / "Pulumi.dev.yaml") == project, "a loose copy: the working directory's project"
