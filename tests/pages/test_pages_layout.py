"""The three pages laid out in real headless Chromium at 1400 px and 1024 px: no horizontal overflow, no text label
of a figure on top of another (measured from the SVG text boxes), every fault of the mix in the timeline's table,
the plan chart's axes on the fitting plans with the chosen one visible; a screenshot of each page at 1400 px in
build/pages/ for a person to look at."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess

import pytest
import yaml
from conftest import REPO, stack_config
from support.renders import Renders
from test_pages import PLAN, chromium, load_in_browser

from ekstrain.cli.main import main

SHOTS = REPO / "build" / "pages"

MEASURE = """
(function(){
  function overlap(a,b){var x=Math.min(a.right,b.right)-Math.max(a.left,b.left);
    var y=Math.min(a.bottom,b.bottom)-Math.max(a.top,b.top);return x>1&&y>1;}
  var out={width:document.documentElement.clientWidth,scrollWidth:document.documentElement.scrollWidth,
           overflowing:[],overlaps:[]};
  document.querySelectorAll('body *').forEach(function(el){
    if(el.closest('svg')||el.id==='layout-result')return;
    var r=el.getBoundingClientRect();
    if(r.width>0&&r.right>out.width+1)out.overflowing.push(el.tagName+' right='+Math.round(r.right));
  });
  document.querySelectorAll('svg').forEach(function(svg,si){
    var t=[].slice.call(svg.querySelectorAll('text')).map(function(e){return {s:e.textContent.trim(),
      r:e.getBoundingClientRect()};}).filter(function(o){return o.s&&o.r.width>0;});
    for(var i=0;i<t.length;i++)for(var j=i+1;j<t.length;j++)if(overlap(t[i].r,t[j].r))
      out.overlaps.push('figure '+si+': '+JSON.stringify(t[i].s)+' on '+JSON.stringify(t[j].s));
  });
  var pre=document.createElement('pre');pre.id='layout-result';pre.textContent=JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def measure(page: pathlib.Path, width: int, tmp: pathlib.Path) -> dict:
    """Load a copy of ``page`` with the measuring script at ``width`` px; what it found."""
    probe = tmp / f"{page.stem}-{width}-probe.html"
    probe.write_text(page.read_text().replace("</body>", f"<script>{MEASURE}</script></body>"))
    proc = subprocess.run(
        [
            chromium(),
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            f"--user-data-dir={tmp / 'chromium-layout'}",
            "--hide-scrollbars",
            f"--window-size={width},1200",
            "--dump-dom",
            probe.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    found = re.search(r'<pre id="layout-result">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    )


def assert_laid_out(page: pathlib.Path, tmp: pathlib.Path) -> None:
    for width in (1400, 1024):
        got = measure(page, width, tmp)
        assert got["scrollWidth"] <= got["width"], f"{page.name} at {width} px: overflows {got['overflowing'][:5]}"
        assert got["overflowing"] == [], f"{page.name} at {width} px"
        assert got["overlaps"] == [], f"{page.name} at {width} px: {got['overlaps'][:5]}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert load_in_browser(page, SHOTS / f"{page.stem}.png") == []


@pytest.fixture(scope="module")
def prod_render(renders: Renders) -> pathlib.Path:
    out, code = renders.run("prod")
    assert code in (0, 1)  # 1: no upstream schemas (a plain clone): the page is written all the same
    return out


def test_the_render_page_is_laid_out(prod_render: pathlib.Path, tmp_path: pathlib.Path) -> None:
    page = tmp_path / "render.html"
    page.write_text((prod_render / "index.html").read_text())
    text = page.read_text()
    assert "<th>Instance types</th>" in text and "<th>instanceTypes</th>" not in text  # heads for people
    assert_laid_out(page, tmp_path)


FAULTS = [
    {"at": 0.5, "kind": "node-unhealthy", "job": "Job/page"},
    {"at": 1, "kind": "node-lost", "job": "Job/page"},
    {"at": 1.5, "kind": "node-unhealthy", "job": "Job/page"},
    {"at": 2, "kind": "node-lost", "job": "Job/page"},
    {"at": 2.5, "kind": "node-unhealthy", "job": "Job/page"},
]


def test_the_timeline_page_lists_every_fault_and_is_laid_out(
    prod_render: pathlib.Path, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.jobs import FakePlanner
    from test_jobs_templates import spec_for

    from ekstrain.assembly.jobs import render as render_job

    objects = render_job(
        spec_for("gpu-h100", nodes=2, name="page", global_batch=128), stack_config("prod"), "volcano", FakePlanner()
    )
    job = next(o for o in objects if o["kind"] not in ("ConfigMap", "Service", "TrainingRuntime"))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    mix = tmp_path / "mix.yaml"
    jobs = [{"file": str(tmp_path / "job.yaml"), "at": 0, "hours": 4}]
    jobs += [{"notebook": {"partition": "gpu-a100", "accelerators": 2}, "at": 0, "hours": 1}]
    mix.write_text(yaml.safe_dump({"hours": 8, "jobs": jobs, "faults": FAULTS}))
    page = tmp_path / "timeline.html"
    argv = ["simulate", "--stack", "prod", "--build", str(prod_render), "--timeline", str(mix), "--html", str(page)]
    main(argv)
    capsys.readouterr()
    text = page.read_text()
    faults = text.split("Faults and restarts", 1)[1].split("</table>", 1)[0]
    assert faults.count("<tr>") - 1 == len(FAULTS), faults[:2000]  # the head row, then one row per fault
    assert_laid_out(page, tmp_path)


def test_the_plan_page_shows_the_fitting_region_and_is_laid_out(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "plan.html"
    assert main(["plan", "search", *PLAN, "--top", "3", "--html", str(page)]) == 0
    capsys.readouterr()
    text = page.read_text()
    fits = re.search(r"ranked, fits \((\d+)\)", text)
    listed = re.search(r"Ranked plans \(first (\d+) of (\d+)", text)
    assert fits and listed and int(fits.group(1)) == int(listed.group(2)), (fits, listed)
    assert_laid_out(page, tmp_path)
