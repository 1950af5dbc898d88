"""``plan --emit`` accepts any model name a user can type.

GIVEN a model JSON whose ``name`` is what people call their models ("Llama 3 8B", "7B-base", "Mixtral_8x7B-like",
a non-Latin name, shell metacharacters, 80 characters) WHEN ``ekstrain plan search --emit X`` runs for every
framework THEN it prints the launch lines (exit 0), the workload name is a DNS-1035 label of at most 40 characters
(the checkpoint directory), the model word has no space or shell metacharacter (Megatron's ``--data-path``), and
nothing mentions ``--name`` (a flag ``plan`` does not have). Two names that sanitise alike stay apart.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ekstrain.assembly.jobs.spec import NAME_PATTERN
from ekstrain.assembly.plan_emit import model_identifier, run_name
from ekstrain.cli.main import main

NAMES = [
    "Llama 3 8B",
    "7B-base",
    "Mixtral_8x7B-like",
    "llama3-8b",
    "Qwen2.5-72B",
    "日本語モデル",
    "a$(id)b; rm -rf /",
    "--",
    "x" * 80,
    "Ünïcödé model (v2)",
    "9",
]
FRAMEWORKS = ["fsdp", "hsdp", "deepspeed", "megatron", "nemo"]
COMMON = ["--instance", "p5.48xlarge", "--nodes", "2", "--global-batch", "128", "--seq-len", "4096", "--top", "1"]


def _model(tmp_path: Any, name: str) -> str:
    path = tmp_path / "model.json"
    spec = dict(name=name, layers=4, hidden=512, heads=8, kv_heads=8, ffn_hidden=2048, vocab=32000)
    path.write_text(json.dumps({**spec, "gated_mlp": False, "tied_embeddings": True}))
    return str(path)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("name", NAMES)
def test_any_model_name_emits(tmp_path: Any, capsys: Any, name: str, framework: str) -> None:
    code = main(["plan", "search", "--model-json", _model(tmp_path, name), *COMMON, "--emit", framework])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "--name" not in out + err
    if framework != "nemo":
        checkpoint = re.search(r"/fsx/checkpoints/([^/ '\"]+)", out)
        assert checkpoint and NAME_PATTERN.fullmatch(checkpoint.group(1)) and len(checkpoint.group(1)) <= 40, out
        for word in re.findall(r"--model=(\S+)", out) + re.findall(r"/fsx/data/(\S+)_text_document", out):
            assert re.fullmatch(r"[A-Za-z0-9._-]+", word), word


def test_sanitised_names_stay_apart_and_builtins_keep_their_label() -> None:
    assert run_name("Llama 3 8B", "fsdp") != run_name("llama-3-8b", "fsdp")
    assert run_name("llama3-8b", "fsdp") == "llama3-8b-fsdp"
    assert run_name("llama3.1-8b", "megatron") == "llama3-1-8b-megatron"
    assert model_identifier("Llama 3 8B") == "Llama_3_8B"
    for name in NAMES:
        for framework in ("fsdp", "neuronx-distributed"):
            label = run_name(name, framework)
            assert NAME_PATTERN.fullmatch(label) and len(label) <= 40, label
