"""TP-communication overlap is a software switch of the stack (Megatron-core --tp-comm-overlap), not of the chip."""

import json

import pytest

from ekstrain.cli.main import main
from ekstrain.planner import Fleet, evaluate, get_model

LAYOUT = dict(tp=8, pp=1, dp=8, micro_batch=1, recompute="full", sequence_parallel=True, zero=1)
FLEET = Fleet.from_instance("p5.48xlarge", 8)


def _plan(**over):
    return evaluate(get_model("llama3-70b"), FLEET, 64, 8192, **{**LAYOUT, **over})


def test_megatron_defaults_on_and_the_switch_turns_it_off():
    on, off = _plan(), _plan(tp_comm_overlap=False)
    assert on.training.overlaps_tp_comm and not off.training.overlaps_tp_comm
    # with the overlap off the whole TP traffic is exposed: 5x the 20 % Hopper's userbuffers leave
    assert off.time.tp_comm == pytest.approx(5 * on.time.tp_comm) and on.time.tp_comm > 0
    assert off.step_time_s > on.step_time_s


def test_fsdp_with_tp_does_not_overlap_unless_told():
    default = _plan(framework="fsdp", zero=3)
    told = _plan(framework="fsdp", zero=3, tp_comm_overlap=True)
    assert not default.training.overlaps_tp_comm and default.time.tp_comm == pytest.approx(5 * told.time.tp_comm)


def test_cli_flag_and_json(capsys):
    argv = ["plan", "evaluate", "--model", "llama3-70b", "--instance", "p5.48xlarge", "--nodes", "8"]
    argv += ["--global-batch", "64", "--seq-len", "8192", "--tp", "8", "--pp", "1", "--dp", "8", "--zero", "1"]
    argv += ["--micro-batch", "1", "--recompute", "full", "--sequence-parallel", "--json"]
    rows = []
    for switch in ([], ["--tp-comm-overlap", "off"]):
        assert main(argv + switch) == 0
        out = json.loads(capsys.readouterr().out)
        rows.append(out[0] if isinstance(out, list) else out)
    assert rows[0]["tp_comm_overlap"] is True and rows[1]["tp_comm_overlap"] is False
    assert rows[1]["step_time_s"] > rows[0]["step_time_s"]
