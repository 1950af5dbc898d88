"""``ekstrain job render`` refuses bad numbers, names, images and output paths: one line, exit 2."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
from conftest import REPO

from ekstrain.cli import argtypes as cli_types
from ekstrain.cli import main as cli

BASE = [
    "job",
    "render",
    "--stack-file",
    str(REPO / "Pulumi.prod.yaml"),
    "--scheduler",
    "volcano",
    "--partition",
    "gpu-h100",
    "--nodes",
    "2",
    "--model",
    "llama3-8b",
    "--image",
    "nvcr.io/nvidia/pytorch:25.01-py3",
    "--global-batch",
    "256",
    "--seq-len",
    "4096",
]


def _with(flag: str, value: str) -> list[str]:
    argv = list(BASE)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    return argv


BAD = {
    "nodes 0": ("--nodes", "0", "must be at least 1"),
    "nodes negative": ("--nodes", "-3", "must be at least 1"),
    "nodes not a number": ("--nodes", "two", "not a whole number"),
    "seq-len 0": ("--seq-len", "0", "must be at least 1"),
    "global batch 1.5": ("--global-batch", "1.5", "not a whole number"),
    "tp 0": ("--tp", "0", "must be at least 1"),
    "micro batch 0": ("--micro-batch", "0", "must be at least 1"),
    "zero 5": ("--zero", "5", "invalid choice"),
    "max restarts < 0": ("--max-restarts", "-1", "0 or more"),
    "namespace upper case": ("--namespace", "Team-A", "not a Kubernetes namespace"),
    "namespace too long": ("--namespace", "a" * 64, "not a Kubernetes namespace"),
    "image with space": ("--image", "repo/img:1 --privileged", "not a container image"),
    "image upper case repository": ("--image", "Repo/Img:1", "not a container image"),
    "image bad digest": ("--image", "repo/img@sha256:xyz", "not a container image"),
    "hugepages not a quantity": ("--hugepages-2mi", "lots", "not a Kubernetes quantity"),
    "stack name path": ("--stack", "../etc/x", "not a stack name"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_argument_is_one_line_and_exit_2(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    flag, value, words = BAD[case]
    with pytest.raises(SystemExit) as caught:
        cli.main(_with(flag, value))
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err.count("\n") == 1 and f"argument {flag}" in err and words in err, err


def test_unwritable_out_is_refused_before_rendering(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.geteuid() == 0:
        # root passes every permission bit (CI runs as root): deny as the kernel would for another user
        from ekstrain.files import outputs

        real_access = os.access
        monkeypatch.setattr(outputs.os, "access", lambda p, mode: str(p) != str(locked) and real_access(p, mode))
    with pytest.raises(SystemExit) as caught:
        cli.main(_with("--out", str(locked / "job.yaml")))
    assert caught.value.code == 2 and "not a writable directory" in capsys.readouterr().err


def test_out_under_a_file_is_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as caught:
        cli.main(_with("--out", str(tmp_path / "file" / "job.yaml")))
    assert caught.value.code == 2 and "not a writable directory" in capsys.readouterr().err


def test_the_base_request_is_valid(tmp_path: pathlib.Path) -> None:
    """The bad cases above differ from this valid request by one flag only."""
    assert cli.main(_with("--out", str(tmp_path / "new" / "job.yaml"))) == 0
    assert "kind:" in (tmp_path / "new" / "job.yaml").read_text()


def test_out_that_is_a_directory_is_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(_with("--out", str(tmp_path)))
    assert caught.value.code == 2 and "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    "ref",
    [
        "nvcr.io/nvidia/pytorch:25.01-py3",
        "localhost:5000/a/b_c:v1",
        "public.ecr.aws/neuron/pytorch-training-neuronx@sha256:" + "a" * 64,
        "busybox:1.37",
    ],
)
def test_valid_images_pass(ref: str) -> None:
    assert cli_types.image(ref) == ref


def test_json_object_file_refuses_malformed_and_non_objects(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "m.json"
    for text, words in (("{", "not valid JSON"), ("[1]", "not an object"), ('{"x": NaN}', "not valid JSON")):
        bad.write_text(text)
        with pytest.raises(Exception, match=words):
            cli_types.json_object_file(str(bad))
    bad.write_text('{"hidden": 4096}')
    assert cli_types.json_object_file(str(bad)) == {"hidden": 4096}


def test_real_process_prints_one_line_without_traceback() -> None:
    """GIVEN the installed entry point WHEN --nodes 0 THEN exactly one stderr line and exit 2."""
    proc = subprocess.run(
        [sys.executable, "-m", "ekstrain", *_with("--nodes", "0")], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_job_reads_the_stack_file_of_the_current_directory(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """GIVEN a directory without Pulumi.prod.yaml WHEN `ekstrain job render` runs there without --stack-file
    THEN it does not fall back to the installed checkout's stack file: exit 2 naming the missing file."""
    monkeypatch.chdir(tmp_path)
    argv = [a for a in BASE if a not in ("--stack-file", str(REPO / "Pulumi.prod.yaml"))]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'Pulumi.prod.yaml'}: does not exist" in err and "Traceback" not in err
