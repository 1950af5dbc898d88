"""A short backward does not hide all of the data-parallel traffic: Megatron-core's last gradient bucket fills when
the backward ends and its first parameter bucket is gathered before the forward, and its default bucket grows with
the data-parallel size (max(40M, 1M x dp) parameters)."""

import importlib

from ekstrain.planner import Fleet, evaluate, get_model

perf = importlib.import_module("ekstrain.planner.perf")
LAYOUT = dict(tp=1, pp=1, dp=512, micro_batch=1, recompute="none", zero=1)


def _gpt_1_7b(**over):
    return evaluate(get_model("gpt-1.7b"), Fleet.from_instance("p5.48xlarge", 64), 512, 2048, **{**LAYOUT, **over})


def test_one_short_micro_batch_leaves_a_buckets_share_of_the_sync_exposed(monkeypatch):
    # GIVEN GPT 1.7B on 512 H100, one micro-batch of 2,048 tokens per rank: the backward is shorter than the sync
    bucketed = _gpt_1_7b()
    monkeypatch.setattr(perf, "MEGATRON_BUCKET_MIN", 0)
    monkeypatch.setattr(perf, "MEGATRON_BUCKET_PER_RANK", 0)
    unbucketed = _gpt_1_7b()
    # THEN a 512M-parameter bucket (1M x 512) of the 1.65B parameters is exposed however short the backward
    assert bucketed.time.dp_comm > unbucketed.time.dp_comm
    assert unbucketed.time.dp_comm == 0  # before: all of it hidden behind the backward
