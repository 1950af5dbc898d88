"""Every emitter gives its framework a complete run from the model, not only the parallel layout.

GIVEN Llama 3 plans on p5 and trn1
WHEN DeepSpeed, NeMo and neuronx-distributed settings are emitted
THEN model shape, schedule and optimizer are all there, with values a framework accepts.
"""

from __future__ import annotations

import json

from ekstrain.planner.fleet import Fleet
from ekstrain.planner.models import get_model
from ekstrain.planner.plan import evaluate


def _plan(instance: str, nodes: int, model: str, **kw: object):  # type: ignore[no-untyped-def]
    return evaluate(get_model(model), Fleet.from_instance(instance, nodes), kw.pop("gb", 512), 8192, **kw)


def test_deepspeed_config_has_concrete_optimizer_and_schedule() -> None:
    ds = _plan(
        "p5.48xlarge",
        4,
        "llama3-8b",
        tp=1,
        pp=1,
        dp=32,
        micro_batch=1,
        recompute="selective",
        sequence_parallel=False,
        zero=3,
    ).deepspeed_config()
    assert '"auto"' not in json.dumps(ds)  # only the HF Trainer integration resolves "auto"
    assert ds["optimizer"]["params"]["lr"] > 0 and ds["scheduler"]["type"] == "WarmupDecayLR"
    assert ds["scheduler"]["params"]["total_num_steps"] > ds["scheduler"]["params"]["warmup_num_steps"]


def test_nemo_overrides_describe_the_model() -> None:
    m = get_model("llama3-70b")
    o = dict(
        x.split("=", 1)
        for x in _plan(
            "p5.48xlarge",
            8,
            "llama3-70b",
            tp=8,
            pp=4,
            dp=2,
            micro_batch=1,
            recompute="full",
            sequence_parallel=True,
            zero=1,
        ).nemo_overrides()
    )
    assert (
        o["model.num_layers"],
        o["model.hidden_size"],
        o["model.num_attention_heads"],
        o["model.num_query_groups"],
        o["model.ffn_hidden_size"],
    ) == tuple(map(str, (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden)))
    assert o["model.activation"] == "fast-swiglu" and o["model.position_embedding_type"] == "rope"
    assert o["model.normalization"] == "rmsnorm" and o["model.share_embeddings_and_output_weights"] == "false"
    assert float(o["model.optim.lr"]) > 0 and int(o["trainer.max_steps"]) > 0


def test_neuron_args_set_the_schedule() -> None:
    args = _plan(
        "trn1.32xlarge",
        8,
        "llama3-70b",
        gb=256,
        tp=8,
        pp=4,
        dp=8,
        micro_batch=1,
        recompute="full",
        sequence_parallel=True,
        zero=1,
    ).neuron_args()
    assert args[args.index("--tensor_parallel_size") + 1] == "8" and args[args.index("--lr") + 1] == "0.0003"
    assert float(args[args.index("--lr") + 1]) > 0 and int(args[args.index("--max_steps") + 1]) > 0
