"""The jobs resolver against the planner: the adapter's calls (stubbed modules) and the real planner.

The first tests replace ``ekstrain.planner`` with stub modules to pin what RealPlanner passes on
(model object by name, ``Fleet.from_instance(type, nodes)``, batch, seq, LoRA). The last ones
use the real planner and skip only while it is absent from this checkout.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest
from conftest import stack_config
from support.jobs import FakePlanner
from test_jobs_templates import spec_for

from ekstrain.assembly.jobs import JobRequestError, resolve_for
from ekstrain.assembly.jobs.planning import RealPlanner

PROD = stack_config("prod")
REAL = importlib.util.find_spec("ekstrain.planner") is not None


@pytest.fixture
def stub_planner(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    fake = FakePlanner()
    pkg = types.ModuleType("ekstrain.planner")
    models = types.ModuleType("ekstrain.planner.models")
    fleet = types.ModuleType("ekstrain.planner.fleet")

    def get_model(name: str) -> Any:
        if name not in ("llama3-8b", "llama3-70b", "bert-large"):
            raise ValueError(f"unknown model {name!r}; known: bert-large, llama3-8b, llama3-70b")
        return ("model", name)

    class Fleet:
        def __init__(self, instance: str, nodes: int) -> None:
            self.name, self.nodes = instance, nodes

        @classmethod
        def from_instance(cls, name: str, nodes: int, network_tiers: bool = False) -> Fleet:
            calls.append(("fleet", name, nodes, network_tiers))
            return cls(name, nodes)

    def search(model: Any, fl: Fleet, global_batch: int, seq_len: int, **opts: Any) -> list[Any]:
        calls.append(("search", model, fl.name, fl.nodes, global_batch, seq_len, opts))
        return fake.search(model[1], fl.name, fl.nodes, global_batch, seq_len, **opts)

    def evaluate(model: Any, fl: Fleet, global_batch: int, seq_len: int, **degrees: Any) -> Any:
        calls.append(("evaluate", model, fl.name, fl.nodes, degrees))
        return fake.evaluate(model[1], fl.name, fl.nodes, global_batch, seq_len, **degrees)

    models.get_model = get_model  # type: ignore[attr-defined]
    fleet.Fleet = Fleet  # type: ignore[attr-defined]
    pkg.search, pkg.evaluate, pkg.models, pkg.fleet = search, evaluate, models, fleet  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ekstrain.planner", pkg)
    monkeypatch.setitem(sys.modules, "ekstrain.planner.models", models)
    monkeypatch.setitem(sys.modules, "ekstrain.planner.fleet", fleet)
    import ekstrain

    monkeypatch.setattr(ekstrain, "planner", pkg, raising=False)
    return calls


def test_adapter_passes_model_fleet_batch_lora_and_the_jobs_framework(stub_planner: list[tuple[Any, ...]]) -> None:
    # The job's framework ranks its plan: spec_for's torchrun-fsdp (an alias of fsdp) asks for FSDP's cost model.
    r = resolve_for(spec_for("gpu-a100", nodes=4, global_batch=512, lora_rank=16), PROD, "volcano", RealPlanner())
    options = {"lora_rank": 16, "framework": "fsdp"}
    # the stack's own nodes: their network tiers priced (Fleet.from_instance network_tiers)
    assert stub_planner == [
        ("fleet", "p4d.24xlarge", 4, True),
        ("search", ("model", "llama3-8b"), "p4d.24xlarge", 4, 512, 4096, options),
    ]
    assert r.degrees["world_size"] == 32


def test_adapter_evaluates_fully_pinned_degrees(stub_planner: list[tuple[Any, ...]]) -> None:
    r = resolve_for(spec_for("gpu-h100", nodes=2, tp=4, pp=2, micro_batch=2), PROD, "volcano", RealPlanner())
    assert stub_planner[-1][0] == "evaluate"
    assert stub_planner[-1][4] == {"framework": "fsdp", "tp": 4, "pp": 2, "micro_batch": 2, "dp": 2}
    assert (r.degrees["tp"], r.degrees["pp"], r.degrees["dp"], r.degrees["grad_accum"]) == (4, 2, 2, 64)


def test_adapter_unknown_model_is_a_request_error(stub_planner: list[tuple[Any, ...]]) -> None:
    with pytest.raises(JobRequestError, match="^unknown model 'gpt-9'; known: bert-large"):
        resolve_for(spec_for("gpu-a100", model="gpt-9"), PROD, "volcano", RealPlanner())


real = pytest.mark.skipif(not REAL, reason="ekstrain.planner has not landed in this checkout")


@real
@pytest.mark.parametrize(
    ("partition", "nodes", "model", "framework"),
    [
        ("gpu-a100", 4, "bert-large", "deepspeed"),
        ("gpu-h100", 8, "llama3-70b", "megatron"),
        ("gpu-h100", 4, "llama3-8b", "torchrun-fsdp"),
    ],
)
def test_real_planner_plans_are_consistent_with_the_run(partition: str, nodes: int, model: str, framework: str) -> None:
    gb = 4096 if model == "bert-large" else 512
    r = resolve_for(
        spec_for(
            partition,
            nodes=nodes,
            model=model,
            framework=framework,
            global_batch=gb,
            seq_len=512 if model == "bert-large" else 8192,
        ),
        PROD,
        "volcano",
    )
    d = r.degrees
    assert d["tp"] * d["pp"] * d["cp"] * d["dp"] == nodes * 8
    assert d["micro_batch"] * d["dp"] * d["grad_accum"] == gb


@real
def test_real_planner_llama3_70b_on_one_p4d_is_a_clear_error() -> None:
    with pytest.raises(JobRequestError, match="^no parallel plan fits llama3-70b on 1 x p4d.24xlarge"):
        resolve_for(spec_for("gpu-a100", nodes=1, model="llama3-70b", global_batch=64), PROD, "slurm")


@real
def test_real_planner_deepspeed_never_gets_zero3_under_a_pipeline() -> None:
    r = resolve_for(
        spec_for("gpu-a100", nodes=4, model="llama3-70b", global_batch=64, framework="deepspeed"), PROD, "slurm"
    )
    assert not (r.degrees["pp"] > 1 and r.degrees["zero"] >= 2)
    assert r.deepspeed_config["train_batch_size"] == 64
