"""The render's figures are drawn once per process for the same inputs (ekstrain/pages/shell.py ``drawn``): the
same text as a fresh drawing, and drawn again for any other input or salt."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import stack_config

from ekstrain.files import filememo
from ekstrain.infra.offline import Recording
from ekstrain.pages import render_page, shell, topology


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The salts of the figures drawn, with an empty memo (the test's own)."""
    monkeypatch.setattr(shell, "_drawn", filememo.Recent(shell.DRAWN_KEEP))
    salts: list[str] = []
    real = shell.svg

    def svg(fig: Any, salt: str) -> str:
        salts.append(salt)
        return real(fig, salt)

    monkeypatch.setattr(shell, "svg", svg)
    return salts


def test_a_figure_is_drawn_once_for_the_same_facts_and_again_for_others(
    dev_recording: Recording, counted: list[str]
) -> None:
    cfg = stack_config("dev")
    first = topology.figure(dev_recording, cfg, "dev-arch")
    # THEN the same facts and salt are not drawn again, and the text is a fresh drawing's
    assert topology.figure(dev_recording, cfg, "dev-arch") == first
    assert counted == ["dev-arch"]
    assert shell.svg(topology._draw(topology.facts(dev_recording, cfg)), "dev-arch") == first
    # AND another salt, or other facts (another cluster name), is drawn
    assert topology.figure(dev_recording, cfg, "dev-topology") != first
    other = cfg.model_copy(update={"cluster": cfg.cluster.model_copy(update={"name": "other"})})
    assert "other" in topology.figure(dev_recording, other, "dev-arch")
    assert counted == ["dev-arch", "dev-arch", "dev-topology", "dev-arch"]


def test_the_components_and_stages_figures_follow_their_inputs(dev_recording: Recording, counted: list[str]) -> None:
    comps = render_page.components(dev_recording)
    rows = [{"stage": 0, "resources": 3}, {"stage": 1, "resources": 5}]
    assert render_page.architecture_figure(comps, "a") == render_page.architecture_figure(copy.deepcopy(comps), "a")
    assert render_page.stages_figure(rows, "s") == render_page.stages_figure(copy.deepcopy(rows), "s")
    assert counted == ["a", "s"]
    # a changed count is another picture
    assert ">5<" not in render_page.stages_figure([{"stage": 0, "resources": 3}], "s").replace(" ", "")
    assert counted == ["a", "s", "s"]


def test_the_memo_keeps_only_the_latest_figures(monkeypatch: pytest.MonkeyPatch, counted: list[str]) -> None:
    monkeypatch.setattr(shell, "_drawn", filememo.Recent(2))
    for n in (1, 2, 3, 1):
        render_page.stages_figure([{"stage": 0, "resources": n}], "s")
    assert counted == ["s"] * 4  # 1 was dropped when 3 was drawn
    assert len(shell._drawn) == 2


def test_the_components_are_the_same_whatever_order_the_engine_registered_them(dev_recording: Recording) -> None:
    """The engine registers resources concurrently: two runs of one program record them in other orders. The
    components (and so their figure, and its memo key) are the same for any order."""
    import random

    records = list(dev_recording.records)
    random.Random(7).shuffle(records)
    shuffled = Recording(records, dev_recording.outputs, dev_recording.invokes)
    assert repr(render_page.components(shuffled)) == repr(render_page.components(dev_recording))
    assert repr(render_page.components(Recording(records[::-1], dev_recording.outputs, dev_recording.invokes))) == (
        repr(render_page.components(dev_recording))
    )


def test_a_plan_page_drawn_again_for_the_same_plans_is_the_same_page(
    tmp_path: Any, counted: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Plans are frozen dataclasses: their repr is every field, so two searches of the same inputs share the
    figures (the write guard's tests write the same page to many paths), and another search draws its own."""
    from test_pages import PLAN

    from ekstrain.cli.main import main

    pages = [tmp_path / "a.html", tmp_path / "b.html", tmp_path / "c.html"]
    assert main(["plan", "search", *PLAN, "--html", str(pages[0])]) == 0
    assert " at 0x" not in repr(shell._drawn.keys())  # no key holds an object's address (which would never hit)
    assert main(["plan", "search", *PLAN, "--html", str(pages[1])]) == 0
    assert pages[0].read_text() == pages[1].read_text()
    assert counted == ["plan-candidates", "plan-breakdown"]
    seq = PLAN.index("--seq-len") + 1
    other = [*PLAN[:seq], "4096", *PLAN[seq + 1 :]]
    assert main(["plan", "search", *other, "--html", str(pages[2])]) == 0
    assert counted == ["plan-candidates", "plan-breakdown"] * 2
    capsys.readouterr()


def test_inputs_known_only_by_their_address_are_drawn_every_time(counted: list[str]) -> None:
    """A default repr names an address, which another object can take once this one is freed: never a memo key."""

    class Opaque:
        pass

    figure = render_page.stages_figure([{"stage": 0, "resources": 1}], "warm")
    for _ in range(2):
        assert shell.drawn(Opaque(), "opaque", lambda: shell.figure(1, 1)).startswith("<svg")
    assert counted == ["warm", "opaque", "opaque"]
    assert figure
