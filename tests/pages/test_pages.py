"""The pages (ekstrain/pages): each is one self-contained file (no network resources, no scripts) and a real
headless Chromium loads it with no console message and draws a non-blank screenshot."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import pytest
import yaml
from conftest import stack_config
from PIL import Image
from support.renders import Renders

from ekstrain.assembly.jobs import render as render_job
from ekstrain.cli.main import main
from ekstrain.files import outputs
from ekstrain.pages import shell, timeline_page
from ekstrain.simulate.load import load
from ekstrain.simulate.mix import read_mix
from ekstrain.simulate.timeline import simulate_timeline

INSTALL = "install it: apt-get install -y chromium (Debian/Ubuntu; .ci/run does this), or put chromium on PATH"


def chromium() -> str:
    """The browser binary; missing under `make test` (EKSTRAIN_NO_SKIPS=1) is a failure naming the install."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    message = f"headless Chromium not found for the pages' browser test: {INSTALL}"
    if os.environ.get("EKSTRAIN_NO_SKIPS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def load_in_browser(page: pathlib.Path, shot: pathlib.Path) -> list[str]:
    """Load ``page`` in headless Chromium, screenshot it into ``shot``; return its console messages."""
    result = subprocess.run(
        [
            chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            f"--user-data-dir={shot.parent / 'chromium-profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1400,1600",
            f"--screenshot={shot}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-2000:]}"
    # A page's console.* calls and its JavaScript errors are logged as ":CONSOLE:line] "message", source: ..."
    # (older builds: "CONSOLE(line)").
    return [line for line in result.stderr.splitlines() if re.search(r":CONSOLE[:(]?\d*\)?\]", line)]


def ink(shot: pathlib.Path) -> tuple[float, int]:
    """(fraction of pixels that are not the background, distinct colours) of a screenshot."""
    img = Image.open(shot).convert("RGB").resize((350, 400))
    counts = img.getcolors(maxcolors=350 * 400) or []
    background = max(n for n, _ in counts)
    return 1 - background / (350 * 400), len(counts)


def assert_page_works(page: pathlib.Path, tmp_path: pathlib.Path, must_show: list[str]) -> None:
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert shell.network_references(text) == []
    assert "<script" not in text.lower()
    assert text.count("<svg") >= 1, "the charts are embedded inline as SVG"
    for phrase in must_show:
        assert phrase in text, phrase
    console = load_in_browser(page, tmp_path / f"{page.stem}.png")
    assert console == []
    covered, colours = ink(tmp_path / f"{page.stem}.png")
    assert covered > 0.05 and colours > 20, (covered, colours)


def test_network_references_finds_every_kind_of_remote_resource() -> None:
    bad = [
        '<script src="https://cdn.example/x.js"></script>',
        '<link rel="stylesheet" href="//cdn.example/x.css">',
        '<img src="http://example.com/a.png">',
        '<image xlink:href="https://example.com/a.png"/>',
        "<style>@import 'x.css'</style>",
        "<style>body{background:url(https://example.com/a.png)}</style>",
        '<script src="local.js"></script>',
    ]
    for snippet in bad:
        assert shell.network_references(snippet), snippet
    assert shell.network_references('<a href="https://docs.aws.amazon.com/eks/">docs</a>') == []


def test_without_chromium_make_test_fails_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setenv("EKSTRAIN_NO_SKIPS", "1")
    with pytest.raises(pytest.fail.Exception, match="headless Chromium not found.*apt-get install -y chromium"):
        chromium()
    monkeypatch.delenv("EKSTRAIN_NO_SKIPS")
    with pytest.raises(pytest.skip.Exception, match="apt-get install -y chromium"):
        chromium()


def test_the_browser_check_sees_console_errors_and_blank_pages(tmp_path: pathlib.Path) -> None:
    """The browser test can fail: a page that logs an error, and a blank page, are both caught."""
    noisy = tmp_path / "noisy.html"
    noisy.write_text('<!DOCTYPE html><p>x</p><script>console.error("broken-page")</script>')
    assert any("broken-page" in line for line in load_in_browser(noisy, tmp_path / "noisy.png"))
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    load_in_browser(blank, tmp_path / "blank.png")
    assert ink(tmp_path / "blank.png")[0] < 0.01


@pytest.fixture(scope="module")
def prod_render(renders: Renders) -> pathlib.Path:
    """The session's prod render (tests/support/renders.py)."""
    return renders("prod")


def test_render_writes_its_page_beside_the_summary(prod_render: pathlib.Path, tmp_path: pathlib.Path) -> None:
    page = prod_render / "index.html"
    text = page.read_text()
    # Architecture from the render: the components, their AWS resources and Helm releases, the stages.
    for phrase in ("Architecture:", "karpenter", "network", "ec2 Subnet", "helm: karpenter", "Creation stages"):
        assert phrase in text, phrase
    # Partitions with instance types, EFA and placement groups; checks; links to the written files.
    assert "Partitions" in text and "p5.48xlarge" in text and "Placement group" in text
    assert '<p class="ok">0 problems in' in text
    for f in ("SUMMARY.md", "resources.yaml", "aws-plan.json"):
        assert f'<a href="{f}">' in text, f
    linked = set(map(urllib.parse.unquote, re.findall(r'<a href="([^"]+)"', text)))
    written = {p.relative_to(prod_render).as_posix() for p in prod_render.rglob("*") if p.is_file()}
    written -= {"index.html", outputs.MARKER}  # the page itself, and the write guard's list of what was written
    assert written <= linked, sorted(written - linked)[:5]
    assert_page_works(page, tmp_path, ["Checks", "Helm releases", "Files"])


def _mix(prod_render: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
    from support.jobs import FakePlanner
    from test_jobs_templates import spec_for

    objects = render_job(
        spec_for("gpu-h100", nodes=2, name="page", global_batch=128), stack_config("prod"), "volcano", FakePlanner()
    )
    job = next(o for o in objects if o["kind"] not in ("ConfigMap", "Service", "TrainingRuntime"))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    mix = tmp_path / "mix.yaml"
    mix.write_text(
        yaml.safe_dump(
            {
                "hours": 6,
                "jobs": [
                    {"file": str(tmp_path / "job.yaml"), "at": 0, "hours": 2},
                    {"notebook": {"partition": "gpu-a100", "accelerators": 2}, "at": 0, "hours": 1},
                ],
                "faults": [{"at": 1, "kind": "node-lost", "job": "Job/page"}],
            }
        )
    )
    return mix


def test_timeline_page_draws_nodes_waits_faults_and_idle_dollars(
    prod_render: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mix = _mix(prod_render, tmp_path)
    page = tmp_path / "timeline.html"
    args = ["simulate", "--stack", "prod", "--build", str(prod_render), "--timeline", str(mix), "--html", str(page)]
    assert main(args) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "FAULT Job/page: resumed from its checkpoint" in out
    text = page.read_text()
    for phrase in (
        "Nodes per partition over time",
        "gpu-h100 · p5.48xlarge",
        "Each job&#x27;s wait, by reason",
        "Idle paid capacity: $",
        "node-lost",
        "Job/page",
        "resumed from its checkpoint",
    ):
        assert phrase in text, phrase
    assert text.count("<svg") == 4
    assert_page_works(page, tmp_path, ["Faults and restarts"])


def test_the_recorder_simulates_exactly_what_the_timeline_does(
    prod_render: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    cluster = load(prod_render, list(stack_config("prod").cluster.system_node_group.instance_types))
    mix_file = _mix(prod_render, tmp_path)
    plain = simulate_timeline(cluster, read_mix(mix_file, prod_render))
    recorder = timeline_page.Recorder(cluster, read_mix(mix_file, prod_render))
    recorded = recorder.run()
    assert recorded.lines() == plain.lines()
    assert recorder.failures and recorder.failures[0][1] == "Job/page"
    busy = [s for states in recorder.node_states.values() for _, s in states if s == "busy"]
    assert busy, "the job's nodes were recorded busy"


PLAN = [
    "--model",
    "llama3-70b",
    "--instance",
    "p5.48xlarge",
    "--nodes",
    "8",
    "--global-batch",
    "512",
    "--seq-len",
    "8192",
]


def test_plan_search_page_charts_every_candidate_and_the_chosen_breakdown(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "plan.html"
    assert main(["plan", "search", *PLAN, "--top", "3", "--html", str(page)]) == 0
    table = capsys.readouterr().out
    assert table.count("\n  3 ") == 1 and "\n  4 " not in table, "--top still limits the printed table"
    text = page.read_text()
    chosen = re.search(r"Chosen plan: (tp=\S+ pp=\S+ dp=\S+)", text)
    assert chosen, "the chosen plan is named"
    first = table.split("\n")[2].split()
    assert chosen.group(1) == f"tp={first[1]} pp={first[2]} dp={first[3]}", (chosen.group(1), first)
    counts = re.search(r"Candidates: step time against memory per device \((\d+)\)", text)
    assert counts and int(counts.group(1)) > 100
    assert re.search(r"fits \(\d+\)", text) and re.search(r"does not fit \(\d+\)", text)
    for phrase in ("device memory 80 GiB", "activations", "compute", "exposed DP/ZeRO traffic"):
        assert phrase in text, phrase
    assert_page_works(page, tmp_path, ["Ranked plans (first 20 of"])


def test_plan_evaluate_page_marks_a_layout_that_does_not_fit(tmp_path: pathlib.Path) -> None:
    page = tmp_path / "evaluate.html"
    layout = ["--tp", "1", "--pp", "1", "--dp", "64", "--micro-batch", "1", "--recompute", "none"]
    assert main(["plan", "evaluate", *PLAN, *layout, "--html", str(page)]) == 0
    text = page.read_text()
    assert "(does not fit)" in text and "<span class=bad>does not fit</span>" in text
    assert_page_works(page, tmp_path, ["Chosen plan: tp=1 pp=1 dp=64"])
